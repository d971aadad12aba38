"""Argument checks and input normalisation: the one place they are written.

Every public entry point (``api``, ``sweep``, ``verify``, the CLI, the
integrations) validates through these functions before any compilation or
work starts, and every backend reads its rows through the views defined here:

* dtypes: :func:`compute_dtype` (float16 -> float32, integers -> float64);
* axes and the rows view: :func:`normalize_axis`, :func:`batch_shape`,
  :func:`collapse`, :class:`Rows` (any rank, any axes, memmaps included,
  streamed chunk by chunk from the strided view, never copied whole);
* targets: the one enum :class:`TargetMode` and :class:`Target`;
* samples, seed, thresholds, nan_policy, dtype, chunk, backend names;
* the bad-row messages and the configuration records of summaries.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

from ._version import __version__
from .registries import (TARGET_ARGMAX, TARGET_FIXED, TARGET_LABELS, TARGET_RANDOM,
                         TARGET_SAMPLED, TARGETS, TargetMode, backend_names)

__all__ = [
    "TargetMode", "Target", "Rows", "BadRowError", "is_dask_array", "is_device_array",
    "compute_dtype", "as_float_array", "normalize_axis", "batch_shape", "collapse",
    "check_nonempty", "check_nan_policy", "check_thresholds", "check_samples", "check_seed",
    "check_dtype", "check_chunk", "check_backend_name", "array_target", "mc_target",
    "check_labels", "first_bad_label", "row_name", "describe_bad_row", "bad_row_error",
    "bad_label_error", "generated_row_error", "array_config", "mc_config", "check_int",
    "check_real", "NAN_POLICIES",
]

NAN_POLICIES = ("raise", "omit")


# targets: the one enum lives in ``registries`` (the kernels read its ints)
_MC_NAMES = {t.name: t.mode for t in TARGETS if t.monte_carlo and t.by_name}


@dataclass(frozen=True)
class Target:
    """A validated target: its mode, the class index (``FIXED``), the flat
    int64 labels (``LABELS``; a dask array on the Dask path) and how the
    configuration records it (``"argmax"``, an int or ``"labels"``)."""
    mode: TargetMode
    index: int = 0
    labels: Any = field(default=None, compare=False, repr=False)
    spec: Any = "argmax"


def _is_int(v: Any) -> bool:
    return isinstance(v, (numbers.Integral, np.integer)) and not isinstance(v, (bool, np.bool_))


def _fixed(target: Any, n: int) -> Target:
    y = int(target)
    if not 0 <= y < n:
        raise ValueError(f"target={y} is out of range for {n} classes (0 <= target < {n})")
    return Target(TargetMode.FIXED, y, None, y)


def check_labels(labels: Any, batch: tuple[int, ...]) -> None:
    """Labels must be an integer array with the batch shape (x without the
    softmax axes); their range is checked by :func:`first_bad_label`."""
    if labels.dtype.kind not in "iu":
        raise TypeError(f"target labels must be integers, got dtype {labels.dtype}")
    if tuple(labels.shape) != tuple(batch):
        raise ValueError(f"target labels have shape {tuple(labels.shape)}; expected "
                         f"{tuple(batch)} (the shape of x without the softmax axis)")


def first_bad_label(flat: np.ndarray, n: int) -> int | None:
    """Index of the first label outside [0, n), or None."""
    bad = np.flatnonzero((flat < 0) | (flat >= n))
    return int(bad[0]) if bad.size else None


def bad_label_error(value: int, r: int, batch: tuple[int, ...], n: int) -> ValueError:
    return ValueError(f"target label {value} in row {row_name(r, batch)} is out of range "
                      f"for {n} classes (0 <= label < {n})")


def array_target(target: Any, batch: tuple[int, ...], n: int, *,
                 lazy_labels: bool = False) -> Target:
    """The target of rows of an array: "argmax", an int class index, or an
    integer label array of the batch shape (every label checked now, unless
    ``lazy_labels``: a dask array, checked chunk by chunk)."""
    if isinstance(target, str):
        if target == "argmax":
            return Target(TargetMode.ARGMAX)
        if target in ("random", "sampled"):
            raise ValueError(f"target={target!r} needs a random stream: use fs.simulate, or "
                             "pass labels as an integer array")
        raise ValueError(f"unknown target {target!r}: 'argmax', an int class index or an "
                         "integer label array")
    if _is_int(target):
        return _fixed(target, n)
    if lazy_labels:
        check_labels(target, batch)
        return Target(TargetMode.LABELS, 0, target, "labels")
    if isinstance(target, (float, bool, np.bool_, np.floating)) or target is None:
        raise TypeError(f"target must be 'argmax', an int class index or an integer label "
                        f"array, got {target!r}")
    labels = np.asarray(target)
    check_labels(labels, batch)
    flat = labels.reshape(-1)
    r = first_bad_label(flat, n)
    if r is not None:
        raise bad_label_error(flat[r].item(), r, batch, n)
    return Target(TargetMode.LABELS, 0, np.ascontiguousarray(flat, dtype=np.int64), "labels")


def mc_target(target: Any, n: int) -> Target:
    """The target of a Monte Carlo run: "argmax", "random", "sampled" or an int."""
    if isinstance(target, str):
        if target not in _MC_NAMES:
            raise ValueError(f"unknown target {target!r}: one of {sorted(_MC_NAMES)} or an "
                             "int class index")
        return Target(_MC_NAMES[target], 0, None, target)
    if _is_int(target):
        return _fixed(target, n)
    raise TypeError(f"target must be 'argmax', 'random', 'sampled' or an int, got {target!r}")


# --------------------------------------------------------------------------
# kinds of arrays

def is_dask_array(x: Any) -> bool:
    """A ``dask.array.Array`` (recognised without importing dask)."""
    mod = type(x).__module__
    return mod.startswith("dask.") and hasattr(x, "chunks") and hasattr(x, "compute")


def is_device_array(x: Any) -> bool:
    """A CUDA device array (numba, CuPy, PyTorch: ``__cuda_array_interface__``;
    or a device array of numba's CUDA simulator, whose memory is host memory)."""
    return (hasattr(x, "__cuda_array_interface__")
            or type(x).__module__.startswith("numba.cuda.simulator"))


# --------------------------------------------------------------------------
# dtypes

def compute_dtype(dt: Any, name: str = "x") -> tuple[np.dtype, np.dtype]:
    """(compute dtype, result dtype) of input dtype ``dt``: float32/float64
    kept, float16 computed in float32 (returned as float16), integers and
    bools promoted to float64 (as scipy.special does); anything else is a
    TypeError."""
    dt = np.dtype(dt)
    if dt.kind == "f":
        if dt == np.float16:
            return np.dtype(np.float32), dt
        if dt.itemsize > 8:
            raise TypeError(f"{name} has dtype {dt}; fastsoftmax supports float16/32/64")
        return dt, dt
    if dt.kind in "iub":
        return np.dtype(np.float64), np.dtype(np.float64)
    raise TypeError(f"{name} must be a real numeric array, got dtype {dt}")


def as_float_array(x: Any, name: str = "x") -> tuple[np.ndarray, np.dtype, np.dtype]:
    """(x as an ndarray without copying one, compute dtype, result dtype)."""
    if not isinstance(x, np.ndarray):
        if isinstance(x, (str, bytes)):
            raise TypeError(f"{name} must be a real numeric array, got {type(x).__name__}")
        x = np.asarray(x)
    cdt, odt = compute_dtype(x.dtype, name)
    return x, cdt, odt


def check_dtype(dtype: Any) -> np.dtype:
    """A generated rows' dtype: float32 or float64."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be 'float32' or 'float64', got {dtype!r}") from None
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    return dt


# --------------------------------------------------------------------------
# axes and rows

def normalize_axis(axis: Any, ndim: int, *, allow_scalar: bool = False) -> tuple[int, ...]:
    """The softmax axes as a sorted tuple of non-negative ints.

    ``axis``: an int, a tuple of ints or None (all axes).  A 0-d input has
    no axis: with ``allow_scalar`` (softmax, log_softmax) it is one row of
    one logit, as in SciPy (``axis`` must then be None, 0, -1 or ())."""
    if ndim == 0:
        if not allow_scalar:
            raise ValueError("x must have at least one dimension (got a scalar)")
        for a in (axis if isinstance(axis, tuple) else (axis,)):
            if a is not None and not _is_int(a):
                raise TypeError(f"axis must be an int, a tuple of ints or None, got {axis!r}")
            if a is not None and int(a) not in (0, -1):
                raise _axis_error(int(a), 0)
        return ()
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in axes:
        if not _is_int(a):
            raise TypeError(f"axis must be an int, a tuple of ints or None, got {axis!r}")
        a = int(a)
        if not -ndim <= a < ndim:
            raise _axis_error(a, ndim)
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis!r}")
    if not out:
        raise ValueError("axis=() selects no axis: give at least one softmax axis")
    return tuple(sorted(out))


def _axis_error(a: int, ndim: int) -> Exception:
    # numpy >= 1.25 has numpy.exceptions; 1.24 only the (same) numpy.AxisError
    exc = getattr(getattr(np, "exceptions", np), "AxisError")
    return exc(a, ndim)


def batch_shape(shape: Sequence[int], axes: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """(batch shape, n): the shape without the softmax axes and the number
    of logits per row (the product of the softmax axes' lengths)."""
    shape = tuple(int(s) for s in shape)
    batch = tuple(s for a, s in enumerate(shape) if a not in axes)
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64)) if axes else 1
    return batch, n


def check_nonempty(shape: Sequence[int]) -> None:
    if int(np.prod(tuple(shape), dtype=np.int64)) == 0:
        raise ValueError(f"x is empty (shape {tuple(shape)}): nothing to compute")


def collapse(dims: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge (size, stride) dims, outermost first, where they address memory
    as one dim; size-1 dims are dropped.  A rows view is a plain 2-D strided
    view exactly when the batch dims and the softmax dims collapse to at most
    one dim each."""
    out: list[tuple[int, int]] = []
    for s, st in dims:
        if s == 1:
            continue
        if out and out[-1][1] == s * st:
            out[-1] = (out[-1][0] * s, st)
        else:
            out.append((s, st))
    return out


class Rows:
    """An array (ndarray or memmap, any rank) seen as ``rows`` rows of ``n``
    logits, the softmax axes last, batch dims flattened in C order.

    Nothing is copied at construction.  :meth:`chunk` returns rows
    [r0, r1) as a C-contiguous array of the compute dtype: a slice of a 2-D
    strided view when the layout allows one (no copy at all when it is
    already contiguous and of the compute dtype), otherwise gathered from
    whole sub-blocks of the transposed view (a few numpy copies per chunk,
    never a copy of the whole array).  :meth:`scatter` writes rows back into
    an output array of x's shape the same way.
    """

    def __init__(self, x: np.ndarray, axes: tuple[int, ...], cdt: np.dtype) -> None:
        self.x = x
        self.axes = axes
        self.cdt = np.dtype(cdt)
        self.shape = tuple(int(s) for s in x.shape)
        self.rest = tuple(a for a in range(x.ndim) if a not in axes)
        self.batch, self.n = batch_shape(self.shape, axes)
        self.rows = int(np.prod(self.batch, dtype=np.int64))
        self._xt = np.transpose(x, self.rest + axes) if x.ndim else x.reshape(1)
        self.view2d = _view2d(x, self.rest, axes, self.rows, self.n)

    def chunk(self, r0: int, r1: int) -> np.ndarray:
        """Rows [r0, r1) as a C-contiguous (r1 - r0, n) array of the compute dtype."""
        if self.view2d is not None:
            return np.ascontiguousarray(self.view2d[r0:r1], dtype=self.cdt)
        buf = np.empty((r1 - r0, self.n), dtype=self.cdt)
        pos = 0
        for p in _pieces(self._xt, len(self.rest), r0, r1):
            m = p.size // self.n
            buf[pos:pos + m].reshape(p.shape)[...] = p
            pos += m
        return buf

    def row(self, r: int) -> np.ndarray:
        """Row r as float64 (for messages)."""
        return np.asarray(self.chunk(r, r + 1)[0], dtype=np.float64)

    def scatter(self, out: np.ndarray, r0: int, buf: np.ndarray) -> None:
        """out's rows [r0, r0 + len(buf)) = buf; ``out`` has x's shape."""
        ot = np.transpose(out, self.rest + self.axes) if out.ndim else out.reshape(1)
        pos = 0
        for p in _pieces(ot, len(self.rest), r0, r0 + buf.shape[0]):
            m = p.size // self.n
            p[...] = buf[pos:pos + m].reshape(p.shape)
            pos += m


def _view2d(x: np.ndarray, rest: tuple[int, ...], axes: tuple[int, ...], rows: int,
            n: int) -> np.ndarray | None:
    if x.ndim == 0:
        return x.reshape(1, 1)
    isz = x.itemsize
    bd = collapse([(x.shape[a], x.strides[a]) for a in rest])
    ad = collapse([(x.shape[a], x.strides[a]) for a in axes])
    if len(bd) > 1 or len(ad) > 1:
        return None
    sb = bd[0][1] if bd else n * isz
    sa = ad[0][1] if ad else isz
    return np.lib.stride_tricks.as_strided(x, (rows, n), (sb, sa), writeable=False)


def _pieces(xt: np.ndarray, nb: int, r0: int, r1: int) -> Iterator[np.ndarray]:
    """Views of xt (its first nb dims are the batch dims) covering the
    flattened rows [r0, r1) in order, each as large as the layout allows:
    whole sub-blocks xt[i:j] where the range covers them, recursing into
    xt[i] at the ragged ends."""
    if nb == 0:
        yield xt[None]
        return
    inner = int(np.prod(xt.shape[1:nb], dtype=np.int64))
    r = r0
    while r < r1:
        i, off = divmod(r, inner)
        if off == 0 and r + inner <= r1:
            k = (r1 - r) // inner
            yield xt[i:i + k]
            r += k * inner
        else:
            take = min(inner - off, r1 - r)
            yield from _pieces(xt[i], nb - 1, off, off + take)
            r += take


# --------------------------------------------------------------------------
# scalar arguments

def check_nan_policy(nan_policy: Any) -> str:
    if nan_policy not in NAN_POLICIES:
        raise ValueError(f"nan_policy must be one of {NAN_POLICIES}, got {nan_policy!r}")
    return str(nan_policy)


def check_thresholds(thresholds: Any) -> np.ndarray:
    """Thresholds of the exact fractions below: positive finite numbers."""
    try:
        t = np.asarray(thresholds, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise TypeError(f"thresholds must be a sequence of positive numbers, got "
                        f"{thresholds!r}") from None
    if t.size and not np.all(np.isfinite(t) & (t > 0)):
        raise ValueError(f"thresholds must be positive finite numbers, got "
                         f"{np.asarray(thresholds).tolist()}")
    return t


def check_samples(samples: Any, name: str = "samples") -> int:
    if isinstance(samples, float) and samples.is_integer():
        samples = int(samples)
    if not _is_int(samples):
        raise TypeError(f"{name} must be a positive integer, got {samples!r}")
    if samples < 1:
        raise ValueError(f"{name} must be >= 1, got {samples}")
    return int(samples)


def check_chunk(chunk: Any) -> int | None:
    return None if chunk is None else check_samples(chunk, "chunk")


def check_seed(seed: Any) -> int:
    if not _is_int(seed):
        raise TypeError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    if not 0 <= int(seed) < 2 ** 64:
        raise ValueError(f"seed must lie in [0, 2**64), got {seed}")
    return int(seed)


def check_backend_name(backend: Any) -> str:
    """``backend`` if it is "auto" or a registered backend's name
    (``registries.backend_names``: the built-in ones and those added with
    ``fastsoftmax.backends.register``), else a ValueError listing them."""
    choices = ("auto",) + backend_names()
    if not isinstance(backend, str) or backend not in choices:
        raise ValueError(f"backend must be one of {choices}, got {backend!r}")
    return backend


# --------------------------------------------------------------------------
# messages

def row_name(r: int, batch: tuple[int, ...]) -> str:
    """Row r by its batch index: ``17`` for 2-D input, ``(1, 2)`` beyond."""
    if len(batch) <= 1:
        return str(r)
    return str(tuple(int(i) for i in np.unravel_index(r, batch)))


def describe_bad_row(row: Any) -> str:
    row = np.asarray(row, dtype=np.float64)
    if np.isnan(row).any():
        return "contains NaN"
    if np.isposinf(row).any():
        return "contains +inf"
    return "has no finite logit (all -inf)"


class BadRowError(ValueError):
    """A row with NaN, +inf or no finite logit under ``nan_policy="raise"``:
    ``row`` is its flat index, ``what`` says what is wrong with it."""

    def __init__(self, message: str, row: int, what: str) -> None:
        super().__init__(message)
        self.row = row
        self.what = what


def bad_row_error(row: Any, r: int, batch: tuple[int, ...]) -> BadRowError:
    """The error of ``nan_policy="raise"``: row r (its values ``row``) is bad."""
    what = describe_bad_row(row)
    return BadRowError(f"row {row_name(r, batch)} of x {what}; "
                       "pass nan_policy='omit' to skip such rows", r, what)


def generated_row_error(r: int) -> FloatingPointError:
    return FloatingPointError(f"generated row {r} has non-finite logits (model parameters "
                              "overflow the dtype?)")


# --------------------------------------------------------------------------
# configuration records (Summary.config)

def array_config(shape: Sequence[int], dtype: Any, axes: tuple[int, ...], target: Target,
                 nan_policy: str) -> dict:
    return dict(source="array", shape=[int(s) for s in shape], dtype=str(np.dtype(dtype)),
                axis=list(axes), target=target.spec, nan_policy=nan_policy,
                version=__version__)


def mc_config(model_name: str, params: dict, samples: int, seed: int, target: Target,
              dtype: Any, backend: str, thresholds: np.ndarray) -> dict:
    """The record of a Monte Carlo run.  ``rows`` is the range of random rows
    drawn from the seed's stream: two summaries whose ranges overlap for one
    seed share random rows and are not independent (``Summary.merge``
    refuses them)."""
    return dict(source="simulate", model=model_name, params=dict(params), samples=int(samples),
                seed=int(seed), rows=[0, int(samples)], target=target.spec,
                dtype=str(np.dtype(dtype)), backend=backend,
                thresholds=[float(t) for t in thresholds], version=__version__)


# --------------------------------------------------------------------------
# model parameters

def check_int(name: str, v: Any, lo: int) -> int:
    """An integer parameter >= lo (an integral float such as 1e3 is accepted)."""
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if not _is_int(v):
        raise TypeError(f"{name} must be an integer, got {v!r}")
    if int(v) < lo:
        raise ValueError(f"{name} must be >= {lo}, got {int(v)}")
    return int(v)


def check_real(name: str, v: Any, *, positive: bool = False, nonneg: bool = False) -> float:
    """A finite real parameter (optionally > 0 or >= 0)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, np.floating,
                                                             np.integer)):
        raise TypeError(f"{name} must be a real number, got {v!r}")
    f = float(v)
    if not math.isfinite(f):
        raise ValueError(f"{name} must be finite, got {f}")
    if positive and not f > 0:
        raise ValueError(f"{name} must be > 0, got {f}")
    if nonneg and f < 0:
        raise ValueError(f"{name} must be >= 0, got {f}")
    return f
