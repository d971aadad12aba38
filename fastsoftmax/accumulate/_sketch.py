"""The sketch part: a bucket mapping and one store of counts per observable.

As DDSketch combines a ``LogarithmicMapping`` with a ``DenseStore``, a
:class:`Sketch` combines the :class:`~fastsoftmax._kernels.sketch.BucketMapping`
(which bucket a log10 falls in, and what a bucket stands for) with one
:class:`~fastsoftmax._kernels.sketch.WindowStore` (the counts, as canonical dense
windows) per observable.  Adding sketches adds counts: exact and
associative, in any order.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._kernels.row import NOBS
from .._kernels.sketch import MAPPING, BucketMapping, WindowStore
from . import _serial

__all__ = ["Sketch"]


class Sketch:
    """Bucket counts of ``nobs`` observables over one bucket mapping.

    ``mapping`` is the geometry (:data:`~fastsoftmax._kernels.sketch.MAPPING`, the
    one the kernels are compiled for), ``stores[k]`` observable k's counts.
    ``a + b`` (or :meth:`merge`) is a new sketch with the counts of both,
    ``a += b`` adds ``b``'s counts to ``a``; sketches of other observables
    or another mapping are a ValueError.
    """

    __slots__ = ("mapping", "stores")

    def __init__(self, nobs: int = NOBS, mapping: BucketMapping = MAPPING) -> None:
        self.mapping = mapping
        self.stores = [WindowStore() for _ in range(nobs)]

    @property
    def nobs(self) -> int:
        """The number of observables."""
        return len(self.stores)

    def copy(self) -> Sketch:
        new = Sketch(0, self.mapping)
        new.stores = [s.copy() for s in self.stores]   # count arrays shared, never written
        return new

    def add(self, k: int, start: int, counts: np.ndarray) -> None:
        """Add counts of buckets start, start + 1, ... of observable k (in place)."""
        self.stores[k].add(start, counts)

    def _check(self, other: object) -> Sketch:
        if not isinstance(other, Sketch):
            raise TypeError(f"cannot merge a Sketch with {type(other).__name__}")
        if other.nobs != self.nobs:
            raise ValueError(f"cannot merge sketches of different observables ({self.nobs} "
                             f"vs {other.nobs})")
        if other.mapping != self.mapping:
            raise ValueError(f"cannot merge sketches of different bucket mappings "
                             f"({self.mapping} vs {other.mapping})")
        return other

    def __iadd__(self, other: Sketch) -> Sketch:
        for a, b in zip(self.stores, self._check(other).stores):
            a += b
        return self

    def __add__(self, other: Sketch) -> Sketch:
        self._check(other)
        new = self.copy()
        new += other
        return new

    def merge(self, other: Sketch) -> Sketch:
        """A new sketch with the counts of both (exact): ``self + other``."""
        return self + other

    def sparse(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(bucket indices, counts) of observable k's nonzero buckets, in order."""
        return self.stores[k].sparse()

    def total(self, k: int) -> int:
        """The number of values of observable k counted."""
        return self.stores[k].total()

    def nbytes(self) -> int:
        """Memory held by the windows."""
        return sum(s.nbytes() for s in self.stores)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sketch) or other.nobs != self.nobs:
            return NotImplemented
        return self.mapping == other.mapping and all(
            a == b for a, b in zip(self.stores, other.stores))

    def to_dict(self) -> dict[str, Any]:
        """The dict form: ``layout`` (the mapping's dict) and ``windows``.

        ``windows[k]`` is observable k's store, ``[[start, [counts...]], ...]``.
        """
        return {"layout": self.mapping.to_dict(),
                "windows": [[[int(s), c.tolist()] for s, c in st.windows]
                            for st in self.stores]}

    @staticmethod
    def check_layout(d: Any) -> None:
        """ValueError unless ``d`` (a sketch's dict) was written with :data:`MAPPING`."""
        layout = _serial.need(d, "layout", "sketch")
        if layout != MAPPING.to_dict():
            raise ValueError("summary was written with a different sketch geometry "
                             f"({layout}; this version uses {MAPPING.to_dict()})")

    @classmethod
    def from_dict(cls, d: Any, nobs: int = NOBS) -> Sketch:
        """The sketch of :meth:`to_dict`'s output; ValueError naming what is wrong
        (another mapping's layout first: its windows would mean other buckets)."""
        cls.check_layout(d)
        data = _serial.need(d, "windows", "sketch")
        if not isinstance(data, list) or len(data) != nobs:
            raise _serial.malformed(f"sketch windows must be a list of {nobs} entries (one "
                                    "per observable)")
        sk = cls(nobs, MAPPING)
        for k, wins in enumerate(data):
            what = f"sketch windows[{k}]"
            if not isinstance(wins, list):
                raise _serial.malformed(f"{what} must be a list")
            read = []
            for w in wins:
                if (not isinstance(w, list) or len(w) != 2
                        or isinstance(w[0], bool) or not isinstance(w[0], int)):
                    raise _serial.malformed(f"{what} entries must be [start, [counts...]]")
                start = int(w[0])
                c = _serial.ints(w[1], f"{what} counts").reshape(-1)
                if start < 0 or start + c.size > MAPPING.ntot:
                    raise _serial.malformed(f"{what} bucket {start}..{start + c.size - 1} is "
                                            f"outside [0, {MAPPING.ntot})")
                read.append((start, c))
            sk.stores[k] = WindowStore(read)      # canonical windows: one pass over them
        return sk

    def __repr__(self) -> str:
        return f"Sketch({self.nobs} observables, {[s.total() for s in self.stores]} values)"
