"""fastsoftmax: exact, fast statistics of softmax and cross-entropy gradients.

>>> import fastsoftmax as fs
>>> obs = fs.observables([[100.0, 101.0, 99.0]])
>>> round(float(obs["max_prob"][0]), 4)
0.6652

Public names: :func:`softmax`, :func:`log_softmax`, :func:`observables`,
:func:`summarize`, :func:`simulate`, :func:`sweep` (a parameter grid, from
:mod:`fastsoftmax.sweeps`), :class:`Summary`, :class:`Stat`, ``OBS_NAMES``,
the models (:mod:`fastsoftmax.models`) and the modules :mod:`fastsoftmax.sweeps`,
:mod:`fastsoftmax.verify`, :mod:`fastsoftmax.theory` and :mod:`fastsoftmax.torch`
(the last three imported on first use).
Importing fastsoftmax compiles nothing.
"""
from __future__ import annotations

import importlib
from typing import Any

from . import models
from ._kernels.row import OBS_NAMES
from ._version import __version__
from .api import log_softmax, observables, simulate, softmax, summarize
from .summary import ApproximationWarning, Stat, Summary
from .sweeps import sweep

__all__ = ["OBS_NAMES", "ApproximationWarning", "Stat", "Summary", "log_softmax", "models",
           "observables", "simulate", "softmax", "summarize", "sweep", "sweeps", "theory",
           "verify",
           "__version__"]

# submodules imported on first attribute access (PEP 562): they pull in
# pandas, scipy or torch only when used (sweeps is imported above: it
# imports none of them before a sweep runs)
_LAZY = ("verify", "theory", "torch", "plot", "cli", "accumulate", "backends")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
