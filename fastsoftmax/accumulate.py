r"""The accumulator layout and its merges.

An accumulator summarises the per-row observables of any number of rows in
memory independent of that number:

* ``count`` rows observed, ``skipped`` rows omitted (bad input, ``nan_policy
  ="omit"``);
* for each of the 2 * NOBS channels (the value of each observable, then its
  log10), the count, mean and sum of squared deviations (Welford/Chan) of the
  finite values, the min and max (infinities included) and the number of
  infinite values;
* for each observable, exact counts of values below each threshold;
* for each observable, a log-bucket sketch without a floor (``_sketch``):
  quantiles within 1% in value and 0.005 (0.1% beyond |log10| = 1000) in
  log10, at any depth; its size follows the data.

The moments of a run are combined over its fixed blocks of rows (block b =
rows b * block_rows .. ) by a fixed binary tree over the global block index
(:class:`MomentTree`): node (L, i) is the Chan merge of nodes (L-1, 2i) and
(L-1, 2i+1), and the total folds the nodes left over right to left.  A run,
or any piece of it that starts and ends on block boundaries, keeps at most
one node per level (64 nodes: memory does not grow with the number of rows),
and pieces joined in order (``concat``) give the bits of one pass, whatever
the threads, chunks or Dask partitions.  ``merge`` (any two accumulators, in
any order) uses Chan's formula on the totals.  Integer parts (counts, sketch,
thresholds) and min/max merge exactly either way.
"""
import math

import numpy as np
from numba import njit
from numba.extending import register_jitable

from ._config import SKETCH_A_HI, SKETCH_A_LO, SKETCH_B_RATIO, SKETCH_W
from ._math import NOBS, obs_log10, obs_value
from ._simd import chan_ss, chan_stats, vector_width
from ._sketch import I_BELOW_A, I_NEGINF, Sketch, bucket_below, bucket_fast
from ._vmath import fmax, fmin

NCH = 2 * NOBS
TREE_DEPTH = 64
_I_BELOW_A_F = float(I_BELOW_A)


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


@register_jitable(error_model="numpy")
def block_reduce(lam, nr, thr, val, mom, vmin, vmax, nonf, below, hist, sk_lo, sk_hi, sk_ninf,
                 sk_start):
    """Reduce one block of per-row natural logs ``lam[k, :nr]`` (NaN for bad
    rows) into the block's moments ``mom[c, 0:3]`` and into running per-thread
    min/max/infinite counts, threshold counts and sketch counts.

    ``val`` is scratch of shape (NCH + 1, >= nr).  Moments are computed in two
    passes (mean, then squared deviations) over the finite values, rows in 16
    float64 lanes folded by a fixed tree (``_simd.chan_stats`` / ``chan_ss``):
    the order is the code's, the same bits on every CPU.  Counts are
    integers; min/max are exact in any order.  Every loop but the sketch's
    scatter vectorizes.
    The sketch (see ``_sketch``): ``hist[k, i - sk_start]`` counts bucket i of
    observable k, ``sk_lo``/``sk_hi`` the range touched, ``sk_ninf`` the -inf
    values; region-B buckets (rare) need a log and are found in the scatter.
    """
    vector_width()
    for k in range(NOBS):
        for r in range(nr):
            lk = lam[k, r]
            val[k, r] = obs_value(lk)
            val[NOBS + k, r] = obs_log10(lk)
    for c in range(NCH):
        cnt, s, ninf, mn, mx = chan_stats(val, c, nr)
        mean = s / cnt if cnt > 0 else 0.0
        mom[c, 0] = cnt
        mom[c, 1] = mean
        mom[c, 2] = chan_ss(val, c, nr, mean)
        vmin[c] = fmin(vmin[c], mn)
        vmax[c] = fmax(vmax[c], mx)
        nonf[c] += ninf
    nt = thr.shape[0]
    for k in range(NOBS):
        for j in range(nt):
            tj = thr[j]
            cb = 0
            for r in range(nr):
                cb += 1 if val[k, r] < tj else 0
            below[k, j] += cb
        # bucket indices (branch-free, vectorized); how many fall below region
        # A (-inf, region B or NaN) and the range of the others
        below_a = 0
        bmin = np.inf
        bmax = -np.inf
        for r in range(nr):
            b = bucket_fast(val[NOBS + k, r])
            val[NCH, r] = b
            below_a += 1 if b == _I_BELOW_A_F else 0
        for r in range(nr):
            b = val[NCH, r]
            bmin = fmin(bmin, np.inf if b == _I_BELOW_A_F else b)
            bmax = fmax(bmax, -np.inf if b == _I_BELOW_A_F else b)
        if below_a == 0:
            # the common case: a bare scatter (region A, "above" and +inf)
            for r in range(nr):
                hist[k, int(val[NCH, r]) - sk_start] += 1
            sk_lo[k] = min(sk_lo[k], int(bmin) - sk_start)
            sk_hi[k] = max(sk_hi[k], int(bmax) - sk_start)
            continue
        lo = sk_lo[k]
        hi = sk_hi[k]
        for r in range(nr):
            lv = val[NOBS + k, r]
            if lv == lv:
                i = int(val[NCH, r])
                if i == I_BELOW_A:
                    i = bucket_below(lv)
                    if i == I_NEGINF:
                        sk_ninf[k] += 1
                        continue
                i -= sk_start
                hist[k, i] += 1
                lo = i if i < lo else lo
                hi = i if i > hi else hi
        sk_lo[k] = lo
        sk_hi[k] = hi


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
    """The ordered moments of a run's blocks [block0, state[1]) (see the
    module docstring)."""

    __slots__ = ("nodes", "level", "index", "state", "block0", "_total")

    def __init__(self, block0=0):
        self.nodes = np.zeros((TREE_DEPTH, NCH, 3))
        self.level = np.zeros(TREE_DEPTH, dtype=np.int64)
        self.index = np.zeros(TREE_DEPTH, dtype=np.int64)
        self.state = np.array([0, block0], dtype=np.int64)
        self.block0 = int(block0)
        self._total = None

    @property
    def block1(self):
        """The block after the last one pushed."""
        return int(self.state[1])

    def push_blocks(self, mom, nblk, gb0):
        if gb0 != self.block1:
            raise ValueError(f"blocks must follow on: got block {gb0}, expected {self.block1}")
        tree_push_blocks(self.nodes, self.level, self.index, self.state, mom, nblk, gb0)
        self._total = None

    def extend(self, other):
        if other.block0 != self.block1:
            raise ValueError(f"concat needs the rows that follow on: the other piece starts "
                             f"at block {other.block0}, this one ends at {self.block1}")
        tree_push_nodes(self.nodes, self.level, self.index, self.state, other.nodes,
                        other.level, other.index, int(other.state[0]))
        self._total = None

    def total(self):
        if self._total is None:
            t = np.zeros((NCH, 3))
            tree_total(self.nodes, int(self.state[0]), t)
            self._total = t
        return self._total

    def copy(self):
        new = MomentTree(self.block0)
        d = int(self.state[0])
        new.nodes[:d] = self.nodes[:d]
        new.level[:d] = self.level[:d]
        new.index[:d] = self.index[:d]
        new.state[:] = self.state
        return new


def merge_parts_into(dst, src):
    """Fold every part of ``src`` but the moments and the sketch into ``dst``
    in place: counts, extremes, infinite and threshold counts."""
    dst.count += src.count
    dst.skipped += src.skipped
    np.minimum(dst.vmin, src.vmin, out=dst.vmin)
    np.maximum(dst.vmax, src.vmax, out=dst.vmax)
    dst.nonfinite += src.nonfinite
    dst.below += src.below


class Accumulator:
    """Plain arrays, a :class:`MomentTree` and a :class:`~fastsoftmax._sketch.Sketch`;
    see the module docstring.

    ``merge`` (the union of two sets of rows, in any order) and ``concat``
    (rows that follow on: ``other`` starts at the block where ``self`` ends)
    return a new accumulator.  ``tree`` is None once merged out of order (the
    moments are then a plain total).
    """

    __slots__ = ("count", "skipped", "_mom", "tree", "vmin", "vmax", "nonfinite",
                 "thresholds", "below", "sketch")

    def __init__(self, thresholds, block0=0):
        thresholds = np.asarray(thresholds, dtype=np.float64).reshape(-1)
        self.count = 0
        self.skipped = 0
        self.tree = MomentTree(block0)
        self._mom = None
        self.vmin = np.full(NCH, np.inf)
        self.vmax = np.full(NCH, -np.inf)
        self.nonfinite = np.zeros(NCH, dtype=np.int64)
        self.thresholds = thresholds
        self.below = np.zeros((NOBS, thresholds.size), dtype=np.int64)
        self.sketch = Sketch(NOBS)

    @property
    def mom(self):
        """(NCH, 3): count, mean and sum of squared deviations per channel."""
        return self.tree.total() if self.tree is not None else self._mom

    def copy(self):
        new = Accumulator(self.thresholds.copy())
        new.count, new.skipped = self.count, self.skipped
        for name in ("vmin", "vmax", "nonfinite", "below"):
            setattr(new, name, getattr(self, name).copy())
        new.tree = None if self.tree is None else self.tree.copy()
        new._mom = None if self._mom is None else self._mom.copy()
        new.sketch = self.sketch.copy()
        return new

    def compatible(self, other):
        return (self.thresholds.shape == other.thresholds.shape
                and np.array_equal(self.thresholds, other.thresholds))

    def _check(self, other):
        if not isinstance(other, Accumulator):
            raise TypeError(f"cannot merge an Accumulator with {type(other).__name__}")
        if not self.compatible(other):
            raise ValueError(
                "cannot merge summaries with different thresholds "
                f"({self.thresholds.tolist()} vs {other.thresholds.tolist()})")

    def merge(self, other):
        """The union of two disjoint sets of rows (Chan's formula)."""
        self._check(other)
        new = self.copy()
        a, b = self.mom, other.mom
        m = np.empty((NCH, 3))
        for c in range(NCH):
            m[c] = chan_merge(*a[c], *b[c])
        new.tree, new._mom = None, m
        merge_parts_into(new, other)
        new.sketch = self.sketch.merge(other.sketch)
        return new

    def concat(self, other):
        """The rows of ``self`` followed by those of ``other``: a piece of the
        same run starting at the block where ``self`` ends (bits of one pass)."""
        self._check(other)
        if other.tree is None or self.tree is None:
            raise ValueError("concat needs accumulators of one run (not merged ones)")
        new = self.copy()
        new.tree.extend(other.tree)
        merge_parts_into(new, other)
        new.sketch = self.sketch.merge(other.sketch)
        return new

    def __eq__(self, other):
        if not isinstance(other, Accumulator):
            return NotImplemented
        return (self.count == other.count and self.skipped == other.skipped
                and self.compatible(other) and np.array_equal(self.mom, other.mom)
                and all(np.array_equal(getattr(self, k), getattr(other, k))
                        for k in ("vmin", "vmax", "nonfinite", "below"))
                and self.sketch == other.sketch)

    def nbytes(self):
        """Memory held (the arrays and the sketch's windows)."""
        tree = 0 if self.tree is None else self.tree.nodes.nbytes + 2 * TREE_DEPTH * 8
        return (tree + self.vmin.nbytes * 2 + self.nonfinite.nbytes + self.below.nbytes
                + self.sketch.nbytes())

    # -- serialisation: strict JSON (non-finite floats as strings)
    def to_dict(self):
        return {
            "count": int(self.count),
            "skipped": int(self.skipped),
            "thresholds": _floats_out(self.thresholds),
            "moments": [_floats_out(row) for row in self.mom],
            "min": _floats_out(self.vmin),
            "max": _floats_out(self.vmax),
            "nonfinite": self.nonfinite.tolist(),
            "below": self.below.tolist(),
            "sketch": {"layout": SKETCH_LAYOUT, "windows": self.sketch.to_list()},
        }

    @classmethod
    def from_dict(cls, d):
        """The accumulator of ``to_dict``'s output; ValueError naming what is
        wrong for anything else."""
        return _from_dict(cls, d)


def _floats_out(a):
    return [float(v) if math.isfinite(v) else repr(float(v)) for v in np.asarray(a).ravel()]


# what a serialised sketch's buckets mean (from_dict refuses other layouts)
SKETCH_LAYOUT = {"a_lo": SKETCH_A_LO, "a_hi": SKETCH_A_HI, "width": SKETCH_W,
                 "b_ratio": SKETCH_B_RATIO, "version": 2}


def _from_dict(cls, d):
    def need(obj, key, where):
        if not isinstance(obj, dict):
            raise ValueError(f"malformed summary: {where} must be an object, got "
                             f"{type(obj).__name__}")
        if key not in obj:
            raise ValueError(f"malformed summary: {where} has no {key!r}")
        return obj[key]

    def shaped(a, what, shape):
        if shape is None:
            return a
        if a.size != int(np.prod(shape)):
            raise ValueError(f"malformed summary: {what} has {a.size} values, expected "
                             f"{int(np.prod(shape))}")
        return a.reshape(shape)

    def floats(v, what, shape=None):
        try:
            a = np.array([float(x) for x in np.asarray(v, dtype=object).ravel()],
                         dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"malformed summary: {what} must be numbers") from None
        return shaped(a, what, shape)

    def ints(v, what, shape=None):
        try:
            a = np.asarray(v)
            if a.size and a.dtype.kind not in "iu":
                raise TypeError
            a = a.astype(np.int64)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"malformed summary: {what} must be integers") from None
        if a.size and a.min() < 0:
            raise ValueError(f"malformed summary: {what} must be >= 0")
        return shaped(a, what, shape)

    sk = need(d, "sketch", "the accumulator")
    layout = need(sk, "layout", "sketch")
    if layout != SKETCH_LAYOUT:
        raise ValueError("summary was written with a different sketch geometry "
                         f"({layout}; this version uses {SKETCH_LAYOUT})")
    thr = floats(need(d, "thresholds", "the accumulator"), "thresholds")
    if thr.size and not np.all(np.isfinite(thr) & (thr > 0)):
        raise ValueError("malformed summary: thresholds must be positive finite numbers")
    acc = cls(thr)
    for key in ("count", "skipped"):
        v = need(d, key, "the accumulator")
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"malformed summary: {key} must be an integer >= 0, got {v!r}")
        setattr(acc, key, int(v))
    acc.tree = None
    acc._mom = floats(need(d, "moments", "the accumulator"), "moments", (NCH, 3))
    acc.vmin = floats(need(d, "min", "the accumulator"), "min", (NCH,))
    acc.vmax = floats(need(d, "max", "the accumulator"), "max", (NCH,))
    acc.nonfinite = ints(need(d, "nonfinite", "the accumulator"), "nonfinite", (NCH,))
    acc.below = ints(need(d, "below", "the accumulator"), "below", (NOBS, thr.size))
    acc.sketch = Sketch.from_list(need(sk, "windows", "sketch"), NOBS)
    if max((acc.sketch.total(k) for k in range(NOBS)), default=0) > acc.count:
        raise ValueError("malformed summary: the sketch holds more rows than count")
    return acc
