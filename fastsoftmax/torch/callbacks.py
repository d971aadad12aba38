"""Deprecated: the callbacks live in :mod:`fastsoftmax.torch.hf`
(:class:`~fastsoftmax.torch.hf.ProbeCallback`) and
:mod:`fastsoftmax.torch.lightning`
(:class:`~fastsoftmax.torch.lightning.LightningProbeCallback`), and both are
importable from :mod:`fastsoftmax.torch`.  Their names stay importable from
here, with a DeprecationWarning, until 0.4.0.
"""
from __future__ import annotations

import importlib
import warnings
from typing import Any

__all__ = ["ProbeCallback", "LightningProbeCallback"]

_MOVED = {"ProbeCallback": "fastsoftmax.torch.hf",
          "LightningProbeCallback": "fastsoftmax.torch.lightning"}


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"fastsoftmax.torch.callbacks.{name} is deprecated and will be removed in "
                  f"0.4.0: use fastsoftmax.torch.{name}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(_MOVED[name]), name)
