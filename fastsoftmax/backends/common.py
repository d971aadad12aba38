"""The backend contract: what every backend (cpu, cuda, dask) implements.

A backend is a small object with a few entry points, called by
:mod:`fastsoftmax.api` with inputs it has already validated (the job
records below, built by ``_inputs``); each returns a finished
:class:`~fastsoftmax.accumulate.Accumulator` (its moment tree lets pieces of
one run ``concat`` to the bits of one pass),
or, for ``softmax``, an array.  A backend never imports ``api`` nor another
backend's modules; the Dask backend reaches the CPU or CUDA backend of its
workers through :func:`fastsoftmax.backends.get_backend`, like any caller.

Bad rows: with ``nan_policy="raise"`` a backend raises the error built by
``_inputs.bad_row_error`` (rows of an array) or
``_inputs.generated_row_error`` (rows of a model) for the first bad row, and
stops; with ``"omit"`` it skips and counts them (``Accumulator.skipped``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .._gen import GenSpec
from .._inputs import Target
from ..accumulate import Accumulator

__all__ = ["ArrayJob", "ModelJob", "Backend"]


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


@runtime_checkable
class Backend(Protocol):
    """What ``api`` calls.  ``progress`` is None or an object with
    ``update(rows)``."""
    name: str

    def summarize_array(self, x: Any, job: ArrayJob,
                        progress: Any = None) -> Accumulator: ...

    def summarize_model(self, job: ModelJob, progress: Any = None) -> Accumulator: ...

    def softmax(self, x: Any, axes: tuple, log: bool) -> Any: ...
