"""The saturation law (fastsoftmax.theory._saturation): the order-1 integral
against nested adaptive quadrature, and the law against ``simulate`` (inside
its domain within 4 binomial standard errors; outside it, the measured
departure and its direction)."""
import math

import numpy as np
import pytest
from scipy import integrate, stats

from fastsoftmax import theory
from fastsoftmax.models import DotProduct, Gaussian
from fastsoftmax.theory import Law, _two

from helpers import binom_se, sim, THR


_SIMS = {}


def shared_sim(model, rows, seed):
    """``sim(model, rows, seed)``, drawn once per module: the in-domain check
    and its power check read the same rows."""
    key = (repr(model), rows, seed)
    if key not in _SIMS:
        _SIMS[key] = sim(model, rows, seed=seed)
    return _SIMS[key]


def test_order1_law_matches_nested_quadrature():
    """The order-1 integral (module docstring) by scipy's adaptive quad."""
    n, sigma, t = 64, 12.0, 1e-3
    gam = float(_two._two_logit("jac_diag_max")[2](t))

    def lam(y):
        inner = integrate.quad(lambda u: math.log1p(math.exp(-sigma * u)) * stats.norm.pdf(y - u),
                               0, np.inf, points=None, limit=200)[0]
        return (n - 2) * inner / stats.norm.cdf(y)

    def f(y):
        return (n * (n - 1) * stats.norm.pdf(y) * stats.norm.cdf(y) ** (n - 2)
                * stats.norm.sf(y + (gam + lam(y)) / sigma))

    ref = integrate.quad(f, -6, 6, points=[0, 1, 2, 3], limit=200, epsrel=1e-10)[0]
    ours = float(Law.gaussian(n, sigma)["jac_diag_max"].cdf(t))
    assert ours == pytest.approx(ref, rel=1e-8)


# (n, sigma, rows): sigma >= 5 sigma_c, the predicted fractions well inside (0, 1)
IN_DOMAIN = [(64, 25.0, 400_000), (1024, 35.0, 40_000), (16384, 45.0, 4_000)]


@pytest.mark.parametrize("n,sigma,rows", IN_DOMAIN)
def test_saturation_law_in_its_domain(n, sigma, rows):
    s = shared_sim(Gaussian(n=n, scale=sigma), rows, seed=5)
    law = Law.gaussian(n, sigma)
    assert theory.freezing_scale(n) / sigma <= 0.125
    for name in theory.SATURATING:
        for t in THR:
            p = float(law[name].cdf(t))
            assert 0.05 < p < 0.95
            mc = s[name].fraction_below(t)
            assert abs(mc - p) <= 4 * binom_se(p, rows), (name, t, mc, p)
            lo, hi = law[name].bounds(t)
            assert lo - 4 * binom_se(p, rows) <= mc <= hi + 4 * binom_se(p, rows)


def test_saturation_quantiles():
    """Order-1 quantiles invert the law, and match the sketch's median."""
    n, sigma, rows = 64, 49.0, 200_000
    law = Law.gaussian(n, sigma)
    # the median's order-statistic band (in level) solved with the other
    # levels: one call, one vectorised solve
    d = 4 * math.sqrt(0.25 / rows)
    q = np.array([0.2, 0.5, 0.7, 0.5 - d, 0.5 + d])
    t = law["jac_diag_max"].ppf(q)
    np.testing.assert_allclose(law["jac_diag_max"].cdf(t), q, atol=1e-10)
    t0 = law.observable("jac_diag_max", order=0).ppf(q[:3])
    np.testing.assert_allclose(law.observable("jac_diag_max", order=0).cdf(t0), q[:3], atol=1e-10)
    s = sim(Gaussian(n=n, scale=sigma), rows, seed=16)
    lo, hi = t[3:]
    assert 0.99 * lo <= s["jac_diag_max"].quantile(0.5) <= 1.01 * hi
    # n = 2, target "random": a two-branch mixture, solved numerically
    two = Law.gaussian(2, 3.0)
    tq = two["ce_loss", "random"].ppf(0.75)
    assert float(two["ce_loss", "random"].cdf(tq)) == pytest.approx(0.75)


def test_saturation_law_detects_a_wrong_n():
    """The n = 64 check has the power to see the law of 48 or 96 logits."""
    n, sigma, rows = IN_DOMAIN[0]
    mc = shared_sim(Gaussian(n=n, scale=sigma), rows, seed=5)["jac_diag_max"].fraction_below(1e-6)
    for wrong in (48, 96):
        p = float(Law.gaussian(wrong, sigma)["jac_diag_max"].cdf(1e-6))
        assert abs(mc - p) > 8 * binom_se(p, rows), wrong


def test_saturation_law_random_target():
    """A uniform label is the argmax with probability 1/n: 1/n of the law."""
    n, sigma, rows = 64, 25.0, 400_000
    s = sim(Gaussian(n=n, scale=sigma), rows, seed=6, target="random")
    law = Law.gaussian(n, sigma)
    for name in ("ce_grad_target", "ce_grad_norm", "ce_loss"):
        p = float(law[name, "random"].cdf(1e-3))
        assert p == pytest.approx(float(law[name].cdf(1e-3)) / n, rel=1e-12)
        assert abs(s[name].fraction_below(1e-3) - p) <= 4 * binom_se(p, rows), name


def test_saturation_law_dotproduct_unscaled():
    """The chi^2 mixture at n = 64 (sqrt(d_k) = 32 and 64).  Each observable
    at one threshold, the three thresholds spread over the three: the
    mixture is one code path for every (observable, threshold), each of
    which test_saturation_law_in_its_domain checks on the Gaussian law."""
    rows = 200_000
    for d_k in (1024, 4096):
        s = sim(DotProduct(n=64, d_k=d_k, scaled=False), rows, seed=8)
        law = theory.law(DotProduct(n=64, d_k=d_k, scaled=False))
        for name, t in zip(("jac_diag_max", "jac_fro", "ce_grad_norm"), THR):
            p = float(law[name].cdf(t))
            assert 0.05 < p < 0.95
            assert abs(s[name].fraction_below(t) - p) <= 4 * binom_se(p, rows), (d_k, name, t)


def test_saturation_law_dotproduct_scaled_never_saturates():
    s = sim(DotProduct(n=64, d_k=4096, scaled=True), 20_000, seed=9)
    p = float(Law.dot_product(64, 4096, True)["jac_diag_max"].cdf(1e-3))
    assert p < 1e-12 and s["jac_diag_max"].fraction_below(1e-3) == 0.0


@pytest.mark.parametrize("n,sigma,rows", [(64, 12.0, 400_000), (1024, 16.0, 40_000)])
def test_two_logit_law_departure_near_the_domain_edge(n, sigma, rows):
    """m = sigma_c / sigma ~ 0.24: order 1 holds; order 0 (the two-logit law)
    measurably overestimates, by at most 1 - sin(pi m)/(pi m) relatively,
    as the docstring states."""
    s = sim(Gaussian(n=n, scale=sigma), rows, seed=10)
    law = Law.gaussian(n, sigma)
    m = float(theory.freezing_scale(n)) / sigma
    bound = 1 - np.sinc(m)
    for name in ("jac_diag_max", "one_minus_max_prob"):
        mc = s[name].fraction_below(1e-3)
        p0 = float(law.observable(name, order=0).cdf(1e-3))
        p1 = float(law[name].cdf(1e-3))
        se = binom_se(mc, rows)
        assert p0 - mc > 4 * se, "the departure of order 0 is measured"
        assert p0 - mc <= bound * p0 + 4 * se
        assert abs(p1 - mc) <= 0.02 * mc + 4 * se


@pytest.mark.parametrize("n,sigma,rows", [(64, 6.0, 400_000), (1024, 8.0, 40_000)])
def test_saturation_law_outside_its_domain(n, sigma, rows):
    """sigma ~ 2 sigma_c: the other logits are not a small correction any
    more.  The measured fraction lies between order 1 (10-20% low) and
    order 0 (30-45% high), strictly, and inside the exact bounds."""
    s = sim(Gaussian(n=n, scale=sigma), rows, seed=11)
    law = Law.gaussian(n, sigma)
    mc = s["jac_diag_max"].fraction_below(1e-3)
    se = binom_se(mc, rows)
    p0 = float(law.observable("jac_diag_max", order=0).cdf(1e-3))
    p1 = float(law["jac_diag_max"].cdf(1e-3))
    lo, hi = law["jac_diag_max"].bounds(1e-3)
    assert p1 < mc - 4 * se and mc + 4 * se < p0
    assert 0.05 < (mc - p1) / mc < 0.25
    assert 0.2 < (p0 - mc) / p0 < 1 - np.sinc(float(theory.freezing_scale(n)) / sigma)
    assert lo <= mc + 4 * se and mc - 4 * se <= hi
