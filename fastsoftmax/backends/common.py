"""The backend contract: what every backend (cpu, cuda, dask) implements.

A backend is a small object, in the manner of xarray's
``BackendEntrypoint``: :class:`Backend` lists every operation
:mod:`fastsoftmax.api` calls, and the api calls nothing else.  It receives
inputs the api has already validated (the job records below, built by
``_inputs``) and returns a finished
:class:`~fastsoftmax.accumulate.Accumulator` (its moment tree lets pieces of
one run ``concat`` to the bits of one pass), or an array.  A backend never
imports ``api`` nor another backend's modules; the Dask executor reaches
the CPU or CUDA backend of its workers through
:func:`fastsoftmax.backends.get_backend`, like any caller.

Which backend runs an input is asked of the backends themselves:
:meth:`Backend.can_take` (xarray's ``guess_can_open``), in the registry's
fixed order (:func:`fastsoftmax.backends.take`).  An operation a backend
cannot run is absent from :attr:`Backend.operations`, and its method raises
:class:`UnsupportedOperation` (as ``io`` streams answer ``readable()`` and
raise ``io.UnsupportedOperation``), so the api can refuse it up front.  An
*executor* (``inner`` set: the Dask executor) runs no kernel itself: it
takes its own kind of input (a dask array, a cluster's client) and runs the
``inner`` backend on the blocks where they live.

Bad rows: with ``nan_policy="raise"`` a backend raises the error built by
``_inputs.bad_row_error`` (rows of an array) or
``_inputs.generated_row_error`` (rows of a model) for the first bad row, and
stops; with ``"omit"`` it skips and counts them (``Accumulator.skipped``).
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .._kernels.gen import GenSpec
from .._inputs import Target, is_dask_array, is_device_array
from ..accumulate import Accumulator

__all__ = ["ArrayJob", "ModelJob", "Backend", "OPERATIONS", "UnsupportedOperation",
           "unsupported", "is_host_array"]

#: The operations of the contract that a backend may or may not run
#: (:attr:`Backend.operations` is a subset); the other methods of
#: :class:`Backend` (``can_take``, ``array_info``, ``validate``, ``status``,
#: ``info``) every backend answers.
OPERATIONS = ("summarize_array", "summarize_model", "softmax", "observables", "to_host")


@dataclass(frozen=True)
class ArrayJob:
    """Summarise the rows of an array: x seen as (rows, n), softmax axes last.

    ``shape``/``dtype`` describe x; ``cdt`` is the compute dtype; ``batch``
    the shape without the softmax ``axes``; ``target`` its labels flat (or a
    dask array on the Dask path); ``chunk`` rows per kernel call (None: the
    backend's choice)."""
    shape: tuple
    dtype: np.dtype
    cdt: np.dtype
    axes: tuple
    batch: tuple
    n: int
    rows: int
    target: Target
    thresholds: np.ndarray
    nan_policy: str
    chunk: int | None = None


@dataclass(frozen=True)
class ModelJob:
    """Summarise rows [row0, row0 + samples) of a model's stream for ``seed``.

    ``row0`` is a multiple of the block size in rows
    (``_config.block_rows(gen.n)``) so that pieces of one run line up."""
    gen: GenSpec
    samples: int
    seed: int
    target: Target
    thresholds: np.ndarray
    dtype: np.dtype
    chunk: int | None = None
    row0: int = 0


class UnsupportedOperation(TypeError):
    """An operation called on a backend that does not advertise it."""


def unsupported(backend: Any, operation: str) -> UnsupportedOperation:
    """The error a backend raises from an operation it does not run."""
    runs = ", ".join(op for op in OPERATIONS if op in backend.operations)
    return UnsupportedOperation(f"the {backend.name} backend does not run {operation} "
                                f"(it runs {runs})")


def is_host_array(x: Any) -> bool:
    """An array-like in host memory: a NumPy array or memmap, a scalar, a
    (nested) list or tuple, or an object with ``__array__`` or
    ``__array_interface__`` (pandas, CPU PyTorch tensors) -- but not a CUDA
    device array (device memory) nor a dask array (not computed yet), which
    often have ``__array__`` too.  Strings are not array-likes here."""
    if is_device_array(x) or is_dask_array(x):
        return False
    return (isinstance(x, (np.ndarray, np.generic, numbers.Number, list, tuple))
            or hasattr(x, "__array__") or hasattr(x, "__array_interface__"))


@runtime_checkable
class Backend(Protocol):
    """Every operation :mod:`fastsoftmax.api` calls on a backend.

    Attributes
    ----------
    name : str
        The registry name (``"cpu"``, ``"cuda"``, ``"dask"``).
    takes : str
        The inputs :meth:`can_take` accepts, for error messages
        ("dask arrays").
    description : str
        One line: what it runs, and where.
    operations : frozenset of str
        The operations of :data:`OPERATIONS` it runs; the others raise
        :class:`UnsupportedOperation`.
    inner : str or None
        None for a backend that runs kernels itself; for an executor, the
        name of the backend it runs on the blocks ("cpu" or "cuda").
    """
    name: str
    takes: str
    description: str
    operations: frozenset[str]
    inner: str | None

    def can_take(self, x: Any) -> bool:
        """Whether this backend reads input ``x`` (its type, not its values).

        Parameters
        ----------
        x : object
            An input of ``softmax``, ``observables`` or ``summarize``.

        Returns
        -------
        bool
            True for the kinds of arrays it reads (no data is looked at;
            never raises).
        """
        ...

    def array_info(self, x: Any) -> tuple[Any, tuple[int, ...], np.dtype]:
        """Input ``x`` as this backend reads it, its shape and dtype.

        Nothing is copied nor moved (an array-like becomes an ndarray).

        Parameters
        ----------
        x : object
            An input this backend takes (:meth:`can_take`).

        Returns
        -------
        tuple
            (x, shape, dtype).

        Raises
        ------
        TypeError
            A non-numeric array.
        ValueError
            A shape this backend cannot know (a dask array with unknown
            chunk sizes).
        """
        ...

    def validate(self, job: ArrayJob | ModelJob, progress: Any) -> None:
        """Refuse, before any work, the options this backend cannot honour.

        Parameters
        ----------
        job : ArrayJob or ModelJob
            The validated job.
        progress : bool or object
            The caller's progress request.

        Raises
        ------
        ValueError
            An option this backend does not use (``chunk``, ``progress``)
            or a job it cannot run.
        """
        ...

    def summarize_array(self, x: Any, job: ArrayJob, progress: Any = None) -> Accumulator:
        """The accumulator of the rows of array ``x``.

        Parameters
        ----------
        x : object
            The array, as :meth:`array_info` returned it.
        job : ArrayJob
            Its shape, axes, target, thresholds and nan_policy.
        progress : object, optional
            None or an object with ``update(rows)``.

        Returns
        -------
        Accumulator
            Finished: counts, moments, extremes, thresholds, sketch.

        Raises
        ------
        ValueError
            The first bad row (``nan_policy="raise"``) or bad label.
        """
        ...

    def summarize_model(self, job: ModelJob, progress: Any = None) -> Accumulator:
        """The accumulator of rows [row0, row0 + samples) of a model's stream.

        Parameters
        ----------
        job : ModelJob
            The generator, samples, seed, target, thresholds and dtype.
        progress : object, optional
            None or an object with ``update(rows)``.

        Returns
        -------
        Accumulator
            Finished, its moment tree starting at block ``row0 // block_rows``.

        Raises
        ------
        FloatingPointError
            A generated row is not finite.
        """
        ...

    def softmax(self, x: Any, axes: tuple[int, ...], log: bool) -> Any:
        """Softmax (or log-softmax) of ``x`` along ``axes``, as ``fs.softmax``.

        Parameters
        ----------
        x : object
            The array, as :meth:`array_info` returned it.
        axes : tuple of int
            The normalised softmax axes (``()`` for a 0-d host array).
        log : bool
            log_softmax instead of softmax.

        Returns
        -------
        object
            An array of x's kind and shape in the result dtype of
            ``fs.softmax`` (float32/float64 kept, float16 returned as
            float16, integers as float64); a 0-d host input gives a scalar.
        """
        ...

    def observables(self, x: Any, job: ArrayJob) -> np.ndarray:
        """Every observable of every row of ``x``, in host memory.

        Parameters
        ----------
        x : object
            The array, as :meth:`array_info` returned it.
        job : ArrayJob
            Its shape, axes, target and nan_policy.

        Returns
        -------
        ndarray
            (2 NOBS, rows) float64: each observable's value, then its log10;
            NaN for bad rows with ``nan_policy="omit"``.

        Raises
        ------
        ValueError
            The first bad row (``nan_policy="raise"``).
        """
        ...

    def to_host(self, a: Any) -> np.ndarray:
        """The contents of array ``a`` (of a kind this backend takes) in host memory.

        Parameters
        ----------
        a : object
            Labels, say: a device array (copied), a dask array (computed).

        Returns
        -------
        ndarray
            A NumPy array.
        """
        ...

    def status(self) -> tuple[bool, str]:
        """Whether this backend can run here, and if not why.

        Returns
        -------
        tuple of (bool, str)
            (usable, why): never raises.
        """
        ...

    def info(self) -> dict[str, Any]:
        """What this backend runs on here (``fastsoftmax info`` prints it).

        Returns
        -------
        dict of str to object
            E.g. the CPU's threads and threading layer, the GPU's name;
            never raises (an unusable backend says why).
        """
        ...
