r"""The public functions: validate once, pick a backend, call it.

Every argument is checked (``fastsoftmax._inputs``) before any compilation
or work starts; the backends (``fastsoftmax.backends``) receive validated
job records and return finished accumulators, which become
:class:`~fastsoftmax.summary.Summary` objects here.  A backend is reached
only through the methods of its contract
(:class:`fastsoftmax.backends.common.Backend`), chosen by one dispatch
(``_backend_for``: the backends' ``can_take`` in a fixed order, then
``backend=``).

>>> import fastsoftmax as fs
>>> fs.softmax([0.0, 0.0]).tolist()
[0.5, 0.5]
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _config, backends
from ._inputs import (Target, array_config, array_target, batch_shape, check_backend_name,
                      check_chunk, check_dtype, check_nan_policy, check_nonempty, check_samples,
                      check_seed, check_thresholds, compute_dtype, mc_config, mc_target,
                      normalize_axis)
from ._kernels.row import NOBS, OBS_NAMES
from .registries import with_observable_table
from ._util import check_progress, progress_bar
from .backends import get_backend, resolve
from .backends.common import ArrayJob, Backend, ModelJob
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
    return str(get_backend("cpu").info()["threading layer"])


# what an operation needs that a backend does not offer, said to the user
_OPERATION_HINTS = {
    "observables": "observables returns per-row arrays in host memory: pass a NumPy array "
                   "(summarize accepts device and dask arrays)",
    "softmax": "softmax needs a backend that computes it",
    "summarize_array": "summarize needs a backend that summarises arrays",
}


def _backend_for(x: Any, operation: str, backend: str = "auto") -> Backend:
    """The one input dispatch: the backend that runs ``operation`` on ``x``.

    The registered backends are asked ``can_take(x)`` in their fixed order
    (``backends.take``: TypeError naming x's type and every backend when none
    takes it).  ``backend=`` "auto" keeps that choice; "cpu" or "cuda" names
    a kernel backend instead, which must take x itself, or be the ``inner``
    backend of the executor that takes x (a dask array's chunks run on the
    CPU backend).  The operation must be among the chosen backend's
    ``operations``; a backend that cannot run here is a RuntimeError saying
    why (``backends.get_backend``)."""
    name = check_backend_name(backend)
    taker = backends.take(x)
    if name not in ("auto", taker) and not backends.default(name).can_take(x):
        be = backends.default(taker)
        if be.inner != name:
            runs = f", running the {be.inner} backend on its blocks" if be.inner else ""
            raise ValueError(f"backend={backend!r} cannot take x, a {backends.type_name(x)}: "
                             f"the {taker} backend takes it ({be.takes}){runs}")
    elif name != "auto":
        taker = name
    if operation not in backends.default(taker).operations:
        raise TypeError(f"{_OPERATION_HINTS[operation]}; the {taker} backend, which takes x "
                        f"(a {backends.type_name(x)}), does not run {operation}")
    return get_backend(taker)


def _labels(target: Any, backend: Backend) -> tuple[Any, bool]:
    """(labels, lazy): an array ``target`` in host memory, through the
    ``to_host`` of the backend that takes it; labels of an executor's own
    kind stay where they are (lazy) and are checked as its blocks run."""
    if target is None or isinstance(target, (str, bytes, numbers.Number, np.generic)):
        return target, False                 # not labels: array_target says what is wrong
    try:
        owner = backends.take(target, "target")
    except TypeError:
        return target, False
    if owner == backend.name and backend.inner is not None:
        return target, True
    return get_backend(owner).to_host(target), False


def _array_job(be: Backend, x: Any, target: Any, axis: Any, thresholds: Any,
               nan_policy: Any) -> tuple[Any, ArrayJob]:
    nan_policy = check_nan_policy(nan_policy)
    thr = check_thresholds(thresholds)
    x, shape, dtype = be.array_info(x)
    cdt, _ = compute_dtype(dtype)
    axes = normalize_axis(axis, len(shape))
    check_nonempty(shape)
    batch, n = batch_shape(shape, axes)
    labels, lazy = _labels(target, be)
    tgt = array_target(labels, batch, n, lazy_labels=lazy)
    rows = int(np.prod(batch, dtype=np.int64))
    return x, ArrayJob(shape=shape, dtype=dtype, cdt=cdt, axes=axes, batch=batch, n=n,
                       rows=rows, target=tgt, thresholds=thr, nan_policy=nan_policy)


# --------------------------------------------------------------------------
# softmax / log_softmax

def _softmax(x: Any, axis: Any, log: bool) -> Any:
    be = _backend_for(x, "softmax")
    x, shape, dtype = be.array_info(x)
    compute_dtype(dtype)                      # a non-numeric dtype: TypeError now
    return be.softmax(x, normalize_axis(axis, len(shape), allow_scalar=True), log)


def softmax(x: Any, axis: int | tuple[int, ...] | None = -1) -> Any:
    r"""Softmax along ``axis``, numpy-like, dtype kept.

    .. math::  p_i = \frac{\exp(x_i - m)}{\sum_j \exp(x_j - m)},\qquad m = \max_j x_j

    The max is subtracted first, so large logits never overflow; ``-inf``
    logits get probability exactly 0.

    Parameters
    ----------
    x : array_like
        Logits: float16/32/64, integers or bools (promoted to float64), a
        CUDA device array (numba, CuPy, PyTorch: computed on its GPU), or a
        dask array (a lazy dask array: each block's softmax, the softmax
        axes rechunked to one chunk).
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
        its device, a dask input a dask array.

    Raises
    ------
    TypeError
        A complex, object or string array; an input no backend takes (the
        message names its type); a bad ``axis`` type.
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

    <the observables: fastsoftmax.registries.observable_table()>

    Every value is computed in the log domain (see ``fastsoftmax._kernels.row``):
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
    be = _backend_for(x, "observables")
    x, job = _array_job(be, x, target, axis, (), nan_policy)
    vals = be.observables(x, job)
    out = {name: vals[k].reshape(job.batch) for k, name in enumerate(OBS_NAMES)}
    out.update({"log10_" + name: vals[NOBS + k].reshape(job.batch)
                for k, name in enumerate(OBS_NAMES)})
    return out


observables.__doc__ = with_observable_table(observables.__doc__)


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


@dataclass(frozen=True)
class Prepared:
    """A validated call (every argument checked, nothing computed yet):
    ``run()`` computes its Summary.  ``fs.summarize(...)`` is
    ``prepare_summarize(...).run()``; tools that report argument errors
    apart from failures while running (the CLI) call the two steps.

    ``backend`` runs ``job``: ``summarize_array(x, job)`` for an
    :class:`~fastsoftmax.backends.common.ArrayJob` (``x`` the array as the
    backend reads it), ``summarize_model(job)`` for a
    :class:`~fastsoftmax.backends.common.ModelJob` (``x`` None); ``progress``
    is the caller's request (False, True or a bar), ``config`` the
    Summary's configuration record."""
    backend: Backend
    job: ArrayJob | ModelJob
    config: dict
    x: Any = None
    progress: Any = False

    @property
    def rows(self) -> int:
        """The rows the job summarises (a progress bar's total)."""
        return self.job.rows if isinstance(self.job, ArrayJob) else self.job.samples

    def run(self) -> Summary:
        """The Summary of the job (a progress bar while it runs, if asked)."""
        bar = progress_bar(self.progress, self.rows)
        try:
            if isinstance(self.job, ArrayJob):
                acc = self.backend.summarize_array(self.x, self.job, bar)
            else:
                acc = self.backend.summarize_model(self.job, bar)
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
    be = _backend_for(x, "summarize_array", backend)
    x, job = _array_job(be, x, target, axis, thresholds, nan_policy)
    be.validate(job, progress)
    config = array_config(job.shape, job.dtype, job.axes, job.target, job.nan_policy)
    return Prepared(backend=be, job=job, config=config, x=x, progress=progress)


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
        # an executor over the workers' backend: their GPUs decide, not this machine's
        be = get_backend("dask", client=client, inner=backend)
    else:
        be = get_backend(resolve(backend))
    job = ModelJob(gen=model.gen_spec(), samples=samples, seed=seed, target=tgt,
                   thresholds=thr, dtype=dt, chunk=chunk)
    be.validate(job, progress)
    config = mc_config(model.name, model.params, samples, seed, tgt, dt, be.inner or be.name,
                       thr)
    return Prepared(backend=be, job=job, config=config, progress=progress)
