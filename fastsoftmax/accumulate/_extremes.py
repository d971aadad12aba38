"""The extremes part: min and max of every channel, and its infinite values.

Per channel (the value of each observable, then its log10: ``NCH``), the
smallest and largest value (infinities included: a value of exactly 0 has
log10 min -inf) and the number of infinite values, which the moments leave
out.  Exact in any order: min, max and integer sums.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import _serial
from ._moments import NCH

__all__ = ["Extremes"]


class Extremes:
    """Min, max (infinities included) and the count of infinite values per channel.

    ``vmin``, ``vmax`` (float64) and ``nonfinite`` (int64) are arrays of
    ``NCH`` entries, written by the backends; an empty part has +inf, -inf
    and 0.  ``a + b`` is a new part, ``a += b`` changes ``a`` only.
    """

    __slots__ = ("vmin", "vmax", "nonfinite")

    def __init__(self, vmin: Any = None, vmax: Any = None, nonfinite: Any = None) -> None:
        self.vmin = np.full(NCH, np.inf) if vmin is None else np.asarray(vmin, np.float64)
        self.vmax = np.full(NCH, -np.inf) if vmax is None else np.asarray(vmax, np.float64)
        self.nonfinite = (np.zeros(NCH, dtype=np.int64) if nonfinite is None
                          else np.asarray(nonfinite, np.int64))

    def copy(self) -> Extremes:
        return Extremes(self.vmin.copy(), self.vmax.copy(), self.nonfinite.copy())

    def __iadd__(self, other: Extremes) -> Extremes:
        if not isinstance(other, Extremes):
            raise TypeError(f"cannot merge Extremes with {type(other).__name__}")
        if other.vmin.shape != self.vmin.shape:
            raise ValueError(f"cannot merge extremes of {other.vmin.size} channels into "
                             f"{self.vmin.size}")
        np.minimum(self.vmin, other.vmin, out=self.vmin)
        np.maximum(self.vmax, other.vmax, out=self.vmax)
        self.nonfinite += other.nonfinite
        return self

    def __add__(self, other: Extremes) -> Extremes:
        new = self.copy()
        new += other
        return new

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Extremes):
            return NotImplemented
        return all(np.array_equal(getattr(self, k), getattr(other, k))
                   for k in ("vmin", "vmax", "nonfinite"))

    def nbytes(self) -> int:
        return self.vmin.nbytes + self.vmax.nbytes + self.nonfinite.nbytes

    def to_dict(self) -> dict[str, Any]:
        """``{"min": [...], "max": [...], "nonfinite": [...]}`` (JSON floats and ints)."""
        return {"min": _serial.floats_out(self.vmin), "max": _serial.floats_out(self.vmax),
                "nonfinite": self.nonfinite.tolist()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Extremes:
        """The part of :meth:`to_dict`'s output; ValueError naming what is wrong."""
        where = "the accumulator"
        return cls(_serial.floats(_serial.need(d, "min", where), "min", (NCH,)),
                   _serial.floats(_serial.need(d, "max", where), "max", (NCH,)),
                   _serial.ints(_serial.need(d, "nonfinite", where), "nonfinite", (NCH,)))

    def __repr__(self) -> str:
        return f"Extremes(min={self.vmin.tolist()}, max={self.vmax.tolist()})"
