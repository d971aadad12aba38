"""The SIMD primitives of fastsoftmax._kernels.simd: the CPU intrinsics (LLVM vector
IR over 16 lanes) give exactly the numbers of their plain-Python reference
bodies (the same operations in the same order), for every tail length, with
-inf, +-inf and NaN, at the vector width in use, and at 256 and 128 bits in the
children of ``_children``."""
import numpy as np
import pytest
from numba import njit

import _children
from fastsoftmax._kernels import simd as _simd
from fastsoftmax._kernels.row import tile_load, tile_sums

S32 = _simd.stack_array(np.float32, 4, 16)
S64 = _simd.stack_array(np.float64, 4, 16)


def _build(key):
    """The test's drivers, compiled into numba's cache (the children's too):
    ``key``, the package kernels' source key (with the vector-width
    setting), is in their closure, so the cache index changes with the
    sources they inline."""

    @njit(cache=True)
    def top2(a, off, n):
        key  # noqa: B018  (part of the cache key)
        return _simd.top2(a, off, n)

    @njit(cache=True)
    def chan(val, c, off, nr, mean):
        key  # noqa: B018
        return _simd.chan_stats(val, c, off, nr), _simd.chan_ss(val, c, off, nr, mean)

    @njit(cache=True)
    def flush_tree(p, d):
        key  # noqa: B018
        P = S32()
        D = S64()
        for c in range(4):
            for k in range(16):
                P[c, k] = p[c, k]
                D[c, k] = d[c, k]
        _simd.flush(P, D, 4)
        out = np.zeros(5)
        for c in range(4):
            out[c] = _simd.tree_sum(D, c)
        out[4] = P[2, 3]
        return out

    @njit(cache=True)
    def rows(x):
        key  # noqa: B018
        out = np.zeros(x.shape[0])
        for r in range(x.shape[0]):
            v = _simd.row_view(x, r)
            out[r] = v[0] + v[v.shape[0] - 1]
        return out

    @njit(cache=True)
    def tile(x, r0, k):
        key  # noqa: B018
        n = x.shape[1]
        tb = np.empty((n, 16), dtype=x.dtype)
        tm = np.empty((2, 16), dtype=x.dtype)
        td = np.empty((4, 16))
        tile_load(x, r0, k, n, tb)
        tile_sums(tb, n, tm, td)
        return tb, tm, td

    return top2, chan, flush_tree, rows, tile


_top2, _chan, _flush_tree, _rows, _tile = _build(_children.source_key())


LENGTHS = [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100, 1000]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_top2(dt):
    rng = np.random.default_rng(1)
    for n in LENGTHS:
        for trial in range(12):
            x = rng.integers(-5, 5, size=n + 7).astype(dt)      # many ties
            if trial % 3 == 0:
                x[rng.integers(0, n + 7, 3)] = -np.inf
            if trial == 11:
                x[:] = -np.inf
            off = int(rng.integers(0, 7))
            v = np.sort(x[off:off + n])
            ref = (v[-1], v[-2] if n > 1 else -np.inf)
            assert _top2(x, off, n) == ref == _simd.top2(x, off, n), (n, trial)


def test_chan_stats_and_ss():
    rng = np.random.default_rng(2)
    for nr, off in [(nr, off) for nr in LENGTHS + [1024] for off in (0, 3, 16)]:
        val = rng.standard_normal((3, 1050)) * 10
        val[0, ::7] = np.inf
        val[0, ::11] = -np.inf
        val[0, 3::13] = np.nan
        val[2, :] = np.nan
        for c in range(3):
            (cnt, s, ninf, mn, mx), ss = _chan(val, c, off, nr, 0.5)
            pc, ps, pn, pmn, pmx = _simd.chan_stats(val, c, off, nr)
            assert (cnt, ninf) == (pc, pn)
            assert s == ps and ss == _simd.chan_ss(val, c, off, nr, 0.5)
            assert (mn == pmn or (np.isnan(mn) and np.isnan(pmn))) and (mx == pmx)
            # a block at an offset is the same block copied to offset 0
            v = val[c, off:off + nr]
            assert _chan(v.reshape(1, -1).copy(), 0, 0, nr, 0.5) == ((cnt, s, ninf, mn, mx), ss)
            fin = np.isfinite(v)
            assert cnt == fin.sum() and ninf == np.isinf(v).sum()
            if fin.any():
                assert s == pytest.approx(v[fin].sum(), rel=1e-12)
                assert ss == pytest.approx(((v[fin] - 0.5) ** 2).sum(), rel=1e-12)


def test_flush_and_tree_sum():
    rng = np.random.default_rng(3)
    p = rng.standard_normal((4, 16)).astype(np.float32)
    d = rng.standard_normal((4, 16))
    got = _flush_tree(p, d)
    P, D = p.copy(), d.copy()
    _simd.flush(P, D, 4)
    assert np.array_equal(got, [_simd.tree_sum(D, c) for c in range(4)] + [0.0])


def test_row_view():
    x = np.arange(35.0).reshape(5, 7)
    assert np.array_equal(_rows(x), x[:, 0] + x[:, -1])


def child_job():
    """In the 256- and 128-bit children (``_children``): the checks above,
    the intrinsics against their Python bodies, with the 16 lanes split
    into chunks of that width (tiles transposed in 8 x 8 or 4 x 4 blocks);
    "OK" or the failure."""
    import traceback
    try:
        test_top2(np.float32)
        test_chan_stats_and_ss()
        test_flush_and_tree_sum()
        test_tile_sums_per_lane(np.float32, 17)
    except Exception:
        return traceback.format_exc()
    return "OK"


def test_same_numbers_at_256_bits(tmp_path_factory):
    """The 16 lanes in 256-bit chunks (the build of a CPU without
    AVX-512): the same numbers."""
    assert _children.job(tmp_path_factory, "256", "simd") == "OK"


def test_same_numbers_at_128_bits(tmp_path_factory):
    """FASTSOFTMAX_VECTOR_WIDTH=128 splits the 16 lanes into 128-bit
    chunks: the same numbers."""
    assert _children.job(tmp_path_factory, "128", "simd") == "OK"


# --------------------------------------------------------------------------
# the tile path of the row kernel: 16 rows, one per lane

def _sums_ref(row):
    """(m1, m2, R + 1, E2 + 1, E3 + 1, V) in float64 from the definitions."""
    row = row.astype(np.float64)
    s = np.sort(row)[::-1]
    m1, m2 = s[0], (s[1] if row.size > 1 else -np.inf)
    ref = m2 if m2 > -np.inf else m1
    with np.errstate(invalid="ignore"):
        d = np.minimum(row - ref, 0.0)
    e = np.where(d >= (-29.0 if row.dtype == np.float32 else -236.0), np.exp(d), 0.0)
    return m1, m2, e.sum(), (e * e).sum(), (e ** 3).sum(), -(e * np.where(e > 0, d, 0)).sum()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 2, 15, 16, 17, 64, 100, 256])
def test_tile_sums_per_lane(dt, n):
    """Each lane holds one row: exact top two, sums within the lane partials'
    rounding of the float64 definitions, and the same bits for a row
    whichever lane (and tile, and tail) it lands in."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((37, n)) * 4).astype(dt)
    if n > 3:
        x[2, 1] = -np.inf                     # a mask
        x[4, :] = 1.5                         # ties
        x[6, :] = -np.inf
        x[6, 0] = 0.0                         # a single finite logit
        x[8, :] *= 300                        # saturated
    tb, tm, td = _tile(x, 0, 16)
    assert np.array_equal(tb, x[:16].T)
    rtol = 1e-6 if dt == np.float32 else 1e-14
    for l in range(16):
        m1, m2, r, e2, e3, v = _sums_ref(x[l])
        assert tm[0, l] == m1 and (tm[1, l] == m2 or n == 1)
        np.testing.assert_allclose(td[:3, l], [r, e2, e3], rtol=rtol)
        np.testing.assert_allclose(td[3, l], v, rtol=rtol, atol=1e-12)
    # the same rows at other lanes (shifted start, a short tail tile)
    for r0, k in ((5, 16), (30, 7)):
        _, tm2, td2 = _tile(x, r0, k)
        _, tm1, td1 = _tile(x[r0:r0 + k].copy(), 0, k)
        for l in range(k):
            row = r0 + l
            tile, lane = divmod(row, 16)
            _, tma, tda = _tile(x, tile * 16, min(16, 37 - tile * 16))
            assert np.array_equal(td2[:, l], tda[:, lane]) and np.array_equal(td2[:, l], td1[:, l])
            assert np.array_equal(tm2[:, l], tma[:, lane])
