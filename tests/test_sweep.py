"""fs sweep: tidy table, common random numbers, validation up front, atomic
resumable output (a real SIGKILL mid-run, then resume)."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest

import fastsoftmax as fs
from fastsoftmax import models
from fastsoftmax.sweeps import Plan, SweepLocked, read_table, stat_columns, sweep
from fastsoftmax.sweeps._table import Lock as _Lock

from helpers import subprocess_env

GRID = {"d_k": [1, 256], "scaled": [False, True]}
KW = dict(fixed={"n": 16}, samples=2000, seed=5, progress=False)


@pytest.fixture(scope="module")
def table():
    return sweep(models.DotProduct, GRID, **KW)


def test_rows_columns_and_order(table):
    df = table
    assert len(df) == 4
    assert list(df.columns[:8]) == ["d_k", "scaled", "n", "method", "temperature", "target",
                                    "dtype", "samples"]
    assert list(df.columns[8:-1]) == stat_columns()
    assert df.columns[-1] == "config"
    # first key slowest
    assert df["d_k"].tolist() == [1, 1, 256, 256]
    assert df["scaled"].tolist() == [False, True, False, True]
    for c in ("jac_diag_max_mean", "jac_diag_max_q0.5", "jac_diag_max_below_1e-06",
              "ce_grad_target_log10_mean", "entropy_sem"):
        assert c in df.columns
    cfg = json.loads(df["config"][2])
    assert cfg == {"model": "dotproduct", "params": {"n": 16, "d_k": 256, "scaled": False,
                                                     "method": "exact", "temperature": 1.0},
                   "samples": 2000, "seed": 5, "target": "argmax", "dtype": "float32",
                   "thresholds": [1e-3, 1e-6, 1e-9], "version": fs.__version__}


def test_points_equal_direct_simulate(table):
    for i, row in table.iterrows():
        m = models.DotProduct(n=16, d_k=int(row["d_k"]), scaled=bool(row["scaled"]))
        s = fs.simulate(m, 2000, seed=5)
        assert row["samples"] == s.samples
        for name in s.keys():
            for k, v in s[name].to_dict().items():
                got = row[f"{name}_{k}"]
                assert got == v or (np.isnan(got) and np.isnan(v)), (i, name, k)


def test_common_random_numbers(table):
    # d_k=1: scaled and unscaled are the same logits, hence identical rows
    a, b = table.iloc[0], table.iloc[1]
    cols = stat_columns()
    assert a[cols].tolist() == b[cols].tolist()


def test_name_factory_and_callable():
    a = sweep("gaussian", {"scale": [1.0, 8.0]}, fixed={"n": 8}, samples=500, progress=False)

    def my_model(scale, n=8):
        return models.Gaussian(n=n, scale=scale)

    b = sweep(my_model, {"scale": [1.0, 8.0]}, samples=500, progress=False)
    cols = stat_columns()
    pd.testing.assert_frame_equal(a[cols], b[cols], check_exact=True)

    def by_sigma(sigma):                  # a grid key that is not a model parameter
        return models.Gaussian(n=8, scale=sigma)

    c = sweep(by_sigma, {"sigma": [1.0, 8.0]}, samples=500, progress=False)
    assert c.columns[0] == "sigma" and c["scale"].tolist() == [1.0, 8.0]
    pd.testing.assert_frame_equal(a[cols], c[cols], check_exact=True)


def test_target_dtype_thresholds():
    df = sweep(models.Shifted, {"offset": [0.0, 1e6]}, fixed={"n": 8}, samples=1000,
               target="random", dtype="float64", thresholds=(0.5,), progress=False)
    assert df["target"].tolist() == ["random"] * 2 and df["dtype"].tolist() == ["float64"] * 2
    assert "ce_grad_target_below_0.5" in df.columns
    assert "ce_grad_target_below_1e-06" not in df.columns
    s = fs.simulate(models.Shifted(n=8, offset=1e6), 1000, target="random", dtype="float64",
                    thresholds=(0.5,))
    assert df["ce_grad_target_below_0.5"][1] == s["ce_grad_target"].fraction_below(0.5)


class Bar:
    def __init__(self):
        self.n = 0

    def update(self, k):
        self.n += k


def test_progress_object():
    bar = Bar()
    sweep(models.Gaussian, {"scale": [1.0, 2.0, 3.0]}, fixed={"n": 4}, samples=300,
          progress=bar)
    assert bar.n == 900


# --------------------------------------------------------------------------
# validation before anything runs

@pytest.mark.parametrize("grid, fixed, exc, match", [
    ({"dk": [1]}, {"n": 4}, ValueError, "unknown parameter 'dk'.*did you mean 'd_k'"),
    ({"d_k": []}, {"n": 4}, ValueError, "empty"),
    ({"d_k": 16}, {"n": 4}, TypeError, "list of values"),
    ({"d_k": "16"}, {"n": 4}, TypeError, "list of values"),
    ({"d_k": [16, 0]}, {"n": 4}, ValueError, "d_k=0.*d_k must be >= 1"),
    ({"d_k": [16, 2.5]}, {"n": 4}, TypeError, "d_k=2.5"),
    ({"d_k": [16], "scaled": ["yes"]}, {"n": 4}, TypeError, "scaled"),
    ({"d_k": [16, 16]}, {"n": 4}, ValueError, "same model"),
    ({"d_k": [16]}, {"n": 4, "d_k": 3}, ValueError, "both in grid and in fixed"),
    ({"d_k": [16]}, {}, TypeError, "needs parameter.*n"),
    ({"d_k": [16]}, {"n": -1}, ValueError, "n must be >= 1"),
    ({"d_k": [16]}, {"n": 4, "method": "fast"}, ValueError, "method"),
    ({"d_k": [16]}, {"n": 4, "temperature": float("nan")}, ValueError, "temperature"),
])
def test_bad_grid(tmp_path, grid, fixed, exc, match):
    out = tmp_path / "s.csv"
    with pytest.raises(exc, match=match):
        sweep(models.DotProduct, grid, fixed=fixed, samples=100, out=out, progress=False)
    assert not out.exists()


@pytest.mark.parametrize("kw, exc, match", [
    (dict(samples=0), ValueError, "samples"),
    (dict(samples=-5), ValueError, "samples"),
    (dict(samples=1.5), TypeError, "samples"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(target="best"), ValueError, "target"),
    (dict(target=4), ValueError, "out of range"),
    (dict(dtype="float16"), TypeError, "dtype"),
    (dict(thresholds=(0.0,)), ValueError, "thresholds"),
    (dict(backend="gpu"), ValueError, "backend"),
    (dict(out="s.txt"), ValueError, r"\.csv or \.parquet"),
    (dict(out="nodir/s.csv"), FileNotFoundError, "does not exist"),
])
def test_bad_arguments(tmp_path, monkeypatch, kw, exc, match):
    monkeypatch.chdir(tmp_path)
    args = dict(samples=100, progress=False)
    args.update(kw)
    with pytest.raises(exc, match=match):
        sweep(models.DotProduct, {"d_k": [1]}, fixed={"n": 4}, **args)
    assert os.listdir(tmp_path) == []


def test_bad_factory():
    with pytest.raises(ValueError, match="unknown model 'dot'"):
        sweep("dot", {"d_k": [1]}, samples=10, progress=False)
    with pytest.raises(TypeError, match="model_factory"):
        sweep(42, {"d_k": [1]}, samples=10, progress=False)
    with pytest.raises(TypeError, match="grid must be a dict"):
        sweep("dotproduct", [("d_k", [1])], samples=10, progress=False)


def test_validation_happens_before_the_first_point(monkeypatch):
    calls = []
    monkeypatch.setattr(fs.api, "simulate", lambda *a, **k: calls.append(a))
    with pytest.raises(ValueError):
        sweep(models.DotProduct, {"d_k": [1, 2, 0]}, fixed={"n": 4}, samples=10,
              progress=False)
    assert calls == []


# --------------------------------------------------------------------------
# output files and resume

@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_out_roundtrip_and_resume(tmp_path, table, ext):
    out = tmp_path / f"s.{ext}"
    df = sweep(models.DotProduct, GRID, out=out, **KW)
    pd.testing.assert_frame_equal(df, table, check_exact=True)
    pd.testing.assert_frame_equal(read_table(str(out)), table, check_exact=True)
    with pytest.raises(FileExistsError, match="resume"):
        sweep(models.DotProduct, GRID, out=out, **KW)
    # everything done: nothing recomputed, same table
    p = Plan(models.DotProduct, GRID, out=out, resume=True,
             **{k: v for k, v in KW.items() if k != "progress"})
    assert p.todo == []
    pd.testing.assert_frame_equal(p.run(progress=False), table, check_exact=True)
    # no temporary file left; the lock file stays (filelock keeps it: deleting a
    # lock file is racy on POSIX) but is free
    assert sorted(os.listdir(tmp_path)) == [f".s.{ext}.lock", f"s.{ext}"]
    lock = _Lock(str(out))
    lock.acquire()
    lock.release()


def test_resume_extends_grid_and_keeps_other_rows(tmp_path, table):
    out = tmp_path / "s.csv"
    sweep(models.DotProduct, {"d_k": [1], "scaled": [False, True]}, out=out, **KW)
    p = Plan(models.DotProduct, GRID, out=out, resume=True, fixed={"n": 16}, samples=2000,
             seed=5)
    assert len(p.todo) == 2
    pd.testing.assert_frame_equal(p.run(progress=False), table, check_exact=True)
    # a smaller grid later: its rows, and the file keeps all four
    small = sweep(models.DotProduct, {"d_k": [256], "scaled": [True]}, out=out, resume=True,
                  **KW)
    pd.testing.assert_frame_equal(small, table.iloc[[3]].reset_index(drop=True),
                                  check_exact=True)
    assert len(read_table(str(out))) == 4


@pytest.mark.parametrize("change, match", [
    (dict(samples=1000), "samples=2000 there, 1000 here"),
    (dict(seed=6), "seed"),
    (dict(target="random"), "target"),
    (dict(dtype="float64"), "dtype"),
])
def test_resume_refuses_another_configuration(tmp_path, change, match):
    out = tmp_path / "s.csv"
    sweep(models.DotProduct, {"d_k": [1]}, out=out, **KW)
    kw = dict(KW)
    kw.update(change)
    with pytest.raises(ValueError, match=match):
        sweep(models.DotProduct, {"d_k": [1]}, out=out, resume=True, **kw)


def test_resume_refuses_a_foreign_file(tmp_path):
    out = tmp_path / "s.csv"
    pd.DataFrame({"a": [1]}).to_csv(out, index=False)
    with pytest.raises(ValueError, match="different sweep"):
        sweep(models.DotProduct, {"d_k": [1]}, out=out, resume=True, **KW)
    sweep(models.Gaussian, {"scale": [1.0]}, fixed={"n": 16}, samples=100, out=tmp_path / "g.csv",
          progress=False)
    with pytest.raises(ValueError, match="different sweep|another configuration"):
        sweep(models.DotProduct, {"d_k": [1]}, fixed={"n": 16}, samples=100,
              out=tmp_path / "g.csv", resume=True, progress=False)


def test_resume_refuses_a_file_of_another_version(tmp_path):
    out = tmp_path / "v.csv"
    sweep(models.DotProduct, {"d_k": [1]}, out=out, **KW)
    df = read_table(str(out), ["config", "dtype", "target", "method"])
    cfg = json.loads(df.loc[0, "config"])
    cfg["version"] = "0.1.0"
    df.loc[0, "config"] = json.dumps(cfg, sort_keys=True)
    df.to_csv(out, index=False)
    with pytest.raises(ValueError, match="written by fastsoftmax 0.1.0"):
        sweep(models.DotProduct, {"d_k": [1]}, out=out, resume=True, **KW)


def test_lock_refuses_a_second_writer(tmp_path):
    out = tmp_path / "s.csv"
    lock = _Lock(str(out))
    lock.acquire()
    try:
        with pytest.raises(SweepLocked, match="another sweep"):
            sweep(models.DotProduct, {"d_k": [1]}, out=out, **KW)
    finally:
        lock.release()
    sweep(models.DotProduct, {"d_k": [1]}, out=out, **KW)


# One child sweeps 10 small points into a CSV and a Parquet file at once (a
# thread each) and pauses after writing each point (its progress object
# sleeps): the parent sees rows in both files and kills it while most of each
# grid is still to do.  One interpreter for both formats, and the points stay
# cheap for the parent's own uninterrupted and resumed sweeps.
CHILD = textwrap.dedent("""
    import sys, threading, time
    import fastsoftmax as fs
    from fastsoftmax.sweeps import sweep

    class Pause:
        def update(self, rows):
            time.sleep(0.25)

    def run(out):
        sweep(fs.models.Gaussian, {"scale": [float(s) for s in range(1, 11)]},
              fixed={"n": 64}, samples=int(sys.argv[2]), seed=11, out=out, progress=Pause())

    threads = [threading.Thread(target=run, args=(out,)) for out in sys.argv[1].split(",")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
""")
KILL_SAMPLES = 5_000


@pytest.fixture(scope="module")
def killed_sweeps(tmp_path_factory):
    """{ext: path}: the CSV and the Parquet file as a SIGKILL mid-sweep left
    them, each alone in its folder."""
    outs = {ext: tmp_path_factory.mktemp(ext) / f"kill.{ext}" for ext in ("csv", "parquet")}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, ",".join(map(str, outs.values())),
                             str(KILL_SAMPLES)],
                            env=subprocess_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if all(o.exists() and len(read_table(str(o))) >= 1 for o in outs.values()):
                break
            time.sleep(0.01)
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    return outs


@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_sigkill_then_resume_equals_uninterrupted(killed_sweeps, ext):
    out = killed_sweeps[ext]
    partial = read_table(str(out))            # readable: never torn
    assert 1 <= len(partial) < 10
    grid = {"scale": [float(s) for s in range(1, 11)]}
    kw = dict(fixed={"n": 64}, samples=KILL_SAMPLES, seed=11, progress=False)
    full = sweep(models.Gaussian, grid, **kw)
    # what the killed run wrote is exactly the first rows, no duplicate
    pd.testing.assert_frame_equal(partial, full.iloc[:len(partial)], check_exact=True)
    resumed = sweep(models.Gaussian, grid, out=out, resume=True, **kw)
    pd.testing.assert_frame_equal(resumed, full, check_exact=True)
    pd.testing.assert_frame_equal(read_table(str(out)), full, check_exact=True)
    # stale temporary file of the killed writer (if any) cleaned up by the resume
    # (the free lock file stays, as filelock leaves it)
    assert sorted(os.listdir(out.parent)) == [f".{out.name}.lock", out.name]


def test_dask_client_is_passed_through(monkeypatch):
    seen = []
    real = fs.api.simulate

    def spy(*a, client=None, **k):
        seen.append(client)
        return real(*a, **k)

    monkeypatch.setattr(fs.api, "simulate", spy)
    marker = object()
    sweep(models.Gaussian, {"scale": [1.0, 2.0]}, fixed={"n": 4}, samples=100,
          progress=False, client=marker)
    assert seen == [marker, marker]


# --------------------------------------------------------------------------
# theory=True: the laws' prediction columns

def test_theory_columns_beside_the_measurements(tmp_path):
    from fastsoftmax.sweeps import theory_columns
    df = sweep(models.Gaussian, {"n": [2, 64]}, fixed={"scale": 49.0}, samples=20_000, seed=2,
               progress=False, theory=True, dtype="float64")
    cols = theory_columns(fs._config.DEFAULT_THRESHOLDS)
    assert list(df.columns[-len(cols) - 1:-1]) == cols and df.columns[-1] == "config"
    assert df["theory_order"].tolist() == [1, 1]
    two, many = df.iloc[0], df.iloc[1]
    # n = 2: every observable's mean is exact: the measured one within 4 SE
    for obs in fs.OBS_NAMES:
        assert abs(two[f"{obs}_mean"] - two[f"{obs}_theory_mean"]) <= 4 * two[f"{obs}_sem"] \
            + 1e-12, obs
    # n = 64: no exact mean; the saturation law's fraction within its 0.5% + 4 SE
    assert np.isnan(many["jac_diag_max_theory_mean"])
    p = many["jac_diag_max_theory_below_1e-06"]
    assert abs(many["jac_diag_max_below_1e-06"] - p) <= 0.005 * p + 4 * np.sqrt(p / 20_000)
    assert np.isnan(many["max_prob_theory_below_1e-06"])       # no saturation law there
    assert np.isfinite(many["max_prob_theory_rem_mean"])
    # a model the laws do not cover (scaled dot products never saturate: no
    # accuracy stated) and a target they do not cover
    df = sweep(models.DotProduct, {"scaled": [True]}, fixed={"n": 16, "d_k": 64},
               samples=200, progress=False, theory=True, target="sampled")
    assert df["theory_order"].tolist() == [0]
    assert np.isnan(df["jac_diag_max_theory_below_1e-06"][0])
    assert np.isnan(df["ce_loss_theory_q0.5"][0])


def test_theory_validated_first_and_part_of_the_table(tmp_path):
    out = tmp_path / "t.csv"
    with pytest.raises(ValueError, match="theory must be"):
        Plan("gaussian", {"scale": [1.0]}, fixed={"n": 8}, samples=10, theory="yes", out=out)
    assert not out.exists()
    kw = dict(fixed={"n": 8}, samples=100, progress=False, out=out)
    sweep("gaussian", {"scale": [30.0]}, theory=0, **kw)
    with pytest.raises(ValueError, match="with theory=True"):
        sweep("gaussian", {"scale": [30.0]}, resume=True, **kw)
    with pytest.raises(ValueError, match="order 0"):
        sweep("gaussian", {"scale": [30.0]}, resume=True, theory=True, **kw)
    df = sweep("gaussian", {"scale": [30.0, 40.0]}, resume=True, theory=0, **kw)
    assert df["theory_order"].tolist() == [0, 0]
    plain = tmp_path / "p.csv"
    sweep("gaussian", {"scale": [30.0]}, **dict(kw, out=plain))
    with pytest.raises(ValueError, match="without theory=True"):
        sweep("gaussian", {"scale": [30.0]}, resume=True, theory=True, **dict(kw, out=plain))
