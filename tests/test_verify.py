"""verify: criteria (pure functions) both ways, estimates, the claim registry, and one
small run (the session's, a conftest fixture: verify runs once per test run)."""
import gzip
import json
import math

import numpy as np
import pytest

import fastsoftmax as fs
from fastsoftmax import verify as V
from fastsoftmax.verify import _judges as J
from fastsoftmax.verify import constants as C
from fastsoftmax.verify import criteria as K
from fastsoftmax.verify.criteria import FAILS, HOLDS, INCONCLUSIVE, Est

from helpers import VERIFY_RUN


def E(value, se=0.0):
    return Est.normal(value, se)


# --------------------------------------------------------------------------
# the building blocks, on numbers

@pytest.mark.parametrize("fn, args, want", [
    (K.below, (E(1e-8, 1e-9), 1e-6), HOLDS),
    (K.below, (E(1e-3, 1e-5), 1e-6), FAILS),
    (K.below, (E(1e-6, 1e-6), 1e-6), INCONCLUSIVE),
    (K.above, (E(0.99, 0.001), 0.9), HOLDS),
    (K.above, (E(0.5, 0.01), 0.9), FAILS),
    (K.above, (E(0.9, 0.1), 0.9), INCONCLUSIVE),
    (K.ratio_below, (E(1e-8, 1e-9), E(0.05, 0.001), 1e-3), HOLDS),
    (K.ratio_below, (E(0.04, 0.001), E(0.05, 0.001), 1e-3), FAILS),
    (K.ratio_below, (E(5e-5, 2e-5), E(0.05, 0.001), 1e-3), INCONCLUSIVE),
    (K.drop, (E(-1.2, 0.01), E(-10.5, 0.05), 3.0), HOLDS),
    (K.drop, (E(-1.2, 0.01), E(-1.3, 0.01), 3.0), FAILS),
    (K.drop, (E(-1.2, 0.5), E(-4.2, 0.5), 3.0), INCONCLUSIVE),
    (K.within_factor, (E(0.087, 0.001), E(0.054, 0.001), 2.0), HOLDS),
    (K.within_factor, (E(1e-8, 1e-9), E(0.054, 0.001), 2.0), FAILS),
    (K.within_factor, (E(0.1, 0.02), E(0.054, 0.001), 2.0), INCONCLUSIVE),
    (K.close, (E(-1.05, 0.001), E(-1.25, 0.001), 0.3), HOLDS),
    (K.close, (E(-10.5, 0.01), E(-1.25, 0.001), 0.3), FAILS),
    (K.close, (E(-1.0, 0.05), E(-1.25, 0.001), 0.3), INCONCLUSIVE),
    (K.near, (E(1.414, 0.001), math.sqrt(2), 0.05), HOLDS),
    (K.near, (E(0.5, 0.001), math.sqrt(2), 0.05), FAILS),
    (K.near, (E(1.45, 0.02), math.sqrt(2), 0.05), INCONCLUSIVE),
    (K.same, (E(0.0937, 1e-4), E(0.0937 + 1e-12, 1e-4), 1e-3), HOLDS),
    (K.same, (E(0.0937, 1e-4), E(0.0947, 1e-4), 1e-4), FAILS),
    (K.same, (E(0.0937, 1e-4), E(0.0937, 1e-4), 1e-4), INCONCLUSIVE),
])
def test_building_blocks(fn, args, want):
    c = fn(*args)
    assert c.verdict == want, c
    assert isinstance(c.text, str) and c.text


def test_all_of():
    h, f, i = K.Check(HOLDS, ""), K.Check(FAILS, ""), K.Check(INCONCLUSIVE, "")
    assert K.all_of([h, h]) == HOLDS
    assert K.all_of([h, i]) == INCONCLUSIVE
    assert K.all_of([h, i, f]) == FAILS


def M(median, mean, log10_mean, below, se=1e-4):
    return dict(median=E(median, se * median), mean=E(mean, se), log10_mean=E(log10_mean, se),
                below=E(below, se))


def test_judge_saturation_both_ways():
    small = M(0.054, 0.0756, -1.248, 0.0)
    saturated = M(1.6e-8, 0.018, -10.55, 0.59)
    assert K.all_of(J.judge_saturation(small, saturated)) == HOLDS
    flat = M(0.087, 0.0937, -1.05, 0.0)
    assert K.all_of(J.judge_saturation(small, flat)) == FAILS
    # a mild fall (median 10x, log10-mean by 1) is not saturation
    mild = M(0.0054, 0.05, -2.2, 0.01)
    assert K.all_of(J.judge_saturation(small, mild)) == FAILS


def test_judge_flat_both_ways():
    ref = M(0.054, 0.0756, -1.248, 0.0)
    ok = [M(0.077, 0.088, -1.11, 0.0), M(0.087, 0.0937, -1.05, 0.0)]
    assert K.all_of(J.judge_flat(ref, ok)) == HOLDS
    bad = ok + [M(1.6e-8, 0.018, -10.55, 0.59)]
    assert K.all_of(J.judge_flat(ref, bad)) == FAILS


def test_judge_literal_both_ways():
    x = np.array([100.0, 101.0, 99.0])
    a = float(fs.observables(x[None])["jac_diag_max"][0])
    b = float(fs.observables((x - 100)[None])["jac_diag_max"][0])
    assert K.all_of(J.judge_literal(a, b)) == HOLDS
    far = float(fs.observables((10 * x)[None])["jac_diag_max"][0])     # [1000, 1010, 990]
    assert K.all_of(J.judge_literal(far, far)) == FAILS
    assert K.all_of(J.judge_literal(a, a * (1 + 1e-9))) == FAILS


def _shift_m(mean, log10_mean, median=0.087, below=0.0, se=1e-4):
    d = {"jac_diag_max": dict(mean=E(mean, se), log10_mean=E(log10_mean, se))}
    d["jac"] = M(median, mean, log10_mean, below)
    return d


def test_judge_shift_both_ways():
    ref = _shift_m(0.0937, -1.05)
    same = [_shift_m(0.0937 + 1e-12, -1.05 + 1e-12) for _ in range(3)]
    assert K.all_of(J.judge_shift(ref, same)) == HOLDS
    moved = same + [_shift_m(0.0990, -1.02)]          # 5% and 0.03 decades away
    assert K.all_of(J.judge_shift(ref, moved)) == FAILS
    vanishing = [_shift_m(0.0937, -1.05, median=1e-8, below=0.6)]
    assert K.all_of(J.judge_shift(_shift_m(0.0937, -1.05, 1e-8, 0.6), vanishing)) == FAILS


def test_judge_ce_both_ways():
    small = M(0.93, 0.90, -0.05, 0.0)
    assert K.all_of(J.judge_ce_right(small, M(1.6e-8, 0.025, -10.5, 0.59))) == HOLDS
    assert K.all_of(J.judge_ce_right(small, M(0.9, 0.89, -0.05, 0.0))) == FAILS
    wrong = M(0.991, 0.984, -0.007, 0.0)
    assert K.all_of(J.judge_ce_wrong(wrong, E(1.4142, 0.001))) == HOLDS
    assert K.all_of(J.judge_ce_wrong(M(1.6e-8, 0.02, -10.5, 0.6), E(2e-8, 1e-9))) == FAILS


def test_crossing_and_scale():
    xs = [1.0, 2.0, 4.0, 8.0]
    ests = [E(0.1, 1e-4), E(1e-3, 1e-6), E(1e-5, 1e-8), E(1e-9, 1e-12)]
    c = K.crossing(xs, ests)
    # log10 from -5 to -9 between x = 4 and 8: -6 at x = 5
    assert c["x_lo"] == 4.0 and c["x_hi"] == 8.0 and c["x"] == pytest.approx(5.0)
    assert c["significant"]
    assert K.crossing(xs, [E(0.1, 1e-4)] * 4) is None
    same = dict(c)
    assert K.all_of(J.judge_scale(c, same)) == HOLDS
    off = dict(c, x=c["x"] * 1.5)
    assert K.all_of(J.judge_scale(c, off)) == FAILS
    assert K.all_of(J.judge_scale(None, c)) == FAILS
    weak = K.crossing(xs, [E(0.1, 1e-4), E(1e-3, 1e-6), E(1.1e-6, 1e-6), E(0.9e-6, 1e-6)])
    assert not weak["significant"]
    assert K.all_of(J.judge_scale(weak, weak)) == INCONCLUSIVE


# --------------------------------------------------------------------------
# against the laws: bands, predictions, claims 8-11 (constructed estimates)

def test_judge_band_three_ways():
    assert K.judge_band(E(0.55, 0.0007), 0.502, 0.592).verdict == HOLDS
    # inside the band, but the interval crosses its edge
    assert K.judge_band(E(0.59, 0.0007), 0.502, 0.592).verdict == INCONCLUSIVE
    assert K.judge_band(E(0.70, 0.0007), 0.502, 0.592).verdict == FAILS
    # meets a narrow band but cannot resolve it: more samples would decide
    assert K.judge_band(E(0.004, 0.003), 0.0035, 0.0045).verdict == INCONCLUSIVE
    # a vanishing band is not "met" by a measurement that cannot tell it from 0
    assert K.judge_band(K.est_fraction(0.0, 1000), 0.0, 1e-20).verdict == INCONCLUSIVE
    assert K.judge_band(K.est_fraction(0.3, 1000), 0.0, 1e-20).verdict == FAILS


def test_judge_prediction_three_ways():
    # within the stated accuracy (0.5%) plus 4 SE
    assert K.judge_prediction(E(0.5905, 0.0005), 0.5905, 0.005).verdict == HOLDS
    # 0.0028 (4 SE) + 0.003 (stated) < 0.0095: contradicted
    assert K.judge_prediction(E(0.600, 0.0007), 0.5905, 0.005).verdict == FAILS
    # 2000 rows at p = 0.004: the interval is wider than the prediction itself
    assert K.judge_prediction(K.est_fraction(0.004, 2000), 0.0041, 0.15).verdict == \
        INCONCLUSIVE
    # an absolute accuracy (the diffuse entropy's)
    assert K.judge_prediction(E(3.6887, 2e-4), 3.6897, 0.0, 0.0042).verdict == HOLDS
    assert K.judge_prediction(E(3.6757, 2e-4), 3.6897, 0.0, 0.0042).verdict == FAILS
    with pytest.raises(ValueError):
        K.judge_prediction(E(0.5, 0.1), 0.5, float("nan"))


def _law_point(measured, predicted=0.5905, rel=0.005, lo=0.502, hi=0.592, what="d_k=4096"):
    return dict(what=what, measured=measured, predicted=predicted, rel=rel, abs=0.0, lo=lo,
                hi=hi)


def test_judge_law_three_ways():
    ok = _law_point(E(0.5905, 0.0003))
    outside = _law_point(E(0.0, 0.0), predicted=math.nan, rel=math.nan, what="d_k=1")
    assert K.all_of(K.judge_law([ok, outside])) == HOLDS
    assert len(K.judge_law([ok, outside])) == 2          # outside the domain: not judged
    # inside the stated accuracy of the prediction, outside the exact bounds
    off = _law_point(E(0.5905, 0.0001), hi=0.58)
    assert K.all_of(K.judge_law([ok, off])) == FAILS
    assert K.all_of(K.judge_law([_law_point(E(0.55, 0.0007))])) == FAILS
    assert K.all_of(K.judge_law([_law_point(K.est_fraction(0.004, 2000), 0.0041, 0.15,
                                            0.0008, 0.0055)])) == INCONCLUSIVE
    # nothing inside the law's domain: nothing tested
    assert K.all_of(K.judge_law([outside])) == INCONCLUSIVE


def test_judge_critical_three_ways():
    c = dict(x=49.3, x_lo=45.3, x_hi=64.0, significant=True)
    half = E(0.5, 0.0004)
    assert K.all_of(J.judge_critical(half, 0.5, 0.005, 49.23, c)) == HOLDS
    assert K.all_of(J.judge_critical(E(0.45, 0.0007), 0.5, 0.005, 49.23, c)) == FAILS
    assert K.all_of(J.judge_critical(half, 0.5, 0.005, 70.0, c)) == FAILS
    assert K.all_of(J.judge_critical(half, 0.5, 0.005, 49.23, None)) == FAILS
    weak = dict(c, significant=False)
    assert K.all_of(J.judge_critical(half, 0.5, 0.005, 49.23, weak)) == INCONCLUSIVE
    # 40 rows: the 4-SE interval [0.23, 0.77] is wider than the prediction 0.5 itself
    assert K.all_of(J.judge_critical(K.est_fraction(0.5, 40), 0.5, 0.005, 49.23, c)) == \
        INCONCLUSIVE


def test_context_rows():
    assert V.context_rows(16) == 500_000 and V.context_rows(65536) == 4096
    assert V.context_rows(65536, samples=1000) == 1000
    assert sum(V.context_rows(n) * n for n in C.CONTEXT_N) <= 7 * C.CONTEXT_LOGITS


# --------------------------------------------------------------------------
# estimates and criteria on synthetic Summaries

def _rows(gap, rows=4000, n=8, seed=0):
    """Logit rows whose top-2 gap is about ``gap`` (jac_diag_max ~ exp(-gap))."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, n))
    x[:, 0] = x.max(axis=1) + gap + rng.random(rows)
    return x


def test_measures_on_synthetic_summaries():
    # 20000 rows: none below 1e-6 shows a fraction < 1e-3 beyond 4 SE (Wilson)
    healthy = fs.summarize(_rows(0.0, rows=20000))["jac_diag_max"]
    saturated = fs.summarize(_rows(30.0))["jac_diag_max"]     # ~ 1e-13
    mh, ms = K.measures(healthy), K.measures(saturated)
    for m in (mh, ms):
        e = m["median"]
        assert e.lo <= e.value <= e.hi and e.se > 0
    assert ms["below"].value == 1.0 and mh["below"].value == 0.0
    assert K.all_of(J.judge_saturation(mh, ms)) == HOLDS
    assert K.all_of(J.judge_saturation(ms, mh)) == FAILS
    assert K.all_of(J.judge_flat(mh, [mh])) == HOLDS
    assert K.all_of(J.judge_flat(mh, [ms])) == FAILS


def test_est_quantile_brackets_the_exact_median():
    x = _rows(1.0, rows=20000)
    stat = fs.summarize(x)["jac_diag_max"]
    exact = np.median(fs.observables(x)["jac_diag_max"])
    e = K.est_quantile(stat, 0.5)
    assert e.lo <= exact <= e.hi
    assert e.value == pytest.approx(exact, rel=0.011)


def test_est_fraction():
    e = K.est_fraction(0.0, 1000)
    assert e.value == 0 and e.lo == 0 and 0 < e.hi < 0.02
    e = K.est_fraction(0.5, 10000)
    assert e.se == pytest.approx(0.005) and e.lo < 0.5 < e.hi


# --------------------------------------------------------------------------
# the session's small run (conftest.verify_result: samples 2000, seed 3, context)

@pytest.fixture
def tiny(verify_result, verify_out):
    return verify_result, verify_out


def test_run_structure(tiny):
    res, out = tiny
    assert [c.key for c in res.claims] == ["paper", "fix", "literal", "offset", "ce_right",
                                           "ce_wrong", "scale", "law_dk", "law_scale",
                                           "context_saturation", "context_rem"]
    assert res.meta["points"] == 68 + 14 and res.meta["law_order"] == 1
    # exact checks do not depend on the sample count
    assert res.verdicts["literal"] == HOLDS
    assert res.meta["samples"] == 2000 and res.meta["seed"] == 3
    dot = res.tables["dotproduct"]
    assert len(dot) == len(C.D_K) * 2 * len(C.TARGETS)
    assert set(dot["target"]) == set(C.TARGETS)
    d = json.loads(res.to_json())            # strict JSON (no NaN)
    assert [c["verdict"] for c in d["claims"]] == [c.verdict for c in res.claims]
    assert [c["rows_needed"] for c in d["claims"]] == [c.rows_needed for c in res.claims]
    report = res.report()
    assert "verdict" in report and "[100, 101, 99]" in report
    assert "Context length" in report and "law" in report
    lit = res.literal["literal"]
    p = fs.softmax(np.array(C.LITERAL))
    assert lit["p"] == p.tolist()
    np.testing.assert_array_equal(lit["jacobian"], np.diag(p) - np.outer(p, p))


def test_run_law_points_and_predictions(tiny):
    res, _ = tiny
    pc = res.predictions["claims"]
    assert pc["sigma_star"] == pytest.approx(49.23, abs=0.01)
    assert pc["dk_star"] == pytest.approx(2425, abs=1)
    # the predictions are those of fastsoftmax.theory, never written in
    from fastsoftmax import theory
    law = theory.Law.dot_product(C.N, 4096, False)
    assert pc["dk"][4096]["predicted"] == pytest.approx(
        float(law["jac_diag_max"].cdf(C.LEVEL)), rel=1e-12)
    assert pc["dk"][1]["predicted"] != pc["dk"][1]["predicted"]       # NaN: outside
    pts = {(p.get("scale"), p.get("d_k")): s for p, s in res.summaries["law"]}
    assert (pc["sigma_star"], None) in pts and (None, pc["dk_point"]) in pts
    assert len(res.tables["law"]) == 2
    ctx = res.tables["context"]
    assert sorted(set(ctx["n"])) == list(C.CONTEXT_N) and len(ctx) == 14
    assert (ctx["samples"] == [min(2000, V.context_rows(n)) for n in ctx["n"]]).all()
    d = json.loads(res.to_json())
    assert d["predictions"]["claims"]["dk"]["1"]["predicted"] == "nan"
    # 2,000 rows resolve none of the laws' stated accuracies: undecided, with
    # the rows that would settle each
    for c in res.claims[7:]:
        assert c.verdict == INCONCLUSIVE and c.rows_needed > 2000, c.key


def test_run_points_use_common_random_numbers(tiny):
    res, _ = tiny
    # d_k=1: scaled and unscaled are the same model, so the same numbers
    s = {p["scaled"]: s for p, s in res.summaries["dotproduct"]
         if p["d_k"] == 1 and p["target"] == "argmax"}
    assert s[True]["jac_diag_max"].to_dict() == s[False]["jac_diag_max"].to_dict()
    direct = fs.simulate(fs.models.DotProduct(n=64, d_k=256, scaled=False),
                         VERIFY_RUN["samples"], seed=VERIFY_RUN["seed"])
    got = [s for p, s in res.summaries["dotproduct"]
           if p["d_k"] == 256 and not p["scaled"] and p["target"] == "argmax"][0]
    assert got["jac_diag_max"].to_dict() == direct["jac_diag_max"].to_dict()


def test_run_files(tiny):
    _, out = tiny
    names = {p.name for p in out.iterdir()}
    for t in ("dotproduct", "shifted", "gaussian", "literal", "verdicts"):
        assert f"{t}.csv" in names and f"{t}.parquet" in names
    for png in ("jac_vs_dk.png", "ce_grad_vs_dk.png", "scale_sweep.png", "verify.png",
                "context_length.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    d = json.loads((out / "summary.json").read_text())
    assert [c["key"] for c in d["claims"]][0] == "paper"
    with gzip.open(out / "summaries.json.gz", "rt") as f:
        d = json.load(f)
    s = fs.Summary.from_dict(d["shifted"][0]["summary"])
    assert s.samples == 2000 and d["shifted"][0]["point"]["offset"] == 0.0


def test_run_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError):
        V.run(samples=0, progress=False)
    with pytest.raises(ValueError):
        V.run(samples=10, backend="gpu", progress=False)
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(NotADirectoryError):
        V.run(samples=10, out=f, progress=False)
    with pytest.raises(TypeError):
        V.prepare(samples=10, context="yes")


def test_run_without_context(tiny):
    """What a run without ``context`` judges and holds (the run's doctest
    examples, moved here: the tests run verify once)."""
    res, _ = tiny
    no_ctx = {k: v for k, v in res.summaries.items() if k != "context"}
    claims = V.judge_claims(V.CLAIMS, V.Evidence(no_ctx, res.literal,
                                                 {"claims": res.predictions["claims"]}))
    assert [c.key for c in claims] == ['paper', 'fix', 'literal', 'offset', 'ce_right',
                                       'ce_wrong', 'scale', 'law_dk', 'law_scale']
    # the same claims, judged on the same points, with and without the context axis
    assert [c.to_dict() for c in claims] == [c.to_dict() for c in res.claims[:9]]
    assert res.verdicts["paper"] == HOLDS and res.verdicts["literal"] == HOLDS
    assert res.verdicts["ce_wrong"] == HOLDS
    assert sorted(res.tables) == ['context', 'dotproduct', 'gaussian', 'law', 'literal',
                                  'shifted', 'verdicts']
    assert res.meta["samples"] == 2000 and len(res.summaries["dotproduct"]) == 42
    assert V.prepare(samples=1000).points == 68
    assert round(res.predictions["claims"]["sigma_star"], 2) == 49.23


def test_run_report_text(tiny):
    res, _ = tiny
    lines = res.report().splitlines()
    assert lines[0].startswith(f"fastsoftmax {fs.__version__} verify: 2,000 logit vectors per "
                               "point, 82 points, seed 3 for all")
    assert lines[1] == ""
    assert lines[2].startswith("softmax([100, 101, 99]) = [0.244728, 0.665241, 0.090031]")
    # one verdict row per claim, numbered in the registry's order
    for i, c in enumerate(res.claims, 1):
        assert any(l.startswith(f"{i:>2} ") and l.rstrip().endswith(c.verdict.upper())
                   for l in lines), c.key
    assert f"(law {res.predictions['claims']['dk'][4096]['predicted']:.4f}: claim " \
        f"{V.claim_number('law_dk')})" in res.claims[0].evidence
    assert res.brief().splitlines()[2].startswith("3. HOLDS")


def test_run_tables_are_summary_records(tiny):
    """verify's tables (and so --out) hold each point's Summary.record(), bit for bit."""
    res, out = tiny
    import pandas as pd
    for name in ("dotproduct", "shifted", "gaussian", "law", "context"):
        df = res.tables[name]
        cols = fs.Summary.record_columns(res.summaries[name][0][1].thresholds)
        assert len(df) == len(res.summaries[name])
        for row, (_, s) in zip(df.to_dict("records"), res.summaries[name]):
            assert {k: row[k] for k in cols} == s.record()
            assert row["samples"] == s.samples
        back = pd.read_parquet(out / f"{name}.parquet")
        pd.testing.assert_frame_equal(back[cols], df[cols])


# --------------------------------------------------------------------------
# the registry

def _ev(tiny):
    res, _ = tiny
    return V.Evidence(res.summaries, res.literal, res.predictions)


def test_registry_keys_and_numbers():
    keys = [s.key for s in V.CLAIMS]
    assert len(set(keys)) == len(keys)
    assert [V.claim_number(k) for k in keys] == list(range(1, len(keys) + 1))
    with pytest.raises(KeyError):
        V.claim_number("nope")
    for s in V.CLAIMS:
        assert s.statement and s.criterion and s.needs


def test_registry_one_entry_is_one_claim(tiny):
    """A new claim is one ClaimSpec: it reads the run through ``pick`` and is
    judged, written and counted like the others."""
    ev = _ev(tiny)
    spec = V.ClaimSpec(
        "offsets_count", "The Shifted experiment has one point per offset", "count == 7",
        ("shifted",), pick=lambda e: len(e.points("shifted")),
        judge=lambda k: [K.Check(HOLDS if k == len(C.OFFSETS) else FAILS, f"{k} points")],
        evidence=lambda k: f"{k} points", numbers=lambda k: {"points": k})
    claims = V.judge_claims(V.CLAIMS + (spec,), ev)
    assert [c.key for c in claims][-1] == "offsets_count"
    assert claims[-1].verdict == HOLDS and claims[-1].to_dict()["numbers"] == {"points": 7}
    # a run without what the claim needs leaves it out
    assert not spec.applies(V.Evidence({}, {}, {}))
    assert [c.key for c in V.judge_claims(V.CLAIMS, V.Evidence({}, ev.literal, {}))] == \
        ["literal"]


def test_registry_judges_the_claims_of_the_run(tiny):
    res, _ = tiny
    again = V.judge_claims(V.CLAIMS, _ev(tiny))
    assert [c.to_dict() for c in again] == [c.to_dict() for c in res.claims]
    for c, spec in zip(res.claims, V.CLAIMS):
        assert (c.key, c.claim, c.criterion) == (spec.key, spec.statement, spec.criterion)


def test_evidence_point():
    s = fs.summarize(np.array([[0.0, 1.0, -1.0]]))
    ev = V.Evidence({"shifted": [({"offset": 0.0}, s)]}, {}, {})
    assert ev.point("shifted", offset=0.0) is s
    with pytest.raises(KeyError, match="no shifted point"):
        ev.point("shifted", offset=1.0)
    assert ev.has(["shifted"]) and not ev.has(["shifted"], ["claims"])
    assert not ev.has(["literal"])


def test_law_point_of_dict_and_record():
    d = _law_point(E(0.590, 0.0007))
    p = K.LawPoint.of(d)
    assert p == K.LawPoint("d_k=4096", d["measured"], 0.5905, 0.005, 0.0, 0.502, 0.592)
    assert K.LawPoint.of(p) is p and p.judged
    assert K.judge_law([p]) == K.judge_law([d])
    assert not K.LawPoint.of(dict(what="x", measured=E(0.0), predicted=math.nan)).judged


def test_namespace_and_docstring():
    # the grids live in verify.constants; verify's namespace exports what __all__ says
    for name in ("N", "D_K", "LEVEL", "TARGETS"):
        assert name not in V.__all__ and not hasattr(V, name)
    assert all(hasattr(V, n) for n in V.__all__)
    assert len(V.__all__) <= 8
    assert all(hasattr(K, n) for n in K.__all__)
    # the module docstring lists every claim of the registry, numbered
    for i, spec in enumerate(V.CLAIMS, 1):
        assert f"{i}. " in V.__doc__ and f"(``{spec.key}``" in V.__doc__
    assert "seven" not in V.__doc__



@pytest.mark.parametrize("name, home", [("judge_band", K), ("Est", K), ("HOLDS", K),
                                        ("measures", K), ("judge_saturation", J),
                                        ("judge_critical", J)])
def test_names_that_left_the_namespace_still_work(name, home):
    """verify's criteria moved to verify.criteria, its judges are private: the old
    names keep working with a DeprecationWarning."""
    assert name not in V.__all__
    with pytest.warns(DeprecationWarning, match="0.4.0"):
        got = getattr(V, name)
    assert got is getattr(home, name)
    with pytest.raises(AttributeError):
        V.no_such_name


@pytest.mark.parametrize("name", J.__all__)
def test_the_judges_module_of_0_2_0_still_works(name):
    """``fastsoftmax.verify.judges`` (0.2.0's public module of the paper's
    judges) keeps its names, each with a DeprecationWarning that points at the
    caller's line."""
    import fastsoftmax.verify.judges as old
    assert sorted(old.__all__) == sorted(J.__all__)
    with pytest.warns(DeprecationWarning, match=rf"verify\.judges\.{name} .*0\.4\.0") as w:
        got = getattr(old, name)
    assert got is getattr(J, name) and w[0].filename == __file__
    with pytest.raises(AttributeError):
        old.no_such_name
