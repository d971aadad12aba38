r"""The sketch's two halves: the bucket mapping and the store of counts.

As sketches-py keeps ``LogarithmicMapping`` (value <-> bucket key) apart from
``DenseStore`` (the counts), this module holds :class:`BucketMapping`, the
geometry of the buckets, and :class:`WindowStore`, the counts of one
distribution's buckets; ``fastsoftmax.accumulate`` combines one mapping and
a store per observable into the accumulator's ``Sketch``.

The mapping: each observable's L = log10(value) is counted in a bucket of one
global integer index space (set by four knobs in ``_config``):

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
log10 float64 input can give.  The kernels are compiled for this one
geometry: :data:`MAPPING`, whose numbers the module constants below are.

The store keeps the counts of the buckets its data touched as a few dense
*windows* (a start index and a run of counts of the smallest unsigned dtype
that holds them): its size follows the data, not the range.  Windows closer
than ``GAP`` buckets are coalesced, so the windows are a function of the
counts alone (canonical); adding stores adds counts, exact and associative.

The kernels count into per-thread dense scratch over the buckets a dtype can
reach (``window_start(dtype)`` .. ``NTOT``; -inf apart) and record the lowest
and highest bucket touched per observable, so that handing a chunk's counts
to a sketch (:func:`flush_scratch`) reads only what was touched.  A bucket's
count is ``counts + 256 * carry``: a uint8 count that carries into a uint16
every 256 hits (:func:`scatter_one`), 3 bytes a bucket where int32 took 4, and
the hot part of the scratch (the uint8 counts, the carries are touched once
in 256 hits) a quarter of the int32 array.  Saturated rows spread each
observable over thousands of buckets; as int32 those scattered increments
missed the second-level cache once the row data streamed through it
(measured: the sketch scatter cost x300 rows 50 ns a row, x1 rows 5 ns).
A bucket holds at most ``SCRATCH_MAX_COUNT`` = 2**24 - 1 rows: the drivers
hand the counts over before that.
"""
from __future__ import annotations

import math
from typing import Any, Protocol, Sequence

import numpy as np
from numba import njit
from numba.extending import register_jitable

from .._config import SKETCH_A_HI, SKETCH_A_LO, SKETCH_ALPHA, SKETCH_B_RATIO

__all__ = ["BucketMapping", "MAPPING", "WindowStore", "bucket_fast", "bucket_below",
           "bucket_of", "NTOT", "I_NEGINF", "I_BELOW_A", "window_start", "new_scratch",
           "flush_scratch", "scatter_one", "SCRATCH_MAX_COUNT", "representative", "bucket_edges"]

# the deepest finite log10 of an observable: a top-2 gap g (computed in
# float64) over ln 10, with g <= 2 * max(float32) for float32 input and
# g <= max(float64) for float64 input (a larger gap is inf: every small
# observable is then exactly 0, log10 -inf)
_DEEPEST = {"float32": 2 * 3.4028235e38 / math.log(10),
            "float64": 1.7976931348623157e308 / math.log(10)}


class BucketMapping:
    """The bucket geometry of the sketch (DDSketch's mapping): log10 <-> bucket.

    Built from the four knobs of ``_config`` (``SKETCH_ALPHA``,
    ``SKETCH_A_LO``, ``SKETCH_A_HI``, ``SKETCH_B_RATIO``); the numbers it
    derives are attributes: ``gamma`` = (1 + alpha)/(1 - alpha), ``width``
    W = log10(gamma) of a region-A bucket, ``na`` region-A buckets, ``nb``
    (``nb32``) region-B buckets down to the deepest log10 of float64
    (float32) input, and the indices ``i_neginf``, ``i_a0`` (first region-A
    bucket), ``i_above``, ``i_posinf`` and ``ntot`` (the number of indices).
    Two mappings are equal when their :meth:`to_dict` are: the sketches they
    index can be added.
    """

    __slots__ = ("alpha", "gamma", "width", "a_lo", "a_hi", "b_ratio", "na", "nb", "nb32",
                 "i_neginf", "i_a0", "i_above", "i_posinf", "ntot")

    def __init__(self) -> None:
        self.alpha = SKETCH_ALPHA
        self.gamma = (1 + SKETCH_ALPHA) / (1 - SKETCH_ALPHA)
        self.width = math.log10(self.gamma)
        self.a_lo = SKETCH_A_LO
        self.a_hi = SKETCH_A_HI
        self.b_ratio = SKETCH_B_RATIO
        self.na = int(math.ceil((SKETCH_A_HI - SKETCH_A_LO) / self.width))
        self.nb32 = self.depth(_DEEPEST["float32"]) + 8
        self.nb = self.depth(_DEEPEST["float64"]) + 8
        self.i_neginf = 0
        self.i_a0 = self.nb + 1
        self.i_above = self.i_a0 + self.na
        self.i_posinf = self.i_above + 1
        self.ntot = self.i_posinf + 1

    def depth(self, max_abs_log10: float) -> int:
        """Region-B buckets needed down to log10 = -max_abs_log10."""
        if max_abs_log10 <= -self.a_lo:
            return 0
        return int(math.log(max_abs_log10 / -self.a_lo) / math.log(self.b_ratio)) + 2

    def window_start(self, dtype: Any) -> int:
        """First bucket (after -inf) that rows of ``dtype`` can reach: the
        deepest region-B bucket of a float32 or float64 top-2 gap."""
        nb = self.nb32 if np.dtype(dtype) == np.float32 else self.nb
        return max(1, self.i_a0 - nb)

    def key(self, l: float) -> int:
        """The bucket index of a log10 ``l`` (NaN gives -1)."""
        return int(bucket_of(float(l)))

    def key_of_value(self, v: float) -> int:
        """The bucket index of a value ``v`` >= 0 (-1 for NaN or a negative ``v``)."""
        v = float(v)
        if not v >= 0:
            return -1
        return self.key(math.log10(v) if v > 0 else -math.inf)

    def representative(self, idx: Any) -> np.ndarray:
        """The representative log10 of bucket indices (float64 array); NaN for
        the "above" bucket (the caller puts the exact maximum there)."""
        idx = np.asarray(idx, dtype=np.int64)
        out = np.empty(idx.shape)
        a = (idx >= self.i_a0) & (idx < self.i_above)
        b = (idx >= 1) & (idx < self.i_a0)
        out[a] = self.a_lo + (idx[a] - self.i_a0) * self.width + math.log10(
            2 * self.gamma / (1 + self.gamma))
        j = (self.i_a0 - 1 - idx[b]).astype(np.float64)
        r = self.b_ratio
        out[b] = self.a_lo * np.exp(j * math.log(r)) * (2 * r / (1 + r))
        out[idx == self.i_neginf] = -np.inf
        out[idx == self.i_above] = np.nan
        out[idx == self.i_posinf] = np.inf
        return out

    def edges(self, idx: int) -> tuple[float, float]:
        """[lo, hi) of the log10 values in bucket ``idx``."""
        if idx == self.i_neginf:
            return (-np.inf, -np.inf)
        if idx >= self.i_posinf:
            return (np.inf, np.inf)
        if idx >= self.i_above:
            return (self.a_hi, np.inf)
        if idx >= self.i_a0:
            lo = self.a_lo + (idx - self.i_a0) * self.width
            return (lo, lo + self.width)
        j = self.i_a0 - 1 - idx
        return (self.a_lo * self.b_ratio ** (j + 1), self.a_lo * self.b_ratio ** j)

    def to_dict(self) -> dict[str, float | int]:
        """What a serialised sketch's buckets mean (``version`` 2: this index space)."""
        return {"a_lo": self.a_lo, "a_hi": self.a_hi, "width": self.width,
                "b_ratio": self.b_ratio, "version": 2}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BucketMapping):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(tuple(self.to_dict().items()))

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (BucketMapping, ())              # rebuilt from the knobs: a few bytes pickled

    def __repr__(self) -> str:
        return f"BucketMapping({self.to_dict()})"


#: The geometry every kernel is compiled for.
MAPPING = BucketMapping()

# its numbers as module constants: numba freezes globals into the kernels
NB = MAPPING.nb
NA = MAPPING.na
I_NEGINF = MAPPING.i_neginf
I_A0 = MAPPING.i_a0            # first region-A bucket
I_BELOW_A = NB                 # bucket_fast's "below region A" flag (-inf or region B)
I_ABOVE = MAPPING.i_above      # finite L >= A_HI
I_POSINF = MAPPING.i_posinf
NTOT = MAPPING.ntot
_INV_W = 1.0 / MAPPING.width
_LOG_R = math.log(MAPPING.b_ratio)
_B_EDGE = -MAPPING.a_lo        # |L| at region B's upper edge (1000)
GAP = 64                       # windows closer than this many buckets are coalesced

# numba-visible float constants
_A_LO = float(MAPPING.a_lo)
_NA_F = float(NA)
_I_A0_F = float(I_A0)

# the mapping's host-side answers under the names the kernels' callers use
window_start = MAPPING.window_start
representative = MAPPING.representative
bucket_edges = MAPPING.edges


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


# --------------------------------------------------------------------------
# per-thread scratch of the kernels

#: the most a scratch bucket can hold: 255 + 256 * 65535 (uint8 count, uint16 carries)
SCRATCH_MAX_COUNT = 2**24 - 1


@register_jitable(error_model="numpy", forceinline=True)
def scatter_one(counts, carry, k, i):
    """One hit of bucket i (scratch index) of observable k: the uint8 count
    wraps into the uint16 carry every 256 hits (a branch taken once in 256
    hits of one bucket)."""
    c = np.int64(counts[k, i]) + 1
    counts[k, i] = c                # stored modulo 256: an unconditional store
    if c == 256:
        carry[k, i] += 1


def new_scratch(nth: int, nobs: int, dtype) -> dict:
    """Dense counts per thread and observable over the buckets ``dtype`` can
    reach (uint8 ``counts`` and uint16 ``carry``: a bucket holds
    counts + 256 * carry, at most ``SCRATCH_MAX_COUNT``), the touched range
    and the -inf counts."""
    w0 = window_start(dtype)
    shape = (nth, nobs, NTOT - w0)
    return dict(counts=np.zeros(shape, dtype=np.uint8), carry=np.zeros(shape, dtype=np.uint16),
                lo=np.full((nth, nobs), np.iinfo(np.int64).max, dtype=np.int64),
                hi=np.full((nth, nobs), -1, dtype=np.int64),
                ninf=np.zeros((nth, nobs), dtype=np.int64), start=w0)


@njit(cache=True, nogil=True)
def _take(counts, carry, lo, hi, k, a, b):
    """Bucket a .. b of observable k summed over the threads (int64), each
    thread's touched range read and cleared."""
    out = np.zeros(b - a + 1, dtype=np.int64)
    for t in range(counts.shape[0]):
        for i in range(lo[t, k], hi[t, k] + 1):
            out[i - a] += np.int64(counts[t, k, i]) + 256 * np.int64(carry[t, k, i])
            counts[t, k, i] = 0
            carry[t, k, i] = 0
    return out


class _Counts(Protocol):
    def add(self, k: int, start: int, counts: np.ndarray) -> None: ...


def flush_scratch(sc: dict, sketch: _Counts) -> None:
    """Add a kernel's per-thread counts to ``sketch`` (anything with
    ``add(k, start, counts)``: the accumulator's Sketch) and reset the
    scratch (cost proportional to the buckets touched)."""
    counts, carry, lo, hi = sc["counts"], sc["carry"], sc["lo"], sc["hi"]
    for k in range(counts.shape[1]):
        a, b = int(lo[:, k].min()), int(hi[:, k].max())
        if b >= a:
            sketch.add(k, sc["start"] + a, _take(counts, carry, lo, hi, k, a, b))
    lo[:] = np.iinfo(np.int64).max
    hi[:] = -1
    ninf = sc["ninf"].sum(axis=0)
    for j in np.flatnonzero(ninf):
        sketch.add(int(j), I_NEGINF, np.array([ninf[j]], dtype=np.int64))
    sc["ninf"][:] = 0


# --------------------------------------------------------------------------
# the store

class WindowStore:
    """The bucket counts of one distribution, as canonical dense windows.

    ``windows`` is a list of (start index, counts) in increasing order, each
    run from a nonzero count to a nonzero count, two runs at least ``GAP``
    buckets apart (see the module docstring): the windows are a function of
    the counts alone.  The count arrays are never written once stored (a
    copy shares them).  ``a + b`` is a new store with the counts of both,
    ``a += b`` adds ``b``'s counts to ``a``; neither changes ``b``.
    """

    __slots__ = ("windows",)

    def __init__(self, windows: Sequence[tuple[int, np.ndarray]] = ()) -> None:
        self.windows: list[tuple[int, np.ndarray]] = _coalesce(
            [(int(s), np.asarray(c)) for s, c in windows if np.asarray(c).size])

    def copy(self) -> WindowStore:
        new = WindowStore()
        new.windows = list(self.windows)
        return new

    def add(self, start: int, counts: np.ndarray) -> None:
        """Add counts of buckets start, start + 1, ... (in place)."""
        if counts.size:
            self.windows = _coalesce(self.windows + [(int(start), counts)])

    def __iadd__(self, other: WindowStore) -> WindowStore:
        if not isinstance(other, WindowStore):
            return NotImplemented
        if other.windows:
            self.windows = (_coalesce(self.windows + other.windows) if self.windows
                            else list(other.windows))
        return self

    def __add__(self, other: WindowStore) -> WindowStore:
        if not isinstance(other, WindowStore):
            return NotImplemented
        new = self.copy()
        new += other
        return new

    def sparse(self) -> tuple[np.ndarray, np.ndarray]:
        """(bucket indices, counts) of the nonzero buckets, in order."""
        idx, cnt = [], []
        for start, c in self.windows:
            nz = np.flatnonzero(c)
            idx.append(nz + start)
            cnt.append(c[nz].astype(np.int64))
        if not idx:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(idx), np.concatenate(cnt)

    def total(self) -> int:
        """The number of values counted."""
        return int(sum(int(c.sum(dtype=np.int64)) for _, c in self.windows))

    def nbytes(self) -> int:
        """Memory held by the windows."""
        return sum(c.nbytes + 16 for _, c in self.windows)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WindowStore):
            return NotImplemented
        a, b = self.sparse(), other.sparse()
        return bool(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]))

    def __repr__(self) -> str:
        return f"WindowStore({len(self.windows)} windows, {self.total()} values)"


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
