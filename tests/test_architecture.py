"""The architecture's promises and the defects it fixed, each with a test
that failed on 0.1.0: a side-effect-free import, the public names, an empty
Summary, strict deserialisation, fraction_below's edges, merges that refuse
shared random rows and keep configurations flat, strided streaming of any
rank, arguments a path cannot honour, and the one threading guard."""
import json
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

import fastsoftmax as fs
from conftest import subprocess_env
from fastsoftmax import _config
from fastsoftmax.models import Gaussian

IMPORT_CLEAN = """
import sys
import fastsoftmax as fs
heavy = [m for m in ("fastsoftmax.backends.cpu", "fastsoftmax.backends.cuda._kernels",
                     "numba.cuda", "pandas", "torch", "dask", "matplotlib", "tqdm",
                     "click", "fastsoftmax.verify")
         if m in sys.modules]
assert not heavy, heavy
import fastsoftmax.sweeps, fastsoftmax.verify
import types
# fs.sweep is the plain function, never shadowed by its package; no module
# of the package is an instance of a replaced class
assert type(fastsoftmax.sweep) is types.FunctionType, fastsoftmax.sweep
assert fastsoftmax.sweep is fastsoftmax.sweeps.sweep
assert all(type(m) is types.ModuleType for k, m in sys.modules.items()
           if k.split(".")[0] == "fastsoftmax"), "a module with a replaced class"
assert isinstance(fastsoftmax.verify, types.ModuleType)
from fastsoftmax.backends import cpu
assert not cpu.observe_chunk.signatures, "compiled at import"
print("ok")
"""


def test_import_compiles_nothing_and_imports_no_extra():
    r = subprocess.run([sys.executable, "-c", IMPORT_CLEAN], capture_output=True, text=True,
                       env=subprocess_env())
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "ok"


def test_public_names():
    import fastsoftmax.api as api
    for name in fs.__all__:
        assert hasattr(fs, name), name
    assert set(api.__all__) == {"softmax", "log_softmax", "observables", "summarize",
                                "simulate"}
    import importlib
    assert importlib.import_module("fastsoftmax.sweeps").sweep is fs.sweep
    assert fs.sweeps.__dict__["sweep"] is fs.sweep


def test_empty_summary_without_private_modules():
    s = fs.Summary()
    assert s.samples == 0 and s.thresholds == tuple(_config.DEFAULT_THRESHOLDS)
    a = fs.summarize(np.random.default_rng(0).normal(size=(50, 4)))
    assert s.merge(a).to_dict()["accumulator"] == a.to_dict()["accumulator"]
    assert fs.Summary(thresholds=(0.5,)).thresholds == (0.5,)
    with pytest.raises(ValueError, match="thresholds"):
        fs.Summary(thresholds=(-1.0,))


# --------------------------------------------------------------------------
# from_dict: ValueError naming what is wrong

def _good():
    return fs.summarize(np.random.default_rng(1).normal(size=(40, 5))).to_dict()


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d.pop("accumulator"), "no 'accumulator'"),
    (lambda d: d["accumulator"].pop("count"), "no 'count'"),
    (lambda d: d["accumulator"].update(count=-3), "count must be an integer >= 0"),
    (lambda d: d["accumulator"].update(count="many"), "count must be an integer"),
    (lambda d: d["accumulator"]["sketch"]["windows"].__setitem__(0, [[-1, [1]]]),
     "outside"),
    (lambda d: d["accumulator"]["sketch"]["windows"].__setitem__(0, [[10**9, [1]]]),
     "outside"),
    (lambda d: d["accumulator"]["sketch"]["windows"].__setitem__(0, [[5, [-1]]]),
     "counts must be >= 0"),
    (lambda d: d["accumulator"]["sketch"]["windows"].__setitem__(0, [[5, [10**6]]]),
     "more rows than count"),
    (lambda d: d["accumulator"]["sketch"]["windows"].__setitem__(0, [["a", [1]]]),
     r"entries must be \[start"),
    (lambda d: d["accumulator"]["sketch"]["windows"].pop(), "list of 9"),
    (lambda d: d["accumulator"].update(moments=[[1, 2]]), "moments has 2 values"),
    (lambda d: d["accumulator"].update(min=["x"] * 18), "min must be numbers"),
    (lambda d: d["accumulator"]["sketch"].update(layout={"width": 0.5}), "sketch geometry"),
    (lambda d: d["accumulator"].update(below=[[1.5]]), "below must be integers"),
    (lambda d: d.update(config=[1]), "'config' must be an object"),
])
def test_from_dict_malformed_names_what(mutate, match):
    d = _good()
    mutate(d)
    with pytest.raises(ValueError, match=match):
        fs.Summary.from_dict(d)


def test_from_json_not_json():
    with pytest.raises(ValueError, match="not JSON"):
        fs.Summary.from_json("{nope")
    with pytest.raises(ValueError, match="expected an object"):
        fs.Summary.from_dict([1, 2])


# --------------------------------------------------------------------------
# fraction_below

def test_fraction_below_edges():
    x = np.random.default_rng(2).normal(size=(500, 8)) * 10
    s = fs.summarize(x, thresholds=(1e-3,))
    st = s["jac_diag_max"]
    assert st.fraction_below(np.inf) == 1.0
    assert st.fraction_below(0.0) == 0.0 and st.fraction_below(-1.0) == 0.0
    with pytest.raises(ValueError, match="nan"):
        st.fraction_below(np.nan)
    with pytest.warns(fs.ApproximationWarning, match="not a configured threshold"):
        approx = st.fraction_below(1e-2)
    lo, hi = st.fraction_below_bounds(1e-2)
    exact = np.mean(fs.observables(x)["jac_diag_max"] < 1e-2)
    assert lo <= exact <= hi and lo == approx and hi - lo < 0.05
    assert st.fraction_below_bounds(1e-3) == (st.fraction_below(1e-3),) * 2


# --------------------------------------------------------------------------
# merge

def test_merge_refuses_shared_random_rows():
    a = fs.simulate(Gaussian(n=4), 1000, seed=1)
    b = fs.simulate(Gaussian(n=4, scale=2.0), 1000, seed=1)      # same normals
    with pytest.raises(ValueError, match="same random rows"):
        a.merge(a)
    with pytest.raises(ValueError, match="same random rows"):
        a.merge(b)
    c = fs.simulate(Gaussian(n=4), 1000, seed=2)
    ac = a.merge(c)
    with pytest.raises(ValueError, match="same random rows"):
        ac.merge(fs.simulate(Gaussian(n=4), 10, seed=2))


def test_merged_configs_stay_flat_and_count_samples():
    parts = [fs.simulate(Gaussian(n=4), 100 + k, seed=k) for k in range(5)]
    m = parts[0]
    for p in parts[1:]:
        m = m.merge(p)
    assert m.config["source"] == "merged"
    assert [p["seed"] for p in m.config["parts"]] == [0, 1, 2, 3, 4]
    assert all(p["source"] == "simulate" for p in m.config["parts"])
    assert m.config["samples"] == m.samples == sum(100 + k for k in range(5))
    # merging merged summaries stays one level deep
    m2 = parts[0].merge(parts[1]).merge(parts[2].merge(parts[3]))
    assert len(m2.config["parts"]) == 4
    assert "merged" not in json.dumps([p for p in m2.config["parts"]])


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
    data as a contiguous 2-D memmap (plus a few chunks); 0.1.0 transposed and
    copied the whole array."""
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


# --------------------------------------------------------------------------
# arguments a path cannot honour raise

def test_dask_array_refuses_progress_and_backend():
    da = pytest.importorskip("dask.array")
    x = da.zeros((10, 4), chunks=(5, 4))
    with pytest.raises(ValueError, match="progress is not available for dask arrays"):
        fs.summarize(x, progress=True)
    with pytest.raises(ValueError, match="dask array"):
        fs.summarize(x, backend="cuda")


def test_chunk_refused_where_unused():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cl:
        with distributed.Client(cl, set_as_default=False) as c:
            with pytest.raises(ValueError, match="chunk .* not used by a Dask client"):
                fs.simulate(Gaussian(n=4), 100, chunk=64, backend="cpu", client=c)


def test_observables_refuses_device_and_dask_arrays():
    da = pytest.importorskip("dask.array")
    with pytest.raises(TypeError, match="host memory"):
        fs.observables(da.zeros((4, 3), chunks=2))


def test_bad_progress_type_before_work():
    with pytest.raises(TypeError, match="progress must be"):
        fs.summarize(np.zeros((3, 4)), progress="yes")
    with pytest.raises(TypeError, match="progress must be"):
        fs.simulate(Gaussian(n=4), 10, progress=3)


# --------------------------------------------------------------------------
# one threading guard for every parallel call, Dask workers included

def test_dask_chunks_run_under_the_guard(monkeypatch):
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    from fastsoftmax.backends import cpu
    entered = []
    real = cpu.guard

    def counting():
        entered.append(1)
        return real()

    monkeypatch.setattr(cpu, "guard", counting)
    x = np.zeros((40, 6))
    x[33, 1] = np.nan
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match="row 33 of x contains NaN"):
            fs.summarize(da.from_array(x, chunks=(10, 6)))
    assert len(entered) >= 4          # every chunk, the bad one included, went through it
