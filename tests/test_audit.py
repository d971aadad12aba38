"""fastsoftmax.audit: the unit arithmetic, the verdicts on implementations
known to be right or wrong, the report, and the command line."""
import math

import numpy as np
import pytest

import fastsoftmax as fs
from fastsoftmax import cli
from fastsoftmax.audits import AuditReport, battery_names, prepare
from fastsoftmax.audits._units import (FORMATS, softmax_condition, target_condition, ulp,
                                       units_log, units_relative)

torch = pytest.importorskip("torch")
scipy_special = pytest.importorskip("scipy.special")

F32 = FORMATS["float32"]


def _figure(rep, case, metric):
    df = rep.to_frame()
    row = df[(df["case"] == case) & (df["metric"] == metric)]
    if "[" in case:
        base, _, tgt = case.partition("[")
        row = df[(df["case"] == base) & (df["target"] == tgt.rstrip("]"))
                 & (df["metric"] == metric)]
    assert len(row) == 1, (case, metric, df[["case", "target", "metric"]])
    return row.iloc[0]["value"]


def shifted_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def naive_softmax(x):
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


# --------------------------------------------------------------------------
# the unit arithmetic

@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
def test_formats_match_finfo(name):
    fmt, fi = FORMATS[name], np.finfo(name)
    assert fmt.u == fi.eps / 2
    assert fmt.tiny == fi.smallest_normal
    assert fmt.max == float(fi.max)
    assert fmt.smallest_subnormal == float(fi.smallest_subnormal)


def test_bfloat16_format_matches_torch():
    fi = torch.finfo(torch.bfloat16)
    fmt = FORMATS["bfloat16"]
    assert (fmt.u, fmt.tiny, fmt.max) == (fi.eps / 2, fi.tiny, fi.max)


@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
def test_ulp_is_numpy_spacing(name):
    rng = np.random.default_rng(1)
    fi = np.finfo(name)
    x = np.concatenate([rng.standard_normal(200) * 10.0 ** rng.integers(-4, 4, 200),
                        [1.0, 2.0, 0.5, float(fi.smallest_normal), float(fi.max) / 2,
                         float(fi.smallest_normal) / 3, float(fi.smallest_subnormal), 0.0]])
    xd = np.abs(x.astype(name))
    xd = xd[np.isfinite(xd)]
    want = np.spacing(xd).astype(np.float64)
    np.testing.assert_array_equal(ulp(xd.astype(np.float64), FORMATS[name]), want)
    up = np.nextafter(xd, np.array(np.inf, dtype=name)).astype(np.float64)
    np.testing.assert_array_equal(ulp(xd.astype(np.float64), FORMATS[name]),
                                  up - xd.astype(np.float64))


def test_ulp_bfloat16_is_the_next_bfloat16():
    rng = np.random.default_rng(2)
    x = torch.tensor(rng.standard_normal(300) * 10.0 ** rng.integers(-30, 30, 300),
                     dtype=torch.bfloat16).abs().float().numpy()
    x = np.concatenate([x, [2.0 ** -126, 2.0 ** -130]]).astype(np.float32)
    # a bfloat16 is a float32 with its low 16 bits zero: the next one up adds 1 << 16
    nxt = (x.view(np.uint32) + (1 << 16)).view(np.float32)
    np.testing.assert_array_equal(ulp(x.astype(np.float64), FORMATS["bfloat16"]),
                                  nxt.astype(np.float64) - x)


def test_units_hand_worked():
    # x = [0, 0]: p = 1/2, c = 1 + ceil(log2 2) + 0 + 0 = 2; an error of one
    # float32 spacing at 1/2 (2^-25) is a relative 2^-24 = u: 1/2 unit
    d = np.zeros((1, 2))
    p = np.full((1, 2), 0.5)
    c = softmax_condition(d, p)
    np.testing.assert_array_equal(c, [[2.0, 2.0]])
    assert units_relative(np.array([2.0 ** -25]), np.array([0.5]), np.array([2.0]), F32)[0] \
        == 0.5
    # x = [0, -1, -2], n = 3: S = p1 + 2 p2, c_j = 1 + 2 + |d_j| + S
    x = np.array([[0.0, -1.0, -2.0]])
    e = np.exp(x)
    p = e / e.sum()
    S = p[0, 1] + 2 * p[0, 2]
    np.testing.assert_allclose(softmax_condition(x, p), [[3 + S, 4 + S, 5 + S]], rtol=1e-15)
    # target y = 0: the mean of |d_k| over k != 0 weighted by p_k, in place of |d_0| = 0
    lp = np.log(p)
    want = 3 + (p[0, 1] * 1 + p[0, 2] * 2) / (p[0, 1] + p[0, 2]) + S
    np.testing.assert_allclose(target_condition(x, lp, np.array([0])), [want], rtol=1e-14)
    # log outputs: absolute error over u (c + |log p|)
    assert units_log(np.array([F32.u * 10.0]), np.array([-7.0]), np.array([3.0]), F32)[0] \
        == pytest.approx(1.0)
    # below the smallest normal the error is absolute against it
    tiny = F32.tiny
    assert units_relative(np.array([tiny * F32.u]), np.array([tiny / 4]), np.array([1.0]),
                          F32)[0] == pytest.approx(1.0)
    # a masked logit (c infinite): exact 0, any other output unbounded; an exact
    # value that merely underflows float64 (e^-1e4) is judged against tiny
    assert units_relative(np.array([1e-30]), np.array([0.0]), np.array([np.inf]), F32)[0] \
        == np.inf
    assert units_relative(np.array([1e-45]), np.array([0.0]), np.array([1e4]), F32)[0] \
        == pytest.approx(1e-45 / tiny / (F32.u * 1e4))


def test_one_unit_error_is_one_unit():
    """An implementation erring by exactly its bound's relative amount."""
    def off_by_bound(x):
        p = shifted_softmax(x.astype(np.float64))
        d = x - x.max(axis=-1, keepdims=True)
        c = softmax_condition(d.astype(np.float64), p)
        return p * (1 + 2 * F32.u * c)
    rep = fs.audit(off_by_bound, cases=[np.array([[0.0, -1.0, -3.0, 2.0]])])
    assert _figure(rep, "user_0", "units") == pytest.approx(2.0, rel=1e-6)
    assert rep.passed(max_ulp=2.01) and not rep.passed(max_ulp=1.99)


# --------------------------------------------------------------------------
# verdicts that would catch a wrong audit

def test_naive_softmax_flagged_nonfinite():
    rep = fs.audit(naive_softmax, cases=["gauss_s1_n64", "gauss_s1e3_n64", "offset_1e4_n64",
                                         "mask_full_n64"])
    assert _figure(rep, "gauss_s1e3_n64", "nonfinite") > 0
    assert _figure(rep, "offset_1e4_n64", "nonfinite") == 64 * 64
    assert rep.failures() == ["gauss_s1e3_n64", "offset_1e4_n64"]
    assert rep.worst()["case"] in ("gauss_s1e3_n64", "offset_1e4_n64")
    # the fully masked row is reported (NaN), not judged
    df = rep.to_frame()
    masked = df[df["case"] == "mask_full_n64"]
    assert masked["note"].tolist() == ["NaN"] and not masked["judged"].any()
    assert masked["passed"].isna().all()


def test_log_of_softmax_flagged_beyond_gap_104():
    def log_of_softmax(x):
        return np.log(shifted_softmax(x))
    # float32: exp(-103) is a subnormal, exp(-105) rounds to 0
    rep = fs.audit(log_of_softmax, kind="log_softmax",
                   cases={"gap103": [[0.0, -103.0]], "gap105": [[0.0, -105.0]]})
    assert _figure(rep, "gap103", "false_neg_inf") == 0
    assert _figure(rep, "gap105", "false_neg_inf") == 1
    assert "gap105" in rep.failures()
    good = fs.audit(lambda x: scipy_special.log_softmax(x, axis=-1), kind="log_softmax",
                    cases={"gap105": [[0.0, -105.0]]})
    assert good.passed()


def test_softmax_minus_one_hot_loses_the_target_component():
    def grad(x, y):
        g = shifted_softmax(x)
        g[np.arange(len(y)), y] -= 1
        return g
    rep = fs.audit(grad, kind="ce_grad", cases=["gap_20_n64[argmax]", "gauss_s1_n64[random]"])
    # p_y rounds to 1 in float32: 1 - p_y (about 64 e^-20 = 1.3e-7... e^-20 each) is lost
    assert _figure(rep, "gap_20_n64[argmax]", "target_rel_err") == 1.0
    assert _figure(rep, "gap_20_n64[argmax]", "target_units") > 1e5
    assert rep.failures() == ["gap_20_n64[argmax]"]


def test_float64_scipy_passes_against_mpmath():
    rep = fs.audit(lambda x: scipy_special.softmax(x, axis=-1), dtype="float64",
                   cases=["gauss_s30_n64", "gauss_s1e3_n64", "gap_100_n64", "offset_1e6_n64",
                          "gauss_s1_n65536"])
    assert rep.passed(max_ulp=4), rep
    df = rep.to_frame()
    ref = dict(zip(df[df.metric == "units"]["case"], df[df.metric == "units"]["reference"]))
    assert ref["gauss_s30_n64"] == "mpmath 113 bits, 8 of 64 rows"
    assert ref["gauss_s1_n65536"].startswith("float64 log-domain")
    # the float64 units are tight: a float64 softmax computed in float32 fails them
    bad = fs.audit(lambda x: shifted_softmax(x.astype(np.float32)).astype(np.float64),
                   dtype="float64", cases=["gauss_s1_n64"])
    assert _figure(bad, "gauss_s1_n64", "units") > 1e6


def test_torch_softmax_and_log_softmax_float32_pass_the_battery():
    rep = fs.audit(lambda x: torch.softmax(x, dim=-1), framework="torch")
    assert rep.passed(max_ulp=4), rep
    assert {c.name for c in rep.cases} == set(battery_names("float32"))
    rep = fs.audit("torch", kind="log_softmax",
                   cases=["gauss_s1e3_n1024", "gap_1e4_n64", "gauss_s30_n65536",
                          "mask_half_n64"])
    assert rep.passed(max_ulp=4), rep


def test_bfloat16_judged_in_bfloat16_units():
    def via_bf16(x):
        return torch.softmax(x.float(), dim=-1).to(torch.bfloat16).to(x.dtype)
    cases = ["gauss_s1_n64", "gauss_s30_n64"]
    assert fs.audit(via_bf16, dtype="bfloat16", framework="torch", cases=cases).passed()
    # the same rounding to bfloat16 is thousands of float32 units
    rep = fs.audit(via_bf16, dtype="float32", framework="torch", cases=cases)
    assert _figure(rep, "gauss_s1_n64", "units") > 1000
    # bfloat16 logits: the reference is of the rounded logits, not the float64 draw
    rep = fs.audit("torch", dtype="bfloat16", cases=["offset_1e4_n64"])
    # (1e4 + z rounds to 9984 in bfloat16: every row is uniform, 1/64 exactly)
    assert _figure(rep, "offset_1e4_n64", "units") < 1e-9


def test_torch_cross_entropy_findings():
    """PyTorch's CE backward forms p - one_hot from exp(log_softmax): the
    target component is lost where p_y rounds to 1; its loss is accurate."""
    rep = fs.audit("torch", kind="ce_grad", cases=["gap_20_n64[argmax]", "gauss_s1_n64"])
    assert _figure(rep, "gap_20_n64[argmax]", "target_rel_err") == 1.0
    assert rep.failures() == ["gap_20_n64[argmax]"]
    loss = fs.audit("torch", kind="ce_loss", cases=["gap_20_n64", "gauss_s1e3_n64",
                                                   "mask_half_n64"])
    assert loss.passed(), loss


def test_user_cases_models_and_targets():
    m = fs.models.Gaussian(n=16, scale=30.0)
    rep = fs.audit("scipy", kind="ce_loss",
                   cases=[m, ("mine", np.array([[1.0, 2.0, -np.inf]]))])
    labels = [c.label for c in rep.cases]
    assert labels == [f"user_0[{t}]" for t in ("argmax", "random", "sampled")] + \
        [f"mine[{t}]" for t in ("argmax", "random", "sampled")]
    assert rep.cases[0].regime == "gaussian" and rep.cases[0].rows == 64
    assert rep.passed(), rep
    # a model's rows have its scale
    assert 30 < np.std(rep.cases[0].x) * 1.2 and np.std(rep.cases[0].x) < 36


def test_report_frame_worst_repr_plot(tmp_path):
    rep = fs.audit(naive_softmax, cases=["gauss_s1_n64", "gap_100_n64"])
    assert isinstance(rep, AuditReport)
    df = rep.to_frame()
    assert list(df.columns[:4]) == ["implementation", "kind", "dtype", "framework"]
    assert {"case", "metric", "value", "q0.999", "reference", "passed"} <= set(df.columns)
    assert set(df["metric"]) == {"units", "ulps", "rel_err", "nonfinite", "false_zeros",
                                 "sum_err"}
    w = rep.worst()
    assert w["case"] == "gap_100_n64" and w["regime"] == "dominant logit"
    assert w["figures"]["nonfinite"] == 64
    text = repr(rep)
    assert "gap_100_n64" in text and "FAIL" in text and "pass" in text
    fig = rep.plot(tmp_path / "a.png")
    assert (tmp_path / "a.png").stat().st_size > 1000
    assert fig.axes[0].get_yscale() == "log"


# --------------------------------------------------------------------------
# arguments

@pytest.mark.parametrize("kw, exc, match", [
    (dict(kind="softmx"), ValueError, "kind must be one of"),
    (dict(dtype="float8"), ValueError, "dtype must be one of"),
    (dict(dtype="bfloat16"), ValueError, "NumPy has no bfloat16|not available"),
    (dict(framework="tf"), ValueError, "framework must be one of"),
    (dict(cases=["gap_2_n64"]), ValueError, "unknown case"),
    (dict(cases=[np.zeros((2, 2, 2))]), ValueError, "2-D"),
    (dict(cases=[[[0.0, np.nan]]]), ValueError, "NaN"),
    (dict(cases=[]), ValueError, "empty"),
    (dict(cases="gap_20_n64"), TypeError, "cases must be"),
    (dict(cases=["gap_20_n64[argmax]"]), ValueError, "target rule"),
    (dict(cases=[("a", [[1.0]]), ("a", [[2.0]])]), ValueError, "distinct"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(device="cuda"), ValueError, "host memory"),
])
def test_bad_arguments(kw, exc, match):
    with pytest.raises(exc, match=match):
        prepare(naive_softmax, **kw)


def test_bad_fn_and_implementation_names():
    with pytest.raises(TypeError, match="callable"):
        prepare(3)
    with pytest.raises(ValueError, match="unknown implementation"):
        prepare("numpy_naive")
    with pytest.raises(ValueError, match="has no"):
        prepare("numpy:nonexistent_function")
    p = prepare("numpy:exp")
    assert p.framework == "numpy" and p.label == "numpy:exp"
    assert prepare(torch.softmax).framework == "torch"


def test_implementation_failure_is_a_finding():
    def wrong_shape(x):
        return x[:, :1]
    rep = fs.audit(wrong_shape, cases=["gauss_s1_n64"])
    assert not rep.passed()
    assert "returned shape" in rep.worst()["figures"]["note"]


# --------------------------------------------------------------------------
# fastsoftmax.testing

def test_assert_softmax_accurate():
    from fastsoftmax.testing import assert_softmax_accurate
    assert_softmax_accurate(shifted_softmax, cases=["gauss_s30_n64", "gap_1e4_n64"])
    with pytest.raises(AssertionError) as e:
        assert_softmax_accurate(naive_softmax, cases=["gauss_s1_n64", "offset_1e4_n64"])
    msg = str(e.value)
    assert "worst: offset_1e4_n64 (large but close" in msg and "nonfinite 4096" in msg
    with pytest.raises(ValueError, match="max_ulp"):
        assert_softmax_accurate(shifted_softmax, max_ulp=0)


# --------------------------------------------------------------------------
# the command line

def test_cli_audit(tmp_path, capsys):
    out = tmp_path / "res"
    rc = cli.main(["audit", "--impl", "numpy-naive", "--case", "gauss_s1_n64",
                   "--case", "offset_1e4_n64", "--out", str(out)])
    assert rc == 1
    text = capsys.readouterr().out
    assert "offset_1e4_n64" in text and "FAIL" in text
    import pandas as pd
    df = pd.read_csv(out / "audit.csv")
    assert set(df["case"]) == {"gauss_s1_n64", "offset_1e4_n64"}
    assert (out / "audit.png").exists()
    rc = cli.main(["audit", "--impl", "torch", "--dtype", "bfloat16", "--case", "gap_20_n64"])
    assert rc == 0
    assert cli.main(["audit", "--impl", "scipy", "--dtype", "bfloat16"]) == 2
    assert cli.main(["audit", "--impl", "nope"]) == 2
    assert cli.main(["audit", "--impl", "scipy", "--max-ulp", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--dtype bfloat16 is not available" in err and "unknown implementation" in err


def test_jax_framework():
    pytest.importorskip("jax")
    rep = fs.audit("jax", kind="log_softmax", dtype="bfloat16", cases=["gap_100_n64"])
    assert rep.framework == "jax" and rep.passed(), rep
    # p = [1, e^-88] (e^-88 = 6e-39, a float32 subnormal): the error of the
    # second, absolute against the smallest normal, over u c with c = 1 + 1 + 88
    import jax
    out = np.asarray(jax.nn.softmax(jax.numpy.asarray([[0.0, -88.0]], dtype="float32")),
                     dtype=np.float64)
    exact = math.exp(-88) / (1 + math.exp(-88))
    want = abs(out[0, 1] - exact) / F32.tiny / (F32.u * 90)
    rep = fs.audit("jax", cases={"sub": [[0.0, -88.0]]})
    assert _figure(rep, "sub", "units") == pytest.approx(want, rel=1e-6)
