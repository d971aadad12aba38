"""Accuracy, special values, vectorization and portability of fastsoftmax._kernels.vmath.

Errors are measured in ulps by bit-pattern distance against a correctly
rounded reference: float64 NumPy rounded to float32 for float32, and
np.longdouble (x87 80-bit, 64-bit mantissa) rounded to float64 for float64.
The functions are evaluated through jitted loops compiled with the same
fast-math flags the hot kernels use.
"""
import importlib.util
import math
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import _children  # noqa: E402
import _cudasim  # noqa: E402
from fastsoftmax._kernels.vmath import fmax, fmin, vexp, vlog, vsincos  # noqa: E402
from fastsoftmax._kernels import vmath as _vmath  # noqa: E402

FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
F32, F64 = np.float32, np.float64
HAVE_LONGDOUBLE = np.finfo(np.longdouble).nmant >= 63
BIG = np.iinfo(np.int64).max
# every 241st float32 bit pattern in the sweeps: ~35,000 points a binade, so
# every reduction interval (k ln2, the octants of pi) and every binade of the
# argument is sampled densely; the edges of the reductions, the thresholds
# and the neighbourhoods of 0, 1 and pi are swept pattern by pattern in the
# dense windows
STRIDE32 = 241
CHUNK = 1 << 22


# ---------------------------------------------------------------------------
# ulp distance

@numba.njit(cache=True)
def _ulp_dist_kernel(a, b, ia, ib, magnitude, out):
    """ulp_dist element by element (numba's default flags: IEEE NaN and
    infinity tests): ia, ib are a's and b's bit patterns, mapped onto a
    monotonic int64 line (-0 and +0 -> 0) by clearing the sign bit
    (``magnitude``) of negative patterns and negating."""
    for i in range(a.size):
        x, y = a[i], b[i]
        p, q = np.int64(ia[i]), np.int64(ib[i])
        if p < 0:
            p = -(p & magnitude)
        if q < 0:
            q = -(q & magnitude)
        d = abs(p - q)          # overflows only for opposite signs, large: BIG below
        nx, ny = x != x, y != y
        if nx and ny:
            d = 0
        if nx != ny or np.isinf(x) != np.isinf(y):
            d = BIG
        opp = np.signbit(x) != np.signbit(y) and (abs(x) >= 1 or abs(y) >= 1)
        if opp and x != y:
            d = BIG
        out[i] = d


def ulp_dist(a, b):
    """Number of representable values between a and b (same dtype, same
    shape).

    0 for equal values (+0 == -0) and for NaN vs NaN; huge when exactly one is
    NaN, when exactly one is infinite, or when the signs differ on values too
    large for the int64 difference.
    """
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.dtype in (F32, F64)
    it, magnitude = (np.int32, 0x7FFFFFFF) if a.dtype == F32 else (np.int64, 0x7FFFFFFFFFFFFFFF)
    out = np.empty(a.shape, np.int64)
    _ulp_dist_kernel(a.ravel(), b.ravel(), a.view(it).ravel(), b.view(it).ravel(),
                     magnitude, out.ravel())
    return out


def test_ulp_dist_helper():
    for dt in (F32, F64):
        one = dt(1)
        tiny = np.finfo(dt).smallest_subnormal
        nxt = np.nextafter(one, dt(2))
        a = np.array([one, 0, -0.0, tiny, -tiny, np.inf, np.nan, 1, 2, -2], dt)
        b = np.array([nxt, -0.0, tiny, 0, tiny, np.inf, np.nan, np.nan,
                      np.inf, 2], dt)
        assert list(ulp_dist(a, b)) == [1, 0, 1, 1, 2, 0, 0, BIG, BIG, BIG]


# ---------------------------------------------------------------------------
# jitted evaluation loops (the fast-math flags of the hot kernels), compiled
# into numba's cache: ``key`` (the package kernels' source key) is in their
# closure, so the cache index changes with the sources of the functions they
# inline, not only with this file

def _build(key):
    jit = dict(fastmath=FASTMATH, cache=True)

    @numba.njit(**jit)
    def map_exp(x, out):
        key  # noqa: B018  (part of the cache key)
        for i in range(x.size):
            out[i] = vexp(x[i])

    @numba.njit(**jit)
    def map_exp_normal(x, out):
        key  # noqa: B018
        for i in range(x.size):
            out[i] = _vmath.vexp_normal(x[i])

    @numba.njit(**jit)
    def map_log(x, out):
        key  # noqa: B018
        for i in range(x.size):
            out[i] = vlog(x[i])

    @numba.njit(**jit)
    def map_sincos(x, s, c):
        key  # noqa: B018
        for i in range(x.size):
            s[i], c[i] = vsincos(x[i])

    @numba.njit(**jit)
    def map_minmax(a, b, mx, mn):
        key  # noqa: B018
        for i in range(a.size):
            mx[i] = fmax(a[i], b[i])
            mn[i] = fmin(a[i], b[i])

    @numba.njit(cache=True)
    def map_minmax_generic(a, b, mx, mn):
        """The generic (non-CPU) versions other targets use, with numba's
        default flags."""
        key  # noqa: B018
        for i in range(a.size):
            mx[i] = _vmath._fmax_generic(a[i], b[i])
            mn[i] = _vmath._fmin_generic(a[i], b[i])

    @numba.njit(**jit)
    def sum_exp(x, m):
        key  # noqa: B018
        s = m - m
        for i in range(x.size):
            s += vexp(x[i] - m)
        return s

    @numba.njit(**jit)
    def reduce_max(x):
        key  # noqa: B018
        m = x[0]
        for i in range(x.size):
            m = fmax(m, x[i])
        return m

    @numba.njit(**jit)
    def reduce_min(x):
        key  # noqa: B018
        m = x[0]
        for i in range(x.size):
            m = fmin(m, x[i])
        return m

    return (map_exp, map_exp_normal, map_log, map_sincos, map_minmax, map_minmax_generic,
            sum_exp, reduce_max, reduce_min)


(_map_exp, _map_exp_normal, _map_log, _map_sincos, _map_minmax, _map_minmax_generic,
 _sum_exp, _reduce_max, _reduce_min) = _build(_children.source_key())


def jexp(x):
    out = np.empty_like(x)
    _map_exp(x, out)
    return out


def jlog(x):
    out = np.empty_like(x)
    _map_log(x, out)
    return out


def jsincos(x):
    s = np.empty_like(x)
    c = np.empty_like(x)
    _map_sincos(x, s, c)
    return s, c


def _bits_to_f32(lo, hi, step=1):
    """float32 values with bit patterns lo, lo+step, ... < hi (uint32)."""
    return np.arange(lo, hi, step, dtype=np.int64).astype(np.uint32).view(F32)


def _f32_bits(v):
    return int(np.float32(v).view(np.uint32))


def _window(center_bits, half):
    return _bits_to_f32(max(center_bits - half, 0), center_bits + half)


def _sweep_f32(fn, ref64, ranges, windows, stride=STRIDE32):
    """Max ulp error of fn (float32 -> float32) over bit-pattern ranges
    [lo, hi) sampled every `stride` patterns plus dense windows."""
    worst = 0
    worst_x = None
    blocks = []
    for lo, hi in ranges:
        for start in range(lo, hi, CHUNK * stride):
            blocks.append((start, min(hi, start + CHUNK * stride), stride))
    for lo, hi in windows:
        for start in range(lo, hi, CHUNK):
            blocks.append((start, min(hi, start + CHUNK), 1))
    for lo, hi, st in blocks:
        x = _bits_to_f32(lo, hi, st)
        with np.errstate(all="ignore"):
            ref = ref64(x.astype(F64)).astype(F32)
        d = ulp_dist(fn(x), ref)
        j = int(np.argmax(d))
        if d[j] > worst:
            worst, worst_x = int(d[j]), x[j]
    return worst, worst_x


# ---------------------------------------------------------------------------
# vexp

def _exp_thresholds_f32():
    """Bit patterns of: the largest x with a finite float32 exp(x); the most
    negative x with exp(x) >= smallest normal; the most negative x with a
    non-zero float32 exp(x)."""
    def last(pred, lo_bits, hi_bits):
        x = _bits_to_f32(lo_bits, hi_bits)
        with np.errstate(all="ignore"):
            ok = pred(np.exp(x.astype(F64)).astype(F32))
        return lo_bits + int(np.nonzero(ok)[0][-1])
    over = last(np.isfinite, _f32_bits(88.5), _f32_bits(89.0))
    sub = last(lambda v: v >= np.finfo(F32).smallest_normal,
               _f32_bits(-87.0), _f32_bits(-88.0))
    zero = last(lambda v: v > 0, _f32_bits(-103.0), _f32_bits(-105.0))
    return over, sub, zero


def test_vexp_f32_sweep():
    over, sub, zero = _exp_thresholds_f32()
    W = 1 << 17
    ranges = [(0, over + 1), (0x80000000, zero + 1)]
    windows = [
        (over - W, over + W), (sub - W, sub + W), (zero - W, zero + W),
        # around 0: exp(x) leaves 1 for its neighbours (|x| ~ 2**-25)
        (_f32_bits(2.0 ** -25) - W, _f32_bits(2.0 ** -25) + W),
        (_f32_bits(2.0 ** -24) - W, _f32_bits(2.0 ** -24) + W),
        (_f32_bits(-2.0 ** -25) - W, _f32_bits(-2.0 ** -25) + W),
        (_f32_bits(-2.0 ** -26) - W, _f32_bits(-2.0 ** -26) + W),
        (_f32_bits(0.25) - W, _f32_bits(0.25) + W),       # |r| ~ ln2/2 edges
        (_f32_bits(-0.35) - W, _f32_bits(-0.35) + W),
    ]
    worst, wx = _sweep_f32(jexp, np.exp, ranges, windows)
    print("vexp float32 max ulp error", worst, "at", wx)
    assert worst <= 2, (worst, wx)


def test_vexp_f32_thresholds_exact():
    over, sub, zero = _exp_thresholds_f32()
    x = _bits_to_f32(over + 1, over + 4096)                 # beyond overflow
    assert np.all(jexp(x) == np.inf)
    x = _bits_to_f32(zero + 1, zero + 4096)                 # below underflow
    assert np.all(jexp(x) == 0)
    x = np.array([_bits_to_f32(over, over + 1)[0], 100, 1e30, 3e38], F32)
    y = jexp(x)
    assert np.isfinite(y[0]) and np.all(y[1:] == np.inf)
    x = np.array([_bits_to_f32(zero, zero + 1)[0], -110, -1e30, -3e38], F32)
    y = jexp(x)
    assert y[0] == np.finfo(F32).smallest_subnormal and np.all(y[1:] == 0)


@pytest.mark.parametrize("dt", [F32, F64])
def test_vexp_special_values(dt):
    x = np.array([-np.inf, np.inf, np.nan, 0.0, -0.0, 1.0], dt)
    y = jexp(x)
    assert y.dtype == dt
    assert y[0] == 0 and not np.signbit(y[0])
    assert y[1] == np.inf
    assert np.isnan(y[2])
    assert y[3] == 1 and y[4] == 1
    assert ulp_dist(y[5:6], np.array([math.e], dt))[0] <= 1
    # NaN reaches a sum (callers detect bad rows that way)
    z = np.array([0.0, 1.0, np.nan, -np.inf, 2.0], dt)
    assert np.isnan(_sum_exp(z, dt(2.0)))
    assert _sum_exp(np.array([-np.inf, 0.0], dt), dt(0.0)) == 1


@pytest.mark.parametrize("dt", [F32, F64])
def test_vexp_normal_same_bits_as_vexp(dt):
    """vexp_normal (no clamps, one scaling) is vexp on its domain, bit for
    bit, in jitted code and in Python; NaN in, NaN out."""
    lo, hi = (-87.33, 88.0) if dt == F32 else (-708.3, 709.0)
    x = np.concatenate([np.linspace(lo, hi, 1_000_001), [0.0, -0.0, lo, hi, np.nan]]).astype(dt)
    a = np.empty_like(x)
    b = np.empty_like(x)
    _map_exp(x, a)
    _map_exp_normal(x, b)
    it = np.int32 if dt == F32 else np.int64
    same = (a.view(it) == b.view(it)) | (np.isnan(a) & np.isnan(b))
    assert same.all(), x[~same][:5]
    assert np.all(b[:-1] >= np.finfo(dt).smallest_normal)
    py = np.array([_vmath.vexp_normal(v) for v in x[::50001]], dt)
    assert np.array_equal(py, b[::50001], equal_nan=True)


@pytest.mark.skipif(not HAVE_LONGDOUBLE, reason="needs x87 long double")
def test_vexp_f64():
    rng = np.random.default_rng(1234)
    lo, hi = -745.14, 709.79
    x = np.concatenate([
        rng.uniform(lo, hi, 1_500_000),
        # magnitudes spread log-uniformly over 1e-300 .. 700, both signs
        np.exp(rng.uniform(np.log(1e-300), np.log(700.0), 1_000_000))
        * rng.choice([-1.0, 1.0], 1_000_000),
        rng.uniform(-745.14, -708.0, 500_000),       # subnormal results
        rng.uniform(-745.14, -744.0, 200_000),       # underflow to zero
        rng.uniform(700.0, 709.79, 200_000),         # overflow
        rng.uniform(-0.35, 0.35, 300_000),           # polynomial only
        # half-integer multiples of ln2 (the reduction's rounding edges)
        (np.arange(-1075, 1025) + 0.5) * math.log(2),
        np.arange(-1075, 1025) * math.log(2),
    ])
    with np.errstate(all="ignore"):
        ref = np.exp(x.astype(np.longdouble)).astype(F64)
    y = jexp(x)
    d = ulp_dist(y, ref)
    j = int(np.argmax(d))
    print("vexp float64 max ulp error", d[j], "at", repr(x[j]))
    assert d[j] <= 2, (d[j], x[j], y[j], ref[j])
    # results flush to exactly 0 below the underflow limit, inf above
    assert np.all(jexp(np.array([-745.14, -746.0, -800.0, -1e300])) == 0)
    assert jexp(np.array([-745.13]))[0] == 5e-324
    assert np.all(jexp(np.array([709.79, 710.0, 1e300])) == np.inf)
    assert np.isfinite(jexp(np.array([709.78]))[0])


# ---------------------------------------------------------------------------
# vlog

def test_vlog_f32_sweep():
    W = 1 << 18
    one, sqrt2 = _f32_bits(1.0), _f32_bits(math.sqrt(2.0))
    tiny, big = _f32_bits(np.finfo(F32).smallest_normal), 0x7F7FFFFF
    ranges = [(1, big + 1)]
    windows = [(one - W, one + W), (sqrt2 - W, sqrt2 + W),
               (_f32_bits(math.sqrt(0.5)) - W, _f32_bits(math.sqrt(0.5)) + W),
               (_f32_bits(2.0) - W, _f32_bits(2.0) + W),
               (1, 1 << 16), (tiny - W, tiny + W), (big - W, big + 1)]
    worst, wx = _sweep_f32(jlog, np.log, ranges, windows)
    print("vlog float32 max ulp error", worst, "at", wx)
    assert worst <= 2, (worst, wx)


@pytest.mark.parametrize("dt", [F32, F64])
def test_vlog_special_values(dt):
    x = np.array([0.0, -0.0, np.inf, np.nan, -1.0, -np.inf, 1.0,
                  np.finfo(dt).smallest_subnormal], dt)
    y = jlog(x)
    assert y.dtype == dt
    assert y[0] == -np.inf and y[1] == -np.inf
    assert y[2] == np.inf
    assert np.isnan(y[3]) and np.isnan(y[4]) and np.isnan(y[5])
    assert y[6] == 0
    ref = np.array([np.log(np.longdouble(x[7]))]).astype(dt)
    assert ulp_dist(y[7:8], ref)[0] <= 1


@pytest.mark.skipif(not HAVE_LONGDOUBLE, reason="needs x87 long double")
def test_vlog_f64():
    rng = np.random.default_rng(99)
    bits = rng.integers(1, 0x7FEFFFFFFFFFFFFF, 1_500_000, dtype=np.int64)
    x = np.concatenate([
        bits.view(F64),                                  # all binades
        rng.integers(1, 1 << 52, 200_000, dtype=np.int64).view(F64),  # subn.
        1.0 + rng.uniform(-0.3, 0.42, 600_000),
        1.0 + np.exp(rng.uniform(-36, -1, 300_000))
        * rng.choice([-1.0, 1.0], 300_000),
        rng.uniform(0.70, 0.72, 100_000), rng.uniform(1.40, 1.43, 100_000),
        np.ldexp(1.0, np.arange(-1074, 1024)),
        np.ldexp(math.sqrt(2.0), np.arange(-1074, 1024)),
    ])
    ref = np.log(x.astype(np.longdouble)).astype(F64)
    y = jlog(x)
    d = ulp_dist(y, ref)
    j = int(np.argmax(d))
    print("vlog float64 max ulp error", d[j], "at", repr(x[j]))
    assert d[j] <= 2, (d[j], x[j], y[j], ref[j])


# ---------------------------------------------------------------------------
# vsincos (|x| <= pi)

def _sincos_err(x, s, c, ref_s, ref_c, eps):
    """Max ulp errors; near zeros of sin/cos an absolute error <= 2 eps is
    also accepted (returned separately)."""
    out = []
    for y, r in ((s, ref_s), (c, ref_c)):
        d = ulp_dist(y, r)
        absd = np.abs(y.astype(F64) - r.astype(F64))
        bad = (d > 4) & (absd > 2 * eps)
        out.append((int(d.max()), float(absd.max()), int(bad.sum())))
    return out


def test_vsincos_f32_sweep():
    pi_bits = _f32_bits(np.float32(np.pi))     # float32(pi) > pi
    W = 1 << 17
    centers = [math.pi / 4, math.pi / 2, 3 * math.pi / 4, 1.0]
    blocks = [_bits_to_f32(0, pi_bits + 1, STRIDE32),
              _bits_to_f32(0x80000000, 0x80000000 + pi_bits + 1, 4 * STRIDE32 + 1),
              _bits_to_f32(pi_bits - W, pi_bits + 1)]
    blocks += [_window(_f32_bits(v), W) for v in centers]
    blocks += [-_window(_f32_bits(v), W) for v in centers]
    eps = float(np.finfo(F32).eps)
    worst = [0, 0]
    for x in blocks:
        s, c = jsincos(x)
        x64 = x.astype(F64)
        (ds, as_, bs), (dc, ac, bc) = _sincos_err(
            x, s, c, np.sin(x64).astype(F32), np.cos(x64).astype(F32), eps)
        assert bs == 0 and bc == 0, (ds, dc, as_, ac)
        worst = [max(worst[0], ds), max(worst[1], dc)]
    print("vsincos float32 max ulp error sin/cos", worst)
    assert max(worst) <= 4


@pytest.mark.skipif(not HAVE_LONGDOUBLE, reason="needs x87 long double")
def test_vsincos_f64():
    rng = np.random.default_rng(7)
    pi = np.pi
    x = np.concatenate([
        rng.uniform(-pi, pi, 1_000_000),
        np.exp(rng.uniform(-700, 0, 200_000)) * rng.choice([-1, 1], 200_000),
        pi / 4 + rng.uniform(-1e-3, 1e-3, 100_000),
        pi / 2 + rng.uniform(-1e-3, 1e-3, 100_000),
        pi - np.abs(rng.uniform(0, 1e-3, 100_000)),
        -pi / 2 + rng.uniform(-1e-3, 1e-3, 100_000),
        np.nextafter(pi / 2, [0.0, 4.0]), [pi, -pi, 0.0, -0.0],
    ])
    x = np.clip(x, -pi, pi)
    s, c = jsincos(x)
    xl = x.astype(np.longdouble)
    eps = float(np.finfo(F64).eps)
    (ds, as_, bs), (dc, ac, bc) = _sincos_err(
        x, s, c, np.sin(xl).astype(F64), np.cos(xl).astype(F64), eps)
    print("vsincos float64 max ulp error sin/cos", ds, dc,
          "max abs error", as_, ac)
    assert bs == 0 and bc == 0
    assert ds <= 4 and dc <= 4


@pytest.mark.parametrize("dt", [F32, F64])
def test_vsincos_special_values(dt):
    x = np.array([0.0, -0.0, np.nan, np.inf, -np.inf], dt)
    s, c = jsincos(x)
    assert s.dtype == dt and c.dtype == dt
    assert s[0] == 0 and c[0] == 1 and s[1] == 0 and c[1] == 1
    assert np.all(np.isnan(s[2:])) and np.all(np.isnan(c[2:]))


# ---------------------------------------------------------------------------
# fmax / fmin

@pytest.mark.parametrize("dt", [F32, F64])
def test_fmax_fmin(dt):
    rng = np.random.default_rng(5)
    vals = np.array([np.nan, -np.inf, np.inf, 0.0, -0.0, 1.5, -2.0], dt)
    a = np.repeat(vals, vals.size)
    b = np.tile(vals, vals.size)
    mx, mn = np.empty_like(a), np.empty_like(a)
    _map_minmax(a, b, mx, mn)
    assert mx.dtype == dt
    # maxNum: a NaN operand is ignored; the sign of a zero result is free
    np.testing.assert_array_equal(mx, np.fmax(a, b))
    np.testing.assert_array_equal(mn, np.fmin(a, b))
    # the generic (non-CPU) versions used on other targets
    gmx, gmn = np.empty_like(a), np.empty_like(a)
    _map_minmax_generic(a, b, gmx, gmn)
    assert np.all(ulp_dist(gmx, np.fmax(a, b)) == 0)
    assert np.all(ulp_dist(gmn, np.fmin(a, b)) == 0)
    # reductions with NaNs and -inf
    x = rng.standard_normal(10_001).astype(dt)
    x[::7] = np.nan
    x[3] = -np.inf
    assert _reduce_max(x) == np.nanmax(x)
    assert _reduce_min(x) == -np.inf
    x[0] = np.nan                               # NaN start value is ignored
    assert _reduce_max(x) == np.nanmax(x)
    y = np.full(100, -np.inf, dt)
    y[50] = np.nan
    assert _reduce_max(y) == -np.inf
    assert np.isnan(_reduce_max(np.full(9, np.nan, dt)))


# ---------------------------------------------------------------------------
# vectorization (the reason these functions exist)

def _llvm(disp, dt):
    return disp.inspect_llvm(disp.signatures[[s[0].dtype for s in
                                              disp.signatures].index(dt)])


@pytest.mark.parametrize("dt", [F32, F64])
def test_vectorizes(dt):
    # numba keeps no IR for code loaded from its cache: compile the loops
    # afresh, with the same flags
    sum_exp = numba.njit(fastmath=FASTMATH)(_sum_exp.py_func)
    reduce_max = numba.njit(fastmath=FASTMATH)(_reduce_max.py_func)
    x = np.linspace(-5, 5, 1001).astype(dt)
    sum_exp(x, dt(1))
    reduce_max(x)
    name = "float" if dt is F32 else "double"
    import re
    ir = _llvm(sum_exp, numba.from_dtype(dt))
    vec = re.compile(r"<(\d+) x %s>" % name)
    assert any(int(n) >= 2 for n in vec.findall(ir)), "vexp loop is scalar"
    assert "@exp" not in ir and "llvm.exp" not in ir
    if dt is F32:        # no silent float64 / int64 lanes in a float32 loop
        assert "double>" not in ir
        assert "x i64>" not in ir
    ir = _llvm(reduce_max, numba.from_dtype(dt))
    assert re.search(r"llvm\.(vector\.reduce\.fmax|maxnum)\.v\d+f", ir), \
        "fmax reduction is scalar"


# ---------------------------------------------------------------------------
# The Python path (NumPy scalars: the CUDA simulator runs it) agrees with jit

@pytest.mark.parametrize("dt", [F32, F64])
def test_python_path_matches_jit(dt):
    rng = np.random.default_rng(11)
    n = 150
    cases = [
        (vexp, jexp, np.concatenate([rng.uniform(-110, 90, n).astype(dt),
                                     np.array([-np.inf, np.nan, 0], dt)])
         if dt is F32 else
         np.concatenate([rng.uniform(-750, 712, n), [-np.inf, np.nan, 0]])),
        (vlog, jlog, np.concatenate([
            np.exp(rng.uniform(-100, 88, n)).astype(dt),
            np.array([0, np.inf, np.nan, np.finfo(dt).smallest_subnormal],
                     dt)])),
        (lambda v: vsincos(v)[0], lambda v: jsincos(v)[0],
         rng.uniform(-np.pi, np.pi, n).astype(dt)),
        (lambda v: vsincos(v)[1], lambda v: jsincos(v)[1],
         rng.uniform(-np.pi, np.pi, n).astype(dt)),
    ]
    for py, jit, x in cases:
        x = x.astype(dt)
        got = [py(v) for v in x]
        assert all(type(g) is dt for g in got)
        d = ulp_dist(np.array(got, dt), jit(x))
        # identical algorithm; only FMA contraction may differ
        assert d.max() <= 1, (x[np.argmax(d)], d.max())
    a, b = dt(1), dt(np.nan)
    assert fmax(a, b) == 1 and fmin(b, a) == 1 and type(fmax(a, b)) is dt
    assert type(vexp(1.0)) is F64        # Python float -> float64


# ---------------------------------------------------------------------------
# CUDA simulator (a shared child) and cache=True (a fresh interpreter)

def _run(code, env_extra, tmp_path):
    env = dict(os.environ)
    env.update(env_extra)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          env=env, cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=120)


@pytest.mark.skipif(importlib.util.find_spec("numba_cuda") is None,
                    reason="numba-cuda is not installed")
def test_cuda_simulator(tmp_path_factory):
    """A device function calling every vmath function, in a kernel under the
    simulator (``_cudasim.vmath_job``)."""
    out = np.array(_children.job(tmp_path_factory, "cudasim", "cudasim_vmath"), np.float32)
    x = _cudasim.VMATH_X
    ref = np.array([np.exp(x), np.log(x), np.sin(x), np.cos(x), x, x])
    err = np.abs(out - ref) / np.abs(ref)
    assert float(err.max()) < 3e-7


def test_cache_true_hits(tmp_path):
    (tmp_path / "cachemod.py").write_text(textwrap.dedent("""
    import numba, numpy as np
    from fastsoftmax._kernels.vmath import vexp, vlog, vsincos, fmax

    @numba.njit(cache=True, fastmath={"nsz", "arcp", "contract", "afn",
                                      "reassoc"})
    def kern(x):
        m = x[0]
        for i in range(x.size):
            m = fmax(m, x[i])
        s = x[0] - x[0]
        for i in range(x.size):
            a, b = vsincos(x[i])
            s += vexp(x[i] - m) + vlog(abs(x[i]) + 1) * a * b
        return s
    """))
    code = """
    import numpy as np, cachemod
    print("RES", repr(float(cachemod.kern(np.linspace(-3, 3, 101,
                                                      dtype=np.float32)))))
    print("HITS", sum(cachemod.kern.stats.cache_hits.values()))
    """
    cache = tmp_path / "cache"
    # the first run in this interpreter: it compiles and writes the cache
    # (numba reads its cache directory when the dispatcher is made); a fresh
    # interpreter then has to load the kernel from it
    saved = numba.config.CACHE_DIR
    numba.config.CACHE_DIR = str(cache)
    try:
        spec = importlib.util.spec_from_file_location("cachemod", tmp_path / "cachemod.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["cachemod"] = mod          # an importable module, as in the child
        spec.loader.exec_module(mod)
        res1 = repr(float(mod.kern(np.linspace(-3, 3, 101, dtype=np.float32))))
        assert sum(mod.kern.stats.cache_hits.values()) == 0
        assert sum(mod.kern.stats.cache_misses.values()) == 1
    finally:
        numba.config.CACHE_DIR = saved
        sys.modules.pop("cachemod", None)
    assert any(f.suffix == ".nbc" for f in cache.rglob("*")), list(cache.rglob("*"))
    env = {"NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(tmp_path)}
    r2 = _run(code, env, tmp_path)
    assert r2.returncode == 0, r2.stderr[-3000:]
    assert "HITS 1" in r2.stdout, r2.stdout
    assert r2.stdout.split("HITS")[0] == f"RES {res1}\n"


def _nvvm_available():
    if importlib.util.find_spec("numba_cuda") is None:
        return False
    try:
        from numba.cuda.cudadrv import nvvm
        return bool(nvvm.is_available())
    except Exception:
        return False


@pytest.mark.skipif(not _nvvm_available(), reason="needs numba-cuda + NVVM")
def test_cuda_ptx_compiles(tmp_path):
    """The real CUDA path types, lowers and goes through NVVM (no GPU needed):
    IEEE division (no fast-math leaks from the CPU options), no libm call."""
    code = """
    import re
    from numba import float32, float64
    import numba.cuda.dispatcher as D
    from numba.cuda.compiler import compile_cuda
    try:
        D.get_current_device().compute_capability
    except Exception:   # no driver/GPU here: pretend a sm_80 device
        import types
        D.get_current_device = lambda: types.SimpleNamespace(
            compute_capability=(8, 0))
    from fastsoftmax._kernels.vmath import vexp, vlog, vsincos, fmax, fmin

    # float32 and float64 side by side in one function: one compile, one
    # NVVM pass, one PTX module with both types' code
    def f(a, b):
        s, c = vsincos(a)
        t, d = vsincos(b)
        return (vexp(a) + vlog(a) + s * c + fmax(a, s) + fmin(a, c),
                vexp(b) + vlog(b) + t * d + fmax(b, t) + fmin(b, d))

    cres = compile_cuda(f, None, (float32, float64), cc=(8, 0))
    assert tuple(cres.signature.return_type) == (float32, float64)
    ptx = cres.library.get_asm_str(cc=(8, 0))
    assert "div.rn.f32" in ptx and "div.rn.f64" in ptx and "div.approx" not in ptx
    assert ".ftz" not in ptx
    print("PTX", len(ptx))
    """
    r = _run(code, {}, tmp_path)
    if r.returncode != 0 and "DynamicLibNotFoundError" in r.stderr:
        # NVVM imports but the CUDA toolkit libraries (NVRTC) are absent: the
        # PTX path cannot run on this machine at all
        pytest.skip("CUDA toolkit libraries (NVRTC) not installed")
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("PTX") == 1
