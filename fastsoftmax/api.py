r"""The public functions: validate once, pick a backend, call it.

Every argument is checked (``fastsoftmax._inputs``) before any compilation
or work starts; the backends (``fastsoftmax.backends``) receive validated
job records and return finished accumulators, which become
:class:`~fastsoftmax.summary.Summary` objects here.

>>> import fastsoftmax as fs
>>> fs.softmax([0.0, 0.0]).tolist()
[0.5, 0.5]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import _config
from ._inputs import (Target, array_config, array_target, as_float_array, batch_shape,
                      check_chunk, check_dtype, check_nan_policy, check_nonempty, check_samples,
                      check_seed, check_thresholds, compute_dtype, is_dask_array,
                      is_device_array, mc_config, mc_target, normalize_axis)
from ._math import NOBS, OBS_NAMES
from ._util import check_progress, progress_bar
from .backends import get_backend, resolve
from .backends.common import ArrayJob, ModelJob
from .models import _Model
from .summary import Summary

__all__ = ["softmax", "log_softmax", "observables", "summarize", "simulate"]


# --------------------------------------------------------------------------
# helpers shared by the public functions

def resolve_backend(backend: str, *, host_data: bool = False) -> str:
    """"cpu" or "cuda" for ``backend`` ("auto", "cpu" or "cuda"); "cuda"
    without a usable GPU is a RuntimeError saying why."""
    return resolve(backend, host_data=host_data)


def threading_layer() -> str:
    """The threading layer numba uses for the CPU kernels ('omp', 'tbb' or
    'workqueue'; under 'workqueue' concurrent calls are serialised)."""
    return get_backend("cpu").threading_layer()


def _array_info(x: Any) -> tuple[Any, tuple, np.dtype]:
    """(x, shape, dtype) of a NumPy-like, dask or CUDA device array, without
    copying or moving it."""
    if is_device_array(x):
        cai = getattr(x, "__cuda_array_interface__", None)
        if cai is None:                                  # the CUDA simulator's arrays
            return x, tuple(int(s) for s in x.shape), np.dtype(x.dtype)
        return x, tuple(int(s) for s in cai["shape"]), np.dtype(cai["typestr"])
    if is_dask_array(x):
        if any(s != s for s in x.shape):
            raise ValueError("x has unknown chunk sizes; call x.compute_chunk_sizes() first")
        return x, tuple(int(s) for s in x.shape), np.dtype(x.dtype)
    x, _, _ = as_float_array(x)
    return x, x.shape, x.dtype


def _array_job(x: Any, target: Any, axis: Any, thresholds: Any, nan_policy: Any,
               host_labels: Any = None) -> tuple[Any, ArrayJob]:
    nan_policy = check_nan_policy(nan_policy)
    thr = check_thresholds(thresholds)
    x, shape, dtype = _array_info(x)
    cdt, _ = compute_dtype(dtype)
    axes = normalize_axis(axis, len(shape))
    check_nonempty(shape)
    batch, n = batch_shape(shape, axes)
    if host_labels is not None and not isinstance(target, (str, int, np.integer)):
        target = host_labels(target)
    tgt = array_target(target, batch, n, lazy_labels=is_dask_array(target))
    rows = int(np.prod(batch, dtype=np.int64))
    return x, ArrayJob(shape=shape, dtype=dtype, cdt=cdt, axes=axes, batch=batch, n=n,
                       rows=rows, target=tgt, thresholds=thr, nan_policy=nan_policy)


# --------------------------------------------------------------------------
# softmax / log_softmax

def _softmax(x: Any, axis: Any, log: bool) -> Any:
    if is_device_array(x):
        _, shape, dtype = _array_info(x)
        compute_dtype(dtype)
        axes = normalize_axis(axis, len(shape))
        return get_backend(resolve("cuda")).softmax(x, axes, log)
    if is_dask_array(x):
        raise TypeError("softmax of a dask array: use x.map_blocks(fs.softmax) with the "
                        "softmax axes in one chunk")
    x, cdt, odt = as_float_array(x)
    axes = normalize_axis(axis, x.ndim, allow_scalar=True)
    if x.size == 0:
        return np.empty(x.shape, dtype=odt)
    out = get_backend("cpu").softmax(x, axes, log)
    out = out.astype(odt, copy=False)
    return out[()] if out.ndim == 0 else out


def softmax(x: Any, axis: int | tuple[int, ...] | None = -1) -> Any:
    r"""Softmax along ``axis``, numpy-like, dtype kept.

    .. math::  p_i = \frac{\exp(x_i - m)}{\sum_j \exp(x_j - m)},\qquad m = \max_j x_j

    The max is subtracted first, so large logits never overflow; ``-inf``
    logits get probability exactly 0.

    Parameters
    ----------
    x : array_like
        Logits: float16/32/64, integers or bools (promoted to float64), or a
        CUDA device array (numba, CuPy, PyTorch: computed on its GPU).
        ``-inf`` entries are masks (probability exactly 0).
    axis : int, tuple of ints or None, default -1
        The softmax axis; a tuple runs the softmax over the joint elements of
        several axes; None over the whole array.  The default is the last
        axis (as ``jax.nn.softmax`` and ``torch.softmax`` with ``dim=-1``),
        not None as in ``scipy.special.softmax``.

    Returns
    -------
    ndarray
        Same shape; float32/float64 kept, float16 computed in float32 and
        returned as float16, integers as float64.  Rows containing NaN or
        +inf give NaN (as NumPy/SciPy).  A 0-d input is one row of one logit:
        the result is 1.0.  A CUDA input gives an array of the same kind on
        its device.

    Raises
    ------
    TypeError
        A complex, object or string array; a bad ``axis`` type.
    numpy.exceptions.AxisError
        ``axis`` out of range.

    See Also
    --------
    log_softmax : Its logarithm, exact at the max.
    observables : Per-row statistics of the softmax and its gradients.

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> fs.softmax([100.0, 101.0, 99.0]).round(6)
    array([0.244728, 0.665241, 0.090031])
    >>> float(fs.softmax(2.0, axis=None))
    1.0
    """
    return _softmax(x, axis, False)


def log_softmax(x: Any, axis: int | tuple[int, ...] | None = -1) -> Any:
    r"""Logarithm of the softmax along ``axis``, exact at the max.

    .. math::  \log p_i = (x_i - m) - \operatorname{log1p}\Big(\sum_{j \ne \mathrm{top}}
               e^{x_j - m}\Big)

    The max term is separated (Blanchard, Higham & Higham 2021), so
    ``log_softmax([0, -40])[0]`` is ``-exp(-40)`` (about -4.2e-18), not 0.

    Parameters
    ----------
    x : array_like
        As :func:`softmax`.
    axis : int, tuple of ints or None, default -1
        As :func:`softmax` (the last axis by default, not None as in SciPy).

    Returns
    -------
    ndarray
        As :func:`softmax`; a 0-d input gives 0.0.

    Raises
    ------
    TypeError, numpy.exceptions.AxisError
        As :func:`softmax`.

    See Also
    --------
    softmax

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> lp = fs.log_softmax([0.0, -40.0])
    >>> f"{lp[0]:.6e}", f"{lp[1]:.6f}"
    ('-4.248354e-18', '-40.000000')
    """
    return _softmax(x, axis, True)


# --------------------------------------------------------------------------
# observables

def observables(x: Any, target: Any = "argmax", axis: int | tuple[int, ...] | None = -1,
                nan_policy: str = "raise") -> dict[str, np.ndarray]:
    r"""Per-row observables of softmax(x) along ``axis``.

    For each row (x without ``axis``) with :math:`p = \mathrm{softmax}(x)`,
    :math:`p_{(1)} \ge p_{(2)}` its two largest probabilities, the softmax
    Jacobian :math:`J = \mathrm{diag}(p) - p p^T` and target class y:

    ====================== ==================================================
    ``max_prob``           :math:`p_{(1)}`
    ``one_minus_max_prob`` :math:`1 - p_{(1)}` (the sum of the other probabilities)
    ``entropy``            :math:`-\sum_i p_i \log p_i` (nats)
    ``jac_diag_max``       :math:`\max_i p_i (1 - p_i)`, the largest diagonal entry of J
    ``jac_offdiag_max``    :math:`\max_{i \ne j} p_i p_j = p_{(1)} p_{(2)}`
    ``jac_fro``            :math:`\lVert J \rVert_F`
    ``ce_loss``            :math:`-\log p_y`
    ``ce_grad_norm``       :math:`\lVert p - e_y \rVert_2`, the cross-entropy gradient's norm
    ``ce_grad_target``     :math:`1 - p_y`, its target component's size
    ====================== ==================================================

    Every value is computed in the log domain (see ``fastsoftmax._math``):
    one pass finds the top two logits, the rest is exponentiated relative to
    the second, ``log1p`` wherever a quantity is 1 + small, and no value is
    ever a difference of two numbers near 1.  So ``log10_<name>`` stays
    finite and accurate when the value underflows (a top-2 gap of 1e4 gives
    ``log10_jac_diag_max`` = -4342.94).

    Parameters
    ----------
    x : array_like
        Logits (host memory; float16/32/64 or integers).
    target : "argmax", int or array of int, default "argmax"
        The top class of each row, one class index, or a label per row
        (shape of x without ``axis``).
    axis : int, tuple of ints or None, default -1
        The softmax axis (axes).
    nan_policy : {"raise", "omit"}, default "raise"
        Rows with NaN, +inf or no finite logit: ``ValueError`` naming the
        first one, or NaN observables for them.

    Returns
    -------
    dict of str to ndarray
        float64 arrays of the batch shape: each name of
        ``fastsoftmax.OBS_NAMES`` and ``"log10_" + name``.

    Raises
    ------
    ValueError
        Empty input, a bad row (``nan_policy="raise"``), a label out of range.
    TypeError
        A non-numeric array, a device or dask array, a bad target type.

    See Also
    --------
    summarize : The same observables, summarised over rows in a streaming pass.

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> obs = fs.observables([[100.0, 101.0, 99.0]])
    >>> round(float(obs["jac_diag_max"][0]), 6)
    0.222695
    >>> round(float(fs.observables([[0.0, -1e4]])["log10_jac_diag_max"][0]), 6)
    -4342.944819
    """
    if is_device_array(x) or is_dask_array(x):
        raise TypeError("observables returns per-row arrays in host memory: pass a NumPy "
                        "array (summarize accepts device and dask arrays)")
    x, job = _array_job(x, target, axis, (), nan_policy)
    vals = get_backend("cpu").observables(x, job)
    out = {name: vals[k].reshape(job.batch) for k, name in enumerate(OBS_NAMES)}
    out.update({"log10_" + name: vals[NOBS + k].reshape(job.batch)
                for k, name in enumerate(OBS_NAMES)})
    return out


# --------------------------------------------------------------------------
# summarize

def summarize(x: Any, target: Any = "argmax", axis: int | tuple[int, ...] | None = -1,
              thresholds: Any = _config.DEFAULT_THRESHOLDS, nan_policy: str = "raise",
              backend: str = "auto", progress: Any = False) -> Summary:
    r"""Streaming :class:`~fastsoftmax.Summary` of the observables of softmax(x) over rows.

    Works over fixed blocks of rows, chunk by chunk: nothing proportional to
    the number of rows is allocated, so ``x`` may be an ``np.memmap`` larger
    than memory, of any rank, summarised over any axis (read from its strided
    view, never copied whole).  The result is bitwise identical for any
    number of threads.

    Parameters
    ----------
    x : array_like, dask array or CUDA device array
        Logits.  A ``dask.array`` is summarised chunk by chunk on the current
        Dask scheduler (per-chunk accumulators reduced by a tree, nothing
        gathered); a CUDA device array (``__cuda_array_interface__``: numba,
        CuPy, PyTorch) on its GPU without a copy to the host.
    target : "argmax", int or array of int, default "argmax"
        As :func:`observables` (labels may be a dask array for dask input).
    axis : int, tuple of ints or None, default -1
        The softmax axis (axes).
    thresholds : sequence of float, default (1e-3, 1e-6, 1e-9)
        Values t for which the fraction of rows below t is counted exactly
        (``Stat.fraction_below``).
    nan_policy : {"raise", "omit"}, default "raise"
        Rows with NaN, +inf or no finite logit: ``ValueError`` naming the
        first one, or skipped and counted (``Summary.skipped``).
    backend : {"auto", "cpu", "cuda"}, default "auto"
        Host arrays stay on the CPU under "auto" (a copy to a GPU costs as
        much as the CPU kernel); device arrays need "auto" or "cuda"; dask
        arrays "auto" or "cpu".
    progress : bool or object with ``update(rows)``, default False
        A tqdm bar over rows, or the caller's own bar.  Not available for
        dask arrays (use Dask's own progress reporting).

    Returns
    -------
    Summary
        The statistics of every observable over the rows; ``config``
        records the shape, dtype, axis, target, nan_policy and the version.

    Raises
    ------
    ValueError
        Empty input, a bad row (``nan_policy="raise"``), a label out of range,
        bad thresholds, a backend or option the input cannot use.
    TypeError
        A non-numeric array, a bad target or progress type.
    RuntimeError
        ``backend="cuda"`` without a usable GPU.

    See Also
    --------
    observables : The per-row values.
    simulate : The same Summary for rows drawn from a model.

    Examples
    --------
    >>> import numpy as np, fastsoftmax as fs
    >>> x = np.random.default_rng(0).normal(size=(1000, 64)) * 30
    >>> s = fs.summarize(x)
    >>> s.samples
    1000
    >>> s["jac_diag_max"].fraction_below(1e-6) > 0.1
    True
    """
    return prepare_summarize(x, target, axis, thresholds, nan_policy, backend, progress).run()


class Prepared:
    """A validated call (every argument checked, nothing computed yet):
    ``run()`` computes its Summary.  ``fs.summarize(...)`` is
    ``prepare_summarize(...).run()``; tools that report argument errors
    apart from failures while running (the CLI) call the two steps."""

    def __init__(self, backend: Any, run: Any, total: int, progress: Any, config: dict,
                 args: tuple) -> None:
        self.backend = backend
        self.config = config
        self._run = run
        self._total = total
        self._progress = progress
        self._args = args

    def run(self) -> Summary:
        bar = progress_bar(self._progress, self._total)
        try:
            acc = self._run(*self._args, bar)
        finally:
            if bar is not None:
                bar.close()
        return Summary(acc, self.config)


def prepare_summarize(x: Any, target: Any = "argmax",
                      axis: int | tuple[int, ...] | None = -1,
                      thresholds: Any = _config.DEFAULT_THRESHOLDS, nan_policy: str = "raise",
                      backend: str = "auto", progress: Any = False) -> Prepared:
    """:func:`summarize`'s checks and plan, nothing computed."""
    check_progress(progress)
    if is_dask_array(x):
        if backend not in ("auto", "cpu"):
            raise ValueError(f"x is a dask array: its chunks are summarised by the CPU "
                             f"backend on the workers; backend={backend!r} cannot be used")
        if progress:
            raise ValueError("progress is not available for dask arrays: use Dask's own "
                             "(dask.diagnostics.ProgressBar, distributed.progress)")
        be = get_backend("dask")
    elif is_device_array(x):
        if backend not in ("auto", "cuda"):
            raise ValueError(f"x is a CUDA device array; backend={backend!r} cannot read it")
        be = get_backend(resolve("cuda"))
    else:
        be = get_backend(resolve(backend, host_data=True))
    host_labels = getattr(be, "to_host", None) if is_device_array(target) else None
    x, job = _array_job(x, target, axis, thresholds, nan_policy, host_labels)
    config = array_config(job.shape, job.dtype, job.axes, job.target, job.nan_policy)
    return Prepared(be, be.summarize_array, job.rows, progress, config, (x, job))


# --------------------------------------------------------------------------
# simulate

def _check_model(model: Any) -> _Model:
    if not isinstance(model, _Model):
        raise TypeError("model must be a fastsoftmax.models model instance "
                        f"(Gaussian, Shifted, DotProduct), got {model!r}")
    return model


def simulate(model: _Model, samples: int, *, seed: int = 0, target: Any = "argmax",
             thresholds: Any = _config.DEFAULT_THRESHOLDS, dtype: Any = "float32",
             backend: str = "auto", progress: Any = False, chunk: int | None = None,
             client: Any = None) -> Summary:
    r"""Monte Carlo :class:`~fastsoftmax.Summary` of ``samples`` logit vectors drawn from ``model``.

    Row r's logits (and its random label) are pure functions of (seed, r)
    through a counter-based Philox4x32-10 stream, so the Summary is bitwise
    identical for any number of threads, any ``chunk`` and any Dask
    partitioning.  The same seed gives the same underlying normals to every
    model (common random numbers): such summaries share rows, and
    ``Summary.merge`` refuses to merge two of them.

    Parameters
    ----------
    model : fastsoftmax.models.Gaussian, Shifted or DotProduct
        The logit generator (see :mod:`fastsoftmax.models`).
    samples : int
        Logit vectors to draw (>= 1).
    seed : int, default 0
        In [0, 2**64).
    target : "argmax", "random", "sampled" or int, default "argmax"
        The class y of the cross-entropy observables: the top class (a
        confidently right model), a uniform label, y ~ Categorical(p) (a
        calibrated model) or a fixed class.
    thresholds : sequence of float, default (1e-3, 1e-6, 1e-9)
        As :func:`summarize`.
    dtype : {"float32", "float64"}, default "float32"
        Precision of the generated logits (float32 is the fast path; float64
        keeps e.g. 1e6 + z exact).
    backend : {"auto", "cpu", "cuda"}, default "auto"
        "auto" uses a GPU when one is usable (with ``client``: when every
        worker has one).
    progress : bool or object with ``update(rows)``, default False
        A tqdm bar over rows, or the caller's own bar.
    chunk : int, optional
        Rows per CPU kernel call (the result does not depend on it); not
        available with the CUDA backend or a Dask client.
    client : distributed.Client, optional
        Split the rows across the client's workers (same kernels, same
        result, bit for bit).

    Returns
    -------
    Summary
        ``config`` records the model, its parameters, samples, seed, the
        rows drawn, target, dtype, backend, thresholds and the version.

    Raises
    ------
    TypeError
        Not a model; bad types of samples, seed, target or dtype.
    ValueError
        samples < 1, a seed outside [0, 2**64), a target out of range, bad
        thresholds, ``chunk`` with a backend that cannot use it.
    RuntimeError
        ``backend="cuda"`` without a usable GPU.
    FloatingPointError
        A generated row is not finite (model parameters overflow the dtype).

    See Also
    --------
    fastsoftmax.models : The models.
    fastsoftmax.sweeps.sweep : One simulation per point of a parameter grid.

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> s = fs.simulate(fs.models.DotProduct(n=64, d_k=4096, scaled=False), 10_000, seed=0)
    >>> bool(s["jac_diag_max"].median < 1e-6)
    True
    >>> s.samples, s.config["model"], s.config["params"]["d_k"]
    (10000, 'dotproduct', 4096)
    """
    return prepare_simulate(model, samples, seed=seed, target=target, thresholds=thresholds,
                            dtype=dtype, backend=backend, progress=progress, chunk=chunk,
                            client=client).run()


def prepare_simulate(model: _Model, samples: int, *, seed: int = 0, target: Any = "argmax",
                     thresholds: Any = _config.DEFAULT_THRESHOLDS, dtype: Any = "float32",
                     backend: str = "auto", progress: Any = False, chunk: int | None = None,
                     client: Any = None) -> Prepared:
    """:func:`simulate`'s checks and plan, nothing computed."""
    model = _check_model(model)
    samples = check_samples(samples)
    seed = check_seed(seed)
    thr = check_thresholds(thresholds)
    dt = check_dtype(dtype)
    tgt: Target = mc_target(target, model.n)
    chunk = check_chunk(chunk)
    check_progress(progress)
    if client is not None:
        # the workers' GPUs decide, not this machine's
        be = get_backend("dask", client=client, inner=backend)
        be_name = be.inner
    else:
        be_name = resolve(backend)
        be = get_backend(be_name)
    if chunk is not None and (client is not None or be_name == "cuda"):
        raise ValueError("chunk (rows per CPU kernel call) is not used by "
                         + ("a Dask client" if client is not None else "the CUDA backend")
                         + ": leave it out")
    job = ModelJob(gen=model.gen_spec(), samples=samples, seed=seed, target=tgt,
                   thresholds=thr, dtype=dt, chunk=chunk)
    config = mc_config(model.name, model.params, samples, seed, tgt, dt, be_name, thr)
    return Prepared(be, be.summarize_model, samples, progress, config, (job,))
