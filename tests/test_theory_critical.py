"""The critical scales sigma* and d_k* (fastsoftmax.theory._critical): the
anchor value, ``simulate`` at the solved points, plain root finding."""
import functools
import math

import pytest
from scipy import optimize

from fastsoftmax import theory
from fastsoftmax.models import DotProduct, Gaussian
from fastsoftmax.theory import Law, _two

from helpers import binom_se, sim


# sigma* and d_k* at (1e-6, 64), solved once per module: several checks
# below read the same root (d_k* alone solves a chi^2 mixture many times)
@functools.lru_cache(maxsize=None)
def sigma_star(n):
    return float(theory.critical_scale(1e-6, n))


@functools.lru_cache(maxsize=None)
def d_k_star():
    return float(theory.critical_d_k(1e-6, 64))


def test_critical_scale_issue_anchor():
    """sigma*(1e-6) = ln(1/t)/median(G_1) = 49.0 at leading order (n = 64)."""
    s0 = float(theory.critical_scale(1e-6, 64, order=0))
    gam = float(_two._two_logit("jac_diag_max")[2](1e-6))
    assert s0 == pytest.approx(gam / float(Law.gaussian(64).gap.median()), rel=1e-12)
    assert round(s0, 1) == 49.0
    assert gam == pytest.approx(math.log(1e6), abs=3e-6)
    s1 = sigma_star(64)
    assert s0 < s1 < 1.01 * s0   # the other logits push sigma* up a little


def test_critical_scale_against_simulate():
    rows = 200_000
    for n in (64, 1024):
        sigma = sigma_star(n)
        mc = sim(Gaussian(n=n, scale=sigma), rows if n == 64 else 20_000,
                 seed=12)["jac_diag_max"].fraction_below(1e-6)
        assert abs(mc - 0.5) <= 4 * binom_se(0.5, rows if n == 64 else 20_000), n
    s = theory.critical_scale([1e-3, 1e-6], [[64], [1024]], fraction=0.3)
    assert s.shape == (2, 2)
    assert float(Law.gaussian(1024, s[1, 1])["jac_diag_max"].cdf(1e-6)) == \
        pytest.approx(0.3, abs=1e-9)


def test_critical_d_k_against_simulate():
    d = d_k_star()
    assert d == pytest.approx(sigma_star(64) ** 2, rel=0.01)
    rows = 100_000
    mc = sim(DotProduct(n=64, d_k=round(d), scaled=False), rows,
             seed=13)["jac_diag_max"].fraction_below(1e-6)
    assert abs(mc - 0.5) <= 4 * binom_se(0.5, rows)
    with pytest.raises(ValueError, match="never saturate"):
        theory.critical_d_k(1e-6, 64, scaled=True)


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
    dk = d_k_star()
    frac = float(Law.dot_product(64, dk, False)["jac_diag_max"].cdf(1e-6))
    assert frac == pytest.approx(0.5, abs=1e-7)
