"""fastsoftmax: exact, fast statistics of softmax and cross-entropy gradients.

>>> import fastsoftmax as fs
>>> obs = fs.observables([[100.0, 101.0, 99.0]])
>>> round(float(obs["max_prob"][0]), 4)
0.6652

Public names: :func:`softmax`, :func:`log_softmax`, :func:`observables`,
:func:`summarize`, :func:`simulate`, :func:`sweep` (a parameter grid, from
:mod:`fastsoftmax.sweeps`), :func:`audit` (the accuracy of any softmax or
cross-entropy implementation, from :mod:`fastsoftmax.audits`), :class:`Summary`, :class:`Stat`, ``OBS_NAMES``,
the models (:mod:`fastsoftmax.models`) and the modules :mod:`fastsoftmax.sweeps`,
:mod:`fastsoftmax.audits`, :mod:`fastsoftmax.verify`, :mod:`fastsoftmax.theory`,
:mod:`fastsoftmax.torch` and :mod:`fastsoftmax.testing` (the last four imported
on first use).
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
from .audits import audit
from .sweeps import sweep

__all__ = ["OBS_NAMES", "ApproximationWarning", "Stat", "Summary", "audit", "audits",
           "log_softmax", "models", "observables", "simulate", "softmax", "summarize", "sweep",
           "sweeps", "testing", "theory", "verify",
           "__version__"]

# submodules imported on first attribute access (PEP 562): they pull in
# pandas, scipy or torch only when used (sweeps and audits are imported
# above: they import none of them before a sweep or an audit runs)
_LAZY = ("verify", "theory", "torch", "plot", "cli", "accumulate", "backends", "testing")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
