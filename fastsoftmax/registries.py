"""The package's registries: plain records that every layer reads.

Nothing here imports the rest of the package, so the compiled kernels, the
argument checks and the tools above them all derive their tables, choices
and constants from the same records.
"""
from __future__ import annotations

import enum
from typing import Any, Callable

__all__ = ["TargetMode", "TARGET_ARGMAX", "TARGET_FIXED", "TARGET_LABELS", "TARGET_RANDOM",
           "TARGET_SAMPLED", "BUILTIN_BACKENDS", "REGISTERED_BACKENDS", "backend_names"]


# targets: one enum, shared by the kernels (as ints) and the Python layers

class TargetMode(enum.IntEnum):
    """Which class y a row's cross-entropy observables use."""
    ARGMAX = 0      #: the top class (a confidently right model)
    FIXED = 1       #: one class index for every row
    LABELS = 2      #: a label per row (an integer array)
    RANDOM = 3      #: a uniform label from the counter-based stream (Monte Carlo)
    SAMPLED = 4     #: y ~ Categorical(softmax(x)) (Monte Carlo: a calibrated model)


# plain ints for the compiled kernels (numba freezes module-level ints)
TARGET_ARGMAX = int(TargetMode.ARGMAX)
TARGET_FIXED = int(TargetMode.FIXED)
TARGET_LABELS = int(TargetMode.LABELS)
TARGET_RANDOM = int(TargetMode.RANDOM)
TARGET_SAMPLED = int(TargetMode.SAMPLED)


# --------------------------------------------------------------------------
# backends: their names, the one list that the argument checks, the backend
# registry (fastsoftmax.backends) and the command line's choices read

#: The built-in backends and the modules that implement them, in the order
#: ``fastsoftmax.backends.take`` asks them: the CPU first, so that "auto"
#: keeps host arrays on the host (the CUDA backend reads them too).
BUILTIN_BACKENDS: dict[str, str] = {
    "cpu": "fastsoftmax.backends.cpu",
    "cuda": "fastsoftmax.backends.cuda",
    "dask": "fastsoftmax.backends.dask",
}

#: Backends registered at run time (``fastsoftmax.backends.register``):
#: name -> factory(**options) returning an object with the backend contract.
REGISTERED_BACKENDS: dict[str, Callable[..., Any]] = {}


def backend_names() -> tuple[str, ...]:
    """Every registered backend's name: the built-in ones, then those
    registered at run time, in the order ``fastsoftmax.backends.take`` asks
    them."""
    return tuple(BUILTIN_BACKENDS) + tuple(REGISTERED_BACKENDS)
