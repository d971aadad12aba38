"""Every claim of verify can fail and can stay undecided: the session's small run
(2,000 rows per point) judged as it is, then with its evidence doctored."""
import copy

import pytest

from fastsoftmax import verify as V
from fastsoftmax.verify import constants as C

HOLDS, FAILS, INCONCLUSIVE = "holds", "fails", "inconclusive"

# What 2,000 rows per point resolve.  The large effects (saturation, the
# cross-entropy targets, the crossings) hold; every claim that states an
# accuracy a test cannot afford (the laws' 0.5%, a fraction < 1e-3 of zero
# counts, the offsets' equivalence margin) is undecided, never HOLDS.
EXPECTED = {
    "paper": HOLDS, "fix": INCONCLUSIVE, "literal": HOLDS, "offset": INCONCLUSIVE,
    "ce_right": HOLDS, "ce_wrong": HOLDS, "scale": HOLDS, "law_dk": INCONCLUSIVE,
    "law_scale": INCONCLUSIVE, "context_saturation": INCONCLUSIVE,
    "context_rem": INCONCLUSIVE,
}


def _judge(summaries, literal, predictions):
    ev = V.Evidence(summaries, literal, predictions)
    return {c.key: c for c in V.judge_claims(V.CLAIMS, ev)}


def _parts(res):
    return (dict(res.summaries), copy.deepcopy(res.literal), copy.deepcopy(res.predictions))


def test_small_run_verdicts(verify_result):
    assert verify_result.verdicts == EXPECTED
    for c in verify_result.claims:
        if c.verdict == INCONCLUSIVE:
            # says why and how many rows would settle it
            need = c.to_dict()["rows_needed"]
            assert need is None or need > verify_result.meta["samples"], c.key
            assert any("needs about" in ch.text or "no row count" in ch.text
                       for ch in c.checks if ch.verdict == INCONCLUSIVE), c.key


def test_small_run_report_says_what_would_settle_it(verify_result):
    report = verify_result.report()
    crit = report[report.index("Criteria"):]
    assert "rows per point" in crit and "--samples" in crit


def _swap_scaled(pairs):
    return [(dict(p, scaled=not p["scaled"]), s) for p, s in pairs]


def test_scaled_and_unscaled_swapped(verify_result):
    s, lit, pred = _parts(verify_result)
    s["dotproduct"] = _swap_scaled(s["dotproduct"])
    got = _judge(s, lit, pred)
    assert got["paper"].verdict == FAILS and got["fix"].verdict == FAILS
    assert got["ce_right"].verdict == FAILS


def test_targets_swapped(verify_result):
    s, lit, pred = _parts(verify_result)
    swap = {"argmax": "random", "random": "argmax", "sampled": "sampled"}
    s["dotproduct"] = [(dict(p, target=swap[p["target"]]), x) for p, x in s["dotproduct"]]
    got = _judge(s, lit, pred)
    assert got["ce_right"].verdict == FAILS and got["ce_wrong"].verdict == FAILS


def test_literal_doctored(verify_result):
    s, lit, pred = _parts(verify_result)
    lit["shifted"]["jac_diag_max"] *= 1 + 1e-9
    assert _judge(s, lit, pred)["literal"].verdict == FAILS


def test_an_offset_that_changes_the_statistics(verify_result):
    s, lit, pred = _parts(verify_result)
    # the largest offset's point replaced by Gaussian logits of scale 4
    g = [x for p, x in s["gaussian"] if p["scale"] == 4.0][0]
    s["shifted"] = s["shifted"][:-1] + [(s["shifted"][-1][0], g)]
    assert _judge(s, lit, pred)["offset"].verdict == FAILS


def test_a_sweep_that_never_crosses(verify_result):
    s, lit, pred = _parts(verify_result)
    first = s["gaussian"][0][1]
    s["gaussian"] = [(p, first) for p, _ in s["gaussian"]]
    assert _judge(s, lit, pred)["scale"].verdict == FAILS


@pytest.mark.parametrize("d_k", [1024, 4096])
def test_a_law_moved_outside_its_band(verify_result, d_k):
    s, lit, pred = _parts(verify_result)
    q = pred["claims"]["dk"][d_k]
    q["predicted"] = q["predicted"] - 0.2          # 0.2 away: beyond 4 SE of 2,000 rows
    assert _judge(s, lit, pred)["law_dk"].verdict == FAILS


def test_the_critical_point_moved(verify_result):
    s, lit, pred = _parts(verify_result)
    pred["claims"]["at_sigma_star"]["predicted"] = 0.25
    assert _judge(s, lit, pred)["law_scale"].verdict == FAILS


def test_the_context_laws_moved(verify_result):
    s, lit, pred = _parts(verify_result)
    for k, q in pred["context"].items():
        if k == "seconds":
            continue
        q["entropy"]["predicted"] += 1.0
        if q["below"]["predicted"] == q["below"]["predicted"]:        # judged points
            q["below"]["predicted"] = min(1.0, q["below"]["predicted"] + 0.3)
    got = _judge(s, lit, pred)
    assert got["context_rem"].verdict == FAILS
    assert got["context_saturation"].verdict == FAILS


def test_the_context_axis_swapped(verify_result):
    s, lit, pred = _parts(verify_result)
    s["context"] = _swap_scaled(s["context"])
    assert _judge(s, lit, pred)["context_saturation"].verdict == FAILS


def test_each_claim_has_a_doctored_failure():
    """The tests above make every claim of the registry FAIL."""
    failed = {"paper", "fix", "ce_right", "ce_wrong", "literal", "offset", "scale", "law_dk",
              "law_scale", "context_rem", "context_saturation"}
    assert failed == {s.key for s in V.CLAIMS}
    assert set(EXPECTED) == failed and C.Z == 4.0
