"""The command line, through real subprocesses (python -m fastsoftmax) and,
for the many bad-argument cases, through ``cli.main`` in process."""
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import fastsoftmax as fs
from fastsoftmax import cli, models
from fastsoftmax.sweep import read_table, sweep

from conftest import subprocess_env


def run(*args, cwd=None, timeout=300):
    p = subprocess.run([sys.executable, "-m", "fastsoftmax", *map(str, args)], cwd=cwd,
                       env=subprocess_env(), capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def assert_usage_error(rc, out, err, match):
    assert rc == 2, (rc, out, err)
    assert "Traceback" not in err
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, err
    assert match in lines[0], lines[0]


# --------------------------------------------------------------------------
# verify

def test_verify_out(tmp_path):
    out = tmp_path / "v"
    rc, stdout, err = run("verify", "--samples", "2000", "--seed", "1", "--backend", "cpu",
                          "--out", out, "--context")
    assert rc == 0, err
    assert "Traceback" not in err
    assert "verdict" in stdout and "softmax([100, 101, 99])" in stdout
    assert "Context length" in stdout and "E[max logit]" in stdout
    rows = [l for l in stdout.splitlines() if l[:3] in {f"{i:>2} " for i in range(1, 12)}
            and l.rstrip().endswith(("HOLDS", "FAILS", "INCONCLUSIVE"))]
    assert len(rows) == 11                        # one verdict row per claim
    assert all(l.rstrip().endswith(("HOLDS", "FAILS", "INCONCLUSIVE")) for l in rows)
    assert "Criteria" in stdout
    assert "verify:" in err                      # the progress bar
    names = {p.name for p in out.iterdir()}
    assert {"dotproduct.csv", "dotproduct.parquet", "verdicts.csv", "summary.json",
            "verify.png", "jac_vs_dk.png", "ce_grad_vs_dk.png", "context.csv",
            "context_length.png", "law.csv"} <= names
    v = pd.read_csv(out / "verdicts.csv")
    assert set(v["verdict"]) <= {"holds", "fails", "inconclusive"}
    assert v["verdict"][v["key"] == "literal"].item() == "holds"


def test_verify_json_quiet():
    rc, stdout, err = run("verify", "--samples", "1000", "--json", "--quiet")
    assert rc == 0, err
    assert err == ""                              # --quiet: no progress bar
    d = json.loads(stdout)
    assert d["meta"]["samples"] == 1000
    assert [c["key"] for c in d["claims"]][:3] == ["paper", "fix", "literal"]
    assert all(c["verdict"] in ("holds", "fails", "inconclusive") for c in d["claims"])
    rc, stdout, err = run("verify", "--samples", "1000", "--quiet")
    assert rc == 0 and err == "", err
    lines = stdout.splitlines()
    assert len(lines) == 9 and lines[2].startswith("3. HOLDS")


# --------------------------------------------------------------------------
# sweep

def test_sweep_out_plot_resume(tmp_path):
    args = ["sweep", "--model", "dotproduct", "--grid", "d_k=1,256", "--grid",
            "scaled=true,false", "--set", "n=16", "--samples", "2e3", "--seed", "4"]
    rc, stdout, err = run(*args, "--out", "s.parquet", "--plot", "s.png", cwd=tmp_path)
    assert rc == 0, err
    assert "jac_diag_max" in stdout and "d_k" in stdout
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"
    got = read_table(str(tmp_path / "s.parquet"))
    want = sweep(models.DotProduct, {"d_k": [1, 256], "scaled": [True, False]},
                 fixed={"n": 16}, samples=2000, seed=4, progress=False)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    rc, stdout, err = run(*args, "--out", "s.parquet", cwd=tmp_path)
    assert_usage_error(rc, stdout, err, "exists")
    rc, stdout, err = run(*args, "--out", "s.parquet", "--resume", "--json", cwd=tmp_path)
    assert rc == 0, err
    assert "4 of 4 points done" in err
    recs = json.loads(stdout)
    assert [r["d_k"] for r in recs] == [1, 1, 256, 256]
    assert recs[2]["jac_diag_max_mean"] == want["jac_diag_max_mean"][2]


def test_sweep_theory_columns_and_table(tmp_path):
    rc, stdout, err = run("sweep", "-m", "gaussian", "-g", "scale=1,49", "-s", "n=64",
                          "--samples", "2000", "--theory", "-o", "t.csv", cwd=tmp_path)
    assert rc == 0, err
    assert "law median" in stdout and "law frac" in stdout and "order 1" in stdout
    df = read_table(str(tmp_path / "t.csv"))
    assert df["theory_order"].tolist() == [1, 1]
    assert np.isnan(df["jac_diag_max_theory_below_1e-06"][0])      # outside the law's domain
    assert df["jac_diag_max_theory_below_1e-06"][1] == pytest.approx(0.4983, abs=1e-4)
    # the table's identity includes its theory columns
    rc, out, err = run("sweep", "-m", "gaussian", "-g", "scale=1,49", "-s", "n=64",
                       "--samples", "2000", "-o", "t.csv", "--resume", cwd=tmp_path)
    assert_usage_error(rc, out, err, "with theory=True")


def test_sweep_matches_simulate_target_dtype(tmp_path):
    rc, _, err = run("sweep", "-m", "shifted", "-g", "offset=0,1e6", "-s", "n=8",
                     "--samples", "1000", "--target", "random", "--dtype", "float64",
                     "--threshold", "0.5", "-o", "s.csv", "-q", cwd=tmp_path)
    assert rc == 0, err
    df = read_table(str(tmp_path / "s.csv"))
    s = fs.simulate(models.Shifted(n=8, offset=1e6), 1000, target="random", dtype="float64",
                    thresholds=(0.5,))
    for k, v in s["ce_grad_target"].to_dict().items():
        assert df[f"ce_grad_target_{k}"][1] == v


def test_bad_input_subprocess(tmp_path):
    base = ["sweep", "--set", "n=8", "--samples", "100"]
    cases = [
        (["sweep", "--model", "transformer", "--grid", "d_k=1", "--set", "n=4",
          "--samples", "10"], "unknown model 'transformer'"),
        (base + ["--model", "dotproduct", "--grid", "d_k:1,2"], "NAME=VALUE"),
        (base[:-1] + ["-5", "--model", "dotproduct", "--grid", "d_k=1"], "--samples"),
        (["summarize", tmp_path / "missing.npy"], "no such file"),
        (base + ["--model", "dotproduct", "--grid", "d_k=1", "--target", "best"], "target"),
    ]
    for args, match in cases:
        rc, out, err = run(*args, cwd=tmp_path)
        assert_usage_error(rc, out, err, match)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, match", [
    (["sweep", "-m", "dotproduct", "-g", "d_k=1,2", "--samples", "10"], "needs parameter"),
    (["sweep", "-m", "dotproduct", "-g", "d_k=1,,2", "-s", "n=4", "--samples", "10"],
     "empty value"),
    (["sweep", "-m", "dotproduct", "-g", "d_k=", "-s", "n=4", "--samples", "10"], "no value"),
    (["sweep", "-m", "dotproduct", "-g", "=1", "-s", "n=4", "--samples", "10"],
     "not a parameter name"),
    (["sweep", "-m", "dotproduct", "-g", "d_k=1", "-g", "d_k=2", "-s", "n=4", "--samples",
      "10"], "given twice"),
    (["sweep", "-m", "dotproduct", "-g", "dk=1", "-s", "n=4", "--samples", "10"],
     "unknown parameter 'dk'"),
    (["sweep", "-m", "dotproduct", "-g", "d_k=0", "-s", "n=4", "--samples", "10"],
     "d_k must be >= 1"),
    (["sweep", "-m", "dotproduct", "-g", "d_k=1", "-s", "n=4", "--samples", "1.5"],
     "whole number"),
    (["sweep", "-m", "dotproduct", "-g", "d_k=1", "-s", "n=4", "--samples", "many"],
     "not a number"),
    (["sweep", "-m", "dotproduct", "-g", "d_k=1", "-s", "n=4", "--samples", "10",
      "--target", "9"], "out of range"),
    (["sweep", "-m", "dotproduct", "-g", "d_k=1", "-s", "n=4", "--samples", "10",
      "--seed", "-1"], "--seed"),
    (["sweep", "-m", "dotproduct", "-g", "d_k=1", "-s", "n=4", "--samples", "10",
      "--backend", "tpu"], "--backend"),
    (["sweep", "-m", "dotproduct", "-g", "d_k=1", "-s", "n=4", "--samples", "10",
      "-o", "s.txt"], ".csv or .parquet"),
    (["sweep", "-m", "dotproduct", "-g", "d_k=1", "-s", "n=4", "--samples", "10",
      "--plot", "s.pdf"], ".png"),
    (["sweep", "-m", "dotproduct", "-g", "d_k=1", "-s", "n=4", "--samples", "10",
      "--scheduler", "tcp://x:1", "--workers", "2"], "exclude each other"),
    (["sweep", "-m", "dotproduct", "-g", "d_k=1", "-s", "n=4", "--samples", "10",
      "--observable", "grad"], "--observable"),
    (["sweep", "-m", "dotproduct", "-g", "d_k=1", "-s", "n=4", "--samples", "10",
      "--theory-order", "1"], "needs --theory"),
    (["sweep", "-m", "dotproduct", "-g", "d_k=1", "-s", "n=4", "--samples", "10",
      "--theory", "--theory-order", "2"], "--theory-order"),
    (["verify", "--samples", "0"], "--samples"),
    (["verify", "--backend", "gpu"], "--backend"),
    (["summarize", "nothing.npy"], "no such file"),
    (["nosuchcommand"], "No such command"),
    (["sweep", "--bogus"], "No such option"),
])
def test_bad_input_in_process(tmp_path, monkeypatch, capsys, args, match):
    monkeypatch.chdir(tmp_path)
    assert cli.main(args) == 2
    out, err = capsys.readouterr()
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and match in lines[0], err
    assert lines[0].startswith("fastsoftmax")
    assert list(tmp_path.iterdir()) == []


def test_parse_value():
    pv = cli.parse_value
    assert pv("true") is True and pv("False") is False
    assert pv("16") == 16 and isinstance(pv("16"), int)
    assert pv("1e6") == 1e6 and pv("0.5") == 0.5
    assert pv("exact") == "exact"


# --------------------------------------------------------------------------
# summarize, info

@pytest.fixture
def logits(tmp_path):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3000, 32)) * 8).astype(np.float32)
    path = tmp_path / "x.npy"
    np.save(path, x)
    return path, x


def test_summarize(tmp_path, logits):
    path, x = logits
    y = np.random.default_rng(1).integers(0, 32, 3000)
    np.save(tmp_path / "y.npy", y)
    rc, out, err = run("summarize", path, "--json")
    assert rc == 0, err
    d = json.loads(out)
    s = fs.summarize(x)
    assert d["samples"] == 3000 and d["shape"] == [3000, 32]
    assert d["observables"]["jac_diag_max"]["mean"] == s["jac_diag_max"].mean
    assert fs.Summary.from_dict(d["summary"])["entropy"].to_dict() == s["entropy"].to_dict()
    rc, out, err = run("summarize", path, "--target", tmp_path / "y.npy", "--json")
    assert rc == 0, err
    d = json.loads(out)
    s = fs.summarize(x, target=y)
    assert d["observables"]["ce_loss"]["mean"] == s["ce_loss"].mean
    rc, out, err = run("summarize", path, "--target", "3", "--axis", "1")
    assert rc == 0, err
    assert "3,000 rows" in out and "jac_diag_max" in out


def test_summarize_bad(tmp_path, logits, monkeypatch, capsys):
    path, x = logits
    monkeypatch.chdir(tmp_path)
    np.savez(tmp_path / "z.npz", a=x)
    np.save(tmp_path / "bad.npy", np.arange(5))              # wrong label shape
    bad = x.copy()
    bad[7, 3] = np.nan
    np.save(tmp_path / "nan.npy", bad)
    cases = [
        ([path, "--target", "32"], "out of range"),
        ([path, "--target", "random"], "labels"),
        ([path, "--target", "bad.npy"], "shape"),
        ([path, "--target", "nolabels.npy"], "no such file"),
        ([path, "--axis", "2"], "axis"),
        ([path, "--axis", "x"], "--axis"),
        (["z.npz"], ".npy"),
    ]
    for args, match in cases:
        assert cli.main(["summarize", *map(str, args)]) == 2, args
        err = capsys.readouterr().err
        lines = [l for l in err.splitlines() if l.strip()]
        assert len(lines) == 1 and match in lines[0], (args, err)
    # a bad row is found while running, not an argument error: exit 1, one line
    assert cli.main(["summarize", "nan.npy"]) == 1
    lines = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
    assert len(lines) == 1 and "row 7" in lines[0] and "usage" not in lines[0].lower()
    assert cli.main(["summarize", "nan.npy", "--nan-policy", "omit", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped"] == 1


def test_failure_while_running_exits_1(tmp_path, monkeypatch, capsys):
    """Arguments are fine; the run itself fails (float32 overflow of a generated
    row): exit 1 with the message, not a usage error; the finished points
    stay on disk."""
    monkeypatch.chdir(tmp_path)
    rc = cli.main(["sweep", "--model", "gaussian", "--set", "n=8", "--grid", "scale=1,1e38",
                   "--samples", "2000", "--out", "s.csv", "--quiet"])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 1, err
    assert len(lines) == 1 and "non-finite" in lines[0] and "usage" not in lines[0].lower()
    assert len(read_table("s.csv")) == 1                  # the finished point was kept


def test_info():
    rc, out, err = run("info")
    assert rc == 0, err
    for key in ("fastsoftmax", "numba", "numpy", "threads", "threading layer", "cpu",
                "vector width", "kernel vector width", "cuda", "numba cache"):
        assert any(line.startswith(key) for line in out.splitlines()), key
    rc, out, err = run("info", "--json")
    d = json.loads(out)
    assert d["fastsoftmax"] == fs.__version__ and d["threads"] >= 1
    assert d["threading layer"] != "not initialised"
    # the width the kernels' machine code really uses, and the knob
    w = d["kernel vector width"]
    assert w.split("-bit")[0] in ("128", "256", "512") and "FASTSOFTMAX_VECTOR_WIDTH=" in w, w


def test_console_script_entry_point():
    # fastsoftmax = fastsoftmax.cli:main, which returns the exit status
    assert cli.main(["--version"]) == 0


def test_sweep_local_dask_cluster(tmp_path):
    pytest.importorskip("distributed")
    pytest.importorskip("distributed")
    rc, out, err = run("sweep", "-m", "gaussian", "-g", "scale=1,4", "-s", "n=8",
                       "--samples", "3000", "--workers", "2", "-o", "d.csv", "-q",
                       cwd=tmp_path)
    assert rc == 0, err
    want = sweep(models.Gaussian, {"scale": [1, 4]}, fixed={"n": 8}, samples=3000,
                 progress=False)
    pd.testing.assert_frame_equal(read_table(str(tmp_path / "d.csv")), want, check_exact=True)
