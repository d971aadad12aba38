"""Tests of fastsoftmax._kernels.rng: Philox4x32-10, normals, uniforms, chi-square.

The jitted drivers below are compiled once into numba's cache; seeds are fixed,
so the statistical tests are deterministic (thresholds p > 1e-4: a wrong
formula fails by orders of magnitude).
"""
import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numba import njit
from scipy import stats

import _children
import _cudasim
from fastsoftmax._kernels import rng as R

SEED = 20240607
N_STAT = 100_000
P_MIN = 1e-4

KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


# --------------------------------------------------------------------------
# jitted drivers, compiled into numba's cache: ``key`` (the package kernels'
# source key) is in their closure, so the cache index changes with the
# sources of the rng functions they inline, not only with this file
# --------------------------------------------------------------------------
def _build(key):
    jit = dict(cache=True)

    @njit(**jit)
    def philox_nb(c, k):
        key  # noqa: B018  (part of the cache key)
        return R.philox4x32_10(c[0], c[1], c[2], c[3], k[0], k[1])

    @njit(**jit)
    def fill_rows(out, n, seed, row0, stream):
        key  # noqa: B018
        for r in range(out.shape[0]):
            R.fill_normals(out[r], n, seed, row0 + r, stream)

    @njit(**jit)
    def normals_at(seed, rows, stream, indices):
        key  # noqa: B018
        out = np.empty((rows.size, indices.size))
        for r in range(rows.size):
            for i in range(indices.size):
                out[r, i] = R.normal(seed, rows[r], stream, indices[i])
        return out

    @njit(**jit)
    def uniforms(seed, nrows, stream, index):
        key  # noqa: B018
        out = np.empty(nrows)
        for r in range(nrows):
            out[r] = R.uniform(seed, r, stream, index)
        return out

    @njit(**jit)
    def uniform_ints(seed, nrows, stream, m):
        key  # noqa: B018
        out = np.empty(nrows, np.int64)
        for r in range(nrows):
            out[r] = R.uniform_int(seed, r, stream, m)
        return out

    @njit(**jit)
    def chi2s(seed, nrows, stream, k):
        key  # noqa: B018
        out = np.empty(nrows)
        for r in range(nrows):
            out[r] = R.chi2(seed, r, stream, k)
        return out

    @njit(**jit)
    def box_muller_both(wr, wa):
        key  # noqa: B018
        o32 = np.empty((wr.size, 2), np.float32)
        o64 = np.empty((wr.size, 2), np.float64)
        for i in range(wr.size):
            a, b = R._box_muller(wr[i], wa[i], np.float32)
            o32[i, 0] = a
            o32[i, 1] = b
            a, b = R._box_muller(wr[i], wa[i], np.float64)
            o64[i, 0] = a
            o64[i, 1] = b
        return o32, o64

    @njit(**jit)
    def uniform53_nb(w_hi, w_lo):
        key  # noqa: B018
        return R._uniform53(w_hi, w_lo)

    @njit(**jit)
    def fused_and_block(flat, rowwise, plain, seed, row0, a, b):
        """fill_normals_rows over the block, fill_normals_affine and
        fill_normals row by row."""
        key  # noqa: B018
        nr, n = flat.shape
        R.fill_normals_rows(flat, nr, n, seed, row0, R.STREAM_LOGITS, a, b)
        for i in range(nr):
            R.fill_normals_affine(rowwise[i], n, seed, row0 + i, R.STREAM_LOGITS, a, b)
            R.fill_normals(plain[i], n, seed, row0 + i, R.STREAM_LOGITS)

    return (philox_nb, fill_rows, normals_at, uniforms, uniform_ints, chi2s, box_muller_both,
            uniform53_nb, fused_and_block)


(philox_nb, fill_rows, normals_at, uniforms, uniform_ints, chi2s, box_muller_both,
 uniform53_nb, _fused_and_block) = _build(_children.source_key())


def normals(n, rows, dtype, seed=SEED, row0=0, stream=R.STREAM_LOGITS, width=None):
    out = np.full((rows, width or n), np.nan, dtype)
    # one signature: seed as uint64 (a Python int >= 2**63 does not fit int64)
    fill_rows(out, n, np.uint64(seed), np.int64(row0), np.int64(stream))
    return out


# --------------------------------------------------------------------------
# Philox
# --------------------------------------------------------------------------
@pytest.mark.parametrize("ctr,key,expected", KAT)
def test_philox_known_answers_compiled(ctr, key, expected):
    got = philox_nb(np.array(ctr, np.uint64), np.array(key, np.uint64))
    assert tuple(int(x) for x in got) == expected


@pytest.mark.parametrize("ctr,key,expected", KAT)
def test_philox_known_answers_python(ctr, key, expected):
    # plain Python on NumPy scalars: how the CUDA simulator runs device code
    got = R.philox4x32_10(*ctr, *key)
    assert tuple(int(x) for x in got) == expected


def test_stream_constants():
    names = ["STREAM_LOGITS", "STREAM_SCALE", "STREAM_LABEL", "STREAM_SAMPLED",
             "STREAM_QUERY", "STREAM_KEYS", "STREAM_AUX"]
    assert [getattr(R, nm) for nm in names] == list(range(7))


# --------------------------------------------------------------------------
# Determinism, addressing, prefix property
# --------------------------------------------------------------------------
def test_deterministic():
    a = normals(64, 3, np.float64)
    b = normals(64, 3, np.float64)
    assert np.array_equal(a, b)
    idx = np.array([0, 1, 5, 63], np.int64)
    rows = np.array([0, 1, 2], np.int64)
    assert np.array_equal(normals_at(SEED, rows, 0, idx), normals_at(SEED, rows, 0, idx))
    assert np.array_equal(chi2s(SEED, 50, R.STREAM_SCALE, 7.5), chi2s(SEED, 50, R.STREAM_SCALE, 7.5))
    assert np.array_equal(uniforms(SEED, 50, 3, 9), uniforms(SEED, 50, 3, 9))
    assert np.array_equal(uniform_ints(SEED, 50, 2, 1000), uniform_ints(SEED, 50, 2, 1000))


@pytest.mark.parametrize("other", [
    dict(seed=SEED + 1), dict(seed=SEED + 2**32), dict(seed=2**64 - 1),
    dict(row0=1), dict(row0=2**32), dict(row0=2**40 + 7),
    dict(stream=1), dict(stream=6),
])
def test_different_addresses_differ(other):
    base = normals(64, 1, np.float64)
    alt = normals(64, 1, np.float64, **other)
    assert np.all(base != alt)          # no coincidence among 64 doubles
    assert np.all(np.isfinite(alt))


def test_all_streams_differ():
    z = np.stack([normals(64, 1, np.float64, stream=s)[0] for s in range(7)])
    for i in range(7):
        for j in range(i):
            assert np.all(z[i] != z[j])


def test_prefix_property_64_vs_1024():
    for dt in (np.float32, np.float64):
        a = normals(64, 4, dt)
        b = normals(1024, 4, dt)
        assert np.array_equal(a, b[:, :64])


def test_prefix_property_small_n_and_no_overrun():
    ref = normals(16, 3, np.float64)
    for dt in (np.float32, np.float64):
        ref_dt = normals(16, 3, dt)
        for n in range(0, 13):
            got = normals(n, 3, dt, width=16)
            assert np.array_equal(got[:, :n], ref_dt[:, :n]), n
            assert np.all(np.isnan(got[:, n:])), n      # buf[n:] untouched
    assert np.all(np.isfinite(ref))


def test_float32_float64_same_draws():
    z64 = normals(100, 1000, np.float64)
    z32 = normals(100, 1000, np.float32)
    # theta is rounded to float32 (|d theta| <= 2.4e-7) and multiplied by rho <= 6.8
    np.testing.assert_allclose(z32, z64, rtol=1e-6, atol=2e-6)
    assert np.abs(z32 - z64).max() > 0            # really computed in float32


def test_float32_box_muller_accurate_for_small_radius():
    # u near 1 (radius word near 2**32 - 1): float32 cannot hold u, the exact
    # integer residual keeps rho accurate relative to itself.
    rng = np.random.default_rng(1)
    wr = np.concatenate([np.arange(2**32 - 3000, 2**32, dtype=np.uint64),
                         rng.integers(0, 2**32, 5000, dtype=np.uint64),
                         np.arange(0, 100, dtype=np.uint64)])
    wa = rng.integers(0, 2**32, wr.size, dtype=np.uint64)
    o32, o64 = box_muller_both(wr, wa)
    rho = np.hypot(o64[:, 0], o64[:, 1])
    assert np.all(np.abs(o32 - o64).max(axis=1) <= 1e-6 * rho)
    # tail truncation: rho <= sqrt(-2 log 2**-33) = sqrt(66 log 2)
    assert rho.max() == pytest.approx(np.sqrt(66 * np.log(2)), rel=1e-12)
    assert rho.min() > 0 and np.all(np.isfinite(o32))


def test_normal_matches_fill_normals():
    z = normals(1027, 5, np.float64)
    idx = np.arange(1027, dtype=np.int64)
    np.testing.assert_allclose(normals_at(SEED, np.arange(5, dtype=np.int64), 0, idx), z,
                               rtol=1e-14, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), row=st.integers(0, 2**63 - 1),
       stream=st.integers(0, 6), index=st.integers(0, 200))
def test_normal_matches_fill_normals_property(seed, row, stream, index):
    buf = np.empty(index + 1)
    fill_rows(buf.reshape(1, -1), index + 1, np.uint64(seed), np.int64(row), np.int64(stream))
    got = normals_at(np.uint64(seed), np.array([row], np.int64), np.int64(stream),
                     np.array([index], np.int64))[0, 0]
    assert got == pytest.approx(buf[index], rel=1e-14, abs=1e-15)


def test_python_mode_matches_compiled():
    # The CUDA simulator runs these functions as plain Python on NumPy scalars.
    n = 11
    for dt in (np.float32, np.float64):
        ref = normals(n, 2, dt, row0=5)
        for r in range(2):
            buf = np.zeros(n, dt)
            R.fill_normals(buf, n, SEED, 5 + r, 0)
            tol = dict(rtol=2e-6, atol=1e-6) if dt == np.float32 else dict(rtol=1e-13, atol=1e-14)
            np.testing.assert_allclose(buf, ref[r], **tol)
    assert R.normal(SEED, 6, 0, 7) == pytest.approx(ref[1, 7], rel=1e-13)
    assert R.uniform(SEED, 3, 3, 9) == uniforms(SEED, 4, 3, 9)[3]
    assert R.uniform_int(SEED, 3, 2, 1000) == uniform_ints(SEED, 4, 2, 1000)[3]
    for k in (1.0, 7.5, 4096.0):
        assert R.chi2(SEED, 3, 1, k) == pytest.approx(chi2s(SEED, 4, 1, k)[3], rel=1e-12)


@pytest.mark.skipif(importlib.util.find_spec("numba.cuda") is None,
                    reason="numba.cuda is not installed")
def test_cuda_simulator_kernel(tmp_path_factory):
    """The rng functions in a kernel under the simulator
    (``_cudasim.rng_job``) give the CPU build's numbers."""
    assert _cudasim.RNG_SEED == SEED
    got = np.array(_children.job(tmp_path_factory, "cudasim", "cudasim_rng"))
    z = normals(6, 2, np.float64)
    rows = np.arange(2, dtype=np.int64)
    expected = np.concatenate([
        z.ravel(),
        np.stack([normals_at(SEED, rows, 0, np.array([3], np.int64))[:, 0],
                  uniforms(SEED, 2, 3, 0), uniform_ints(SEED, 2, 2, 1000),
                  chi2s(SEED, 2, 1, 7.5)], axis=1).ravel()])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------
# Distributions
# --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fill_normals_ks(dtype):
    z = normals(101, 990, dtype).ravel()          # n not a multiple of 4
    assert z.dtype == dtype and z.size == 99_990
    assert stats.kstest(z.astype(np.float64), "norm").pvalue > P_MIN
    assert abs(z.mean()) < 4 / np.sqrt(z.size)
    assert abs(z.var() - 1) < 4 * np.sqrt(2 / z.size)


def test_normal_ks():
    z = normals_at(SEED + 7, np.arange(1000, dtype=np.int64), R.STREAM_AUX,
                   np.arange(100, dtype=np.int64)).ravel()
    assert stats.kstest(z, "norm").pvalue > P_MIN


@pytest.mark.parametrize("k", [1, 2, 3, 7.5, 64, 4096, 1e6])
def test_chi2_ks(k):
    x = chi2s(SEED, N_STAT, R.STREAM_SCALE, float(k))
    assert np.all(x > 0) and np.all(np.isfinite(x))
    assert stats.kstest(x, stats.chi2(k).cdf).pvalue > P_MIN
    assert abs(x.mean() - k) < 5 * np.sqrt(2 * k / x.size)


def test_chi2_non_half_integer_below_two():
    # k < 2 uses the Gamma(a) = Gamma(a+1) U^(1/a) boost
    x = chi2s(SEED + 1, N_STAT, R.STREAM_SCALE, 1.37)
    assert stats.kstest(x, stats.chi2(1.37).cdf).pvalue > P_MIN


def test_chi2_int_and_float_k_agree():
    assert R.chi2(SEED, 5, 1, 3) == R.chi2(SEED, 5, 1, 3.0)
    assert np.array_equal(chi2s(SEED, 20, 1, 3.0), [R.chi2(SEED, r, 1, 3) for r in range(20)])


def test_uniform_ks_and_range():
    u = uniforms(SEED, N_STAT, R.STREAM_SAMPLED, 0)
    assert np.all((u > 0) & (u < 1))
    assert stats.kstest(u, "uniform").pvalue > P_MIN
    # the extremes of the 53-bit map stay strictly inside (0, 1)
    lo = uniform53_nb(np.uint64(0), np.uint64(0))
    hi = uniform53_nb(np.uint64(0xFFFFFFFF), np.uint64(0xFFFFFFFF))
    assert lo == 0.5 * 2.0**-53 and 0 < lo
    assert hi == 1 - 2.0**-53 and hi < 1
    # 53 bits used: low-order resolution below 2**-32
    assert np.any((u * 2.0**32) % 1 != 0.5)


@pytest.mark.parametrize("m", [1, 2, 7, 10, 1000])
def test_uniform_int_goodness_of_fit(m):
    x = uniform_ints(SEED, N_STAT, R.STREAM_LABEL, m)
    assert x.min() >= 0 and x.max() < m
    if m > 1:
        counts = np.bincount(x, minlength=m)
        assert stats.chisquare(counts).pvalue > P_MIN


def test_uniform_int_exact_multiply_shift():
    for m in (1, 3, 1000, 2**31 - 1, 2**31):
        for row in range(20):
            w0, w1, _, _ = R.philox4x32_10(0, R.STREAM_LABEL, row, 0, SEED & 0xFFFFFFFF, SEED >> 32)
            x = (int(w0) << 32) | int(w1)
            assert R.uniform_int(SEED, row, R.STREAM_LABEL, m) == (x * m) >> 64
    x = uniform_ints(SEED, N_STAT, R.STREAM_LABEL, 2**31)
    assert x.min() >= 0 and x.max() < 2**31
    assert abs((x >= 2**30).mean() - 0.5) < 4 * 0.5 / np.sqrt(x.size)


def _corr_ok(a, b):
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    r = np.corrcoef(a, b)[0, 1]
    assert abs(r) < 4 / np.sqrt(a.size), r


def test_correlations_near_zero():
    z = normals(100, 1001, np.float64)                   # rows 0..1000
    _corr_ok(z[:-1], z[1:])                              # adjacent rows
    _corr_ok(z[:-1] ** 2, z[1:] ** 2)
    _corr_ok(z[:, :-1], z[:, 1:])                        # adjacent indices (Box-Muller pair)
    _corr_ok(z[:, :-4], z[:, 4:])                        # adjacent Philox calls
    _corr_ok(z[:, 0::2] ** 2, z[:, 1::2] ** 2)           # the two halves of a pair
    s1 = normals(100, 1000, np.float64, stream=1)
    _corr_ok(z[:-1], s1)                                 # adjacent streams
    s2 = normals(100, 1000, np.float64, seed=SEED + 1)
    _corr_ok(z[:-1], s2)                                 # adjacent seeds
    u = uniforms(SEED, N_STAT, R.STREAM_SAMPLED, 0)
    _corr_ok(u[:-1], u[1:])
    c = chi2s(SEED, N_STAT, R.STREAM_SCALE, 3.0)
    _corr_ok(c[:-1], c[1:])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_fused_and_block_generation_equal_row_by_row(dt):
    """fill_normals_affine == a + b * fill_normals; fill_normals_rows (a
    block of rows in one loop) == the rows one by one (same bits)."""
    T = np.dtype(dt).type
    for n in (4, 8, 64, 100, 1024):
        flat, rowwise, plain = (np.zeros((37, n), dt) for _ in range(3))
        _fused_and_block(flat, rowwise, plain, np.uint64(12345), 2 ** 33 + 5, 0.5, 2.0)
        assert np.array_equal(flat, rowwise)
        assert np.array_equal(rowwise, T(0.5) + T(2.0) * plain)
