"""The 0.2.0 spellings kept as deprecated aliases: how they warn.

Each alias warns ``DeprecationWarning`` once per process, naming the new
spelling, and then calls it: the alias holds no formula of its own.
Deprecated aliases are left out of ``__all__`` and of the API reference;
docs/api.rst lists them beside their new spelling.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

# the old names that have warned in this process
_WARNED: set[str] = set()


def warn_once(old: str, new: str) -> None:
    """Warn that ``old`` is deprecated in favour of ``new``, once per process."""
    if old in _WARNED:
        return
    _WARNED.add(old)
    warnings.warn(f"fastsoftmax.theory: {old} is deprecated (a 0.2.0 spelling), use {new}: "
                  "the same law, one spelling", DeprecationWarning, stacklevel=3)


def deprecated_function(old: str, new: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """A module-level alias ``old`` that warns, then returns ``fn(...)``."""
    @functools.wraps(fn)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warn_once(old, new)
        return fn(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old.rsplit(".", 1)[-1]
    alias.__doc__ = f"Deprecated 0.2.0 spelling of ``{new}`` (warns once, then calls it)."
    return alias


class DeprecatedMethod:
    """A method alias of a class: ``obj.old(...)`` warns, then returns
    ``fn(obj, ...)``.  A descriptor, not a function, so that the API
    reference and its checks list the class's current methods only."""

    def __init__(self, old: str, new: str, fn: Callable[..., Any]) -> None:
        self.old, self.new, self.fn = old, new, fn
        self.__doc__ = f"Deprecated 0.2.0 spelling of ``{new}`` (warns once, then calls it)."

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self

        @functools.wraps(self.fn)
        def bound(*args: Any, **kwargs: Any) -> Any:
            warn_once(self.old, self.new)
            return self.fn(obj, *args, **kwargs)

        bound.__doc__ = self.__doc__
        return bound
