"""fastsoftmax.theory: quadrature against mpmath and closed forms, the gap law
against an independent NumPy sample, the exact n = 2 laws and the saturation
law against ``simulate`` (inside its domain within 4 binomial standard
errors; outside it, the measured departure and its direction), the REM
asymptotics, bad arguments, doctests."""
import doctest
import importlib
import math
import os
import re
import subprocess
import sys
import warnings

import mpmath
import numpy as np
import pytest
from scipy import integrate, optimize, special, stats

import fastsoftmax as fs
from helpers import subprocess_env
from fastsoftmax import theory
from fastsoftmax.models import DotProduct, Gaussian, Shifted
from fastsoftmax.theory import Law, _deprecation, _extremes, _rem, _two

THR = (1e-3, 1e-6, 1e-9)


def binom_se(p, rows):
    return math.sqrt(max(p * (1.0 - p), 1.0 / rows) / rows)


def sim(model, rows, seed=1, thresholds=THR, target="argmax"):
    return fs.simulate(model, rows, seed=seed, thresholds=thresholds, target=target,
                       dtype="float64", backend="cpu")


# ----------------------------------------------------------------------------
# quadrature against mpmath


def mp_gap_sf(g, n, dps=30):
    """The issue's form n int phi(x) Phi(x - g)^(n-1) dx at 30 digits: the
    (log-concave) integrand scaled by its peak, located by bisection on the
    derivative of its log, and breakpoints every two peak widths."""
    with mpmath.workdps(dps):
        g = mpmath.mpf(g)

        def logf(x):
            return -x * x / 2 + (n - 1) * mpmath.log(mpmath.ncdf(x - g))

        lo, hi = -g - 60, mpmath.mpf(60)
        for _ in range(120):
            mid = (lo + hi) / 2
            if -mid + (n - 1) * mpmath.npdf(mid - g) / mpmath.ncdf(mid - g) > 0:
                lo = mid
            else:
                hi = mid
        c = logf(lo)
        h = 1 / mpmath.sqrt(-mpmath.diff(logf, lo, 2))
        pts = [lo + k * h for k in range(-40, 41, 2)]
        val = mpmath.quad(lambda x: mpmath.exp(logf(x) - c), pts)
        return n * mpmath.exp(c) * val / mpmath.sqrt(2 * mpmath.pi)


def mp_gap_cdf(g, n, dps=50):
    """P(G_1 <= g) = n int phi(x) (Phi(x)^(n-1) - Phi(x-g)^(n-1)) dx at 50
    digits (the difference cancels; the digits absorb it)."""
    with mpmath.workdps(dps):
        g = mpmath.mpf(g)
        x0 = mpmath.sqrt(2 * mpmath.log(n))

        def f(x):
            return n * mpmath.npdf(x) * (mpmath.ncdf(x) ** (n - 1) - mpmath.ncdf(x - g) ** (n - 1))

        return mpmath.quad(f, [x0 + k for k in range(-30, 31, 2)])


@pytest.mark.parametrize("n", [2, 3, 64, 1024, 65536])
def test_gap_sf_matches_mpmath(n):
    g = np.array([0.05, 0.3, 1.0, 3.0, 8.0, 20.0])
    ours = Law.gaussian(n).gap.sf(g)
    ref = np.array([float(mp_gap_sf(x, n)) for x in g])
    assert ref[-1] < 1e-40   # the tails are part of the check
    np.testing.assert_allclose(ours, ref, rtol=1e-12)
    # P(G > 0) = 1, and sf + cdf = 1 in the body
    assert Law.gaussian(n).gap.sf(0.0) == 1.0
    np.testing.assert_allclose(Law.gaussian(n).gap.cdf(g[:3]) + ours[:3], 1.0, rtol=1e-14)


@pytest.mark.parametrize("n", [2, 64, 65536])
def test_gap_lower_tail_keeps_relative_accuracy(n):
    g = np.array([1e-9, 1e-4, 0.05])
    ref = np.array([float(mp_gap_cdf(x, n)) for x in g])
    np.testing.assert_allclose(Law.gaussian(n).gap.cdf(g), ref, rtol=1e-11)


def test_gap_n2_closed_form():
    """n = 2: G_1 = |z1 - z2| = |N(0, 2)|."""
    g = np.array([1e-12, 1e-3, 0.5, 2.0, 8.0, 20.0, 30.0])
    with mpmath.workdps(30):
        sf = np.array([float(mpmath.erfc(mpmath.mpf(x) / 2)) for x in g])
        cdf = np.array([float(mpmath.erf(mpmath.mpf(x) / 2)) for x in g])
    np.testing.assert_allclose(Law.gaussian(2).gap.sf(g), sf, rtol=1e-13)
    np.testing.assert_allclose(Law.gaussian(2).gap.cdf(g), cdf, rtol=1e-13)
    q = np.array([1e-10, 0.1, 0.5, 0.9, 1 - 1e-12])
    np.testing.assert_allclose(Law.gaussian(2).gap.ppf(q), 2 * special.erfinv(q), rtol=1e-11)


def test_gap_quantile_inverts_the_cdf():
    q = np.array([1e-8, 0.01, 0.3, 0.5, 0.7, 0.99, 1 - 1e-9])
    for n in (3, 64, 16384):
        g = Law.gaussian(n).gap.ppf(q)
        low = q <= 0.5
        np.testing.assert_allclose(Law.gaussian(n).gap.cdf(g[low]), q[low], rtol=1e-11)
        np.testing.assert_allclose(Law.gaussian(n).gap.sf(g[~low]), 1 - q[~low], rtol=1e-10)
    assert Law.gaussian(64).gap.ppf(0.0) == 0.0 and Law.gaussian(64).gap.ppf(1.0) == np.inf


def test_issue_anchor_median_gap():
    """The issue: median(G_1) = 0.2821 for n = 64 by quadrature."""
    assert round(float(Law.gaussian(64).gap.median()), 4) == 0.2821
    assert Law.gaussian(1).gap.median() == np.inf      # one logit: no second one


def mp_dot_sf(g, d, b, dps=30):
    """Mixture n = 2 law: P(G > g) = E_c erfc(g / (2 b sqrt c)), c ~ chi^2(d),
    integrated in w = ln c at 30 digits."""
    with mpmath.workdps(dps):
        d, g = mpmath.mpf(d), mpmath.mpf(g)
        norm = -(d / 2) * mpmath.log(2) - mpmath.loggamma(d / 2)

        def f(w):
            z = g / (2 * b * mpmath.exp(w / 2))
            return mpmath.exp(norm + d / 2 * w - mpmath.exp(w) / 2) * (
                mpmath.erfc(z) if z < 1e8 else 0)

        w0, s = mpmath.log(d), mpmath.sqrt(2 / d) + 1 / d
        ks = (-400, -100, -40, -20, -10, -5, -2, 0, 2, 5, 10, 20, 40)
        return mpmath.quad(f, [w0 + k * s for k in ks])


@pytest.mark.parametrize("d_k,scaled", [(1, False), (3, True), (64, False), (4096, False)])
def test_dotproduct_mixture_matches_mpmath(d_k, scaled):
    b = 1 / math.sqrt(d_k) if scaled else 1.0
    law = Law.dot_product(2, d_k, scaled)
    typical = math.sqrt(d_k) * b
    g = typical * np.array([0.1, 1.0, 5.0, 12.0])
    ref = np.array([float(mp_dot_sf(x, d_k, b)) for x in g])
    assert ref.min() > 1e-25
    np.testing.assert_allclose(law.gap.sf(g), ref, rtol=1e-10)


def test_dotproduct_d1_matches_product_of_normals():
    """d_k = 1 unscaled, n = 2: x1 - x2 = z (k1 - k2), G = sqrt(2)|z z'|: an
    independent form, P(G > g) = 2 int_0^inf phi(z) erfc(g / (2z)) dz."""
    with mpmath.workdps(30):
        for g in (0.1, 1.0, 5.0):
            ref = mpmath.quad(lambda z: 2 * mpmath.npdf(z) * mpmath.erfc(g / (2 * z)),
                              [0, 1e-4, 1e-3, 0.01, 0.03, 0.1, 0.3, 1, 3, 10, 40])
            assert float(Law.dot_product(2, 1, False).gap.sf(g)) == pytest.approx(
                float(ref), rel=1e-12)


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


# ----------------------------------------------------------------------------
# the gap law against an independent NumPy sample


def numpy_gaps(n, rows, seed):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(0, rows, 4096):
        z = rng.standard_normal((min(4096, rows - k), n))
        top = np.partition(z, n - 2, axis=1)[:, -2:]
        out.append(top[:, 1] - top[:, 0])
    return np.concatenate(out)


@pytest.mark.parametrize("n,rows", [(2, 40_000), (64, 40_000), (1024, 10_000)])
def test_gap_law_against_numpy_sample(n, rows):
    gaps = numpy_gaps(n, rows, seed=20240 + n)
    # 1 - sf: the KS distance needs 1e-15 absolute accuracy, not the lower
    # tail's relative one
    assert stats.kstest(gaps, lambda g: 1 - Law.gaussian(n).gap.sf(g)).pvalue > 1e-4
    # the law's quantiles: counts below them are Binomial(rows, q)
    q = np.array([0.01, 0.1, 0.5, 0.9, 0.99])
    frac = (gaps[:, None] < Law.gaussian(n).gap.ppf(q)).mean(axis=0)
    assert np.all(np.abs(frac - q) <= 4 * np.sqrt(q * (1 - q) / rows)), frac
    # power: the law of n/2 logits is rejected by the same sample
    if n > 2:
        assert stats.kstest(gaps, lambda g: 1 - Law.gaussian(n // 2).gap.sf(g)).pvalue < 1e-4


def test_issue_anchor_numpy_median():
    """The issue: a 200,000-row NumPy simulation gives 0.2820 at n = 64; the
    sample median is within its order-statistic error of the law's."""
    gaps = numpy_gaps(64, 200_000, seed=7)
    lo, hi = np.quantile(gaps, [0.5 - 4 * math.sqrt(0.25 / 200_000),
                                0.5 + 4 * math.sqrt(0.25 / 200_000)])
    assert lo < Law.gaussian(64).gap.median() < hi


# ----------------------------------------------------------------------------
# exact n = 2 laws against simulate


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


# ----------------------------------------------------------------------------
# the saturation law against simulate

# (n, sigma, rows): sigma >= 5 sigma_c, the predicted fractions well inside (0, 1)
IN_DOMAIN = [(64, 25.0, 400_000), (1024, 35.0, 40_000), (16384, 45.0, 4_000)]


@pytest.mark.parametrize("n,sigma,rows", IN_DOMAIN)
def test_saturation_law_in_its_domain(n, sigma, rows):
    s = sim(Gaussian(n=n, scale=sigma), rows, seed=5)
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
    q = np.array([0.2, 0.5, 0.7])
    t = law["jac_diag_max"].ppf(q)
    np.testing.assert_allclose(law["jac_diag_max"].cdf(t), q, atol=1e-10)
    t0 = law.observable("jac_diag_max", order=0).ppf(q)
    np.testing.assert_allclose(law.observable("jac_diag_max", order=0).cdf(t0), q, atol=1e-10)
    s = sim(Gaussian(n=n, scale=sigma), rows, seed=16)
    d = 4 * math.sqrt(0.25 / rows)
    lo, hi = law["jac_diag_max"].ppf([0.5 - d, 0.5 + d])
    assert 0.99 * lo <= s["jac_diag_max"].quantile(0.5) <= 1.01 * hi
    # n = 2, target "random": a two-branch mixture, solved numerically
    two = Law.gaussian(2, 3.0)
    tq = two["ce_loss", "random"].ppf(0.75)
    assert float(two["ce_loss", "random"].cdf(tq)) == pytest.approx(0.75)


def test_saturation_law_detects_a_wrong_n():
    """The n = 64 check has the power to see the law of 48 or 96 logits."""
    n, sigma, rows = IN_DOMAIN[0]
    mc = sim(Gaussian(n=n, scale=sigma), rows, seed=5)["jac_diag_max"].fraction_below(1e-6)
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
    """The chi^2 mixture at n = 64 (sqrt(d_k) = 32 and 64)."""
    rows = 200_000
    for d_k in (1024, 4096):
        s = sim(DotProduct(n=64, d_k=d_k, scaled=False), rows, seed=8)
        law = theory.law(DotProduct(n=64, d_k=d_k, scaled=False))
        for name in ("jac_diag_max", "jac_fro", "ce_grad_norm"):
            for t in THR:
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


# ----------------------------------------------------------------------------
# critical scales


def test_critical_scale_issue_anchor():
    """sigma*(1e-6) = ln(1/t)/median(G_1) = 49.0 at leading order (n = 64)."""
    s0 = float(theory.critical_scale(1e-6, 64, order=0))
    gam = float(_two._two_logit("jac_diag_max")[2](1e-6))
    assert s0 == pytest.approx(gam / float(Law.gaussian(64).gap.median()), rel=1e-12)
    assert round(s0, 1) == 49.0
    assert gam == pytest.approx(math.log(1e6), abs=3e-6)
    s1 = float(theory.critical_scale(1e-6, 64))
    assert s0 < s1 < 1.01 * s0   # the other logits push sigma* up a little


def test_critical_scale_against_simulate():
    rows = 200_000
    for n in (64, 1024):
        sigma = float(theory.critical_scale(1e-6, n))
        mc = sim(Gaussian(n=n, scale=sigma), rows if n == 64 else 20_000,
                 seed=12)["jac_diag_max"].fraction_below(1e-6)
        assert abs(mc - 0.5) <= 4 * binom_se(0.5, rows if n == 64 else 20_000), n
    s = theory.critical_scale([1e-3, 1e-6], [[64], [1024]], fraction=0.3)
    assert s.shape == (2, 2)
    assert float(Law.gaussian(1024, s[1, 1])["jac_diag_max"].cdf(1e-6)) == \
        pytest.approx(0.3, abs=1e-9)


def test_critical_d_k_against_simulate():
    d = float(theory.critical_d_k(1e-6, 64))
    assert d == pytest.approx(float(theory.critical_scale(1e-6, 64)) ** 2, rel=0.01)
    rows = 100_000
    mc = sim(DotProduct(n=64, d_k=round(d), scaled=False), rows,
             seed=13)["jac_diag_max"].fraction_below(1e-6)
    assert abs(mc - 0.5) <= 4 * binom_se(0.5, rows)
    with pytest.raises(ValueError, match="never saturate"):
        theory.critical_d_k(1e-6, 64, scaled=True)


# ----------------------------------------------------------------------------
# random energy model


def b_n(n):
    return optimize.brentq(lambda b: n * stats.norm.pdf(b) - b, 0.5, 40.0)


def test_rem_entropy_diffuse_phase():
    """n = 1024, sigma = 1: ln n - sigma^2/2 plus the 1/n term of the delta
    method; without it the departure is measured."""
    rows = 20_000
    st = sim(Gaussian(n=1024, scale=1.0), rows, seed=14)["entropy"]
    with_c = float(Law.gaussian(1024, 1.0).rem["entropy"].mean())
    bare = float(Law.gaussian(1024, 1.0).rem.observable("entropy", correction=False).mean())
    assert bare == pytest.approx(math.log(1024) - 0.5, rel=1e-15)
    assert abs(st.mean - with_c) <= 4 * st.sem + 3e-3
    assert st.mean - bare > 4 * st.sem


def test_rem_frozen_phase_against_simulate():
    """n = 16384, sigma = 18 (m = b_n / sigma = 0.21): the stated accuracy."""
    rows = 4_000
    s = sim(Gaussian(n=16384, scale=18.0), rows, seed=15, thresholds=(0.5,))
    h, p = s["entropy"], s["max_prob"]
    rem = Law.gaussian(16384, 18.0).rem
    assert abs(h.mean - float(rem["entropy"].mean())) <= 0.07 * h.mean + 4 * h.sem
    assert abs(p.mean - float(rem["max_prob"].mean())) <= 0.015 * p.mean + 4 * p.sem
    sf = float(rem["max_prob"].sf(0.5))
    assert abs((1 - s["max_prob"].fraction_below(0.5)) - sf) <= 0.01 + 4 * binom_se(sf, rows)


@pytest.mark.parametrize("m", [0.25, 0.5])
def test_poisson_dirichlet_formulas_against_numpy(m):
    """PD(m) weights from an independent sample: Gamma_i^(-1/m) for the
    arrival times Gamma_i of a unit Poisson process (K points, the rest of
    the sum added as its mean)."""
    rows, k = 5_000, 2_000
    rng = np.random.default_rng(99)
    x = rng.exponential(size=(rows, k)).cumsum(axis=1) ** (-1 / m)
    rest = k ** (1 - 1 / m) / (1 / m - 1)
    p = x / (x.sum(axis=1, keepdims=True) + rest)
    n = 16384
    scale = b_n(n) / m
    ent = -(p * np.log(p)).sum(axis=1)
    top = p[:, 0]
    assert abs(ent.mean() - float(Law.gaussian(n, scale).rem["entropy"].mean())) <= \
        4 * ent.std() / math.sqrt(rows) + 0.01
    assert abs(top.mean() - float(Law.gaussian(n, scale).rem["max_prob"].mean())) <= \
        4 * top.std() / math.sqrt(rows) + 1e-3
    assert abs((p ** 2).sum(axis=1).mean() - (1 - m)) <= 0.02     # E sum p^2 = 1 - m
    for v in (0.5, 0.8, 0.99):
        sf = float(Law.gaussian(n, scale).rem["max_prob"].sf(v))
        assert abs((top > v).mean() - sf) <= 4 * binom_se(sf, rows) + 1e-3, v


def test_expected_max_stated_accuracy():
    for n, err in ((64, 0.056), (1024, 0.019), (16384, 0.009)):
        exact = integrate.quad(lambda x: x * n * stats.norm.pdf(x) * stats.norm.cdf(x) ** (n - 1),
                               -12, 12, points=[0, 2, 4], limit=400)[0]
        approx = float(Law.gaussian(n).rem.expected_max())
        assert 0 < approx / exact - 1 < err, n
    assert float(Law.gaussian(16384, 3.0).rem.expected_max()) == pytest.approx(
        3 * float(Law.gaussian(16384).rem.expected_max()), rel=1e-15)


# ----------------------------------------------------------------------------
# models, broadcasting


def test_law_of_models():
    a = theory.law(Gaussian(n=64, scale=40.0, mean=3.0, temperature=2.0))
    b = theory.law(Shifted(n=64, offset=1e6, spread=20.0))
    c = Law.gaussian(64, 20.0)
    for law in (a, b):
        assert float(law["jac_fro"].cdf(1e-6)) == float(c["jac_fro"].cdf(1e-6))
    e = theory.law(DotProduct(n=64, d_k=256, scaled=False, method="explicit", temperature=4.0))
    f = Law.dot_product(64, 256, False, 4.0)
    g = 4 * float(Law.gaussian(64).gap.median())
    assert float(e.gap.sf(g)) == float(f.gap.sf(g))
    # T = 4 at d_k = 256 unscaled: scale sqrt(chi2(256)) / 4 ~ 4 (not 16, not 1)
    assert abs(float(e.gap.sf(g)) - 0.5) < 0.05


def test_broadcasting():
    law = Law.gaussian([[64], [1024]], [10.0, 50.0])
    t = np.array([1e-3, 1e-6])[:, None, None]
    out = law["jac_diag_max"].cdf(t)
    assert out.shape == (2, 2, 2)
    for i, tt in enumerate((1e-3, 1e-6)):
        for j, n in enumerate((64, 1024)):
            for k, sg in enumerate((10.0, 50.0)):
                assert out[i, j, k] == pytest.approx(
                    float(Law.gaussian(n, sg)["jac_diag_max"].cdf(tt)), rel=1e-12)
    d = Law.dot_product(64, [16, 256], scaled=[[False], [True]])
    assert d.gap.sf(1.0).shape == (2, 2)
    assert Law.gaussian([2, 3]).gap.sf(np.zeros((3, 1))).shape == (3, 2)


def test_degenerate_cases():
    assert float(Law.gaussian(1, 5.0)["jac_diag_max"].cdf(1e-9)) == 1.0
    assert float(Law.gaussian(1, 5.0)["max_prob"].mean()) == 1.0
    assert float(Law.gaussian(64, 0.0).gap.sf(0.0)) == 0.0     # all logits equal
    assert float(Law.gaussian(64, 0.0)["jac_diag_max"].cdf(1e-6)) == 0.0
    assert float(Law.gaussian(64, 0.0).gap.median()) == 0.0
    assert float(theory.critical_scale(1e-6, 1)) == 0.0


# ----------------------------------------------------------------------------
# bad arguments, packaging, doctests


@pytest.mark.parametrize("call,match", [
    (lambda: Law.gaussian(0).gap.sf(1.0), "^n must"),
    (lambda: Law.gaussian(2.5).gap.sf(1.0), "^n must"),
    (lambda: Law.gaussian(2).gap.sf(float("nan")), "^g must"),
    (lambda: Law.gaussian(64, -1.0), "^scale must"),
    (lambda: Law.dot_product(64, 0), "^d_k must"),
    (lambda: Law.dot_product(64, 16, temperature=0.0), "^temperature must"),
    (lambda: Law.dot_product(64, 16, scaled="yes"), "^scaled must"),
    (lambda: Law.gaussian(64, 1.0)["jac_diag_max"].cdf(0.0), "^t must"),
    (lambda: Law.gaussian(64, 1.0)["jac_diag_max"].cdf(1.5), "^t must"),
    (lambda: Law.gaussian(64, 1.0)["jac_diag"].cdf(1e-3), "^obs must"),
    (lambda: Law.gaussian(64, 1.0)["jac_diag_max", "sampled"].cdf(1e-3),
     "^target must"),
    (lambda: Law.gaussian(64, 1.0).observable("jac_diag_max", order=2).cdf(1e-3), "^order must"),
    (lambda: Law.gaussian(64, 1.0)["entropy"].cdf(0.5), "no saturation law"),
    (lambda: Law.gaussian(64, 1.0)["ce_grad_target", "random"].cdf(0.7), "^t must"),
    (lambda: Law.gaussian(64, 1.0)["max_prob"].mean(), "n <= 2"),
    (lambda: Law.gaussian(64, 1.0)["max_prob"].ppf(0.5), "no saturation law"),
    (lambda: Law.gaussian(64, 1.0).gap.ppf(1.5), "^q must"),
    (lambda: Law.gaussian(64, 1.0)["entropy"].bounds(1e-3), "^obs must"),
    (lambda: theory.critical_scale(1e-6, 64, fraction=1.0), "^fraction must"),
    (lambda: theory.critical_scale(1e-6, 64, obs="max_prob"), "^obs must"),
    (lambda: theory.law("gaussian"), "^model must"),
    (lambda: theory.law(object()), "^model must"),
    (lambda: Law.gaussian(64, -1.0).rem["entropy"].mean(), "^scale must"),
    (lambda: theory.stated_accuracy("gap_sf", 64, 1.0), "^what must"),
    (lambda: theory.stated_accuracy("fraction_below", 64, 1.0, order=2), "^order must"),
    (lambda: Law.gaussian(64, 1.0).rem["max_prob"].sf(0.0), "^v must"),
])
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ----------------------------------------------------------------------------
# the mixtures of the large-n laws, the stated accuracy, the solvers


def test_law_rem_methods_are_the_mixtures():
    """Gaussian laws give the formulas of fastsoftmax.theory._rem at their
    scale; dot-product laws their chi^2 mixture (checked by adaptive
    quadrature over c)."""
    n, s = np.array([64, 16384]), np.array([8.0, 18.0])
    g = Law.gaussian(n, s)
    np.testing.assert_array_equal(g.rem["entropy"].mean(), _rem._entropy(n, s))
    np.testing.assert_array_equal(g.rem["max_prob"].mean(), _rem._max_prob_mean(n, s))
    np.testing.assert_array_equal(g.rem.expected_max(), _extremes._expected_max(n, s))
    n, d_k = 1024, 64
    d = Law.dot_product(n, d_k, scaled=False)
    for method in ((lambda L: L.rem["entropy"].mean()),
                       (lambda L: L.rem["max_prob"].mean()),
                       (lambda L: L.rem.expected_max())):
        ref = integrate.quad(lambda c: stats.chi2.pdf(c, d_k)
                             * float(method(Law.gaussian(n, math.sqrt(c)))),
                             0, 400, limit=400, points=[d_k], epsabs=1e-12)[0]
        assert float(method(d)) == pytest.approx(ref, rel=2e-6), method
    np.testing.assert_array_equal(Law.dot_product(64, 4096, [False, True]).typical_scale(),
                                  [64.0, 1.0])


def test_rem_max_prob_median_closed_forms():
    """Frozen: 1 / (1 + (2 sinc m)^(-1/m)); diffuse: v0 (ln 2)^(-1/m)."""
    n = 16384
    b = float(_extremes._b_n(np.float64(n)))
    m = b / 18.0
    want = 1.0 / (1.0 + (2.0 * np.sinc(m)) ** (-1.0 / m))
    assert float(Law.gaussian(n, 18.0).rem["max_prob"].median()) == pytest.approx(want, rel=1e-12)
    m = b / 1.0
    v0 = math.exp(b - 0.5 - math.log(n))
    want = v0 * math.log(2.0) ** (-1.0 / m)
    assert float(Law.gaussian(n, 1.0).rem["max_prob"].median()) == pytest.approx(want, rel=1e-12)
    assert float(Law.gaussian(1, 3.0).rem["max_prob"].median()) == 1.0


def test_stated_accuracy_steps():
    """The stated accuracy of docs/theory.md, as the step functions it states."""
    sc = math.sqrt(2 * math.log(64))
    rel, ab = theory.stated_accuracy("fraction_below", 64, sc / np.array([0.1, 0.2, 0.4, 0.6]))
    np.testing.assert_array_equal(rel[:3], [0.005, 0.02, 0.15])
    assert np.isnan(rel[3]) and (ab == 0).all()
    rel0, _ = theory.stated_accuracy("fraction_below", 64, sc / np.array([0.1, 0.2, 0.4]),
                                     order=0)
    np.testing.assert_array_equal(rel0, [0.02, 0.10, 0.45])
    assert theory.stated_accuracy("fraction_below", 2, 0.5)[0] == 1e-9      # exact
    # the diffuse entropy: 5 c^2 with c the 1/n term, within the measured error
    rel, ab = theory.stated_accuracy("rem_entropy", [64, 256], 1.0)
    c = (math.e + 1.0) / (2.0 * np.array([64, 256]))
    np.testing.assert_allclose(ab, 5 * c ** 2)
    assert (rel == 0).all()
    assert np.isnan(theory.stated_accuracy("rem_entropy", 64, 2.0)[0])     # crossover
    assert theory.stated_accuracy("rem_entropy", 64, 6.0)[0] == 0.07         # frozen
    assert np.isnan(theory.stated_accuracy("rem_max_prob", 1024, 1.0)[0])   # diffuse: none
    assert theory.stated_accuracy("critical_scale", 64, 49.0)[0] == 0.002
    assert sorted(theory.ACCURACY) == ["critical_d_k", "critical_scale", "fraction_below",
                                       "rem_entropy", "rem_max_prob"]


def test_stated_entropy_accuracy_holds_at_its_edge():
    """At n = 64, sigma = 1 (c = 0.029) the diffuse entropy is 0.0032 off:
    inside the stated 5 c^2 = 0.0042."""
    s = sim(Gaussian(n=64, scale=1.0), 100_000, seed=8)["entropy"]
    pred = float(Law.gaussian(64, 1.0).rem["entropy"].mean())
    _, ab = theory.stated_accuracy("rem_entropy", 64, 1.0)
    assert abs(s.mean - pred) <= float(ab) + 4 * s.sem


def test_quantiles_and_critical_points_equal_plain_root_finding():
    """The bracketed solvers (order-1 quantiles from the order-0 one, the
    mixture's gap median on its upper tail, d_k* from sigma*) find the roots
    an unbracketed Brent search finds."""
    g = Law.gaussian(64, 30.0)
    t = float(g["jac_diag_max"].median())
    ref = optimize.brentq(lambda x: float(g["jac_diag_max"].cdf(math.exp(x))) - 0.5,
                          -40.0, -1.0, xtol=1e-13)
    assert t == pytest.approx(math.exp(ref), rel=1e-9)
    d = Law.dot_product(64, 1024, False)
    gm = float(d.gap.median())
    ref = optimize.brentq(lambda x: float(d.gap.sf(math.exp(x))) - 0.5, 0.0, 4.0, xtol=1e-13)
    assert gm == pytest.approx(math.exp(ref), rel=1e-10)
    assert float(d.gap.median()) == gm                       # cached: the same number
    dk = float(theory.critical_d_k(1e-6, 64))
    frac = float(Law.dot_product(64, dk, False)["jac_diag_max"].cdf(1e-6))
    assert frac == pytest.approx(0.5, abs=1e-7)


NO_SCIPY = """
import sys
sys.modules["scipy"] = None          # as if SciPy were not installed
import fastsoftmax
assert "fastsoftmax.theory" not in sys.modules
try:
    import fastsoftmax.theory
except ImportError as e:
    print("ImportError", e)
"""


def test_fastsoftmax_imports_without_scipy():
    out = subprocess.run([sys.executable, "-c", NO_SCIPY], capture_output=True, text=True,
                         env=subprocess_env())
    assert out.returncode == 0, out.stderr
    assert "fastsoftmax[theory]" in out.stdout


THEORY_MODULES = ["", "._accuracy", "._checks", "._compat", "._critical", "._deprecation",
                  "._dist", "._extremes", "._gap", "._law", "._quad", "._rem", "._saturation",
                  "._two"]


def test_doctests():
    attempted = 0
    for name in THEORY_MODULES:
        mod = importlib.import_module("fastsoftmax.theory" + name)
        res = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert res.failed == 0, name
        attempted += res.attempted
    assert attempted > 40


def test_every_module_is_listed_and_short():
    """One concern a module: each under about 800 lines, and the list above
    (the doctests' and the package docstring's) complete."""
    here = os.path.dirname(theory.__file__)
    found = sorted(f[:-3] for f in os.listdir(here) if f.endswith(".py"))
    assert found == sorted(["__init__"] + [m[1:] for m in THEORY_MODULES if m])
    for f in found:
        with open(os.path.join(here, f + ".py")) as fh:
            assert len(fh.readlines()) <= 820, f


# ----------------------------------------------------------------------------
# one spelling: the verbs agree with each other and with scipy.stats; the
# 0.2.0 spellings warn once and return the same numbers


def test_gap_n2_is_scipy_halfnorm():
    """n = 2 Gaussian logits of scale s: G = |x1 - x2| = |N(0, 2 s^2)|, i.e.
    scipy.stats.halfnorm(scale=sqrt(2) s), in every verb."""
    for s in (0.5, 3.0):
        gap, ref = Law.gaussian(2, s).gap, stats.halfnorm(scale=math.sqrt(2) * s)
        g = s * np.array([1e-6, 0.01, 0.5, 2.0, 6.0, 12.0])
        np.testing.assert_allclose(gap.cdf(g), ref.cdf(g), rtol=1e-12)
        np.testing.assert_allclose(gap.sf(g), ref.sf(g), rtol=1e-12)
        # a log near 0 has the absolute accuracy of its tail (the body's 1e-15)
        np.testing.assert_allclose(gap.logsf(g), ref.logsf(g), rtol=1e-12, atol=2e-15)
        np.testing.assert_allclose(gap.logcdf(g), ref.logcdf(g), rtol=1e-12, atol=2e-15)
        # scipy's ppf goes through (1 + q) / 2, which rounds the tails away
        # (test_gap_n2_closed_form checks those against erfinv)
        q = np.array([0.01, 0.1, 0.5, 0.9, 0.99])
        np.testing.assert_allclose(gap.ppf(q), ref.ppf(q), rtol=1e-10)
        np.testing.assert_allclose(gap.isf(q), ref.isf(q), rtol=1e-10)
        assert float(gap.median()) == pytest.approx(ref.median(), rel=1e-12)
        # isf keeps a tail that ppf(1 - q) would round away
        assert float(gap.isf(1e-30)) == pytest.approx(ref.isf(1e-30), rel=1e-10)


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


SIBLINGS = [
    (lambda: Law.gaussian(2, 3.0), "jac_diag_max", "argmax", 1),
    (lambda: Law.gaussian(2, 3.0), "max_prob", "argmax", 1),
    (lambda: Law.gaussian(2, 3.0), "ce_loss", "random", 1),
    (lambda: Law.gaussian(64, 25.0), "jac_diag_max", "argmax", 0),
    (lambda: Law.gaussian(64, 25.0), "jac_fro", "argmax", 1),
    (lambda: Law.gaussian(64, 25.0), "ce_grad_target", "random", 1),
    (lambda: Law.dot_product(64, 1024, False), "one_minus_max_prob", "argmax", 0),
]


@pytest.mark.parametrize("make,obs,target,order", SIBLINGS)
def test_observable_verbs_agree(make, obs, target, order):
    d = make().observable(obs, target, order)
    t = np.array([1e-5, 1e-3, 1e-2]) if target == "argmax" else np.array([1e-4, 1e-3, 1e-2])
    if obs == "max_prob":
        t = np.array([0.6, 0.9, 0.999])
    cdf, sf = d.cdf(t), d.sf(t)
    np.testing.assert_allclose(cdf + sf, 1.0, rtol=1e-12)
    np.testing.assert_allclose(d.logsf(t), np.log(sf), rtol=1e-12)
    np.testing.assert_allclose(d.logcdf(t), np.log(cdf), rtol=1e-12)
    np.testing.assert_allclose(d.ppf(cdf), t, rtol=1e-8)
    np.testing.assert_allclose(d.isf(sf), t, rtol=1e-8)
    # (NaN for a random label at n = 64: its law stops at 1/n of the rows)
    np.testing.assert_array_equal(d.median(), d.ppf(0.5))


def test_gap_verbs_agree():
    for gap in (Law.gaussian([3, 64, 16384], 2.0).gap, Law.dot_product(64, 256, False).gap):
        g = np.array([0.01, 0.3, 3.0])[:, None] if gap.law.n.ndim else np.array([0.01, 0.3, 3.0])
        np.testing.assert_allclose(gap.cdf(g) + gap.sf(g), 1.0, rtol=1e-13)
        np.testing.assert_allclose(gap.logsf(g), np.log(gap.sf(g)), rtol=1e-13)
        np.testing.assert_allclose(gap.ppf(gap.cdf(g)), np.broadcast_to(g, gap.cdf(g).shape),
                                   rtol=1e-9)
        np.testing.assert_allclose(gap.isf(gap.sf(g)), np.broadcast_to(g, gap.sf(g).shape),
                                   rtol=1e-9)
    with pytest.raises(NotImplementedError, match="median"):
        Law.gaussian(64).gap.mean()


def test_rem_verbs_agree():
    mp = Law.gaussian([1024, 16384], [15.0, 18.0]).rem["max_prob"]
    v = np.array([0.6, 0.9])[:, None]
    np.testing.assert_allclose(mp.cdf(v) + mp.sf(v), 1.0, rtol=1e-14)
    q = np.array([0.2, 0.5])[:, None]
    np.testing.assert_allclose(mp.sf(mp.isf(q)), np.broadcast_to(q, (2, 2)), rtol=1e-9)
    np.testing.assert_allclose(mp.ppf(q), mp.isf(1 - q))
    np.testing.assert_array_equal(mp.median(), mp.isf(0.5))
    ent = Law.gaussian(1024, 1.0).rem["entropy"]
    with pytest.raises(NotImplementedError, match="mean only"):
        ent.sf(0.5)
    with pytest.raises(ValueError, match="max_prob has none"):
        Law.gaussian(1024, 1.0).rem.observable("max_prob", correction=False)
    with pytest.raises(ValueError, match="^obs must be 'entropy' or 'max_prob'"):
        Law.gaussian(1024, 1.0).rem["jac_diag_max"]


def test_frozen_options_and_messages():
    law = Law.gaussian(64, 25.0)
    assert law["ce_loss", "random"].target == "random" and law["ce_loss"].order == 1
    assert repr(law.observable("jac_fro", order=0)) == \
        "Law.gaussian(n=64.0, scale=25.0).observable('jac_fro', target='argmax', order=0)"
    assert repr(Law.dot_product(64, [16, 256]).gap).startswith("Law.dot_product(n=64.0, d_k=")
    with pytest.raises(ValueError, match=r"law.rem\['entropy'\]"):
        law["entropy"]
    with pytest.raises(ValueError, match="^mean is exact for n <= 2"):
        law["jac_diag_max"].mean()
    assert law.gap is law.gap                      # one gap law: its quantiles are cached
    # the order is chosen when the law is frozen, and changes the numbers
    assert float(law.observable("jac_diag_max", order=0).cdf(1e-3)) > \
        float(law["jac_diag_max"].cdf(1e-3))


@pytest.fixture
def fresh_warnings(monkeypatch):
    """Each deprecated alias warns once per process: start from none warned."""
    monkeypatch.setattr(_deprecation, "_WARNED", set())


ALIASES = [
    ("gap_sf", lambda: theory.gap_sf([0.1, 1.0], 64), lambda: Law.gaussian(64).gap.sf([0.1, 1.0])),
    ("gap_cdf", lambda: theory.gap_cdf(0.1, 64), lambda: Law.gaussian(64).gap.cdf(0.1)),
    ("gap_quantile", lambda: theory.gap_quantile(0.3, 64), lambda: Law.gaussian(64).gap.ppf(0.3)),
    ("gap_median", lambda: theory.gap_median([2, 64]),
     lambda: Law.gaussian([2, 64]).gap.median()),
    ("rem_entropy", lambda: theory.rem_entropy(1024, 1.0, correction=False),
     lambda: Law.gaussian(1024, 1.0).rem.observable("entropy", correction=False).mean()),
    ("rem_max_prob", lambda: theory.rem_max_prob(1024, 15.0),
     lambda: Law.gaussian(1024, 15.0).rem["max_prob"].mean()),
    ("rem_max_prob_sf", lambda: theory.rem_max_prob_sf(0.5, 16384, 18.0),
     lambda: Law.gaussian(16384, 18.0).rem["max_prob"].sf(0.5)),
    ("expected_max", lambda: theory.expected_max(64, 2.0),
     lambda: Law.gaussian(64, 2.0).rem.expected_max()),
    ("Law.gap_sf", lambda: Law.gaussian(64, 3.0).gap_sf(1.0),
     lambda: Law.gaussian(64, 3.0).gap.sf(1.0)),
    ("Law.gap_cdf", lambda: Law.gaussian(64, 3.0).gap_cdf(1.0),
     lambda: Law.gaussian(64, 3.0).gap.cdf(1.0)),
    ("Law.gap_quantile", lambda: Law.gaussian(64, 3.0).gap_quantile(0.2),
     lambda: Law.gaussian(64, 3.0).gap.ppf(0.2)),
    ("Law.gap_median", lambda: Law.gaussian(64, 3.0).gap_median(),
     lambda: Law.gaussian(64, 3.0).gap.median()),
    ("Law.fraction_below", lambda: Law.gaussian(64, 25.0).fraction_below(
        "ce_loss", 1e-3, "random", order=0),
     lambda: Law.gaussian(64, 25.0).observable("ce_loss", "random", 0).cdf(1e-3)),
    ("Law.fraction_bounds", lambda: Law.gaussian(64, 25.0).fraction_bounds("jac_fro", 1e-3),
     lambda: Law.gaussian(64, 25.0)["jac_fro"].bounds(1e-3)),
    ("Law.mean", lambda: Law.gaussian(2, 1.0).mean("ce_loss", "random"),
     lambda: Law.gaussian(2, 1.0)["ce_loss", "random"].mean()),
    ("Law.quantile", lambda: Law.gaussian(64, 25.0).quantile("jac_diag_max", 0.3, order=0),
     lambda: Law.gaussian(64, 25.0).observable("jac_diag_max", order=0).ppf(0.3)),
    ("Law.median", lambda: Law.gaussian(2, 3.0).median("entropy"),
     lambda: Law.gaussian(2, 3.0)["entropy"].median()),
    ("Law.rem_entropy", lambda: Law.gaussian(1024, 1.0).rem_entropy(),
     lambda: Law.gaussian(1024, 1.0).rem["entropy"].mean()),
    ("Law.rem_max_prob", lambda: Law.gaussian(1024, 15.0).rem_max_prob(),
     lambda: Law.gaussian(1024, 15.0).rem["max_prob"].mean()),
    ("Law.rem_max_prob_sf", lambda: Law.gaussian(1024, 15.0).rem_max_prob_sf(0.7),
     lambda: Law.gaussian(1024, 15.0).rem["max_prob"].sf(0.7)),
    ("Law.rem_max_prob_median", lambda: Law.gaussian(1024, 15.0).rem_max_prob_median(),
     lambda: Law.gaussian(1024, 15.0).rem["max_prob"].median()),
    ("Law.expected_max", lambda: Law.gaussian(1024, 15.0).expected_max(),
     lambda: Law.gaussian(1024, 15.0).rem.expected_max()),
    ("Law.stated_accuracy", lambda: Law.gaussian(64, 12.0).stated_accuracy("fraction_below", 0),
     lambda: Law.gaussian(64, 12.0).observable("jac_diag_max", order=0).stated_accuracy()),
]


@pytest.mark.parametrize("old,call,new", ALIASES, ids=[a[0] for a in ALIASES])
def test_deprecated_alias_warns_once_and_equals_the_new_spelling(fresh_warnings, old, call,
                                                                 new):
    with pytest.warns(DeprecationWarning, match=rf"{re.escape(old)} is deprecated.*use "):
        got = call()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = call()                  # once: no second warning
    np.testing.assert_array_equal(got, new())
    np.testing.assert_array_equal(again, got)


def test_deprecated_aliases_keep_their_checks(fresh_warnings):
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="^scale must"):
        theory.rem_entropy(64, -1.0)
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="^n must"):
        theory.gap_sf(1.0, 0)
    # released names stay importable, outside __all__
    for name in ("gap_sf", "gap_cdf", "gap_quantile", "gap_median", "rem_entropy",
                 "rem_max_prob", "rem_max_prob_sf", "expected_max"):
        assert callable(getattr(theory, name)) and name not in theory.__all__
