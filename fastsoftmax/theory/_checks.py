"""Argument checks of the laws, and the names they accept.

Every public entry point of :mod:`fastsoftmax.theory` validates its
arguments here, before any quadrature starts, with a ``ValueError`` (or a
``TypeError`` for non-numbers) that names the argument and its range.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..registries import OBSERVABLE, OBSERVABLES

OBS_NAMES = tuple(o.name for o in OBSERVABLES)
#: The observables with a saturation law (a small value means a saturated row):
#: ``law(model)[obs]`` covers them at any n, with exact bounds from its
#: ``bounds``; the others have an exact law for n <= 2 only.
SATURATING = tuple(o.name for o in OBSERVABLES if o.saturates)
# the ones whose value depends on the target class
TARGETED = tuple(o.name for o in OBSERVABLES if o.targeted)
TARGETS = ("argmax", "random")


def _real_array(name: str, v: ArrayLike) -> np.ndarray:
    try:
        a = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be real numbers, got {v!r}") from None
    if np.isnan(a).any():
        raise ValueError(f"{name} must not be NaN, got {v!r}")
    return a


def _check_n(n: ArrayLike) -> np.ndarray:
    a = _real_array("n", n)
    if (a < 1).any() or (a != np.floor(a)).any() or np.isinf(a).any():
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    return a


def _check_scale(name: str, v: ArrayLike) -> np.ndarray:
    a = _real_array(name, v)
    if (a < 0).any() or np.isinf(a).any():
        raise ValueError(f"{name} must be finite and >= 0, got {v!r}")
    return a


def _check_positive(name: str, v: ArrayLike) -> np.ndarray:
    a = _real_array(name, v)
    if not (a > 0).all() or np.isinf(a).any():
        raise ValueError(f"{name} must be finite and > 0, got {v!r}")
    return a


def _check_t(t: ArrayLike, name: str = "t") -> np.ndarray:
    a = _real_array(name, t)
    if not ((a > 0) & (a <= 1)).all():
        raise ValueError(f"{name} must lie in (0, 1], got {t!r}")
    return a


def _check_prob(name: str, q: ArrayLike) -> np.ndarray:
    a = _real_array(name, q)
    if not ((a >= 0) & (a <= 1)).all():
        raise ValueError(f"{name} must lie in [0, 1], got {q!r}")
    return a


def _check_obs(obs: str, allowed: tuple[str, ...] = OBS_NAMES) -> str:
    if obs not in allowed:
        raise ValueError(f"obs must be one of {', '.join(allowed)}; got {obs!r}")
    return obs


def _record(obs: str):
    """The registry's record of a checked observable name."""
    return OBSERVABLE[_check_obs(obs)]


def _check_target(target: str) -> str:
    if target not in TARGETS:
        raise ValueError(f"target must be 'argmax' or 'random', got {target!r}")
    return target


def _check_order(order: int) -> int:
    if order not in (0, 1):
        raise ValueError(f"order must be 0 or 1, got {order!r}")
    return order
