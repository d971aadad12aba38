"""The threshold-counts part: exact counts of values below each threshold.

For each observable and each configured threshold t, the number of rows
whose value is below t (``Stat.fraction_below`` divides it by the rows).
Two parts merge only when their thresholds are the same; counts add.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._kernels.row import NOBS
from . import _serial

__all__ = ["ThresholdCounts"]


class ThresholdCounts:
    """Counts ``below[k, j]`` of values of observable k below ``thresholds[j]``.

    ``thresholds`` is a float64 array (positive, finite: checked where the
    user gives them), ``below`` an int64 array (NOBS, thresholds.size)
    written by the backends.  ``a + b`` is a new part, ``a += b`` changes
    ``a`` only; different thresholds are a ValueError naming both.
    """

    __slots__ = ("thresholds", "below")

    def __init__(self, thresholds: Any, below: Any = None) -> None:
        self.thresholds = np.asarray(thresholds, dtype=np.float64).reshape(-1)
        self.below = (np.zeros((NOBS, self.thresholds.size), dtype=np.int64) if below is None
                      else np.asarray(below, np.int64))

    def copy(self) -> ThresholdCounts:
        return ThresholdCounts(self.thresholds.copy(), self.below.copy())

    def compatible(self, other: ThresholdCounts) -> bool:
        """Whether ``other`` counts below the same thresholds."""
        return (self.thresholds.shape == other.thresholds.shape
                and bool(np.array_equal(self.thresholds, other.thresholds)))

    def check(self, other: object) -> ThresholdCounts:
        """``other`` if it can be added to this part, else TypeError / ValueError."""
        if not isinstance(other, ThresholdCounts):
            raise TypeError(f"cannot merge ThresholdCounts with {type(other).__name__}")
        if not self.compatible(other):
            raise ValueError(
                "cannot merge summaries with different thresholds "
                f"({self.thresholds.tolist()} vs {other.thresholds.tolist()})")
        return other

    def __iadd__(self, other: ThresholdCounts) -> ThresholdCounts:
        self.below += self.check(other).below
        return self

    def __add__(self, other: ThresholdCounts) -> ThresholdCounts:
        self.check(other)
        new = self.copy()
        new += other
        return new

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ThresholdCounts):
            return NotImplemented
        return self.compatible(other) and bool(np.array_equal(self.below, other.below))

    def nbytes(self) -> int:
        return self.below.nbytes

    def to_dict(self) -> dict[str, Any]:
        """``{"thresholds": [...], "below": [[...] per observable]}``."""
        return {"thresholds": _serial.floats_out(self.thresholds),
                "below": self.below.tolist()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ThresholdCounts:
        """The part of :meth:`to_dict`'s output; ValueError naming what is wrong."""
        where = "the accumulator"
        thr = _serial.floats(_serial.need(d, "thresholds", where), "thresholds")
        if thr.size and not np.all(np.isfinite(thr) & (thr > 0)):
            raise _serial.malformed("thresholds must be positive finite numbers")
        below = _serial.ints(_serial.need(d, "below", where), "below", (NOBS, thr.size))
        return cls(thr, below)

    def __repr__(self) -> str:
        return f"ThresholdCounts({self.thresholds.tolist()})"
