r"""Laws of softmax saturation: what ``simulate`` should measure, by quadrature.

For n i.i.d. N(0, sigma^2) logits with order statistics m1 >= m2 >= ...,
every statistic of the softmax is a function of the *gaps*.  This package
gives, for the models of :mod:`fastsoftmax.models`, each law as a frozen
distribution with scipy.stats' verbs (``cdf``, ``sf``, ``logcdf``,
``logsf``, ``ppf``, ``isf``, ``median``, ``mean`` where exact):

* ``law(model)`` (or ``Law.gaussian(n, scale)``, ``Law.dot_product(n, d_k,
  scaled, temperature)``): the :class:`Law` of the model's rows, frozen,
  vectorised over its parameters by NumPy broadcasting;
* ``law(model)[obs]``, ``law(model)[obs, target]``,
  ``law(model).observable(obs, target, order)``: the :class:`Observable` law
  of one observable, exact for n <= 2 and, for n > 2, the saturation law of
  the observables in ``SATURATING`` (order 0: the two-logit law; order 1,
  the default: with the first-order correction of the other logits), with
  exact bounds (``bounds``) and the accuracy it states
  (``stated_accuracy``), e.g. ``law(model)[name].cdf(t)``;
* ``law(model).gap``: the exact law of the top-two gap G = m1 - m2
  (:class:`Gap`), for any n;
* ``law(model).rem``: the random energy model at large n
  (:class:`RandomEnergyModel`): ``rem[name].mean()`` of the entropy
  and of the largest probability, ``.sf(v)``, ``.median()``, and
  ``rem.expected_max()``;
* :func:`critical_scale`, :func:`critical_d_k`: the scale sigma*(t) and,
  for unscaled dot products, d_k*(t) at which the median of an observable
  crosses t; :func:`freezing_scale`: sigma_c = sqrt(2 ln n);
* :func:`stated_accuracy` and ``ACCURACY``: the accuracy each law states,
  as measured against ``simulate`` (docs/theory.md).

Models: ``Gaussian(n, scale, mean, temperature)`` and ``Shifted(n, offset,
spread, temperature)`` are Gaussian laws of logit scale s = scale / T
(softmax is shift invariant, so ``mean`` and ``offset`` drop out);
``DotProduct(n, d_k, scaled, temperature)`` is, given the query, Gaussian of
scale s = b sqrt(c) / T with c = ``|q|^2`` ~ chi^2(d_k) and b = 1/sqrt(d_k)
if scaled else 1, so its laws are one-dimensional chi^2 mixtures of the
Gaussian ones (the kernels' ``method="exact"`` uses the same fact).

The modules, one concern each: ``_checks`` (argument checks), ``_quad``
(quadrature, solvers, the chi^2 mixture's nodes), ``_gap`` (the exact gap
law and :class:`Gap`), ``_two`` (two-logit rows: the exact n <= 2 laws),
``_saturation`` (the saturation law and its bounds), ``_extremes`` (b_n,
E[max], sigma_c), ``_rem`` (the random energy model and its frozen laws),
``_accuracy`` (the stated accuracies), ``_frozen`` (the verbs every frozen
law shares, derived once from its tails and quantiles), ``_dist``
(:class:`Observable`),
``_law`` (:class:`Law`, :func:`law`), ``_critical`` (sigma*, d_k*),
``_compat`` and ``_deprecation`` (the 0.2.0 spellings).  Each module's
docstring holds its derivation and measured accuracy.

The 0.2.0 spellings still work and warn ``DeprecationWarning`` once, naming
the new one: ``gap_sf(g, n)`` is ``Law.gaussian(n).gap.sf(g)`` (likewise
``gap_cdf``, ``gap_quantile`` -> ``gap.ppf``, ``gap_median``);
``rem_entropy(n, s)``, ``rem_max_prob(n, s)``, ``rem_max_prob_sf(v, n, s)``
and ``expected_max(n, s)`` are those of ``Law.gaussian(n, s).rem``;
``Law.fraction_below(obs, t, target, order)`` is
``law.observable(obs, target, order).cdf(t)``, ``Law.quantile`` its
``ppf``, ``Law.median``, ``Law.mean``, ``Law.fraction_bounds`` its
``median``, ``mean``, ``bounds``; ``Law.gap_sf`` ... are ``law.gap``'s
verbs; ``Law.rem_*`` and ``Law.expected_max`` ``law.rem``'s.

Examples
--------
>>> from fastsoftmax import models, theory
>>> law = theory.law(models.DotProduct(n=64, d_k=4096, scaled=False))
>>> print(f"{float(law['one_minus_max_prob'].cdf(1e-6)):.4f}")
0.5905
>>> print(theory.Law.gaussian([2, 64]).gap.median().round(4))
[0.9539 0.2821]

References
----------
B. Derrida, Random-energy model: an exactly solvable model of disordered
systems, Phys. Rev. B 24, 2613 (1981).  D. Ruelle, A mathematical
reformulation of Derrida's REM and GREM, Commun. Math. Phys. 108, 225
(1987).  J. Pitman and M. Yor, The two-parameter Poisson-Dirichlet
distribution derived from a stable subordinator, Ann. Probab. 25, 855
(1997).  H. A. David and H. N. Nagaraja, Order Statistics, 3rd ed., Wiley
(2003): joint laws of order statistics, extremes of normal samples.
"""
try:
    import scipy.special  # noqa: F401
except ImportError as _err:  # pragma: no cover - exercised in a subprocess test
    raise ImportError("fastsoftmax.theory needs SciPy: pip install 'fastsoftmax[theory]'") \
        from _err

from ._accuracy import ACCURACY, stated_accuracy
from ._checks import SATURATING
from ._compat import (expected_max, gap_cdf, gap_median, gap_quantile, gap_sf,  # noqa: F401
                      rem_entropy, rem_max_prob, rem_max_prob_sf)
from ._critical import critical_d_k, critical_scale
from ._dist import Observable
from ._extremes import freezing_scale
from ._gap import Gap
from ._law import Law, law
from ._rem import RandomEnergyModel, RemObservable

__all__ = ["Law", "law", "Observable", "Gap", "RandomEnergyModel", "RemObservable",
           "critical_scale", "critical_d_k", "freezing_scale", "stated_accuracy",
           "ACCURACY", "SATURATING"]
