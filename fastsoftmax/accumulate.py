r"""The accumulator layout and its merge.

An accumulator summarises the per-row observables of any number of rows in
memory independent of that number:

* ``count`` rows observed, ``skipped`` rows omitted (bad input, ``nan_policy
  ="omit"``);
* for each of the 2 * NOBS channels (the value of each observable, then its
  log10), the count, mean and sum of squared deviations (Welford/Chan) of the
  finite values, the min and max (infinities included) and the number of
  infinite values;
* for each observable, exact counts of values below each threshold;
* for each observable, a log-bucket sketch (DDSketch-style): counts of log10
  values in buckets of constant width ``SKETCH_W``, so any quantile is known
  within a relative error of ``SKETCH_ALPHA`` <= 1%.

Integer parts (counts, sketch, thresholds) and min/max merge exactly in any
order.  The moments are folded block by block in block order by the drivers,
which makes a whole run bitwise reproducible; ``merge`` of two accumulators
uses Chan's parallel formula.
"""
import math

import numpy as np
from numba import njit
from numba.extending import register_jitable

from ._config import SKETCH_HI, SKETCH_LO, SKETCH_NB, SKETCH_W
from ._math import NOBS, obs_log10, obs_value
from ._vmath import fmax, fmin

NCH = 2 * NOBS
_INV_W = 1.0 / SKETCH_W


# hot helpers: numpy error model (no ZeroDivisionError branches that would
# stop vectorization) and inlined into the caller's loops
hot = register_jitable(error_model="numpy", forceinline=True)


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


@hot
def sketch_bucket(l):
    """Bucket of a log10 value, as a float: 0 below SKETCH_LO (and -inf),
    NB-1 at or above SKETCH_HI (and +inf).  NaN maps to 0 (callers skip NaN).
    Branch-free, no float->int conversion: vectorizes."""
    f = (l - SKETCH_LO) * _INV_W
    f = f if f == f else -1.0
    f = -1.0 if f < -1.0 else f
    f = SKETCH_NB - 2.0 if f > SKETCH_NB - 2.0 else f
    return math.floor(f) + 1.0


@register_jitable
def sketch_index(l):
    return int(sketch_bucket(l))


@register_jitable(error_model="numpy")
def block_reduce(lam, nr, thr, val, mom, vmin, vmax, nonf, below, hist):
    """Reduce one block of per-row natural logs ``lam[k, :nr]`` (NaN for bad
    rows) into the block's moments ``mom[c, 0:3]`` and into running per-thread
    min/max/infinite counts, threshold counts and sketch counts.

    ``val`` is scratch of shape (NCH + 1, >= nr).  Moments are computed in two
    passes (mean, then squared deviations) over the finite values.  Every loop
    but the sketch's scatter is a branch-free reduction that vectorizes.
    """
    for k in range(NOBS):
        for r in range(nr):
            lk = lam[k, r]
            val[k, r] = obs_value(lk)
            val[NOBS + k, r] = obs_log10(lk)
    for c in range(NCH):
        cnt = 0.0
        s = 0.0
        ninf = 0.0
        mn = vmin[c]
        mx = vmax[c]
        for r in range(nr):
            z = val[c, r]
            fin = abs(z) < np.inf
            cnt += 1.0 if fin else 0.0
            s += z if fin else 0.0
            ninf += 1.0 if abs(z) == np.inf else 0.0
            mn = fmin(mn, z)
            mx = fmax(mx, z)
        mean = s / cnt if cnt > 0.0 else 0.0
        ss = 0.0
        for r in range(nr):
            z = val[c, r]
            d = z - mean
            ss += d * d if abs(z) < np.inf else 0.0
        mom[c, 0] = cnt
        mom[c, 1] = mean
        mom[c, 2] = ss
        vmin[c] = mn
        vmax[c] = mx
        nonf[c] += np.int64(ninf)
    nt = thr.shape[0]
    for k in range(NOBS):
        for j in range(nt):
            tj = thr[j]
            cb = 0.0
            for r in range(nr):
                cb += 1.0 if val[k, r] < tj else 0.0
            below[k, j] += np.int64(cb)
        for r in range(nr):
            val[NCH, r] = sketch_bucket(val[NOBS + k, r])
        for r in range(nr):
            if val[NOBS + k, r] == val[NOBS + k, r]:
                hist[k, int(val[NCH, r])] += 1


# Blocks are folded into segments of SEGMENT_BLOCKS consecutive blocks (each
# segment starting empty), and segments into the total, in order.  A piece of
# a run that starts on a segment boundary (a chunk, a Dask task) hands back
# its segments, and folding every piece's segments in order gives the same
# bits as one local pass.
SEGMENT_BLOCKS = 256


@njit(cache=True, nogil=True)
def fold_blocks(seg, mom, nblk, gb0, segs_out):
    """Fold per-block moments mom[:nblk] (global block indices gb0, gb0+1,
    ...) into the open segment ``seg``; each segment completed is copied to
    segs_out[k] in order.  Returns the number of segments completed."""
    k = 0
    for b in range(nblk):
        for c in range(seg.shape[0]):
            n, m, s = chan_merge(seg[c, 0], seg[c, 1], seg[c, 2],
                                 mom[b, c, 0], mom[b, c, 1], mom[b, c, 2])
            seg[c, 0] = n
            seg[c, 1] = m
            seg[c, 2] = s
        if (gb0 + b + 1) % SEGMENT_BLOCKS == 0:
            segs_out[k] = seg
            seg[:] = 0.0
            k += 1
    return k


def fold_segments(segments, out=None):
    """Total moments from segment moments, folded in order."""
    tot = np.zeros((NCH, 3)) if out is None else out
    for sg in segments:
        for c in range(NCH):
            tot[c] = chan_merge(*tot[c], *sg[c])
    return tot


def merge_parts_into(dst, src):
    """Fold every part of ``src`` but the sketch into ``dst`` in place: counts,
    moments (Chan), extremes, infinite and threshold counts.  Shared by
    ``Accumulator.merge`` and accumulators that carry their sketch otherwise."""
    dst.count += src.count
    dst.skipped += src.skipped
    for c in range(NCH):
        dst.mom[c] = chan_merge(*dst.mom[c], *src.mom[c])
    np.minimum(dst.vmin, src.vmin, out=dst.vmin)
    np.maximum(dst.vmax, src.vmax, out=dst.vmax)
    dst.nonfinite += src.nonfinite
    dst.below += src.below


class Accumulator:
    """Plain arrays; see the module docstring.

    ``merge`` (the union of two sets of rows, in any order) and ``concat``
    (rows that follow on: ``other`` starts where ``self`` ends, on a segment
    boundary) return a new accumulator.  ``segments`` holds the ordered
    segment moments of a run (``None`` once merged out of order): ``concat``
    folds ``other``'s segments after ``self``'s, so pieces of one run give
    the bits of one pass.
    """

    __slots__ = ("count", "skipped", "mom", "vmin", "vmax", "nonfinite",
                 "thresholds", "below", "hist", "segments")

    def __init__(self, thresholds):
        thresholds = np.asarray(thresholds, dtype=np.float64).reshape(-1)
        self.count = 0
        self.skipped = 0
        self.mom = np.zeros((NCH, 3))
        self.vmin = np.full(NCH, np.inf)
        self.vmax = np.full(NCH, -np.inf)
        self.nonfinite = np.zeros(NCH, dtype=np.int64)
        self.thresholds = thresholds
        self.below = np.zeros((NOBS, thresholds.size), dtype=np.int64)
        self.hist = np.zeros((NOBS, SKETCH_NB), dtype=np.int64)
        self.segments = []

    def copy(self):
        new = Accumulator(self.thresholds.copy())
        new.count, new.skipped = self.count, self.skipped
        for name in ("mom", "vmin", "vmax", "nonfinite", "below", "hist"):
            setattr(new, name, getattr(self, name).copy())
        new.segments = None if self.segments is None else list(self.segments)
        return new

    def add_segments(self, segments):
        """Append ordered segment moments and fold them into the total."""
        fold_segments(segments, out=self.mom)
        if self.segments is not None:
            self.segments.extend(segments)

    def compatible(self, other):
        return (self.thresholds.shape == other.thresholds.shape
                and np.array_equal(self.thresholds, other.thresholds)
                and self.hist.shape == other.hist.shape)

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
        merge_parts_into(new, other)
        new.hist += other.hist
        new.segments = None
        return new

    def concat(self, other):
        """The rows of ``self`` followed by those of ``other`` (a piece of the
        same run that starts on a segment boundary right after ``self``)."""
        self._check(other)
        if other.segments is None or self.segments is None:
            raise ValueError("concat needs accumulators of one run (not merged ones)")
        new = self.copy()
        mom = new.mom.copy()          # the moments continue the ordered fold instead
        merge_parts_into(new, other)
        new.mom = mom
        new.add_segments(other.segments)
        new.hist += other.hist
        return new

    def __eq__(self, other):
        if not isinstance(other, Accumulator):
            return NotImplemented
        return (self.count == other.count and self.skipped == other.skipped
                and self.compatible(other)
                and all(np.array_equal(getattr(self, k), getattr(other, k))
                        for k in ("mom", "vmin", "vmax", "nonfinite", "below", "hist")))

    # -- serialisation: strict JSON (non-finite floats as strings), sparse sketch
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
            "sketch": {"lo": SKETCH_LO, "hi": SKETCH_HI, "width": SKETCH_W,
                       "bins": [_sparse(h) for h in self.hist]},
        }

    @classmethod
    def from_dict(cls, d):
        """The accumulator of ``to_dict``'s output; ValueError naming what is
        wrong for anything else."""
        return _from_dict(cls, d)


def _floats_out(a):
    return [float(v) if math.isfinite(v) else repr(float(v)) for v in np.asarray(a).ravel()]


def _sparse(h):
    idx = np.flatnonzero(h)
    return [idx.tolist(), h[idx].tolist()]


def _from_dict(cls, d):
    def need(obj, key, where):
        if not isinstance(obj, dict):
            raise ValueError(f"malformed summary: {where} must be an object, got "
                             f"{type(obj).__name__}")
        if key not in obj:
            raise ValueError(f"malformed summary: {where} has no {key!r}")
        return obj[key]

    def floats(v, what, shape=None):
        try:
            a = np.array([float(x) for x in np.asarray(v, dtype=object).ravel()],
                         dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"malformed summary: {what} must be numbers") from None
        if shape is not None:
            if a.size != int(np.prod(shape)):
                raise ValueError(f"malformed summary: {what} has {a.size} values, expected "
                                 f"{int(np.prod(shape))}")
            a = a.reshape(shape)
        return a

    def ints(v, what, shape=None, nonneg=True):
        try:
            a = np.asarray(v)
            if a.size and a.dtype.kind not in "iu":
                raise TypeError
            a = a.astype(np.int64)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"malformed summary: {what} must be integers") from None
        if nonneg and a.size and a.min() < 0:
            raise ValueError(f"malformed summary: {what} must be >= 0")
        if shape is not None:
            if a.size != int(np.prod(shape)):
                raise ValueError(f"malformed summary: {what} has {a.size} values, expected "
                                 f"{int(np.prod(shape))}")
            a = a.reshape(shape)
        return a

    sk = need(d, "sketch", "the accumulator")
    geom = tuple(need(sk, k, "sketch") for k in ("lo", "hi", "width"))
    if geom != (SKETCH_LO, SKETCH_HI, SKETCH_W):
        raise ValueError("summary was written with a different sketch geometry "
                         f"({geom}; this version uses {(SKETCH_LO, SKETCH_HI, SKETCH_W)})")
    thr = floats(need(d, "thresholds", "the accumulator"), "thresholds")
    if thr.size and not np.all(np.isfinite(thr) & (thr > 0)):
        raise ValueError("malformed summary: thresholds must be positive finite numbers")
    acc = cls(thr)
    for key in ("count", "skipped"):
        v = need(d, key, "the accumulator")
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"malformed summary: {key} must be an integer >= 0, got {v!r}")
        setattr(acc, key, int(v))
    acc.mom = floats(need(d, "moments", "the accumulator"), "moments", (NCH, 3))
    acc.vmin = floats(need(d, "min", "the accumulator"), "min", (NCH,))
    acc.vmax = floats(need(d, "max", "the accumulator"), "max", (NCH,))
    acc.nonfinite = ints(need(d, "nonfinite", "the accumulator"), "nonfinite", (NCH,))
    acc.below = ints(need(d, "below", "the accumulator"), "below", (NOBS, thr.size))
    bins = need(sk, "bins", "sketch")
    if not isinstance(bins, list) or len(bins) != NOBS:
        raise ValueError(f"malformed summary: sketch bins must be a list of {NOBS} entries")
    for k, b in enumerate(bins):
        if not isinstance(b, list) or len(b) != 2:
            raise ValueError(f"malformed summary: sketch bins[{k}] must be [indices, counts]")
        idx = ints(b[0], f"sketch bins[{k}] indices")
        cnt = ints(b[1], f"sketch bins[{k}] counts")
        if idx.shape != cnt.shape or idx.ndim != 1:
            raise ValueError(f"malformed summary: sketch bins[{k}] indices and counts differ "
                             "in length")
        if idx.size and idx.max() >= SKETCH_NB:
            raise ValueError(f"malformed summary: sketch bins[{k}] index {int(idx.max())} is "
                             f"outside [0, {SKETCH_NB})")
        if np.unique(idx).size != idx.size:
            raise ValueError(f"malformed summary: sketch bins[{k}] repeats an index")
        acc.hist[k, idx] = cnt
    if int(acc.hist.sum(axis=1).max(initial=0)) > acc.count:
        raise ValueError("malformed summary: the sketch holds more rows than count")
    acc.segments = None
    return acc
