"""The Law of a model (fastsoftmax.theory._law): models, broadcasting,
degenerate cases, and every entry point's argument checks."""
import numpy as np
import pytest

from fastsoftmax import theory
from fastsoftmax.models import DotProduct, Gaussian, Shifted
from fastsoftmax.theory import Law


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
