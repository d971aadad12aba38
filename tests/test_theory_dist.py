"""The frozen law of one observable (fastsoftmax.theory._dist) and the verbs
every frozen law shares (fastsoftmax.theory._frozen): the verbs agree with
each other, the options and messages."""
import numpy as np
import pytest

from fastsoftmax.theory import Gap, Law, Observable, RemObservable
from fastsoftmax.theory._frozen import Frozen

VERBS = ("cdf", "sf", "logcdf", "logsf", "ppf", "isf", "median", "mean")


@pytest.mark.parametrize("cls", [Observable, Gap, RemObservable])
def test_verbs_are_written_once(cls):
    """Every frozen law has the base's verbs (one definition, one docstring)
    and supplies only its private tails and quantiles."""
    assert issubclass(cls, Frozen)
    for verb in VERBS:
        assert verb not in vars(cls), f"{cls.__name__}.{verb} written again"
        assert getattr(cls, verb) is getattr(Frozen, verb)
    assert {"_logcdf", "_logsf", "_ppf"} <= set(vars(cls))


def test_base_derives_the_verbs():
    """cdf = exp(logcdf), sf = exp(logsf), median = ppf(1/2), isf(q) =
    ppf(1 - q) unless the law solves its own upper tail, q checked first."""
    class Exp(Frozen):                      # the exponential law of rate 1
        def _logcdf(self, x):
            return np.log(-np.expm1(-np.asarray(x, dtype=float)))

        def _logsf(self, x):
            return -np.asarray(x, dtype=float)

        def _ppf(self, q):
            return -np.log1p(-q)

    d, x, q = Exp(), np.array([0.1, 1.0, 5.0]), np.array([0.1, 0.5, 0.9])
    np.testing.assert_allclose(d.cdf(x), -np.expm1(-x), rtol=1e-15)
    np.testing.assert_allclose(d.sf(x), np.exp(-x), rtol=1e-15)
    np.testing.assert_allclose(d.isf(q), -np.log(q), rtol=1e-14)
    assert float(d.median()) == pytest.approx(np.log(2.0), rel=1e-15)
    with pytest.raises(ValueError, match="^q must"):
        d.ppf(1.5)
    with pytest.raises(NotImplementedError, match="not computed"):
        d.mean()


# every kind of law (n = 2, the saturation law at both orders, a random label,
# a dot product's mixture), each at the ends of its range of thresholds: the
# dot product's quantiles are solved through its chi^2 mixture, so one point
SIBLINGS = [
    (lambda: Law.gaussian(2, 3.0), "jac_diag_max", "argmax", 1, [1e-5, 1e-2]),
    (lambda: Law.gaussian(2, 3.0), "max_prob", "argmax", 1, [0.6, 0.999]),
    (lambda: Law.gaussian(2, 3.0), "ce_loss", "random", 1, [1e-4, 1e-2]),
    (lambda: Law.gaussian(64, 25.0), "jac_diag_max", "argmax", 0, [1e-5, 1e-2]),
    (lambda: Law.gaussian(64, 25.0), "jac_fro", "argmax", 1, [1e-5, 1e-2]),
    (lambda: Law.gaussian(64, 25.0), "ce_grad_target", "random", 1, [1e-4, 1e-2]),
    (lambda: Law.dot_product(64, 1024, False), "one_minus_max_prob", "argmax", 0, [1e-5]),
]


@pytest.mark.parametrize("make,obs,target,order,t", SIBLINGS)
def test_observable_verbs_agree(make, obs, target, order, t):
    d = make().observable(obs, target, order)
    t = np.array(t)
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
