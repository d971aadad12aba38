"""The command line through ``cli.main`` (the console entry point) in
process, and through real subprocesses (python -m fastsoftmax) where a real
process is the point: exit statuses and streams, the Dask cluster, closed
pipes."""
import contextlib
import io
import json
import os
import pathlib
import subprocess
import sys
import time

import click
import numpy as np
import pandas as pd
import pytest

import fastsoftmax as fs
from fastsoftmax import cli, models
from fastsoftmax._kernels import features as _cpu
from fastsoftmax._util import COMPILING, progress_bar
from fastsoftmax.sweeps import read_table, sweep

from helpers import VERIFY_ARGS, VERIFY_RUN, subprocess_env


def run(*args, cwd=None):
    """``fastsoftmax ARGS`` in this process (``cli.main``, the console entry
    point, in folder ``cwd``): its exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli.main([str(a) for a in args])
    finally:
        os.chdir(here)
    return rc, out.getvalue(), err.getvalue()


def run_child(*args, cwd=None, timeout=300):
    """``python -m fastsoftmax ARGS`` in a child interpreter: where a real
    process is the point (its exit status, its streams, a Dask cluster)."""
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
# verify: the command runs once for the whole test run (conftest's verify_cli,
# the run test_verify reads too); the tests read its output


@pytest.fixture(scope="module")
def verify_run(verify_cli):
    """The session's in-process ``fastsoftmax verify --out DIR`` (DIR's
    parents missing): its exit status, stdout, stderr, the folder, and the
    VerifyResult it printed (kept from the run, for --json and --quiet)."""
    r = verify_cli
    return r.rc, r.stdout, r.stderr, r.out, r.result


def test_verify_out(verify_run):
    rc, stdout, err, out, _ = verify_run
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
    # until the first chunk returns the bar says that the kernels compile
    assert f"verify: {COMPILING}" in err
    names = {p.name for p in out.iterdir()}       # --out made its missing parents
    assert {"dotproduct.csv", "dotproduct.parquet", "verdicts.csv", "summary.json",
            "verify.png", "jac_vs_dk.png", "ce_grad_vs_dk.png", "context.csv",
            "context_length.png", "law.csv"} <= names
    v = pd.read_csv(out / "verdicts.csv")
    assert set(v["verdict"]) <= {"holds", "fails", "inconclusive"}
    assert v["verdict"][v["key"] == "literal"].item() == "holds"


def _verify_again(verify_run, monkeypatch, capsys, *flags):
    """``fastsoftmax verify <flags>`` in process, its experiment replaced by
    the module's one run (same arguments): the command's own work, parsing
    and printing, without running verify again."""
    from fastsoftmax import verify as vmod
    res = verify_run[4]
    calls = []

    class Done:
        def run(self, progress=True, client=None):
            calls.append(progress)
            return res

    def prepare(**kw):
        assert kw == dict(VERIFY_RUN, out=None), kw
        return Done()

    monkeypatch.setattr(vmod, "prepare", prepare)
    capsys.readouterr()
    rc = cli.main([*VERIFY_ARGS, *flags])
    out, err = capsys.readouterr()
    assert calls, "verify did not run"
    return rc, out, err, calls[0]


def test_verify_json_quiet(verify_run, monkeypatch, capsys):
    rc, stdout, err, progress = _verify_again(verify_run, monkeypatch, capsys, "--json",
                                              "--quiet")
    assert rc == 0, err
    assert err == "" and progress is False        # --quiet: no progress bar
    d = json.loads(stdout)
    assert d["meta"]["samples"] == VERIFY_RUN["samples"]
    assert [c["key"] for c in d["claims"]][:3] == ["paper", "fix", "literal"]
    assert all(c["verdict"] in ("holds", "fails", "inconclusive") for c in d["claims"])
    rc, stdout, err, progress = _verify_again(verify_run, monkeypatch, capsys, "--quiet")
    assert rc == 0 and err == "" and progress is False, err
    lines = stdout.splitlines()
    assert len(lines) == len(d["claims"]) == 11 and lines[2].startswith("3. HOLDS")


def test_progress_bar_says_compiling_then_times_the_work(capsys):
    """The first chunk's time (the compilation) enters neither the rate nor
    the ETA; a shared bar (a sweep's points) is restarted once."""
    bar = progress_bar(True, 1000, "sweep gaussian")
    time.sleep(0.4)                               # "compiling"
    bar.update(100)
    time.sleep(0.1)
    inner = progress_bar(bar, 10)                 # a point of the sweep: the same bar
    inner.update(100)
    fd = bar._bar.format_dict
    bar.close()
    err = capsys.readouterr().err
    assert err.lstrip("\r").startswith(f"sweep gaussian: {COMPILING}")
    assert fd["n"] == 200 and fd["prefix"] == "sweep gaussian"
    assert fd["elapsed"] < 0.3                    # the clock restarted after the first chunk
    # the rate tqdm shows: its moving average, else rows timed / time
    rate = fd["rate"] or (fd["n"] - fd["initial"]) / fd["elapsed"]
    assert rate > 100 / 0.3                       # not 200 rows / 0.5 s


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
    assert "--resume" in err and "resume=" not in err
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
    assert_usage_error(rc, out, err, "with --theory")


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
    # one child interpreter: a real process exits 2 with one line; the other
    # cases run in this process (the same entry point, cli.main)
    rc, out, err = run_child(*cases[0][0], cwd=tmp_path)
    assert_usage_error(rc, out, err, cases[0][1])
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
    (["sweep", "-m", "dotproduct", "-g", "dk=1", "-s", "n=4", "--samples", "10",
      "-o", "new/deeper/s.csv", "--plot", "new2/s.png"], "unknown parameter 'dk'"),
    (["sweep", "-m", "dotproduct", "-g", "d_k=1", "-s", "n=4", "--samples", "10",
      "--threshold", "-1"], "--threshold must be positive"),
    (["sweep", "-m", "dotproduct", "-g", "d_k=1", "-s", "n=4", "--samples", "10",
      "-o", "new/s.txt"], "--out new/s.txt: the file name must end in .csv or .parquet"),
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


def test_choices_and_checks_are_the_librarys():
    """--backend offers every registered backend (the registry's names, read
    when the command line is parsed: a backend registered at run time
    included) and --nan-policy the library's policies; --samples and --seed
    say what the library's checks say."""
    from fastsoftmax import _inputs, backends, registries
    assert cli.BACKEND.choices == ("auto",) + registries.backend_names()
    assert "dask" in cli.BACKEND.choices
    with pytest.raises(click.BadParameter, match="'fake' is not one of"):
        cli.BACKEND.convert("fake", None, None)
    backends.register("fake", lambda **kw: backends.default("cpu"))
    try:
        assert cli.BACKEND.convert("fake", None, None) == "fake"
        assert cli.BACKEND.choices[-1] == "fake"
    finally:
        backends.unregister("fake")
    assert "fake" not in cli.BACKEND.choices
    assert tuple(cli.NAN_POLICY.choices) == _inputs.NAN_POLICIES
    for value, check, param in ((0, _inputs.check_samples, cli.Count()),
                                (-1, _inputs.check_seed, cli.Seed()),
                                (2 ** 64, _inputs.check_seed, cli.Seed())):
        with pytest.raises(ValueError) as lib:
            check(value)
        with pytest.raises(click.BadParameter) as got:
            param.convert(str(value), None, None)
        assert got.value.format_message().endswith(": " + str(lib.value).split(" ", 1)[1])


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


def test_summarize(tmp_path, logits, capsys):
    path, x = logits
    y = np.random.default_rng(1).integers(0, 32, 3000)
    np.save(tmp_path / "y.npy", y)
    rc, out, err = run_child("summarize", path, "--json")    # the real command, once
    assert rc == 0, err
    d = json.loads(out)
    s = fs.summarize(x)
    assert d["samples"] == 3000 and d["shape"] == [3000, 32]
    assert d["observables"]["jac_diag_max"]["mean"] == s["jac_diag_max"].mean
    assert fs.Summary.from_dict(d["summary"])["entropy"].to_dict() == s["entropy"].to_dict()
    # the other options in process (no interpreter start, no kernel loading)
    rc = cli.main(["summarize", str(path), "--target", str(tmp_path / "y.npy"), "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    d = json.loads(out)
    s = fs.summarize(x, target=y)
    assert d["observables"]["ce_loss"]["mean"] == s["ce_loss"].mean
    rc = cli.main(["summarize", str(path), "--target", "3", "--axis", "1"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "3,000 rows" in out and "jac_diag_max" in out


def test_summarize_bad(tmp_path, logits, monkeypatch, capsys):
    path, x = logits
    monkeypatch.chdir(tmp_path)
    np.savez(tmp_path / "z.npz", a=x)
    np.savetxt(tmp_path / "x.csv", x[:5], delimiter=",")
    np.save(tmp_path / "bad.npy", np.arange(5))              # wrong label shape
    bad = x.copy()
    bad[7, 3] = np.nan
    np.save(tmp_path / "nan.npy", bad)
    cases = [
        ([path, "--target", "32"], "--target 32 is out of range"),
        ([path, "--target", "random"], "labels"),
        ([path, "--target", "bad.npy"], "shape"),
        ([path, "--target", "nolabels.npy"], "no such file"),
        ([path, "--axis", "2"], "axis"),
        ([path, "--axis", "x"], "--axis"),
        (["z.npz"], ".npy"),
        (["x.csv"], "FILE x.csv: a .npy file is expected"),
        ([path, "--target", "x.csv"], "--target x.csv: a .npy file is expected"),
    ]
    for args, match in cases:
        assert cli.main(["summarize", *map(str, args)]) == 2, args
        err = capsys.readouterr().err
        lines = [l for l in err.splitlines() if l.strip()]
        assert len(lines) == 1 and match in lines[0], (args, err)
        assert "pickle" not in lines[0] and "target=" not in lines[0], lines[0]
    # a bad row is found while running, not an argument error: exit 1, one line
    assert cli.main(["summarize", "nan.npy"]) == 1
    lines = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
    assert len(lines) == 1 and "row 7" in lines[0] and "usage" not in lines[0].lower()
    # in the command line's words: the flag, and the file for the library's x
    assert "row 7 of nan.npy" in lines[0] and "pass --nan-policy omit" in lines[0], lines[0]
    assert "nan_policy" not in lines[0]
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


def test_info(monkeypatch, capsys):
    # one run of the command (its JSON), in process: info starts the threading
    # layer itself (a tiny parallel call) and measures its vector-width probe
    # (or reads what it measured before), so a fresh interpreter would check
    # nothing more; then the text form of the same dict
    rc, out, err = run("info", "--json")
    assert rc == 0, err
    d = json.loads(out)
    monkeypatch.setattr(cli, "collect_info", lambda: d)
    assert cli.main(["info"]) == 0
    text = capsys.readouterr().out
    for key in ("fastsoftmax", "numba", "numpy", "threads", "threading layer", "cpu",
                "cpu target", "vector units", "vector width", "kernel vector width", "cuda",
                "numba cache"):
        assert any(line.startswith(key) for line in text.splitlines()), key
    assert d["fastsoftmax"] == fs.__version__ and d["threads"] >= 1
    assert d["threading layer"] != "not initialised"
    # the width the kernels' machine code really uses, and the knob
    w = d["kernel vector width"]
    assert w.split("-bit")[0] in ("128", "256", "512") and "FASTSOFTMAX_VECTOR_WIDTH=" in w, w
    # the machine: its model and vector units, read independently here
    # from /proc/cpuinfo where there is one (numba's target is the host's)
    assert d["cpu"] and d["cpu"] == _cpu.model_name()
    assert d["cpu target"].startswith(_cpu.target().name)
    try:
        with open("/proc/cpuinfo") as f:
            cpuinfo = f.read().splitlines()
    except OSError:
        cpuinfo = []
    model = [l.split(":", 1)[1].strip() for l in cpuinfo if l.startswith("model name")]
    flags = next((set(l.split(":", 1)[1].split()) for l in cpuinfo if l.startswith("flags")),
                 None)
    if model:
        assert d["cpu"] == model[0]
    if flags is not None:
        units = d["vector units"]
        for flag, label in (("avx2", "AVX2"), ("fma", "FMA"), ("avx512f", "AVX-512F")):
            assert (label in units.split(", ")) == (flag in flags), (flag, units)
        bits = "512" if "avx512f" in flags else "256" if "avx" in flags else "128"
        assert d["vector width"].startswith(f"{bits}-bit"), d["vector width"]


def test_kernel_vector_width_is_kept_per_build_and_target(monkeypatch, tmp_path):
    # info's measured width: its answer is kept beside the kernels' cache,
    # under a key that changes with the CPU target and the kernels' sources
    import numba

    from fastsoftmax.backends import cpu
    real = cpu.kernel_vector_width()
    memo = cpu._vector_width_memo()
    assert memo is not None and json.loads(pathlib.Path(memo).read_text()) == list(real)
    with monkeypatch.context() as m:
        m.setattr(numba.config, "CPU_FEATURES", "-avx512f")
        assert cpu._vector_width_memo() != memo
    with monkeypatch.context() as m:
        m.setattr(cpu, "_source_key", lambda: 1)
        assert cpu._vector_width_memo() != memo
    # and not with the order of the fastmath flags (a set's order follows
    # the hash seed, which changes from process to process)
    for order in (sorted, lambda f: sorted(f, reverse=True)):
        with monkeypatch.context() as m:
            m.setattr(cpu, "FASTMATH", order(cpu.FASTMATH))
            assert cpu._vector_width_memo() == memo
    # a kept answer is read, not measured; an unreadable one is measured
    # (here a stand-in machine code: registers counted) and written again
    kept = tmp_path / "w.json"
    monkeypatch.setattr(cpu, "_vector_width_memo", lambda: str(kept))
    kept.write_text(json.dumps([128, "kept"]))
    assert cpu.kernel_vector_width() == (128, "kept")

    class Probe:
        def __init__(self, f):
            pass

        def __call__(self, x):
            return 0.0

        def inspect_asm(self):
            return {"f": "vaddps %ymm1, %ymm2, %ymm13\n\tvmovups %xmm0, (%rax)"}
    monkeypatch.setattr(cpu, "njit", lambda **kw: Probe)
    kept.write_text("{")
    want = (256, "0 zmm / 3 ymm / 1 xmm register uses in the row pass")
    assert cpu.kernel_vector_width() == want
    assert json.loads(kept.read_text()) == list(want)


def test_console_script_entry_point():
    # fastsoftmax = fastsoftmax.cli:main, which returns the exit status
    assert cli.main(["--version"]) == 0


def test_sweep_local_dask_cluster(tmp_path):
    """``python -m fastsoftmax`` starting a LocalCluster: its worker processes
    are spawned and import the parent's main module, which must not run the
    command again.  3000 rows of n = 8 are three one-block tasks per point,
    joined in row order whichever worker ran them: one worker suffices here
    (tasks spread over several workers, one killed, and "auto" resolved on
    the workers: test_dask; --backend cpu spares both processes loading
    numba.cuda to find no GPU)."""
    pytest.importorskip("distributed")
    rc, out, err = run_child("sweep", "-m", "gaussian", "-g", "scale=1,4", "-s", "n=8",
                             "--samples", "3000", "--workers", "1", "--backend", "cpu",
                             "-o", "d.csv", "-q", cwd=tmp_path)
    assert rc == 0, err
    want = sweep(models.Gaussian, {"scale": [1, 4]}, fixed={"n": 8}, samples=3000,
                 progress=False)
    pd.testing.assert_frame_equal(read_table(str(tmp_path / "d.csv")), want, check_exact=True)


# --------------------------------------------------------------------------
# the command line's manners: folders, flags, lock file, closed pipes

def test_out_and_plot_make_their_folders(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["sweep", "-m", "gaussian", "-g", "scale=1,2", "-s", "n=4", "--samples",
                     "200", "-o", "a/b/s.csv", "--plot", "c/s.png", "-q"]) == 0, \
        capsys.readouterr().err
    assert len(read_table("a/b/s.csv")) == 2
    assert (tmp_path / "c" / "s.png").read_bytes()[:4] == b"\x89PNG"
    # the lock file stays beside the table, empty and free, as documented
    lock = tmp_path / "a" / "b" / ".s.csv.lock"
    assert sorted(os.listdir(tmp_path / "a" / "b")) == [".s.csv.lock", "s.csv"]
    assert lock.stat().st_size == 0
    import filelock
    with filelock.FileLock(str(lock), timeout=0):
        pass
    assert ".<name>.lock" in fs.sweeps.__doc__ and "stays" in fs.sweeps.__doc__


def test_messages_name_flags(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    # scales below the saturation law's domain: the theory columns are there
    # (NaN) at no cost, and the table records that it was written with --theory
    base = ["sweep", "-m", "gaussian", "-g", "scale=1,2", "-s", "n=8", "--samples", "100",
            "-o", "t.csv", "-q"]
    assert cli.main([*base, "--theory"]) == 0
    capsys.readouterr()
    assert cli.main(base) == 2                                 # exists, no --resume
    err = capsys.readouterr().err
    assert "pass --resume to continue" in err and "resume=" not in err, err
    assert cli.main([*base, "--resume"]) == 2                  # written with --theory
    err = capsys.readouterr().err
    assert "with --theory" in err and "theory=" not in err, err
    # the one table, on its own
    assert cli.to_flags("pass nan_policy='omit' or nan_policy=\"raise\"") == \
        "pass --nan-policy omit or --nan-policy raise"
    assert cli.to_flags("backend='cuda' is not usable: no driver") == \
        "--backend cuda is not usable: no driver"
    assert cli.to_flags("progress=True needs tqdm (or pass progress=False)").endswith(
        "(or pass --quiet)")
    assert cli.to_flags("seed must lie in [0, 2**64)") == "--seed must lie in [0, 2**64)"
    assert cli.to_flags("out of range; timeout=5 without=3") == \
        "out of range; timeout=5 without=3"                    # words, not arguments


def test_closed_stdout_exits_1_quietly():
    """``fastsoftmax ... | head``: click turns the broken pipe into status 1
    and silences the final flush: no traceback, no 'Exception ignored'."""
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run([sys.executable, "-m", "fastsoftmax", "--version"], stdout=w,
                           stderr=subprocess.PIPE, text=True, env=subprocess_env(), timeout=120)
    finally:
        os.close(w)
    assert p.returncode == 1 and p.stderr == "", (p.returncode, p.stderr)
