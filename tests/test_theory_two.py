"""The exact n <= 2 laws (fastsoftmax.theory._two): means against adaptive
quadrature, the laws against ``simulate`` within 4 binomial standard errors
and against scipy.stats.halfnorm."""
import math

import numpy as np
import pytest
from scipy import integrate, special, stats

import fastsoftmax as fs
from fastsoftmax.models import DotProduct, Gaussian
from fastsoftmax.theory import Law

from helpers import binom_se, sim


def old_style_mean(f, sd):
    """E f(D), D ~ N(0, sd^2), by adaptive quadrature over D (the form the
    tests used before the laws moved into the library)."""
    return integrate.quad(lambda d: f(d) * stats.norm.pdf(d, scale=sd), -60 * sd, 60 * sd,
                          limit=400, points=[0.0])[0]


def test_n2_mean_matches_adaptive_quadrature():
    sigma = 1.7
    sd = math.sqrt(2) * sigma
    law = Law.gaussian(2, sigma)
    pq = old_style_mean(lambda d: special.expit(d) * special.expit(-d), sd)
    assert float(law["jac_diag_max"].mean()) == pytest.approx(pq, rel=1e-12)
    assert float(law["max_prob"].mean()) == pytest.approx(
        old_style_mean(lambda d: special.expit(abs(d)), sd), rel=1e-12)
    assert float(law["jac_fro"].mean()) == pytest.approx(2 * pq, rel=1e-12)
    # a uniform label: E[1 - p_y] = 1/2, |p - e_y| = sqrt(2) (1 - p_y)
    assert float(law["ce_grad_target", "random"].mean()) == pytest.approx(0.5, rel=1e-13)
    assert float(law["ce_grad_norm", "random"].mean()) == pytest.approx(math.sqrt(0.5), rel=1e-13)


@pytest.mark.parametrize("sigma", [0.3, 2.0, 15.0])
@pytest.mark.parametrize("target", ["argmax", "random"])
def test_n2_laws_against_simulate(sigma, target):
    rows = 40_000
    thr = (0.01, 0.1, 0.3, 0.6, 0.9)
    s = sim(Gaussian(n=2, scale=sigma), rows, seed=3, thresholds=thr, target=target)
    law = Law.gaussian(2, sigma)
    checked = 0
    for name in fs.OBS_NAMES:
        st = s[name]
        assert abs(st.mean - float(law[name, target].mean())) <= 4 * st.sem, name
        for t in thr:
            p = float(law[name, target].cdf(t))
            if 0.01 < p < 0.99:
                checked += 1
                assert abs(st.fraction_below(t) - p) <= 4 * binom_se(p, rows), (name, t)
    assert checked >= 5


@pytest.mark.parametrize("d_k,scaled", [(1, False), (16, False), (64, True)])
def test_n2_dotproduct_laws_against_simulate(d_k, scaled):
    rows = 40_000
    s = sim(DotProduct(n=2, d_k=d_k, scaled=scaled), rows, seed=2, thresholds=(0.01, 0.1))
    law = Law.dot_product(2, d_k, scaled)
    for name in ("jac_diag_max", "max_prob", "entropy", "ce_loss"):
        assert abs(s[name].mean - float(law[name].mean())) <= 4 * s[name].sem, name
        p = float(law[name].cdf(0.1))
        assert abs(s[name].fraction_below(0.1) - p) <= 4 * binom_se(p, rows), name


def test_n2_median_against_simulate():
    """Medians from the sketch (1% relative resolution) and the exact law."""
    s = sim(Gaussian(n=2, scale=3.0), 40_000, seed=4)
    law = Law.gaussian(2, 3.0)
    for name in ("jac_diag_max", "max_prob", "entropy"):
        # the order-statistic band of the median, in value
        lo, hi = (law[name].ppf(0.5 + k * 4 * math.sqrt(0.25 / 40_000)) for k in (-1, 1))
        lo, hi = min(lo, hi), max(lo, hi)
        assert 0.99 * lo <= s[name].quantile(0.5) <= 1.01 * hi, name


def test_n2_observables_are_scipy_halfnorm():
    """n = 2: 1 - max_prob = expit(-G) and max_prob = expit(G), G halfnorm:
    P(1 - p1 <= t) = P(G >= ln((1-t)/t)), P(p1 <= v) = P(G <= ln(v/(1-v)))."""
    law, ref = Law.gaussian(2, 2.0), stats.halfnorm(scale=math.sqrt(2) * 2.0)
    t = np.array([1e-9, 1e-3, 0.1, 0.4])
    np.testing.assert_allclose(law["one_minus_max_prob"].cdf(t), ref.sf(np.log((1 - t) / t)),
                               rtol=1e-12)
    np.testing.assert_allclose(law["one_minus_max_prob"].sf(t), ref.cdf(np.log((1 - t) / t)),
                               rtol=1e-12)
    v = np.array([0.55, 0.9, 0.999])
    np.testing.assert_allclose(law["max_prob"].cdf(v), ref.cdf(np.log(v / (1 - v))), rtol=1e-12)
    q = np.array([0.1, 0.5, 0.9])
    np.testing.assert_allclose(law["max_prob"].ppf(q), special.expit(ref.ppf(q)), rtol=1e-10)
