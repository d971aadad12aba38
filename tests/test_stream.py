"""Long rows in one pass (fastsoftmax._kernels.stream): the row state built
chunk by chunk against a float64 reference computed from the definition;
the numbers of the row-at-a-time path, bit for bit, where the whole row is
one segment; bad and masked chunks; float64 extremes; the same bits at 128
and 256 bits; the observables from the one-pass row statistics."""
import numpy as np
import pytest
from numba import njit

import _children
import fastsoftmax as fs
from helpers import RTOL
from fastsoftmax._config import FASTMATH
from fastsoftmax._kernels import stream as _stream
from fastsoftmax._kernels.row import NOBS, logobs, row_bad, row_state, state_merge
from fastsoftmax._kernels.simd import vector_width
from fastsoftmax.registries import TARGET_ARGMAX, TARGET_LABELS

CHUNK = _stream.STREAM_CHUNK


def _build(key):
    """The test's kernels, compiled once into numba's cache (the children's
    too): ``key``, the package kernels' source key, is in their closure, so
    the cache index changes with the sources they inline."""
    jit = dict(fastmath=FASTMATH, error_model="numpy", cache=True)

    @njit(**jit)
    def chunked(x, chunk):
        key  # noqa: B018  (part of the cache key)
        vector_width()
        return _stream.chunked_state(x, x.shape[0], chunk, x)

    @njit(**jit)
    def row(x):
        key  # noqa: B018
        vector_width()
        return row_state(x, x.shape[0])

    @njit(cache=True)
    def merge(a, b):
        key  # noqa: B018
        return state_merge(a[0], a[1], a[2], a[3], a[4], a[5],
                           b[0], b[1], b[2], b[3], b[4], b[5])

    @njit(**jit)
    def stream_logobs(x, ymode, labels):
        key  # noqa: B018
        rows, n = x.shape
        out = np.empty((rows, NOBS))
        bad = np.zeros(rows, np.bool_)
        for r in range(rows):
            vector_width()
            xr = x[r]
            m1, m2, rr, e2, e3, v, y_top, xy, ey, b = _stream.stream_stats(
                xr, n, ymode, labels[r], 0.5, xr)
            lam = logobs(m1, m2, rr, e2, e3, v, y_top, xy, ey)
            for k in range(NOBS):
                out[r, k] = lam[k]
            bad[r] = b
        return out, bad

    return chunked, row, merge, stream_logobs


_chunked, _row, _merge, _stream_logobs = _build(_children.source_key())


def _ref(x):
    """(m1, m2, R, E2, E3, V) from the definition, in float64: the top two
    with multiplicity, the rest's exps relative to m2 (R, E2, E3 then
    count every element but the top one, V their e_i (m2 - x_i))."""
    s = np.sort(np.asarray(x, np.float64))[::-1]
    m1 = s[0]
    m2 = s[1] if s.size > 1 else -np.inf
    if not m2 > -np.inf:
        return m1, m2, 0.0, 0.0, 0.0, 0.0
    rest = s[1:][s[1:] > -np.inf]
    with np.errstate(over="ignore"):
        d = m2 - rest                       # inf beyond the float64 range
    e = np.exp(-d)
    v = np.where(e > 0, e * np.where(e > 0, d, 0.0), 0.0)
    return m1, m2, e.sum(), (e * e).sum(), (e ** 3).sum(), v.sum()


def _check(got, x, rtol):
    ref = _ref(x)
    assert tuple(got[:2]) == tuple(ref[:2])
    np.testing.assert_allclose(got[2:5], ref[2:5], rtol=rtol, atol=1e-300)
    # V enters the entropy only beside g R: its error is measured against R
    assert abs(got[5] - ref[5]) <= rtol * (abs(ref[5]) + ref[2]), (got, ref)


def _rows(dt):
    """Long rows of every shape the merges meet: N(0, s) at several scales,
    -inf masks, ties, ascending (a segment closes at every chunk), a top
    two in the last chunk, integer logits (ties across chunks)."""
    rng = np.random.default_rng(7)
    out = []
    for n in (CHUNK - 5, CHUNK, CHUNK + 1, 3 * CHUNK + 17, 5000, 16384):
        for scale in (0.3, 3.0, 30.0, 300.0):
            x = rng.standard_normal(n) * scale
            x[::97] = -np.inf
            out.append(x)
        out.append(np.sort(rng.standard_normal(n) * 3))
        y = rng.standard_normal(n)
        y[-3:] = (9.0, 8.5, 9.0)
        out.append(y)
        out.append(np.round(rng.standard_normal(n) * 2))
    return [x.astype(dt) for x in out]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_chunked_state_is_the_row_state(dt):
    for x in _rows(dt):
        for chunk in (256, CHUNK):
            _check(_chunked(x, chunk), x, RTOL[np.dtype(dt)] / 10)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_one_segment_gives_the_bits_of_the_row_path(dt):
    # the top two in the first chunk: one segment, the lanes, flushes and
    # tree of row.row_sums exactly; and a row shorter than a chunk
    rng = np.random.default_rng(8)
    for n in (300, CHUNK, 4 * CHUNK + 33, 16384):
        x = (rng.standard_normal(n) * 3).astype(dt)
        x[5], x[40] = 20, 19
        assert _chunked(x, CHUNK) == _row(x)
        assert _chunked(np.sort(x)[::-1].copy(), CHUNK) == _row(np.sort(x)[::-1].copy())
    x = (rng.standard_normal(CHUNK - 1) * 3).astype(dt)
    assert _chunked(x, CHUNK) == _row(x)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_bad_and_masked_chunks(dt):
    n = 4 * CHUNK + 10
    base = np.random.default_rng(9).standard_normal(n).astype(dt)

    def with_(**at):
        y = base.copy()
        for sl, v in at.values():
            y[sl] = v
        return y

    # a whole chunk masked, the first one masked, every chunk but one masked
    for y in (with_(a=(slice(CHUNK, 2 * CHUNK), -np.inf)),
              with_(a=(slice(0, CHUNK), -np.inf)),
              with_(a=(slice(0, 3 * CHUNK), -np.inf), b=(slice(3 * CHUNK + 100, n), -np.inf))):
        _check(_chunked(y, CHUNK), y, RTOL[np.dtype(dt)] / 10)
    # a single finite logit, in a late chunk or the first one: m2 = -inf, sums 0
    for i in (3 * CHUNK + 7, 2):
        y = np.full(n, -np.inf, dtype=dt)
        y[i] = 1.5
        assert _chunked(y, CHUNK) == (1.5, -np.inf, 0.0, 0.0, 0.0, 0.0)
    # no finite logit; NaN (among finite values or among -inf); +inf: bad
    m1, _, r, _, _, v = _chunked(np.full(n, -np.inf, dtype=dt), CHUNK)
    assert m1 == -np.inf and row_bad(m1, r, v)
    for sl, val in ((2 * CHUNK + 3, np.nan), (n - 1, np.nan), (CHUNK, np.inf), (0, np.inf)):
        m1, _, r, _, _, v = _chunked(with_(a=(sl, val)), CHUNK)
        assert row_bad(m1, r, v), (sl, val)
    y = with_(a=(slice(CHUNK, 2 * CHUNK), -np.inf))
    y[CHUNK + 5] = np.nan
    m1, _, r, _, _, v = _chunked(y, CHUNK)
    assert row_bad(m1, r, v)
    # ties at the top in different chunks: m1 == m2, no rescale
    y = with_(a=(7, 50.0), b=(3 * CHUNK + 1, 50.0))
    got = _chunked(y, CHUNK)
    assert got[0] == got[1] == 50.0
    _check(got, y, RTOL[np.dtype(dt)] / 10)


def test_state_merge_across_the_float64_range():
    # distances to m2 beyond the float64 range (1e308 - -1e308): the far part
    # adds exact zeros, never 0 * inf = NaN
    a = (1e308, 1e308, 1.0, 1.0, 1.0, 0.0)
    b = (-1e308, -1e308, 1.0, 1.0, 1.0, 0.0)
    assert _merge(a, b) == a == _merge(b, a)[:2] + a[2:]
    x = np.full(3 * CHUNK, -1e308)
    x[2 * CHUNK + 1] = 1e308
    x[2 * CHUNK + 9] = 1e308
    x[CHUNK + 3] = 0.0
    got = _chunked(x, CHUNK)
    assert got == (1e308, 1e308, 1.0, 1.0, 1.0, 0.0) == tuple(_ref(x))


def child_job():
    """In each child (``_children``): the state of every row of ``_rows``,
    both dtypes, as float hex strings."""
    return {f"{dt} {i}": [float(v).hex() for v in _chunked(x, CHUNK)]
            for dt in ("float32", "float64") for i, x in enumerate(_rows(np.dtype(dt)))}


def test_same_bits_at_128_and_256_bits(tmp_path_factory):
    """The chunks, lanes and merges are the code's: a 256-bit (AVX2, FMA)
    and a 128-bit build give the same state, bit for bit.  (The children
    are test_bits' too: one a build for the whole test run.)"""
    res = _children.results(tmp_path_factory, "256", "128")      # side by side
    for width in ("256", "128"):
        assert "error" not in res[width], res[width]["error"]
    w256, w128 = res["256"]["stream"], res["128"]["stream"]
    assert w256 == w128
    assert len(w256) == 2 * len(_rows(np.float32))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_stream_stats_give_the_observables(dt):
    # the one-pass row statistics through the wrap-up (logobs): every
    # observable's log within the dtype's tolerance of fs.observables on the
    # float64 rows (itself checked against mpmath), for the top class and
    # for labels; a NaN row is bad
    n = _stream.STREAM_MIN_N + 3
    rng = np.random.default_rng(10)
    x = (rng.standard_normal((24, n)) * 4).astype(dt)
    x[::3, ::13] = -np.inf
    x[5] = np.sort(x[5])                     # a segment a chunk
    x[7, ::2] *= 100                         # saturated
    lab = rng.integers(0, n, size=24)
    lab[::4] = np.argmax(x[::4], axis=1)     # some labels on top
    for mode, target in ((TARGET_ARGMAX, "argmax"), (TARGET_LABELS, lab)):
        got, bad = _stream_logobs(x, mode, lab)
        assert not bad.any()
        ref = fs.observables(x.astype(np.float64), target=target)
        for k, name in enumerate(fs.OBS_NAMES):
            la, lb = got[:, k] / np.log(10), ref["log10_" + name]
            fin = np.isfinite(lb)
            assert np.array_equal(fin, np.isfinite(la)), name
            assert np.all(np.abs(la[fin] - lb[fin]) <= RTOL[np.dtype(dt)] *
                          np.maximum(np.abs(lb[fin]), 1 / np.log(10))), name
    x[17, n - 2] = np.nan
    assert np.flatnonzero(_stream_logobs(x, TARGET_ARGMAX, lab)[1]).tolist() == [17]
