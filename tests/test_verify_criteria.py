"""verify's verdict rule on numbers: HOLDS only when the whole Z-SE interval of a
measurement lies inside the band a claim states, FAILS when it lies wholly outside,
INCONCLUSIVE otherwise, with the rows that would settle it."""
import math

import pytest

from fastsoftmax.verify import _judges as J
from fastsoftmax.verify import criteria as K
from fastsoftmax.verify.criteria import FAILS, HOLDS, INCONCLUSIVE
from fastsoftmax.verify.stats import Est, est_fraction


CROSS = dict(x=49.3, x_lo=45.3, x_hi=64.0, significant=True)


def E(value, se=0.0, rows=None):
    return Est.normal(value, se, rows=rows) if rows else Est.normal(value, se)


# --------------------------------------------------------------------------
# a band: the whole interval inside, wholly outside, or neither

def test_band_needs_the_whole_interval_inside():
    # 27% off a law stated to 0.5%: 40 rows cannot say so, nor say it holds
    assert K.judge_prediction(est_fraction(0.75, 40), 0.5905, 0.005).verdict == INCONCLUSIVE
    # 6% off the law's 1/2 at sigma*: 2,000 rows do not resolve 0.5%
    got = K.all_of(J.judge_critical(est_fraction(0.53, 2000), 0.5, 0.005, 49.23, CROSS))
    assert got == INCONCLUSIVE
    # the interval overlaps the band's edge: not held
    assert K.judge_prediction(E(0.590, 0.0007), 0.5905, 0.005).verdict == INCONCLUSIVE
    # inside: 4 x 0.0005 < 0.00295 on both sides
    assert K.judge_prediction(E(0.5905, 0.0005), 0.5905, 0.005).verdict == HOLDS
    # wholly outside
    assert K.judge_prediction(E(0.62, 0.0007), 0.5905, 0.005).verdict == FAILS


def test_exact_bounds_follow_the_same_rule():
    assert K.judge_band(E(0.55, 0.001), 0.502, 0.592).verdict == HOLDS
    assert K.judge_band(E(0.59, 0.0007), 0.502, 0.592).verdict == INCONCLUSIVE
    assert K.judge_band(E(0.70, 0.0007), 0.502, 0.592).verdict == FAILS


def test_a_zero_count_is_not_exact():
    # no row below a level in 10^6 does not show a fraction below 10^-9
    zero = est_fraction(0.0, 10**6)
    assert zero.hi > 0
    c = K.judge_band(zero, 0.0, 1e-9)
    assert c.verdict == INCONCLUSIVE
    assert c.rows_needed > 10**10                    # about z^2 / (3/4 x 1e-9)
    assert K.below(zero, 1e-3).verdict == HOLDS
    assert K.below(est_fraction(0.0, 2000), 1e-3).verdict == INCONCLUSIVE


@pytest.mark.parametrize("check", [
    lambda: K.below(E(1e-6, 1e-7, rows=1000), 1.1e-6),
    lambda: K.above(E(0.91, 0.01, rows=1000), 0.9),
    lambda: K.ratio_below(E(4e-5, 2e-6, rows=1000), E(0.05, 0.001, rows=1000), 1e-3),
    lambda: K.drop(E(-1.2, 0.1, rows=1000), E(-4.4, 0.1, rows=1000), 3.0),
    lambda: K.within_factor(E(0.105, 0.002, rows=1000), E(0.054, 0.001, rows=1000), 2.0),
    lambda: K.close(E(-1.0, 0.02, rows=1000), E(-1.25, 0.001, rows=1000), 0.3),
    lambda: K.near(E(1.47, 0.01, rows=1000), math.sqrt(2), 0.05),
    lambda: K.same(E(3.20, 0.01, rows=1000), E(3.21, 0.01, rows=1000), 0.05),
    lambda: K.judge_prediction(est_fraction(0.3337, 500_000), 0.33374, 0.005),
])
def test_every_inconclusive_says_how_many_rows_settle_it(check):
    c = check()
    assert c.verdict == INCONCLUSIVE, c
    assert c.rows_needed is not None and c.rows_needed > 1000, c
    assert "needs about" in c.text and "rows per point" in c.text, c.text


def test_rows_needed_at_d_k_1024():
    """4 SE at most 3/4 of the band's half-width: about 2.3 million rows at the
    law's 0.3337 +- 0.5% (d_k = 1024)."""
    c = K.judge_prediction(est_fraction(0.33374, 500_000), 0.33374, 0.005)
    p, h = 0.33374, 0.75 * 0.005 * 0.33374
    want = K.Z ** 2 * p * (1 - p) / h ** 2
    assert c.rows_needed == pytest.approx(want, rel=0.02)
    # that many rows settle it: the same value there holds
    assert K.judge_prediction(est_fraction(0.33374, c.rows_needed), 0.33374, 0.005).verdict \
        == HOLDS


def test_equivalence_has_a_margin():
    """Claim 4's "same": the interval of the difference, +- Z (SE_a + SE_b), inside
    +- margin; failing to reject a difference is not equivalence."""
    assert K.same(E(3.2, 0.001), E(3.2, 0.001), 0.05).verdict == HOLDS
    # no power: 4 x 0.2 >> 0.05, whatever the point estimates
    c = K.same(E(3.2, 0.1, rows=100), E(3.2, 0.1, rows=100), 0.05)
    assert c.verdict == INCONCLUSIVE and c.rows_needed > 100
    assert K.same(E(3.2, 0.001), E(3.5, 0.001), 0.05).verdict == FAILS
    assert "0.05" in c.text


def test_one_sided_and_difference_criteria_three_ways():
    assert K.below(E(1e-8, 1e-9), 1e-6).verdict == HOLDS
    assert K.below(E(1e-3, 1e-5), 1e-6).verdict == FAILS
    assert K.above(E(0.5, 0.01), 0.9).verdict == FAILS
    assert K.drop(E(-1.2, 0.01), E(-10.5, 0.05), 3.0).verdict == HOLDS
    assert K.drop(E(-1.2, 0.01), E(-1.3, 0.01), 3.0).verdict == FAILS
    assert K.within_factor(E(1e-8, 1e-9), E(0.054, 0.001), 2.0).verdict == FAILS
    assert K.close(E(-10.5, 0.01), E(-1.25, 0.001), 0.3).verdict == FAILS
    assert K.near(E(0.5, 0.001), math.sqrt(2), 0.05).verdict == FAILS
    assert K.ratio_below(E(0.04, 0.001), E(0.05, 0.001), 1e-3).verdict == FAILS


def test_the_rule_is_stated_from_its_parameters():
    text = K.describe()
    assert f"{K.Z:g} standard errors" in text and "INCONCLUSIVE" in text
    assert f"{K.MARGIN:g}" in text
    assert "3 standard errors" in K.describe(z=3.0)


def test_checks_carry_rows_needed_into_json():
    from fastsoftmax.verify import Claim
    c = K.judge_prediction(est_fraction(0.33374, 500_000), 0.33374, 0.005)
    d = Claim("k", "claim", "evidence", "criterion", [c], {}).to_dict()
    assert d["verdict"] == INCONCLUSIVE
    assert d["rows_needed"] == c.rows_needed == d["checks"][0]["rows_needed"]
