r"""The log-bucket sketch: quantiles of every observable, at any depth.

Each observable's L = log10(value) is counted in a bucket of one global
integer index space (geometry in ``_config``):

=====================  =====================================================
index                  holds
=====================  =====================================================
0                      L = -inf (the value is exactly 0)
1 .. NB                region B, L < A_LO: bucket j = floor(log_r(-L / -A_LO))
                       at index NB - j (more negative L, smaller index)
NB + 1 .. NB + NA      region A, A_LO <= L < A_HI: bucket i = floor((L - A_LO)/W)
                       at index NB + 1 + i
NB + NA + 1            finite L >= A_HI (unreachable by the observables)
NB + NA + 2            L = +inf
=====================  =====================================================

Region A's buckets have constant width W in L: the representative value of
a bucket, 2 gamma / (1 + gamma) times its lower edge (gamma = 10^W, as in
DDSketch), is within alpha = (gamma - 1)/(gamma + 1) < 1% of every value in
the bucket, and its log10 within W/2 = 0.0043 of every log10.  Region B's
buckets have constant ratio r of |L|: the representative |L|, 2 r/(1 + r)
times the lower edge, is within (r - 1)/(r + 1) < 0.1% of every |L| in the
bucket.  So ``Stat.quantile`` is within 1% in value wherever the value is at
least 1e-300 (L >= -300, inside region A), and ``Stat.log10_quantile`` within
0.005 absolute for |L| <= 1000 and 0.1% relative beyond, down to the deepest
log10 float64 input can give.

A :class:`Sketch` stores, per observable, the counts of the buckets its data
touched as a few dense *windows* (a start index and a run of counts of the
smallest unsigned dtype that holds them): its size follows the data, not the
range.  Windows closer than ``GAP`` buckets are coalesced.  Merging adds
counts, so it is exact and associative.

The kernels count into per-thread dense scratch over the buckets a dtype can
reach (``window_start(dtype)`` .. ``NTOT``; -inf apart) and record the lowest
and highest bucket touched per observable, so that handing a chunk's counts
to the Sketch (:func:`flush_scratch`) reads only what was touched.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.extending import register_jitable

from ._config import (SKETCH_A_HI, SKETCH_A_LO, SKETCH_B_RATIO, SKETCH_GAMMA, SKETCH_NA,
                      SKETCH_NB, SKETCH_NB32, SKETCH_W)

__all__ = ["Sketch", "bucket_fast", "bucket_below", "bucket_of", "NTOT", "I_NEGINF",
           "I_BELOW_A", "window_start", "new_scratch", "flush_scratch", "representative"]

NB = SKETCH_NB
NA = SKETCH_NA
I_NEGINF = 0
I_A0 = NB + 1                  # first region-A bucket
I_BELOW_A = NB                 # bucket_fast's "below region A" flag (-inf or region B)
I_ABOVE = I_A0 + NA            # finite L >= A_HI
I_POSINF = I_ABOVE + 1
NTOT = I_POSINF + 1
_INV_W = 1.0 / SKETCH_W
_LOG_R = math.log(SKETCH_B_RATIO)
_B_EDGE = -SKETCH_A_LO         # |L| at region B's upper edge (1000)
GAP = 64                       # windows closer than this many buckets are coalesced

# numba-visible float constants
_A_LO = float(SKETCH_A_LO)
_NA_F = float(NA)
_I_A0_F = float(I_A0)


def window_start(dtype) -> int:
    """First bucket (after -inf) that rows of ``dtype`` can reach: the
    deepest region-B bucket of a float32 or float64 top-2 gap."""
    nb = SKETCH_NB32 if np.dtype(dtype) == np.float32 else SKETCH_NB
    return max(1, I_A0 - nb)


# --------------------------------------------------------------------------
# bucket indices (compiled for every target; plain Python too)

@register_jitable(error_model="numpy", forceinline=True)
def bucket_fast(l):
    """Bucket of L as a float, branch-free (a loop over rows vectorizes):
    exact for region A, "above" and +inf; ``I_BELOW_A`` for -inf and region
    B (resolved by :func:`bucket_below`); NaN also maps to I_BELOW_A
    (callers skip NaN)."""
    lc = l if l > _A_LO - 1.0 else _A_LO - 1.0      # no overflow below; NaN goes below
    f = (lc - _A_LO) * _INV_W
    f = -1.0 if f < 0.0 else f
    f = _NA_F if f > _NA_F else f
    f = _NA_F + 1.0 if l == np.inf else f
    return _I_A0_F + math.floor(f)


@register_jitable(error_model="numpy")
def bucket_below(l):
    """Bucket of an L below region A: 0 for -inf, else region B (needs a log:
    called only for the rare values there)."""
    if l == -np.inf:
        return I_NEGINF
    j = int(math.floor(math.log(-l / _B_EDGE) / _LOG_R))
    j = 0 if j < 0 else j
    i = I_A0 - 1 - j
    return 1 if i < 1 else i


@register_jitable(error_model="numpy")
def bucket_of(l):
    """The global bucket index of L (NaN gives -1)."""
    if l != l:
        return -1
    i = int(bucket_fast(l))
    return bucket_below(l) if i == I_BELOW_A else i


def representative(idx: np.ndarray) -> np.ndarray:
    """The representative log10 of bucket indices (float64 array)."""
    idx = np.asarray(idx, dtype=np.int64)
    out = np.empty(idx.shape)
    a = (idx >= I_A0) & (idx < I_ABOVE)
    b = (idx >= 1) & (idx < I_A0)
    out[a] = SKETCH_A_LO + (idx[a] - I_A0) * SKETCH_W + math.log10(
        2 * SKETCH_GAMMA / (1 + SKETCH_GAMMA))
    j = (I_A0 - 1 - idx[b]).astype(np.float64)
    r = SKETCH_B_RATIO
    out[b] = -_B_EDGE * np.exp(j * _LOG_R) * (2 * r / (1 + r))
    out[idx == I_NEGINF] = -np.inf
    out[idx == I_ABOVE] = np.nan       # replaced by the exact maximum by the caller
    out[idx == I_POSINF] = np.inf
    return out


def bucket_edges(idx: int) -> tuple[float, float]:
    """[lo, hi) of the log10 values in bucket ``idx``."""
    if idx == I_NEGINF:
        return (-np.inf, -np.inf)
    if idx >= I_POSINF:
        return (np.inf, np.inf)
    if idx >= I_ABOVE:
        return (SKETCH_A_HI, np.inf)
    if idx >= I_A0:
        lo = SKETCH_A_LO + (idx - I_A0) * SKETCH_W
        return (lo, lo + SKETCH_W)
    j = I_A0 - 1 - idx
    return (-_B_EDGE * SKETCH_B_RATIO ** (j + 1), -_B_EDGE * SKETCH_B_RATIO ** j)


# --------------------------------------------------------------------------
# per-thread scratch of the kernels

def new_scratch(nth: int, nobs: int, dtype) -> dict:
    """Dense int32 counts per thread and observable over the buckets ``dtype``
    can reach, the touched range and the -inf counts.  int32 is enough: the
    drivers flush after every chunk (fewer than 2**31 rows)."""
    w0 = window_start(dtype)
    return dict(counts=np.zeros((nth, nobs, NTOT - w0), dtype=np.int32),
                lo=np.full((nth, nobs), np.iinfo(np.int64).max, dtype=np.int64),
                hi=np.full((nth, nobs), -1, dtype=np.int64),
                ninf=np.zeros((nth, nobs), dtype=np.int64), start=w0)


@njit(cache=True, nogil=True)
def _gather(counts, lo, hi):
    """Add every thread's touched counts into thread 0's (the scratch is
    dense over the same buckets for every thread) and widen thread 0's range."""
    nth, nobs, _ = counts.shape
    for k in range(nobs):
        for t in range(1, nth):
            for i in range(lo[t, k], hi[t, k] + 1):
                counts[0, k, i] += counts[t, k, i]
                counts[t, k, i] = 0
            lo[0, k] = min(lo[0, k], lo[t, k])
            hi[0, k] = max(hi[0, k], hi[t, k])
            lo[t, k] = np.iinfo(np.int64).max
            hi[t, k] = -1


def flush_scratch(sc: dict, sketch: "Sketch") -> None:
    """Add a kernel's per-thread counts to ``sketch`` and reset the scratch
    (cost proportional to the buckets touched)."""
    counts, lo, hi = sc["counts"], sc["lo"], sc["hi"]
    if counts.shape[0] > 1:
        _gather(counts, lo, hi)
    for k in range(counts.shape[1]):
        a, b = int(lo[0, k]), int(hi[0, k])
        if b >= a:
            sketch.add(k, sc["start"] + a, counts[0, k, a:b + 1].astype(np.int64))
            counts[0, k, a:b + 1] = 0
    lo[:] = np.iinfo(np.int64).max
    hi[:] = -1
    ninf = sc["ninf"].sum(axis=0)
    for j in np.flatnonzero(ninf):
        sketch.add(int(j), I_NEGINF, np.array([ninf[j]], dtype=np.int64))
    sc["ninf"][:] = 0


# --------------------------------------------------------------------------
# the sketch

def _small(counts: np.ndarray) -> np.ndarray:
    """counts in the smallest unsigned dtype that holds them."""
    m = int(counts.max(initial=0))
    return counts.astype(np.min_scalar_type(m), copy=False)


class Sketch:
    """Bucket counts of NOBS observables, stored as dense windows per
    observable (see the module docstring)."""

    __slots__ = ("windows",)

    def __init__(self, nobs: int) -> None:
        self.windows: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(nobs)]

    @property
    def nobs(self) -> int:
        return len(self.windows)

    def copy(self) -> "Sketch":
        new = Sketch(self.nobs)
        new.windows = [list(w) for w in self.windows]      # windows are never mutated
        return new

    def add(self, k: int, start: int, counts: np.ndarray) -> None:
        """Add counts of buckets start, start + 1, ... of observable k."""
        if counts.size:
            self.windows[k] = _coalesce(self.windows[k] + [(int(start), counts)])

    def merge(self, other: "Sketch") -> "Sketch":
        """A new sketch with the counts of both (exact)."""
        if other.nobs != self.nobs:
            raise ValueError("cannot merge sketches of different observables")
        new = Sketch(self.nobs)
        new.windows = [_coalesce(a + b) if (a and b) else list(a or b)
                       for a, b in zip(self.windows, other.windows)]
        return new

    def sparse(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(bucket indices, counts) of observable k's nonzero buckets, in order."""
        idx, cnt = [], []
        for start, c in self.windows[k]:
            nz = np.flatnonzero(c)
            idx.append(nz + start)
            cnt.append(c[nz].astype(np.int64))
        if not idx:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(idx), np.concatenate(cnt)

    def total(self, k: int) -> int:
        return int(sum(int(c.sum(dtype=np.int64)) for _, c in self.windows[k]))

    def nbytes(self) -> int:
        return sum(c.nbytes + 16 for w in self.windows for _, c in w)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sketch) or other.nobs != self.nobs:
            return NotImplemented
        for k in range(self.nobs):
            a, b = self.sparse(k), other.sparse(k)
            if not (np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])):
                return False
        return True

    # -- serialisation: per observable, [[start, [counts...]], ...]
    def to_list(self) -> list:
        return [[[int(s), c.tolist()] for s, c in w] for w in self.windows]

    @classmethod
    def from_list(cls, data: object, nobs: int) -> "Sketch":
        """The sketch of :meth:`to_list`; ValueError naming what is wrong."""
        if not isinstance(data, list) or len(data) != nobs:
            raise ValueError(f"malformed summary: sketch windows must be a list of {nobs} "
                             "entries (one per observable)")
        sk = cls(nobs)
        for k, wins in enumerate(data):
            if not isinstance(wins, list):
                raise ValueError(f"malformed summary: sketch windows[{k}] must be a list")
            for w in wins:
                if (not isinstance(w, list) or len(w) != 2
                        or isinstance(w[0], bool) or not isinstance(w[0], int)):
                    raise ValueError(f"malformed summary: sketch windows[{k}] entries must be "
                                     "[start, [counts...]]")
                start = int(w[0])
                try:
                    c = np.asarray(w[1])
                    if c.size and c.dtype.kind not in "iu":
                        raise TypeError
                    c = c.astype(np.int64).reshape(-1)
                except (TypeError, ValueError, OverflowError):
                    raise ValueError(f"malformed summary: sketch windows[{k}] counts must be "
                                     "integers") from None
                if c.size and c.min() < 0:
                    raise ValueError(f"malformed summary: sketch windows[{k}] counts must be "
                                     ">= 0")
                if start < 0 or start + c.size > NTOT:
                    raise ValueError(f"malformed summary: sketch windows[{k}] bucket "
                                     f"{start}..{start + c.size - 1} is outside [0, {NTOT})")
                sk.add(k, start, c)
        return sk


def _coalesce(wins: list[tuple[int, np.ndarray]]) -> list[tuple[int, np.ndarray]]:
    """The canonical windows of the counts of ``wins`` (overlapping or close
    windows summed): a function of the counts alone, whatever the order of
    the additions."""
    if not wins:
        return wins
    wins = sorted(wins, key=lambda w: w[0])
    out: list[tuple[int, np.ndarray]] = []
    group = [wins[0]]
    end = wins[0][0] + wins[0][1].size
    for s, c in wins[1:]:
        if s <= end + GAP:
            group.append((s, c))
            end = max(end, s + c.size)
        else:
            out.extend(_canon(*_sum(group, end)))
            group = [(s, c)]
            end = s + c.size
    out.extend(_canon(*_sum(group, end)))
    return out


def _sum(group: list[tuple[int, np.ndarray]], end: int) -> tuple[int, np.ndarray]:
    if len(group) == 1:
        return group[0]
    s0 = group[0][0]
    acc = np.zeros(end - s0, dtype=np.int64)
    for s, c in group:
        acc[s - s0:s - s0 + c.size] += c
    return s0, acc


@njit(cache=True, nogil=True)
def _runs(counts, gap):
    """(first, last) of each run of nonzero buckets, runs split where more
    than gap - 1 empty buckets separate two nonzero ones; and the maximum."""
    out = np.empty((counts.size // 2 + 1, 2), dtype=np.int64)
    k = -1
    last = -gap - 1
    m = 0
    for i in range(counts.size):
        c = counts[i]
        if c != 0:
            if i - last > gap:
                k += 1
                out[k, 0] = i
            out[k, 1] = i
            last = i
            m = max(m, c)
    return out[:k + 1], m


def _canon(start: int, counts: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Windows from the first to the last nonzero bucket, split where more
    than GAP - 1 empty buckets separate two nonzero ones."""
    runs, m = _runs(counts, GAP)
    dt = np.min_scalar_type(int(m))
    return [(start + int(a), counts[a:b + 1].astype(dt, copy=False)) for a, b in runs]
