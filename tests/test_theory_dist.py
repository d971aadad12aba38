"""The frozen law of one observable (fastsoftmax.theory._dist) and the verbs
every frozen law shares (fastsoftmax.theory._frozen): the verbs agree with
each other, the options and messages."""
import numpy as np
import pytest

from fastsoftmax.theory import Law


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
