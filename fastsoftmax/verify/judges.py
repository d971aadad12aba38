"""Deprecated: the paper's judges are private from 0.3.0
(``fastsoftmax.verify._judges``); a claim of one's own is written with the
criteria of :mod:`fastsoftmax.verify.criteria`.  The 0.2.0 names stay
importable from here, with a DeprecationWarning, until 0.4.0.
"""
from __future__ import annotations

from typing import Any

from . import _MOVED, _moved

# the judges that left fastsoftmax.verify's namespace: the names 0.2.0 exported here
__all__ = [name for name, home in _MOVED.items() if home == "_judges"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _moved(f"{__name__}.{name}", name, "_judges")
