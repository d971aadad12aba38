"""The sketch without a floor and the moment tree.

* Quantiles at any depth against the exact order statistics of
  ``observables`` (the same rank, floor(q (N - 1))): log10 within 0.005 for
  |log10| <= 1000 and 0.1% beyond, values within 1% wherever >= 1e-300, in
  both dtypes, on saturated rows down to gaps of 1e300 logits.
* Quantiles never outside [min, max].
* Bucket geometry: every bucket's representative lies within the stated
  error of every value in it; the A/B boundary and the extreme ends.
* Size follows the data: the widest points verify runs fit in 1 MB.
* The moment tree: any split of a run on block boundaries, joined in order,
  is the same bits as one pass; a run's state does not grow with its rows.
"""
import math
import pickle

import numpy as np
import pytest

import fastsoftmax as fs
from fastsoftmax import _config
from fastsoftmax._kernels import sketch as _sketch
from fastsoftmax._inputs import check_dtype, mc_target
from fastsoftmax.backends import get_backend
from fastsoftmax.backends.common import ModelJob
from fastsoftmax.models import DotProduct, Gaussian

QS = np.linspace(0.0, 1.0, 41)


def exact_quantiles(values, qs):
    v = np.sort(values[~np.isnan(values)])
    return v[np.floor(qs * (v.size - 1)).astype(int)]


def log10_tolerance(exact):
    """The contract: 0.005 absolute for |log10| <= 1000, 0.1% relative beyond."""
    return np.where(np.abs(exact) <= 1000, 0.005, 1e-3 * np.abs(exact))


def saturated(rows, n, scale, dtype, seed=0):
    return (np.random.default_rng(seed).normal(size=(rows, n)) * scale).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [1.0, 30.0, 3000.0, 1e6, 1e30])
def test_log10_quantiles_at_any_depth(dtype, scale):
    if dtype == np.float32 and scale > 1e20:
        scale = 1e18                                   # float32 logits stay finite
    x = saturated(4000, 64, scale, dtype)
    s = fs.summarize(x)
    obs = fs.observables(x)
    for name in fs.OBS_NAMES:
        ex = exact_quantiles(obs["log10_" + name], QS)
        got = np.asarray(s[name].log10_quantile(QS))
        fin = np.isfinite(ex)
        assert np.array_equal(np.isneginf(got), np.isneginf(ex)), name
        err = np.abs(got[fin] - ex[fin])
        assert np.all(err <= log10_tolerance(ex[fin])), (name, scale, err.max())


def test_depth_of_a_saturated_example():
    """N(0, 3000^2) logits, n = 64: the median log10 jac_diag_max is about -369;
    a sketch with a floor (at -350, say) would give a median value of 0."""
    x = saturated(3000, 64, 3000.0, np.float64, seed=1)
    s = fs.summarize(x)
    ex = exact_quantiles(fs.observables(x)["log10_jac_diag_max"], np.array([0.5]))[0]
    assert ex < -300
    assert abs(s["jac_diag_max"].log10_median - ex) <= 0.005
    assert s["jac_diag_max"].median == 10.0 ** s["jac_diag_max"].log10_median
    # max_prob = 1 - 1e-369 rounds to 1: the median is 1, inside [min, max]
    assert s["max_prob"].min <= s["max_prob"].median <= s["max_prob"].max


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_extreme_gaps_bottom_of_region_b(dtype):
    """Gaps up to the dtype's range: log10 down to -1e38 (float32) / -1e307."""
    big = 1e38 if dtype == np.float32 else 1e307
    x = np.array([[0.0, -big], [0.0, -big / 3], [0.0, -2000.0], [0.0, -5.0], [0.0, -1e4]],
                 dtype=dtype)
    s = fs.summarize(x)
    ex = exact_quantiles(fs.observables(x)["log10_jac_diag_max"], QS)
    got = np.asarray(s["jac_diag_max"].log10_quantile(QS))
    assert np.all(np.abs(got - ex) <= log10_tolerance(ex)), (got, ex)


@pytest.mark.parametrize("scale", [0.3, 3.0, 30.0, 200.0])
def test_value_quantiles_within_one_percent(scale):
    x = saturated(5000, 32, scale, np.float64, seed=2)
    s = fs.summarize(x)
    obs = fs.observables(x)
    for name in fs.OBS_NAMES:
        ex = exact_quantiles(obs[name], QS)
        got = np.asarray(s[name].quantile(QS))
        ok = ex >= 1e-300
        assert np.all(np.abs(got[ok] - ex[ok]) <= 0.01 * ex[ok]), name


def test_quantiles_never_outside_min_max():
    # every row the same: all its buckets' representatives differ from the value
    x = np.tile(np.array([[0.0, -850.0, -851.0]]), (50, 1))
    s = fs.summarize(x)
    for name in fs.OBS_NAMES:
        st = s[name]
        q = np.asarray(st.quantile(QS))
        lq = np.asarray(st.log10_quantile(QS))
        assert np.all((q >= st.min) & (q <= st.max)), name
        assert np.all((lq >= st.log10_min) & (lq <= st.log10_max)), name
    assert s["max_prob"].median == 1.0
    rng = np.random.default_rng(3)
    s = fs.summarize(rng.normal(size=(777, 9)) * 7)
    for name in fs.OBS_NAMES:
        st = s[name]
        q = np.asarray(st.quantile(QS))
        assert np.all((q >= st.min) & (q <= st.max)), name


# --------------------------------------------------------------------------
# bucket geometry

def test_bucket_representatives_within_the_stated_error():
    rng = np.random.default_rng(4)
    L = np.concatenate([rng.uniform(-1000, 320, 20000),              # region A
                        -10.0 ** rng.uniform(3, 307.8, 20000),        # region B
                        [-1000.0, -1000.0000001, -999.9999999, 0.0, -0.0, 319.99,
                         -7.8e307, -1e-300]])
    idx = np.array([_sketch.bucket_of(v) for v in L])
    rep = _sketch.representative(idx)
    a = L >= _config.SKETCH_A_LO
    # the DDSketch representative (2 gamma/(1 + gamma) times the lower edge)
    # is at most log10((1 + gamma)/2), just over W/2, from the values of its
    # bucket in log10 (plus rounding at the edges)
    bound = math.log10((1 + _sketch.MAPPING.gamma) / 2) + 1e-6
    assert np.all(np.abs(rep[a] - L[a]) <= bound) and bound < 0.005
    # value space: within alpha (< 1%) where the value is a normal float
    va = a & (L > -307)
    assert np.all(np.abs(10 ** (rep[va] - L[va]) - 1) <= _config.SKETCH_ALPHA + 1e-6)
    b = ~a
    assert np.all(np.abs(rep[b] - L[b]) <= 1e-3 * np.abs(L[b]))
    for v, i in zip(L, idx):
        lo, hi = _sketch.bucket_edges(int(i))
        slack = 1e-12 * max(1.0, abs(v))
        assert lo - slack <= v < hi + slack or (v == lo == hi), (v, i, lo, hi)
    assert _sketch.bucket_of(-np.inf) == _sketch.I_NEGINF
    assert _sketch.bucket_of(np.inf) == _sketch.NTOT - 1
    assert _sketch.bucket_of(np.nan) == -1
    # ordered: a larger log10 never gets a smaller bucket
    order = np.argsort(L, kind="stable")
    assert np.all(np.diff(idx[order]) >= 0)


def test_reachable_buckets_fit_the_scratch():
    for dt, big in ((np.float32, 3.4e38), (np.float64, 1.79e308)):
        deepest = -big / math.log(10)
        assert _sketch.bucket_of(deepest) >= _sketch.window_start(dt)


# --------------------------------------------------------------------------
# size follows the data

@pytest.mark.slow
@pytest.mark.parametrize("model,target", [
    (DotProduct(n=64, d_k=4096, scaled=False), "argmax"),
    (DotProduct(n=64, d_k=4096, scaled=False), "sampled"),
    (DotProduct(n=64, d_k=256, scaled=False), "random"),
    (Gaussian(n=64, scale=256.0), "argmax"),
])
def test_summary_of_the_widest_verify_points_fits_one_megabyte(model, target):
    s = fs.simulate(model, 500_000, seed=0, target=target)
    assert s._acc.nbytes() <= 1_000_000
    assert len(pickle.dumps(s)) <= 1_000_000
    assert len(s.to_json()) <= 4_000_000


# --------------------------------------------------------------------------
# the moment tree

def _job(model, samples, row0=0, seed=3):
    return ModelJob(gen=model.gen_spec(), samples=samples, seed=seed,
                    target=mc_target("argmax", model.n),
                    thresholds=np.asarray(_config.DEFAULT_THRESHOLDS), dtype=check_dtype("float32"),
                    row0=row0)


@pytest.mark.parametrize("cuts", [[1], [3, 7], [2, 5, 6, 40], [64], [17, 18, 19, 63]])
def test_pieces_on_block_boundaries_concat_to_one_pass(cuts):
    model = Gaussian(n=16, scale=4.0)
    brows = _config.block_rows(16)
    nblk = 70
    samples = nblk * brows - 5                        # the last block partial
    cpu = get_backend("cpu")
    whole = cpu.summarize_model(_job(model, samples))
    edges = [0] + [c * brows for c in cuts] + [samples]
    acc = None
    for a, b in zip(edges, edges[1:]):
        piece = cpu.summarize_model(_job(model, b - a, row0=a))
        acc = piece if acc is None else acc.concat(piece)
    assert acc == whole
    assert fs.Summary(acc).to_dict() == fs.Summary(whole).to_dict()
    with pytest.raises(ValueError, match="follow on"):
        cpu.summarize_model(_job(model, brows)).concat(
            cpu.summarize_model(_job(model, brows, row0=2 * brows)))


def test_tree_state_does_not_grow_with_rows():
    cpu = get_backend("cpu")
    small = cpu.summarize_model(_job(Gaussian(n=2), 10_000))
    # 977 blocks of 1,024 rows: a state that kept a node a block, or grew
    # with the rows in any way, would pass both bounds many times over
    big = cpu.summarize_model(_job(Gaussian(n=2), 1_000_000))
    assert int(big.tree.state[0]) <= 64
    assert big.nbytes() < 2 * small.nbytes() + 50_000


def test_moments_agree_with_numpy_at_many_blocks():
    x = np.random.default_rng(5).normal(size=(200_000, 4)) * 3
    s = fs.summarize(x)
    obs = fs.observables(x)
    for name in fs.OBS_NAMES:
        v = obs[name]
        v = v[np.isfinite(v)]
        assert s[name].mean == pytest.approx(v.mean(), rel=1e-12)
        assert s[name].std == pytest.approx(v.std(ddof=1), rel=1e-10)


def test_scratch_is_clean_after_an_error():
    x = np.random.default_rng(6).normal(size=(3000, 8)) * 5
    ref = fs.summarize(x).to_dict()
    bad = x.copy()
    bad[2500, 3] = np.nan                               # raises after counting rows
    with pytest.raises(ValueError, match="row 2500"):
        fs.summarize(bad)
    assert fs.summarize(x).to_dict() == ref


def test_sketch_handed_over_every_chunk_or_once_gives_the_same_summary(monkeypatch):
    """The kernels' bucket counts are handed to the Sketch once per call, or
    earlier when a bucket could pass its capacity: the result is the same."""
    from fastsoftmax.backends import cpu
    x = saturated(6000, 40, 300.0, np.float32, seed=7)
    monkeypatch.setattr(_config, "CHUNK_LOGITS", 1 << 12)        # many chunks
    once = fs.summarize(x).to_dict()
    monkeypatch.setattr(cpu, "_SKETCH_FLUSH_ROWS", 1)              # after every chunk
    assert fs.summarize(x).to_dict() == once


def _bucket_counts(x, **kw):
    """Every observable's (bucket, count) pairs from the per-row values
    (``observables``, the reference) and from a Summary's sketch."""
    obs = fs.observables(x, **kw)
    ref, got = [], []
    sk = fs.summarize(x, **kw)._acc.sketch
    for k, name in enumerate(fs.OBS_NAMES):
        # bucket_of on each distinct value, its count added to that bucket:
        # the same counts as bucket_of on every row's value
        vals, vcnt = np.unique(obs["log10_" + name], return_counts=True)
        idx, inv = np.unique([_sketch.bucket_of(v) for v in vals], return_inverse=True)
        cnt = np.bincount(inv.reshape(-1), weights=vcnt, minlength=idx.size).astype(np.int64)
        ref.append((idx, cnt))
        got.append(sk.sparse(k))
    return ref, got


def test_scratch_counts_carry_past_255_and_65535_hits():
    """The kernels count a bucket in a uint8 that carries into a uint16 every
    256 hits: 70,000 identical rows put every observable's 70,000 values in
    one bucket (273 carries); rows of two kinds interleaved, two buckets of
    35,000.  The counts equal the reference's bucket by bucket."""
    one = np.tile(np.array([[0.5, -1.0, 2.0, 0.0]], dtype=np.float32), (70_000, 1))
    two = one.copy()
    two[1::2] = [[3.0, 1.0, -2.0, 0.25]]
    for x in (one, two):
        ref, got = _bucket_counts(x)
        for (ri, rc), (gi, gc) in zip(ref, got):
            assert np.array_equal(ri, gi) and np.array_equal(rc, gc)
        assert max(int(c.max()) for _, c in got) == (70_000 if x is one else 35_000)


def test_saturated_rows_bucket_counts_match_the_reference():
    """x300 rows spread each observable over thousands of buckets: the
    sketch's counts are those of the per-row values, bucket by bucket."""
    x = saturated(3000, 64, 300.0, np.float32, seed=11)
    ref, got = _bucket_counts(x)
    assert max(len(i) for i, _ in ref) > 1000
    for (ri, rc), (gi, gc) in zip(ref, got):
        assert np.array_equal(ri, gi) and np.array_equal(rc, gc)


def test_chunks_capped_at_the_scratch_capacity(monkeypatch):
    """A chunk never counts more rows than a scratch bucket holds: with the
    capacity lowered, a call is cut into more chunks and hands the counts
    over in between, and gives the same summary."""
    from fastsoftmax.backends import cpu
    x = saturated(6000, 40, 300.0, np.float32, seed=3)
    once = fs.summarize(x).to_dict()
    calls = []
    real = cpu.observe_chunk
    # the first argument group is (x, gen, params, seed, row0, nrows, n)
    monkeypatch.setattr(cpu, "observe_chunk", lambda *a: calls.append(a[0][5]) or real(*a))
    monkeypatch.setattr(cpu, "SCRATCH_MAX_COUNT", 1024)
    monkeypatch.setattr(cpu, "_SKETCH_FLUSH_ROWS", 1024)
    assert fs.summarize(x).to_dict() == once
    assert max(calls) <= 1024 and sum(calls) == 6000
