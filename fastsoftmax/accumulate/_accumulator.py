"""The accumulator: the rows counted and the four parts, side by side.

``count`` rows observed and ``skipped`` rows omitted (bad input,
``nan_policy="omit"``), then one part per kind of statistic, each with its
own merge and dict form: :class:`~fastsoftmax.accumulate.Moments`,
:class:`~fastsoftmax.accumulate.Extremes`,
:class:`~fastsoftmax.accumulate.ThresholdCounts` and
:class:`~fastsoftmax.accumulate.Sketch`.  The arrays the backends fill are the
parts' own (``acc.vmin`` is ``acc.extremes.vmin``, ``acc.tree`` is
``acc.moments.tree``, ...), so the kernels are those of a plain-array layout.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._kernels.row import NOBS
from . import _serial
from ._extremes import Extremes
from ._moments import MomentTree, Moments
from ._sketch import Sketch
from ._thresholds import ThresholdCounts

__all__ = ["Accumulator"]


class Accumulator:
    """The rows counted and the parts (see the module docstring).

    ``merge`` / ``+`` (the union of two sets of rows, in any order) and
    ``concat`` (rows that follow on: ``other`` starts at the block where
    ``self`` ends; the bits of one pass) return a new accumulator; ``+=``
    adds ``other`` in place.  None of them changes ``other``.  Once merged
    out of order the moments are a plain total (``moments.tree`` is None).
    """

    __slots__ = ("count", "skipped", "moments", "extremes", "threshold_counts", "sketch")

    def __init__(self, thresholds: Any, block0: int = 0) -> None:
        self.count = 0
        self.skipped = 0
        self.moments = Moments(block0)
        self.extremes = Extremes()
        self.threshold_counts = ThresholdCounts(thresholds)
        self.sketch = Sketch(NOBS)

    # -- the parts' arrays under the names the backends and Stat use
    @property
    def tree(self) -> MomentTree:
        """The moment tree of one run, which the backends push blocks on.

        Raises
        ------
        ValueError
            The accumulator was merged out of order (``+``): its moments are
            a plain total (``moments.tree`` is None).
        """
        if self.moments.tree is None:
            raise ValueError("a merged accumulator has no moment tree (its moments are a "
                             "plain total)")
        return self.moments.tree

    @property
    def mom(self) -> np.ndarray:
        """(NCH, 3): count, mean and sum of squared deviations per channel."""
        return self.moments.total

    @property
    def vmin(self) -> np.ndarray:
        """(NCH,) smallest value per channel."""
        return self.extremes.vmin

    @vmin.setter
    def vmin(self, v: np.ndarray) -> None:
        self.extremes.vmin = np.asarray(v, np.float64)

    @property
    def vmax(self) -> np.ndarray:
        """(NCH,) largest value per channel."""
        return self.extremes.vmax

    @vmax.setter
    def vmax(self, v: np.ndarray) -> None:
        self.extremes.vmax = np.asarray(v, np.float64)

    @property
    def nonfinite(self) -> np.ndarray:
        """(NCH,) infinite values per channel."""
        return self.extremes.nonfinite

    @nonfinite.setter
    def nonfinite(self, v: np.ndarray) -> None:
        self.extremes.nonfinite = np.asarray(v, np.int64)

    @property
    def thresholds(self) -> np.ndarray:
        """The configured thresholds (float64)."""
        return self.threshold_counts.thresholds

    @property
    def below(self) -> np.ndarray:
        """(NOBS, thresholds): values below each threshold."""
        return self.threshold_counts.below

    @below.setter
    def below(self, v: np.ndarray) -> None:
        self.threshold_counts.below = np.asarray(v, np.int64)

    # -- merging
    def copy(self) -> Accumulator:
        new = Accumulator.__new__(Accumulator)
        new.count, new.skipped = self.count, self.skipped
        new.moments = self.moments.copy()
        new.extremes = self.extremes.copy()
        new.threshold_counts = self.threshold_counts.copy()
        new.sketch = self.sketch.copy()
        return new

    def compatible(self, other: Accumulator) -> bool:
        """Whether ``other`` can be merged into this one (the same thresholds)."""
        return self.threshold_counts.compatible(other.threshold_counts)

    def _check(self, other: object) -> Accumulator:
        if not isinstance(other, Accumulator):
            raise TypeError(f"cannot merge an Accumulator with {type(other).__name__}")
        self.threshold_counts.check(other.threshold_counts)
        return other

    def _add_counted(self, other: Accumulator) -> None:
        """Add every part but the moments (exact in any order)."""
        self.count += other.count
        self.skipped += other.skipped
        self.extremes += other.extremes
        self.threshold_counts += other.threshold_counts
        self.sketch += other.sketch

    def __iadd__(self, other: Accumulator) -> Accumulator:
        other = self._check(other)
        self.moments += other.moments
        self._add_counted(other)
        return self

    def __add__(self, other: Accumulator) -> Accumulator:
        self._check(other)
        new = self.copy()
        new += other
        return new

    def merge(self, other: Accumulator) -> Accumulator:
        """The union of two disjoint sets of rows (Chan's formula): ``self + other``."""
        return self + other

    def concat(self, other: Accumulator) -> Accumulator:
        """The rows of ``self`` followed by those of ``other``: a piece of the
        same run starting at the block where ``self`` ends (bits of one pass)."""
        other = self._check(other)
        new = self.copy()
        new.moments = self.moments.concat(other.moments)
        new._add_counted(other)
        return new

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Accumulator):
            return NotImplemented
        return (self.count == other.count and self.skipped == other.skipped
                and self.threshold_counts == other.threshold_counts
                and self.moments == other.moments and self.extremes == other.extremes
                and self.sketch == other.sketch)

    def nbytes(self) -> int:
        """Memory held (the arrays and the sketch's windows)."""
        return (self.moments.nbytes() + self.extremes.nbytes()
                + self.threshold_counts.nbytes() + self.sketch.nbytes())

    # -- serialisation: each part's dict form, in the order of _serial.KEYS
    def to_dict(self) -> dict[str, Any]:
        """The accumulator as strict JSON types (see ``accumulate._serial``)."""
        return _serial.ordered({"count": int(self.count), "skipped": int(self.skipped),
                                **self.threshold_counts.to_dict(), **self.moments.to_dict(),
                                **self.extremes.to_dict(), "sketch": self.sketch.to_dict()})

    @classmethod
    def from_dict(cls, d: Any) -> Accumulator:
        """The accumulator of :meth:`to_dict`'s output; ValueError naming what
        is wrong for anything else."""
        where = "the accumulator"
        sk = _serial.need(d, "sketch", where)
        Sketch.check_layout(sk)                  # another geometry: nothing else is readable
        acc = cls.__new__(cls)
        acc.threshold_counts = ThresholdCounts.from_dict(d)
        acc.count = _serial.count(_serial.need(d, "count", where), "count")
        acc.skipped = _serial.count(_serial.need(d, "skipped", where), "skipped")
        acc.moments = Moments.from_dict(d)
        acc.extremes = Extremes.from_dict(d)
        acc.sketch = Sketch.from_dict(sk, NOBS)
        if max((acc.sketch.total(k) for k in range(NOBS)), default=0) > acc.count:
            raise _serial.malformed("the sketch holds more rows than count")
        return acc

    def __repr__(self) -> str:
        return f"Accumulator(count={self.count}, skipped={self.skipped}, {self.threshold_counts})"
