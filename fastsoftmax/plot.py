"""Deprecated: each figure lives with its feature.

* :func:`fastsoftmax.sweeps.plot.plot_sweep` and
  :func:`fastsoftmax.sweeps.plot.quantile_bands`: the sweep's figure;
* :func:`fastsoftmax.torch.plot.plot_history`: the attention probe's history;
* ``verify``'s figures: written by ``fastsoftmax.verify.run(out=...)``.

The old names stay importable from here, with a DeprecationWarning, until
0.4.0.
"""
from __future__ import annotations

import importlib
import warnings
from typing import Any

# old name -> (module, name) of its home
_MOVED = {
    "plot_sweep": ("fastsoftmax.sweeps.plot", "plot_sweep"),
    "quantile_bands": ("fastsoftmax.sweeps.plot", "quantile_bands"),
    "QCOLS": ("fastsoftmax.sweeps.plot", "QCOLS"),
    "FLOOR": ("fastsoftmax.sweeps.plot", "FLOOR"),
    "verify_plots": ("fastsoftmax.verify._plot", "verify_plots"),
    "context_plot": ("fastsoftmax.verify._plot", "context_plot"),
    "plot_history": ("fastsoftmax.torch.plot", "plot_history"),
    "HISTORY_PANELS": ("fastsoftmax.torch.plot", "HISTORY_PANELS"),
}

__all__ = ["plot_sweep", "verify_plots", "quantile_bands", "context_plot", "plot_history"]


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _MOVED[name]
    warnings.warn(f"fastsoftmax.plot.{name} is deprecated and will be removed in 0.4.0: "
                  f"use {module}.{attr}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(module), attr)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MOVED))
