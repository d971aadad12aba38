"""summarize: moments, extremes, thresholds and sketch against NumPy over the
per-row observables; merge of any split == one pass; JSON round trip;
determinism across threads and chunking; memmap input."""
import json
import math
import os
import tracemalloc

import numpy as np
import pytest

import _children
import fastsoftmax as fs
from fastsoftmax import _config


def make_x(rows=3000, n=17, dtype=np.float32, seed=0, scale=8.0):
    x = np.random.default_rng(seed).normal(size=(rows, n)) * scale
    x[::7, 3] = -np.inf           # masks
    x[::11, :] = 2.0              # full ties
    x[5, :] = -np.inf
    x[5, 1] = 0.0                 # a single finite logit
    return x.astype(dtype)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("target", ["argmax", 2, "labels"])
def test_summary_matches_numpy_over_rows(dt, target):
    x = make_x(dtype=dt)
    if target == "labels":
        target = np.random.default_rng(1).integers(0, x.shape[1], size=x.shape[0])
    s = fs.summarize(x, target=target, thresholds=(1e-3, 1e-6, 0.1))
    obs = fs.observables(x, target=target)
    assert s.samples == x.shape[0] and s.skipped == 0
    for name in fs.OBS_NAMES:
        v = obs[name]
        lv = obs["log10_" + name]
        st = s[name]
        fin = v[np.isfinite(v)]
        assert st.count == fin.size
        assert st.mean == pytest.approx(fin.mean(), rel=1e-12, abs=1e-300)
        assert st.std == pytest.approx(fin.std(ddof=1), rel=1e-9, abs=1e-300)
        assert st.sem == pytest.approx(fin.std(ddof=1) / math.sqrt(fin.size), rel=1e-9,
                                       abs=1e-300)
        assert st.min == v.min() and st.max == v.max()
        lfin = lv[np.isfinite(lv)]
        assert st.log10_mean == pytest.approx(lfin.mean(), rel=1e-12, abs=1e-12)
        assert st.log10_std == pytest.approx(lfin.std(ddof=1), rel=1e-9, abs=1e-12)
        assert st.nonfinite == int(np.isinf(v).sum())
        assert st.log10_nonfinite == int(np.isinf(lv).sum())
        for t in (1e-3, 1e-6, 0.1):
            assert st.fraction_below(t) == np.count_nonzero(v < t) / v.size
        for q in (0.0, 0.01, 0.25, 0.5, 0.9, 0.999, 1.0):
            exact = np.quantile(v, q, method="lower")
            got = st.quantile(q)
            if exact == 0 or exact < 1e-300:
                assert got < 1e-300
            elif math.isinf(exact):
                assert got == exact
            else:
                assert abs(got - exact) <= 0.01 * exact, (name, q, got, exact)


def test_quantile_relative_error_bound_dense():
    """1% relative error on a wide log-uniform spread of values."""
    rng = np.random.default_rng(5)
    x = np.zeros((20000, 2))
    x[:, 0] = rng.uniform(0, 600, size=20000)   # gap: jac_diag_max ~ exp(-gap)
    s = fs.summarize(x)
    v = fs.observables(x)["jac_diag_max"]
    for q in np.linspace(0, 1, 41):
        exact = np.quantile(v, q, method="lower")
        assert abs(s["jac_diag_max"].quantile(q) - exact) <= 0.01 * exact


def test_merge_of_any_split_equals_one_pass():
    x = make_x(rows=1001, n=9, dtype=np.float64)
    whole = fs.summarize(x)
    for cuts in ([1], [500], [333, 667], [1, 2, 999], [7, 8, 9, 510, 1000]):
        parts = np.split(x, cuts)
        merged = fs.summarize(parts[0])
        for p in parts[1:]:
            merged = merged.merge(fs.summarize(p))
        for name in fs.OBS_NAMES:
            a, b = whole[name], merged[name]
            assert a.count == b.count and a.min == b.min and a.max == b.max
            assert a.mean == pytest.approx(b.mean, rel=1e-13, abs=1e-300)
            assert a.std == pytest.approx(b.std, rel=1e-10, abs=1e-300)
            assert a.log10_mean == pytest.approx(b.log10_mean, rel=1e-13, abs=1e-13)
            assert a.fraction_below(1e-6) == b.fraction_below(1e-6)
            assert a.quantile(0.5) == b.quantile(0.5)
        assert merged.samples == whole.samples


def test_merge_does_not_mutate_and_handles_empty_side():
    a = fs.summarize(make_x(rows=50, n=5, seed=1))
    b = fs.summarize(make_x(rows=70, n=5, seed=2))
    a_before, b_before = a.to_dict(), b.to_dict()
    c = a.merge(b)
    assert a.to_dict() == a_before and b.to_dict() == b_before
    assert c.samples == 120
    empty = fs.Summary(fs.accumulate.Accumulator(a.thresholds), a.config)
    assert empty.merge(a).to_dict()["accumulator"] == a.to_dict()["accumulator"]
    assert a.merge(empty).to_dict()["accumulator"] == a.to_dict()["accumulator"]
    other = fs.summarize(make_x(rows=10, n=5), thresholds=(0.5,))
    with pytest.raises(ValueError, match="thresholds"):
        a.merge(other)
    with pytest.raises(TypeError):
        a.merge(3)


def test_json_round_trip_is_exact():
    s = fs.summarize(make_x(rows=300, n=6))
    text = s.to_json()
    json.loads(text)                     # strict JSON: no NaN/Infinity tokens
    assert "Infinity" not in text and "NaN" not in text
    back = fs.Summary.from_json(text)
    assert back == s
    assert back.to_dict() == s.to_dict()
    assert back["entropy"].quantile(0.3) == s["entropy"].quantile(0.3)


def test_frame_and_repr():
    pytest.importorskip("pandas")
    s = fs.summarize(make_x(rows=200, n=4))
    df = s.to_frame()
    assert list(df.index) == list(fs.OBS_NAMES)
    assert df.loc["entropy", "mean"] == s["entropy"].mean
    r = repr(s)
    assert "jac_diag_max" in r and "samples=200" in r
    assert "mean=" in repr(s["ce_loss"])
    with pytest.raises(KeyError, match="unknown observable"):
        s["nope"]


def test_chunking_does_not_change_the_result(monkeypatch):
    x = make_x(rows=5000, n=33, dtype=np.float32)
    ref = fs.summarize(x).to_dict()
    for logits in (33 * 64 * 2, 33 * 64 * 3, 1 << 14):
        monkeypatch.setattr(_config, "CHUNK_LOGITS", logits)
        assert fs.summarize(x).to_dict() == ref


def test_memmap_input(tmp_path):
    x = make_x(rows=4000, n=16, dtype=np.float32)
    path = tmp_path / "x.npy"
    np.save(path, x)
    mm = np.load(path, mmap_mode="r")
    assert fs.summarize(mm).to_dict() == fs.summarize(x).to_dict()
    # a non-last axis of a memmap streams through per-chunk copies
    np.save(path, np.ascontiguousarray(x.T))
    mmT = np.load(path, mmap_mode="r")
    a = fs.summarize(mmT, axis=0).to_dict()["accumulator"]
    b = fs.summarize(x).to_dict()["accumulator"]
    assert a == b


SCRIPT = """
import json, numpy as np, fastsoftmax as fs
x = (np.random.default_rng(0).normal(size=(20000, 24)) * 6).astype(np.float32)
print(json.dumps(fs.summarize(x, target=3).to_dict(), sort_keys=True))
"""


def test_one_thread_equals_two_threads():
    outs = _children.at_threads(SCRIPT, cwd=os.path.dirname(__file__))
    assert outs[0] == outs[1]
    assert json.loads(outs[0])["accumulator"]["count"] == 20000


@pytest.mark.parametrize("n,rows", [(1024, 3000), (16384, 150), (256, 2100)])
def test_groups_of_blocks_change_no_bit(monkeypatch, n, rows):
    """The kernels wrap up groups of blocks at once (each block keeping its
    own moments): one block a group, the default groups and groups cut short
    by small chunks give the same Summary, bit for bit."""
    x = (np.random.default_rng(n).normal(size=(rows, n)) * 4.0).astype(np.float32)
    x[::5, 7] = -np.inf
    ref = fs.summarize(x).to_json()
    monkeypatch.setattr(_config, "MAX_GROUP_BLOCKS", 1)
    assert fs.summarize(x).to_json() == ref
    monkeypatch.setattr(_config, "MAX_GROUP_BLOCKS", 16)
    monkeypatch.setattr(_config, "CHUNK_LOGITS", 5 * _config.block_rows(n) * n)
    assert fs.summarize(x).to_json() == ref


def _tile_x(rows, n, dt):
    x = np.random.default_rng(n).normal(size=(rows, n)) * 8.0
    x[::7, 3] = -np.inf
    x[::11, :] = 2.0
    x[5, :] = -np.inf
    x[5, 1] = 0.0
    x[9, :] *= 300.0
    return x.astype(dt)


def _means(s):
    return {k: [s[k].mean, s[k].log10_mean] for k in fs.OBS_NAMES} | {
        "count": s.samples, "skipped": s.skipped}


def tile_job():
    """The numbers the tile test compares, from this process's build (in the
    tile child of ``_children``, and in the test's process for the row path)."""
    from fastsoftmax.backends import cpu
    from fastsoftmax.models import DotProduct, Gaussian
    out = {"tile_max_n": cpu.TILE_MAX_N}
    for dt in ("float32", "float64"):
        for n, rows in ((40, 700), (17, 300)):
            x = _tile_x(rows, n, dt)
            lab = np.random.default_rng(1).integers(0, n, size=rows)
            obs = fs.observables(x, target=lab)
            out[f"obs {dt} {n}"] = {k: np.asarray(v).tolist() for k, v in obs.items()}
            out[f"sum {dt} {n}"] = _means(fs.summarize(x, target=lab))
            x[123, 4] = np.nan
            out[f"omit {dt} {n}"] = _means(fs.summarize(x, nan_policy="omit"))
            try:
                fs.summarize(x)
            except ValueError as e:
                out[f"raise {dt} {n}"] = str(e)
    out["gaussian"] = _means(fs.simulate(Gaussian(n=64, scale=3.0), 5000, seed=3))
    out["dotproduct"] = _means(fs.simulate(DotProduct(n=30, d_k=64), 5000, seed=4,
                                           target="random"))
    # what a child would print: JSON's floats and lists
    return json.loads(json.dumps(out))


def test_tile_path_switched_on_agrees_with_the_row_path(tmp_path_factory):
    """FASTSOFTMAX_TILE=1 builds the kernels with the tile path (16 short rows
    one per lane; absent from the default build): per-row observables,
    summaries of arrays and generated rows, and bad rows (omitted, or the
    same error) agree with the row-at-a-time path to rounding (two float32
    paths each within RTOL of the exact value; a log10 near 0, where the two
    orders of the float32 sums leave different last digits in 1 - p_y = (1 +
    t (R - e_y)) / S for a target just below the top, also within 1e-12).
    The tile build is a child's (``_children``); the row path is this
    process's default build, or a child's where this process has the tile
    path switched on."""
    from fastsoftmax.backends import cpu
    tile = _children.job(tmp_path_factory, "tile", "tile")
    row = tile_job() if cpu.TILE_MAX_N == 0 else _children.job(tmp_path_factory, "row", "tile")
    assert tile.pop("tile_max_n") > 0 and row.pop("tile_max_n") == 0
    assert tile.keys() == row.keys()
    for key in row:
        rtol = 4e-5 if "float32" in key or key in ("gaussian", "dotproduct") else 1e-11
        a, b = tile[key], row[key]
        if key.startswith("raise"):
            assert a == b and "123" in a
            continue
        assert a.keys() == b.keys()
        for k in b:
            atol = 1e-12 if "log10" in k else 0.0
            np.testing.assert_allclose(np.array(a[k], dtype=float), np.array(b[k], dtype=float),
                                       rtol=rtol, atol=atol, err_msg=f"{key} {k}")
        if key.startswith("omit"):
            assert a["skipped"] == b["skipped"] == 1


# --------------------------------------------------------------------------
# any rank, any axis, streamed from the strided view

@pytest.mark.parametrize("axis", [0, 1, 2, (0, 2)])
def test_strided_rows_equal_a_contiguous_copy(tmp_path, axis):
    rng = np.random.default_rng(3)
    x = (rng.normal(size=(37, 23, 19)) * 4).astype(np.float32)
    x[3, 2, 5] = -np.inf
    path = tmp_path / "x.npy"
    np.save(path, x)
    mm = np.load(path, mmap_mode="r")
    axes = axis if isinstance(axis, tuple) else (axis,)
    rest = [a for a in range(3) if a not in axes]
    ref = np.ascontiguousarray(np.transpose(x, rest + list(axes))).reshape(
        -1, int(np.prod([x.shape[a] for a in axes])))
    for chunk in (1 << 10, 1 << 23):
        _config.CHUNK_LOGITS, old = chunk, _config.CHUNK_LOGITS
        try:
            got = fs.summarize(mm, axis=axis)
            obs = fs.observables(mm, axis=axis)
            p = fs.softmax(mm, axis=axis)
        finally:
            _config.CHUNK_LOGITS = old
        want = fs.summarize(ref)
        assert got.to_dict()["accumulator"] == want.to_dict()["accumulator"]
        np.testing.assert_array_equal(obs["entropy"].reshape(-1),
                                      fs.observables(ref)["entropy"])
        pref = fs.softmax(ref)
        np.testing.assert_array_equal(
            np.transpose(p, rest + list(axes)).reshape(pref.shape), pref)


def _peak(f):
    tracemalloc.start()
    try:
        out = f()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_strided_memmap_is_never_copied_whole(tmp_path, monkeypatch):
    """A 3-D memmap over its middle axis takes no more memory than the same
    data as a contiguous 2-D memmap (plus a few chunks): its rows are
    gathered chunk by chunk, never transposed and copied whole."""
    shape = (64, 256, 128)                     # 8 MB of float32, softmax over 256
    x = np.random.default_rng(4).normal(size=shape).astype(np.float32)
    np.save(tmp_path / "x3.npy", x)
    np.save(tmp_path / "x2.npy", np.ascontiguousarray(np.moveaxis(x, 1, -1)).reshape(-1, 256))
    del x
    m3 = np.load(tmp_path / "x3.npy", mmap_mode="r")
    m2 = np.load(tmp_path / "x2.npy", mmap_mode="r")
    monkeypatch.setattr(_config, "CHUNK_LOGITS", 1 << 16)      # chunks of ~256 KB
    fs.summarize(m2[:2])                                       # compile outside the trace
    s2, peak2 = _peak(lambda: fs.summarize(m2))
    s3, peak3 = _peak(lambda: fs.summarize(m3, axis=1))
    assert s3.to_dict()["accumulator"] == s2.to_dict()["accumulator"]
    chunk_bytes = _config.chunk_rows(256, 2) * 256 * 4
    # a whole copy would add m3.nbytes (8 MB); a strided gather adds about one chunk
    assert peak3 - peak2 < 3 * chunk_bytes < m3.nbytes / 2, (peak2, peak3, chunk_bytes)
