r"""The moments part: count, mean and sum of squared deviations per channel.

A channel is the value of one observable (channels 0 .. NOBS - 1) or its
log10 (NOBS .. NCH - 1); only finite values enter the moments.  Two sets of
rows combine by Chan et al.'s formula (:func:`chan_merge`): with counts
:math:`n_a, n_b`, means :math:`m_a, m_b` and sums of squared deviations
:math:`S_a, S_b`,

.. math::

    n = n_a + n_b, \quad m = m_a + (m_b - m_a) \frac{n_b}{n}, \quad
    S = S_a + S_b + (m_b - m_a)^2 \frac{n_a n_b}{n}.

The moments of a run are combined over its fixed blocks of rows (block b =
rows b * block_rows .. ) by a fixed binary tree over the global block index
(:class:`MomentTree`): node (L, i) is the Chan merge of nodes (L-1, 2i) and
(L-1, 2i+1), and the total folds the nodes left over right to left.  A run,
or any piece of it that starts and ends on block boundaries, keeps at most
one node per level (64 nodes: memory does not grow with the number of rows),
and pieces joined in order (:meth:`Moments.concat`) give the bits of one
pass, whatever the threads, chunks or Dask partitions.  ``+`` (any two sets
of rows, in any order) uses Chan's formula on the totals; the result is a
plain total, without a tree.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit
from numba.extending import register_jitable

from .._kernels.row import NOBS
from . import _serial

__all__ = ["NCH", "TREE_DEPTH", "chan_merge", "tree_push_blocks", "tree_push_nodes",
           "tree_total", "MomentTree", "Moments"]

NCH = 2 * NOBS
TREE_DEPTH = 64


@register_jitable
def chan_merge(n1, m1, s1, n2, m2, s2):
    """Chan et al.: merge (count, mean, M2) of two disjoint sets."""
    if n2 == 0:
        return n1, m1, s1
    if n1 == 0:
        return n2, m2, s2
    n = n1 + n2
    d = m2 - m1
    return n, m1 + d * (n2 / n), s1 + s2 + d * d * (n1 * (n2 / n))


# --------------------------------------------------------------------------
# the moment tree

@njit(cache=True, nogil=True)
def _tree_push(nodes, level, index, state, m, lev, idx):
    """Push node (lev, idx) with moments m (NCH, 3) on the stack and merge
    sibling pairs.  state = [depth, next block]."""
    d = state[0]
    nodes[d] = m
    level[d] = lev
    index[d] = idx
    d += 1
    while (d >= 2 and level[d - 1] == level[d - 2] and index[d - 1] % 2 == 1
           and index[d - 2] == index[d - 1] - 1):
        for c in range(nodes.shape[1]):
            n, mu, ss = chan_merge(nodes[d - 2, c, 0], nodes[d - 2, c, 1], nodes[d - 2, c, 2],
                                   nodes[d - 1, c, 0], nodes[d - 1, c, 1], nodes[d - 1, c, 2])
            nodes[d - 2, c, 0] = n
            nodes[d - 2, c, 1] = mu
            nodes[d - 2, c, 2] = ss
        level[d - 2] += 1
        index[d - 2] //= 2
        d -= 1
    state[0] = d
    state[1] = (idx + 1) << lev


@njit(cache=True, nogil=True)
def tree_push_blocks(nodes, level, index, state, mom, nblk, gb0):
    """Push the moments mom[:nblk] of blocks gb0, gb0 + 1, ... (leaves)."""
    for b in range(nblk):
        _tree_push(nodes, level, index, state, mom[b], 0, gb0 + b)


@njit(cache=True, nogil=True)
def tree_push_nodes(nodes, level, index, state, onodes, olevel, oindex, odepth):
    """Push another stack's nodes, in order (``concat``)."""
    for j in range(odepth):
        _tree_push(nodes, level, index, state, onodes[j], olevel[j], oindex[j])


@njit(cache=True, nogil=True)
def tree_total(nodes, depth, out):
    """The total: the stack folded right to left (the canonical tree's root)."""
    out[:] = 0.0
    if depth == 0:
        return
    out[:] = nodes[depth - 1]
    for j in range(depth - 2, -1, -1):
        for c in range(out.shape[0]):
            n, mu, ss = chan_merge(nodes[j, c, 0], nodes[j, c, 1], nodes[j, c, 2],
                                   out[c, 0], out[c, 1], out[c, 2])
            out[c, 0] = n
            out[c, 1] = mu
            out[c, 2] = ss


class MomentTree:
    """The ordered moments of a run's blocks [block0, block1) (see the
    module docstring): a stack of at most one node per tree level."""

    __slots__ = ("nodes", "level", "index", "state", "block0", "_total")

    def __init__(self, block0: int = 0) -> None:
        self.nodes = np.zeros((TREE_DEPTH, NCH, 3))
        self.level = np.zeros(TREE_DEPTH, dtype=np.int64)
        self.index = np.zeros(TREE_DEPTH, dtype=np.int64)
        self.state = np.array([0, block0], dtype=np.int64)
        self.block0 = int(block0)
        self._total: np.ndarray | None = None

    @property
    def block1(self) -> int:
        """The block after the last one pushed."""
        return int(self.state[1])

    def push_blocks(self, mom: np.ndarray, nblk: int, gb0: int) -> None:
        """Push the moments ``mom[:nblk]`` (NCH, 3 each) of blocks gb0, gb0 + 1, ..."""
        if gb0 != self.block1:
            raise ValueError(f"blocks must follow on: got block {gb0}, expected {self.block1}")
        tree_push_blocks(self.nodes, self.level, self.index, self.state, mom, nblk, gb0)
        self._total = None

    def extend(self, other: MomentTree) -> None:
        """Push the nodes of the piece that follows on (``other`` starts at block1)."""
        if other.block0 != self.block1:
            raise ValueError(f"concat needs the rows that follow on: the other piece starts "
                             f"at block {other.block0}, this one ends at {self.block1}")
        tree_push_nodes(self.nodes, self.level, self.index, self.state, other.nodes,
                        other.level, other.index, int(other.state[0]))
        self._total = None

    def total(self) -> np.ndarray:
        """(NCH, 3): the root of the canonical tree (cached; do not write to it)."""
        if self._total is None:
            t = np.zeros((NCH, 3))
            tree_total(self.nodes, int(self.state[0]), t)
            self._total = t
        return self._total

    def copy(self) -> MomentTree:
        new = MomentTree(self.block0)
        d = int(self.state[0])
        new.nodes[:d] = self.nodes[:d]
        new.level[:d] = self.level[:d]
        new.index[:d] = self.index[:d]
        new.state[:] = self.state
        return new

    def nbytes(self) -> int:
        return self.nodes.nbytes + 2 * TREE_DEPTH * 8


# --------------------------------------------------------------------------
# the part

class Moments:
    """Count, mean and M2 of the finite values of every channel.

    Either the :class:`MomentTree` of one run's blocks (``tree``; what the
    kernels fill, and what :meth:`concat` joins bit for bit) or, once merged
    with ``+``, a plain total (``tree`` is None).  ``total`` is the
    (NCH, 3) array either way.  ``a + b`` is a new part, ``a += b`` changes
    ``a`` only; an empty side leaves the other's numbers exactly.
    """

    __slots__ = ("tree", "_total")

    def __init__(self, block0: int = 0) -> None:
        self.tree: MomentTree | None = MomentTree(block0)
        self._total: np.ndarray | None = None

    @classmethod
    def of_total(cls, total: Any) -> Moments:
        """The part of a plain (NCH, 3) total (no tree)."""
        new = cls.__new__(cls)
        new.tree = None
        new._total = np.array(total, dtype=np.float64).reshape(NCH, 3)
        return new

    @property
    def total(self) -> np.ndarray:
        """(NCH, 3): count, mean and sum of squared deviations per channel."""
        if self.tree is not None:
            return self.tree.total()
        assert self._total is not None
        return self._total

    def copy(self) -> Moments:
        new = Moments.__new__(Moments)
        new.tree = None if self.tree is None else self.tree.copy()
        new._total = None if self._total is None else self._total.copy()
        return new

    def _check(self, other: object) -> Moments:
        if not isinstance(other, Moments):
            raise TypeError(f"cannot merge Moments with {type(other).__name__}")
        return other

    def __iadd__(self, other: Moments) -> Moments:
        other = self._check(other)
        a, b = self.total, other.total
        m = np.empty((NCH, 3))
        for c in range(NCH):
            m[c] = chan_merge(*a[c], *b[c])
        self.tree, self._total = None, m
        return self

    def __add__(self, other: Moments) -> Moments:
        new = self.copy()
        new += other
        return new

    def concat(self, other: Moments) -> Moments:
        """The moments of these rows followed by ``other``'s (the piece of the
        same run that starts where this one ends): the bits of one pass."""
        other = self._check(other)
        if self.tree is None or other.tree is None:
            raise ValueError("concat needs accumulators of one run (not merged ones)")
        new = self.copy()
        assert new.tree is not None
        new.tree.extend(other.tree)
        return new

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Moments):
            return NotImplemented
        return bool(np.array_equal(self.total, other.total))

    def nbytes(self) -> int:
        """Memory held (the tree's stack, or the total)."""
        return self.tree.nbytes() if self.tree is not None else self.total.nbytes

    def to_dict(self) -> dict[str, Any]:
        """``{"moments": [[count, mean, M2] per channel]}`` (the total; JSON floats)."""
        return {"moments": [_serial.floats_out(row) for row in self.total]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Moments:
        """The part of :meth:`to_dict`'s output (a plain total)."""
        return cls.of_total(_serial.floats(_serial.need(d, "moments", "the accumulator"),
                                           "moments", (NCH, 3)))

    def __repr__(self) -> str:
        kind = "tree" if self.tree is not None else "total"
        return f"Moments({kind}, count={self.total[:, 0].tolist()})"
