"""The exact law of the top-two gap (fastsoftmax.theory._gap) and its chi^2
mixtures: quadrature against 30-digit mpmath, closed forms at n = 2
(scipy.stats.halfnorm), an independent NumPy sample, the verbs' agreement."""
import math

import mpmath
import numpy as np
import pytest
from scipy import special, stats

from fastsoftmax.theory import Law


def mp_gap_sf(g, n, dps=20):
    """The form n int phi(x) Phi(x - g)^(n-1) dx at 20 digits (eight above
    the 1e-12 asserted): the (log-concave) integrand scaled by its peak,
    located by bisection on the derivative of its log (60 halvings of the
    bracket leave 1e-16: the scale cancels, the peak only centres the
    panels), and Gauss-Legendre panels of eight peak widths out to 40 widths
    on each side (a Gumbel-like side of the peak has fallen by e^-40 there)."""
    with mpmath.workdps(dps):
        g = mpmath.mpf(g)

        def logf(x):
            return -x * x / 2 + (n - 1) * mpmath.log(mpmath.ncdf(x - g))

        lo, hi = -g - 60, mpmath.mpf(60)
        for _ in range(60):
            mid = (lo + hi) / 2
            if -mid + (n - 1) * mpmath.npdf(mid - g) / mpmath.ncdf(mid - g) > 0:
                lo = mid
            else:
                hi = mid
        c = logf(lo)
        h = 1 / mpmath.sqrt(-mpmath.diff(logf, lo, 2))
        pts = [lo + k * h for k in range(-40, 41, 8)]
        val = mpmath.quad(lambda x: mpmath.exp(logf(x) - c), pts, method="gauss-legendre")
        return n * mpmath.exp(c) * val / mpmath.sqrt(2 * mpmath.pi)


def mp_gap_cdf(g, n, dps=30):
    """P(G_1 <= g) = n int phi(x) (Phi(x)^(n-1) - Phi(x-g)^(n-1)) dx at 30
    digits: the difference cancels about -log10(g) <= 9 of them, leaving 21
    against the 1e-11 asserted.  Gauss-Legendre panels of width 4 over
    x0 +- 16 (x0 = sqrt(2 ln n) <= 4.8): phi is below e^-100 outside."""
    with mpmath.workdps(dps):
        g = mpmath.mpf(g)
        x0 = mpmath.sqrt(2 * mpmath.log(n))

        def f(x):
            return n * mpmath.npdf(x) * (mpmath.ncdf(x) ** (n - 1) - mpmath.ncdf(x - g) ** (n - 1))

        return mpmath.quad(f, [x0 + k for k in range(-16, 17, 4)], method="gauss-legendre")


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
    # the three n in one law (a column against the row of levels): one
    # solve for all 21 quantiles, each element on its own tail
    q = np.array([1e-8, 0.01, 0.3, 0.5, 0.7, 0.99, 1 - 1e-9])
    gap = Law.gaussian(np.array([3, 64, 16384])[:, None]).gap
    g = gap.ppf(q)
    assert g.shape == (3, q.size)
    low = q <= 0.5
    for k, n in enumerate((3, 64, 16384)):
        np.testing.assert_allclose(Law.gaussian(n).gap.cdf(g[k, low]), q[low], rtol=1e-11)
        np.testing.assert_allclose(Law.gaussian(n).gap.sf(g[k, ~low]), 1 - q[~low], rtol=1e-10)
    assert Law.gaussian(64).gap.ppf(0.0) == 0.0 and Law.gaussian(64).gap.ppf(1.0) == np.inf


def test_anchor_median_gap():
    """A published anchor: median(G_1) = 0.2821 for n = 64 by quadrature."""
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


def numpy_gaps(n, rows, seed):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(0, rows, 4096):
        z = rng.standard_normal((min(4096, rows - k), n))
        top = np.partition(z, n - 2, axis=1)[:, -2:]
        out.append(top[:, 1] - top[:, 0])
    return np.concatenate(out)


# 10,000 rows: the KS distance of a wrong law (n/2 logits: 0.043 at n = 64,
# 0.027 at n = 1024; at n = 2 a scale off by sqrt(2): 0.35) is at least 1.2
# times the 0.022 at which p = 1e-4, and the quantile counts' 4-SE band
# (+-0.02 at the median) is far inside those departures
@pytest.mark.parametrize("n,rows", [(2, 10_000), (64, 10_000), (1024, 10_000)])
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


def test_anchor_numpy_median():
    """An independent anchor: a 200,000-row NumPy simulation gives 0.2820 at n = 64; the
    sample median is within its order-statistic error of the law's."""
    gaps = numpy_gaps(64, 200_000, seed=7)
    lo, hi = np.quantile(gaps, [0.5 - 4 * math.sqrt(0.25 / 200_000),
                                0.5 + 4 * math.sqrt(0.25 / 200_000)])
    assert lo < Law.gaussian(64).gap.median() < hi


def test_gap_n2_is_scipy_halfnorm():
    """n = 2 Gaussian logits of scale s: G = |x1 - x2| = |N(0, 2 s^2)|, i.e.
    scipy.stats.halfnorm(scale=sqrt(2) s), in every verb."""
    # both scales in one law (a column): each verb solves once for both
    s = np.array([0.5, 3.0])[:, None]
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
    np.testing.assert_allclose(gap.median(), ref.median(), rtol=1e-12)
    # isf keeps a tail that ppf(1 - q) would round away
    np.testing.assert_allclose(gap.isf(1e-30), ref.isf(1e-30), rtol=1e-10)
    assert gap.median().shape == gap.isf(1e-30).shape == (2, 1)


def test_gap_verbs_agree():
    # the Gaussian's: each n with one gap, both tails in one call (cdf 0.84,
    # 0.30, 0.02: ppf and isf each take both of their branches).  The dot
    # product's quantiles are solved through its chi^2 mixture: one gap in
    # each tail (cdf 0.04 and 0.8), a call each (solved together, the lower
    # tail's integrals run until the upper one converges).  There ppf(cdf(g))
    # and isf(sf(g)) solve the one equation on the one tail (the verb picks
    # the tail from q alone, as checked on the Gaussian): ppf in the lower
    # tail, isf in the upper one, so each tail of the mixture is inverted once.
    dot = Law.dot_product(64, 256, False).gap
    for gap, g, verbs in ((Law.gaussian([3, 64, 16384], 2.0).gap, np.array([3.0, 0.3, 0.01]),
                           ("ppf", "isf")),
                          (dot, np.array([0.3]), ("ppf",)), (dot, np.array([10.0]), ("isf",))):
        np.testing.assert_allclose(gap.cdf(g) + gap.sf(g), 1.0, rtol=1e-13)
        np.testing.assert_allclose(gap.logsf(g), np.log(gap.sf(g)), rtol=1e-13)
        if "ppf" in verbs:
            np.testing.assert_allclose(gap.ppf(gap.cdf(g)),
                                       np.broadcast_to(g, gap.cdf(g).shape), rtol=1e-9)
        if "isf" in verbs:
            np.testing.assert_allclose(gap.isf(gap.sf(g)),
                                       np.broadcast_to(g, gap.sf(g).shape), rtol=1e-9)
    with pytest.raises(NotImplementedError, match="median"):
        Law.gaussian(64).gap.mean()
