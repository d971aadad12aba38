"""Public functions: validation, dispatch, chunking.

Every argument is checked before any compilation or work starts; the kernels
only ever see C-contiguous 2-D float32/float64 blocks of rows.
"""
import numbers
import threading

import numpy as np

from . import _config
from ._math import (NOBS, OBS_NAMES, TARGET_ARGMAX, TARGET_FIXED, TARGET_LABELS,
                    TARGET_RANDOM, TARGET_SAMPLED)
from .accumulate import NCH, SEGMENT_BLOCKS, Accumulator, fold_blocks, fold_segments
from .models import GEN_ROWS
from .summary import Summary

__all__ = ["softmax", "log_softmax", "observables", "summarize"]

NAN_POLICIES = ("raise", "omit")


# --------------------------------------------------------------------------
# validation helpers

def _as_float_array(x, name="x"):
    """x as an ndarray of float32/float64 compute dtype; returns (arr, dtype
    of the result).  float16 computes in float32 and returns float16; ints
    and bools promote to float64 (as scipy.special does)."""
    if not isinstance(x, np.ndarray):
        x = np.asarray(x)
    dt = x.dtype
    if dt.kind == "f":
        if dt == np.float16:
            return x, np.dtype(np.float32), dt
        if dt.itemsize > 8:
            raise TypeError(f"{name} has dtype {dt}; fastsoftmax supports float16/32/64")
        return x, dt, dt
    if dt.kind in "iub":
        return x, np.dtype(np.float64), np.dtype(np.float64)
    raise TypeError(f"{name} must be a real numeric array, got dtype {dt}")


def _normalize_axis(axis, ndim):
    if ndim == 0:
        raise ValueError("x must have at least one dimension (got a scalar)")
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, numbers.Integral):
            raise TypeError(f"axis must be an int, a tuple of ints or None, got {axis!r}")
        a = int(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis!r}")
    return tuple(sorted(out))


def _rows_view(x, axes):
    """(rows, n) view (or copy) of x with the softmax axes last, and the batch
    shape."""
    ndim = x.ndim
    rest = [a for a in range(ndim) if a not in axes]
    batch = tuple(x.shape[a] for a in rest)
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    xt = x if rest + list(axes) == list(range(ndim)) else np.transpose(x, rest + list(axes))
    rows = int(np.prod(batch, dtype=np.int64))
    return xt.reshape(rows, n), batch, n


def _check_nonempty(x, axes):
    if x.size == 0:
        raise ValueError(f"x is empty (shape {x.shape}): nothing to compute")


def _check_nan_policy(nan_policy):
    if nan_policy not in NAN_POLICIES:
        raise ValueError(f"nan_policy must be one of {NAN_POLICIES}, got {nan_policy!r}")


def _resolve_target(target, batch, n):
    """(ymode, yfix, labels) for the kernels: 0 argmax, 1 fixed class,
    2 per-row labels."""
    if isinstance(target, str):
        if target == "argmax":
            return TARGET_ARGMAX, 0, None
        if target in ("random", "sampled"):
            raise ValueError(
                f"target={target!r} needs a random stream: use fs.simulate, or pass "
                "labels as an integer array")
        raise ValueError(f"unknown target {target!r}: 'argmax', an int class index or an "
                         "integer label array")
    if isinstance(target, (numbers.Integral, np.integer)) and not isinstance(target, bool):
        y = int(target)
        if not 0 <= y < n:
            raise ValueError(f"target={y} is out of range for {n} classes (0 <= target < {n})")
        return TARGET_FIXED, y, None
    labels = np.asarray(target)
    if labels.dtype.kind not in "iu":
        raise TypeError(f"target labels must be integers, got dtype {labels.dtype}")
    if labels.shape != batch:
        raise ValueError(f"target labels have shape {labels.shape}; expected {batch} "
                         "(the shape of x without the softmax axis)")
    flat = labels.reshape(-1)
    bad = np.flatnonzero((flat < 0) | (flat >= n))
    if bad.size:
        r = int(bad[0])
        raise ValueError(f"target label {flat[r]} in row {_row_name(r, batch)} is out of "
                         f"range for {n} classes (0 <= label < {n})")
    return TARGET_LABELS, 0, np.ascontiguousarray(flat, dtype=np.int64)


def _row_name(r, batch):
    if len(batch) <= 1:
        return str(r)
    return str(tuple(int(i) for i in np.unravel_index(r, batch)))


def _describe_bad_row(row):
    row = np.asarray(row, dtype=np.float64)
    if np.isnan(row).any():
        return "contains NaN"
    if np.isposinf(row).any():
        return "contains +inf"
    return "has no finite logit (all -inf)"


def _bad_row_error(x2, r, batch):
    return ValueError(
        f"row {_row_name(r, batch)} of x {_describe_bad_row(x2[r])}; "
        "pass nan_policy='omit' to skip such rows")


# numba's workqueue threading layer aborts the process when two Python
# threads enter parallel code at once; serialise the calls in that case.
_WORKQUEUE_LOCK = threading.Lock()
_layer_checked = None


def _guard():
    """A lock to hold around parallel kernel calls when numba's threading layer
    is ``workqueue`` (which aborts the process when two Python threads run
    parallel code at once: calls are then serialised), else a no-op."""
    global _layer_checked
    if _layer_checked is None:
        import numba
        from numba.np.ufunc import parallel
        parallel._launch_threads()      # idempotent; fixes the layer now
        _layer_checked = numba.threading_layer()
    return _WORKQUEUE_LOCK if _layer_checked == "workqueue" else _NullCtx()


def threading_layer():
    """The threading layer numba uses ('omp', 'tbb' or 'workqueue')."""
    _guard()
    return _layer_checked


class _NullCtx:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _chunk(x2, r0, r1, cdt):
    return np.ascontiguousarray(x2[r0:r1], dtype=cdt)


# --------------------------------------------------------------------------
# softmax / log_softmax

def _softmax_impl(x, axis, log):
    if hasattr(x, "__cuda_array_interface__"):
        # a device array stays on the device
        from . import _cuda_guard
        _cuda_guard.require()
        from . import _cuda
        return _cuda.softmax(x, axis, log)
    x, cdt, odt = _as_float_array(x)
    axes = _normalize_axis(axis, x.ndim)
    if x.size == 0:
        return np.empty(x.shape, dtype=odt)
    from . import _cpu
    x2, batch, n = _rows_view(x, axes)
    out2 = np.empty((x2.shape[0], n), dtype=cdt)
    status = np.zeros(x2.shape[0], dtype=np.int8)
    step = max(1, _config.CHUNK_LOGITS // n)
    with _guard():
        for r0 in range(0, x2.shape[0], step):
            r1 = min(r0 + step, x2.shape[0])
            _cpu.softmax_rows(_chunk(x2, r0, r1, cdt), out2[r0:r1], log, status[r0:r1])
    # rows with NaN/+inf or no finite logit: NaN, as numpy/scipy give
    bad = np.flatnonzero(status)
    for r in bad:
        row = np.asarray(x2[r], dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            m = np.max(row)
            ex = np.exp(row - m)
            out2[r] = np.log(ex / ex.sum()) if log else ex / ex.sum()
    rest = [a for a in range(x.ndim) if a not in axes]
    shaped = out2.reshape(batch + tuple(x.shape[a] for a in axes))
    out = np.transpose(shaped, np.argsort(rest + list(axes))) if x.ndim > 1 else shaped
    return np.ascontiguousarray(out, dtype=odt)


def softmax(x, axis=-1):
    r"""Softmax along ``axis``: p_i = exp(x_i - max x) / sum_j exp(x_j - max x).

    Like ``scipy.special.softmax``: ``axis`` is an int, a tuple of ints (the
    softmax runs over their joint elements) or None (the whole array).
    float32/float64 are kept, float16 is computed in float32 and returned as
    float16, integers are promoted to float64.  -inf entries are masks
    (probability exactly 0).  Rows containing NaN or +inf give NaN.
    A CUDA device array (numba, CuPy, PyTorch) is computed on its GPU and
    returned as the same kind of array.
    """
    return _softmax_impl(x, axis, False)


def log_softmax(x, axis=-1):
    r"""log of the softmax, computed exactly at the max.

    log p_i = (x_i - m) - log1p(sum_{j != top} exp(x_j - m)) with m = max x:
    the max term is separated so that ``log_softmax([0, -40])[0]`` is
    -exp(-40) (about -4.2e-18), not 0.
    """
    return _softmax_impl(x, axis, True)


# --------------------------------------------------------------------------
# observables

def observables(x, target="argmax", axis=-1, nan_policy="raise"):
    r"""Per-row observables of softmax(x) along ``axis``.

    Returns a dict of float64 arrays (shape of x without ``axis``): each
    observable of ``fastsoftmax.OBS_NAMES`` and ``log10_<name>``.  The log10
    values are computed in the log domain (see ``fastsoftmax._math``) and stay
    finite and accurate when the value underflows.

    target: "argmax" (y = the top class), an int class index, or an integer
    array of labels with the batch shape.
    nan_policy: "raise" (ValueError naming the first row with NaN, +inf or no
    finite logit) or "omit" (NaN observables for such rows).
    """
    _check_nan_policy(nan_policy)
    x, cdt, _ = _as_float_array(x)
    axes = _normalize_axis(axis, x.ndim)
    _check_nonempty(x, axes)
    x2, batch, n = _rows_view(x, axes)
    ymode, yfix, labels = _resolve_target(target, batch, n)
    if labels is None:
        labels = np.zeros(1, dtype=np.int64)
    from . import _cpu
    nrows = x2.shape[0]
    vals = np.empty((2 * NOBS, nrows))
    status = np.zeros(nrows, dtype=np.int8)
    step = max(1, _config.CHUNK_LOGITS // n)
    with _guard():
        for r0 in range(0, nrows, step):
            r1 = min(r0 + step, nrows)
            lab = labels[r0:r1] if ymode == TARGET_LABELS else labels
            _cpu.observe_rows(_chunk(x2, r0, r1, cdt), lab, ymode, yfix,
                              vals[:, r0:r1], status[r0:r1])
    bad = np.flatnonzero(status)
    if bad.size and nan_policy == "raise":
        raise _bad_row_error(x2, int(bad[0]), batch)
    out = {name: vals[k].reshape(batch) for k, name in enumerate(OBS_NAMES)}
    out.update({"log10_" + name: vals[NOBS + k].reshape(batch)
                for k, name in enumerate(OBS_NAMES)})
    return out


# --------------------------------------------------------------------------
# summarize

def _check_thresholds(thresholds):
    t = np.asarray(thresholds, dtype=np.float64).reshape(-1)
    if t.size and not np.all(np.isfinite(t) & (t > 0)):
        raise ValueError(f"thresholds must be positive finite numbers, got {list(thresholds)}")
    return t


def summarize(x, target="argmax", axis=-1, thresholds=_config.DEFAULT_THRESHOLDS,
              nan_policy="raise", backend="auto", progress=False):
    r"""Streaming :class:`Summary` of the observables of softmax(x) over rows.

    Works over fixed blocks of rows, chunk by chunk: nothing proportional to
    the number of rows is allocated, so ``x`` may be an ``np.memmap`` larger
    than memory.  The result is bitwise identical for any number of threads.

    nan_policy="raise": ValueError naming the first row with NaN, +inf or no
    finite logit; "omit": such rows are skipped and counted (``skipped``).
    progress: True for a tqdm bar over rows (or an object with ``update``).

    x may also be a ``dask.array`` (per-chunk accumulators reduced with a
    tree, nothing gathered) or a CUDA device array (anything with
    ``__cuda_array_interface__``: numba, CuPy, PyTorch), summarised on the
    GPU without a copy to the host.
    """
    _check_nan_policy(nan_policy)
    thr = _check_thresholds(thresholds)
    if _is_dask_array(x):
        from . import _dask
        return _dask.summarize_array(x, target=target, axis=axis, thresholds=thr,
                                     nan_policy=nan_policy)
    if hasattr(x, "__cuda_array_interface__"):
        if backend not in ("auto", "cuda"):
            raise ValueError(f"x is a CUDA device array; backend={backend!r} cannot read it")
        backend = "cuda"
    elif backend == "auto":
        # a host array is read once: copying it to a GPU costs as much as the
        # CPU kernel, so "auto" keeps host arrays on the CPU
        backend = "cpu"
    be = resolve_backend(backend)
    if be == "cuda":
        from . import _cuda
        return _cuda.summarize(x, target=target, axis=axis, thresholds=thr,
                               nan_policy=nan_policy)
    x, cdt, _ = _as_float_array(x)
    axes = _normalize_axis(axis, x.ndim)
    _check_nonempty(x, axes)
    x2, batch, n = _rows_view(x, axes)
    ymode, yfix, labels = _resolve_target(target, batch, n)
    config = dict(source="array", shape=list(x.shape), dtype=str(x.dtype),
                  axis=list(axes), target=_target_repr(target), nan_policy=nan_policy)
    bar = _progress_bar(progress, x2.shape[0])
    try:
        acc, segments = run_rows(x2.shape[0], x2.shape[1], cdt, thr, x2=x2, ymode=ymode,
                                 yfix=yfix, labels=labels, nan_policy=nan_policy, batch=batch,
                                 progress=bar)
    finally:
        if bar is not None:
            bar.close()
    fold_segments(segments, out=acc.mom)
    return Summary(acc, config)


def _is_dask_array(x):
    mod = type(x).__module__
    return mod.startswith("dask.") and hasattr(x, "chunks") and hasattr(x, "compute")


def _target_repr(target):
    if isinstance(target, (str, numbers.Integral)):
        return target if isinstance(target, str) else int(target)
    return "labels"


def run_rows(nrows, n, cdt, thr, *, x2=None, gen=GEN_ROWS, params=None, seed=0, row0=0,
             ymode=0, yfix=0, labels=None, nan_policy="raise", batch=None,
             buf_len=1, q_len=1, chunk=None, progress=None):
    """Run the CPU kernel over rows [row0, row0 + nrows) of a source: the
    rows of ``x2`` (gen = GEN_ROWS) or a model's generator.  ``row0`` must be
    a multiple of the segment size (in rows) for the segments to line up.

    Returns (accumulator without moments, list of segment moments in
    order); ``fold_segments`` gives the moments.
    """
    from . import _cpu
    nth = _cpu.threads()
    brows = _config.block_rows(n)
    if row0 % brows:
        raise ValueError("row0 must be a multiple of the block size")
    step = chunk if chunk else _config.chunk_rows(n, nth)
    step = max(brows, step - step % brows)
    acc = Accumulator(thr)
    sc = _cpu.new_scratch(brows, nth, thr, cdt, buf_len, q_len)
    nblk_step = step // brows
    mom = np.zeros((nblk_step, NCH, 3))
    seg = np.zeros((NCH, 3))
    segs_buf = np.zeros((nblk_step // SEGMENT_BLOCKS + 2, NCH, 3))
    segments = []
    dummy_x = np.zeros((1, 1), dtype=cdt)
    dummy_labels = np.zeros(1, dtype=np.int64)
    params = np.zeros(3) if params is None else params
    gb0 = row0 // brows
    with _guard():
        for r0 in range(0, nrows, step):
            r1 = min(r0 + step, nrows)
            xc = _chunk(x2, r0, r1, cdt) if x2 is not None else dummy_x
            lab = labels[r0:r1] if ymode == TARGET_LABELS else dummy_labels
            sc["firstbad"][:] = -1
            nbad0 = int(sc["nbad"].sum())
            _cpu.observe_chunk(xc, gen, params, np.uint64(seed), row0 + r0, r1 - r0, n, lab,
                               ymode, yfix, brows, thr, sc["buf_s"], sc["q_s"], sc["st_s"],
                               sc["lam_s"],
                               sc["val_s"], mom, sc["vmin"], sc["vmax"], sc["nonf"],
                               sc["below"], sc["hist"], sc["nbad"], sc["firstbad"])
            if int(sc["nbad"].sum()) > nbad0 and nan_policy == "raise":
                fb = sc["firstbad"]
                r = r0 + int(fb[fb >= 0].min())
                if x2 is not None:
                    raise _bad_row_error(x2, r, batch)
                raise FloatingPointError(
                    f"generated row {row0 + r} has non-finite logits (model parameters "
                    "overflow the dtype?)")
            nb = (r1 - r0 + brows - 1) // brows
            k = fold_blocks(seg, mom, nb, gb0 + r0 // brows, segs_buf)
            segments.extend(segs_buf[i].copy() for i in range(k))
            if progress is not None:
                progress.update(r1 - r0)
    if seg[:, 0].any():
        segments.append(seg.copy())
    acc.skipped = int(sc["nbad"].sum())
    acc.count = nrows - acc.skipped
    acc.vmin = sc["vmin"].min(axis=0)
    acc.vmax = sc["vmax"].max(axis=0)
    acc.nonfinite = sc["nonf"].sum(axis=0)
    acc.below = sc["below"].sum(axis=0)
    # one thread (e.g. inside a Dask task): no 5.5 MB sum of per-thread sketches
    acc.hist = sc["hist"][0] if nth == 1 else sc["hist"].sum(axis=0)
    return acc, segments


# --------------------------------------------------------------------------
# simulate

class _Borrowed:
    """A caller's progress object: updated, never closed by us."""

    def __init__(self, bar):
        self.bar = bar

    def update(self, k):
        self.bar.update(k)

    def close(self):
        pass


TARGETS_MC = {"argmax": TARGET_ARGMAX, "random": TARGET_RANDOM,
              "sampled": TARGET_SAMPLED}
BACKENDS = ("auto", "cpu", "cuda")


def _check_samples(samples):
    if isinstance(samples, float) and samples.is_integer():
        samples = int(samples)
    if isinstance(samples, bool) or not isinstance(samples, (numbers.Integral, np.integer)):
        raise TypeError(f"samples must be a positive integer, got {samples!r}")
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    return int(samples)


def _check_seed(seed):
    if isinstance(seed, bool) or not isinstance(seed, (numbers.Integral, np.integer)):
        raise TypeError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    if not 0 <= int(seed) < 2 ** 64:
        raise ValueError(f"seed must lie in [0, 2**64), got {seed}")
    return int(seed)


def _check_dtype(dtype):
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be 'float32' or 'float64', got {dtype!r}") from None
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    return dt


def _mc_target(target, n):
    """(ymode, yfix) of a Monte Carlo target."""
    if isinstance(target, str):
        if target not in TARGETS_MC:
            raise ValueError(f"unknown target {target!r}: one of {sorted(TARGETS_MC)} "
                             "or an int class index")
        return TARGETS_MC[target], 0
    if isinstance(target, (numbers.Integral, np.integer)) and not isinstance(target, bool):
        if not 0 <= int(target) < n:
            raise ValueError(f"target={int(target)} is out of range for {n} classes")
        return TARGET_FIXED, int(target)
    raise TypeError(f"target must be 'argmax', 'random', 'sampled' or an int, got {target!r}")


def _check_model(model):
    from .models import _Model
    if not isinstance(model, _Model):
        raise TypeError("model must be a fastsoftmax.models model instance "
                        f"(Gaussian, Shifted, DotProduct), got {model!r}")
    return model


def resolve_backend(backend):
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "cpu":
        return "cpu"
    from . import _cuda_guard
    if backend == "cuda":
        _cuda_guard.require()
        return "cuda"
    return "cuda" if _cuda_guard.available() else "cpu"


def mc_config(model, samples, seed, target, dtype, backend, thresholds):
    from . import __version__
    return dict(source="simulate", model=model.name, params=model.params, samples=samples,
                seed=seed, target=target, dtype=str(dtype), backend=backend,
                thresholds=[float(t) for t in thresholds], version=__version__)


def simulate(model, samples, *, seed=0, target="argmax",
             thresholds=_config.DEFAULT_THRESHOLDS, dtype="float32", backend="auto",
             progress=False, chunk=None, client=None):
    r"""Monte Carlo :class:`Summary` of ``samples`` logit vectors drawn from
    ``model`` (see :mod:`fastsoftmax.models`).

    Row r's logits (and its random label) are pure functions of (seed, r)
    through a counter-based Philox4x32-10 stream, so the Summary is bitwise
    identical for any number of threads, any ``chunk`` (rows per kernel call)
    and any backend/partitioning that folds blocks in order.  The same seed
    gives the same underlying normals to every model (common random numbers).

    target: "argmax" (the model is confidently right), "random" (uniform
    label), "sampled" (y ~ Categorical(p): a calibrated model) or an int.
    dtype: precision of the generated logits.  float32 is the fast path;
    float64 keeps e.g. 1e6 + z exact (float32 rounds it to multiples of 1/16).
    client: a ``dask.distributed.Client``: the block range is split across its
    workers (same kernels, same result, bit for bit).
    """
    model = _check_model(model)
    samples = _check_samples(samples)
    seed = _check_seed(seed)
    thr = _check_thresholds(thresholds)
    dt = _check_dtype(dtype)
    ymode, yfix = _mc_target(target, model.n)
    if chunk is not None:
        chunk = _check_samples(chunk)
    if client is not None:
        # the workers' GPUs decide, not this machine's
        from . import _dask
        be = _dask.resolve_backend(client, backend)
    else:
        be = resolve_backend(backend)
    config = mc_config(model, samples, seed, target, dt, be, thr)
    bar = _progress_bar(progress, samples)
    try:
        if client is not None:
            from . import _dask
            acc, segments = _dask.run_model(client, model, samples, seed, ymode, yfix, thr,
                                            dt, backend=be, progress=bar)
        elif be == "cuda":
            from . import _cuda
            acc, segments = _cuda.run_model(model, samples, seed, ymode, yfix, thr, dt,
                                            row0=0, progress=bar)
        else:
            acc, segments = run_model_rows(model, 0, samples, seed, ymode, yfix, thr, dt,
                                           chunk=chunk, progress=bar)
    finally:
        if bar is not None:
            bar.close()
    fold_segments(segments, out=acc.mom)
    return Summary(acc, config)


def run_model_rows(model, row0, nrows, seed, ymode, yfix, thr, dt, chunk=None, progress=None):
    """CPU accumulator and segments of rows [row0, row0 + nrows) of a model."""
    gen, params = model._gen()
    return run_rows(nrows, model.n, dt, thr, gen=gen, params=params, seed=seed, row0=row0,
                    ymode=ymode, yfix=yfix, buf_len=model.n, q_len=model.scratch_len(),
                    chunk=chunk, progress=progress)


def _progress_bar(progress, total):
    """None, a new tqdm bar (progress=True), or the caller's own object with an
    ``update(rows)`` method (e.g. one bar shared by the points of a sweep)."""
    if not progress:
        return None
    if hasattr(progress, "update") and not isinstance(progress, bool):
        return _Borrowed(progress)
    try:
        from tqdm.auto import tqdm
    except ImportError:
        raise ImportError("progress=True needs tqdm: pip install 'fastsoftmax[progress]'") \
            from None
    return tqdm(total=total, unit="rows", unit_scale=True, smoothing=0.1)
