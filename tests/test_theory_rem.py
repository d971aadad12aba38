"""The random energy model (fastsoftmax.theory._rem, ._extremes): its
phases against ``simulate``, the Poisson-Dirichlet formulas against NumPy,
the mixtures, the verbs' agreement."""
import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from fastsoftmax.models import Gaussian
from fastsoftmax.theory import Law, _extremes, _rem

from helpers import binom_se, sim


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
