r"""The :class:`Law` of a family of logit models, and :func:`law` of a model.

A Law is frozen: its parameters (n, and the logit scale or the dot
product's d_k, scaled, temperature) are arrays fixed at construction and
broadcast against every argument.  It holds the one mixture over the logit
scale (none for a Gaussian law; the chi^2 mixture of a dot product) and
hands out frozen distributions (fastsoftmax.theory._dist, ._gap, ._rem): ``law[obs]``,
``law.observable(obs, target, order)``, ``law.gap``, ``law.rem``.  Its
0.2.0 methods (``fraction_below``, ``quantile``, ``gap_sf``, ...) remain as
deprecated aliases of those.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy import special as _sp

from .. import models as _models
from ..registries import ENTROPY, MAX_PROB
from ._accuracy import stated_accuracy
from ._checks import _check_n, _check_positive, _check_scale
from ._deprecation import DeprecatedMethod
from ._dist import Observable
from ._gap import Gap
from ._quad import _chi2_nodes
from ._rem import RandomEnergyModel

__all__ = ["Law", "law"]


def _short(a: np.ndarray) -> str:
    a = np.asarray(a)
    return repr(a.tolist()) if a.size <= 6 else f"<array of shape {a.shape}>"


class Law:
    r"""The laws of the softmax observables for one family of logit models.

    Do not construct directly: use :func:`law` (from a model object),
    :meth:`Law.gaussian` or :meth:`Law.dot_product` (from parameter arrays,
    broadcast against each other and against every distribution's
    arguments, like a frozen :mod:`scipy.stats` distribution).

    A Gaussian law has n i.i.d. N(0, scale^2) logits; a dot-product law has,
    given ``|q|^2`` = c ~ chi^2(d_k), n i.i.d. N(0, s^2) logits with
    s = b sqrt(c) / temperature, b = 1/sqrt(d_k) if scaled else 1.  Every
    law of a dot product is the chi^2 mixture of the Gaussian one
    (Gauss-Legendre in ln c around the mode of its log-concave density, cut
    where it has dropped by e^-120, weights normalised).

    The laws, each a frozen distribution with scipy.stats' verbs:

    * ``law[obs]``, ``law[obs, target]``, ``law.observable(obs, target,
      order)``: one observable (:class:`Observable`);
    * ``law.gap``: the top-two gap (:class:`Gap`);
    * ``law.rem``: the random energy model at large n
      (:class:`RandomEnergyModel`: ``law.rem[obs]``, ``law.rem.expected_max()``).

    Parameters
    ----------
    n : ndarray
        Number of logits per row (validated by the constructors).
    **params : ndarray
        The law's parameter arrays: ``scale`` (Gaussian), or ``d_k``,
        ``scaled`` and ``temperature`` (dot product).

    Attributes
    ----------
    n : ndarray
        Number of logits per row.
    params : dict
        The parameter arrays (``scale``, or ``d_k``, ``scaled``,
        ``temperature``).

    See Also
    --------
    law : The law of a model object.

    Examples
    --------
    >>> from fastsoftmax import models, theory
    >>> g = theory.law(models.Gaussian(n=64, scale=49.0))
    >>> print(f"{float(g['one_minus_max_prob'].cdf(1e-6)):.4f}")
    0.4983
    >>> d = theory.Law.dot_product([64, 1024], 4096, scaled=False)
    >>> print(d.gap.median().round(1))
    [18.1 13.3]
    """

    def __init__(self, n: np.ndarray, **params: np.ndarray) -> None:
        self.n = n
        self.params = params
        self._gap: Gap | None = None

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={_short(v)}" for k, v in (("n", self.n), *self.params.items()))
        return f"Law.{'gaussian' if 'scale' in self.params else 'dot_product'}({args})"

    # construction -----------------------------------------------------------

    @classmethod
    def gaussian(cls, n: ArrayLike, scale: ArrayLike = 1.0) -> Law:
        """Law of n i.i.d. N(0, scale^2) logits.

        Parameters
        ----------
        n : array_like of int
            Logits per row, >= 1.
        scale : array_like of float, default 1
            Standard deviation of the logits (after the temperature), >= 0.

        Returns
        -------
        Law
            Broadcast over n and scale.

        Raises
        ------
        ValueError
            If n is not an integer >= 1 or scale is negative or not finite.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(f"{float(theory.Law.gaussian(64, 49.0).gap.median()):.3f}")
        13.824
        """
        return _GaussianLaw(_check_n(n), scale=_check_scale("scale", scale))

    @classmethod
    def dot_product(cls, n: ArrayLike, d_k: ArrayLike, scaled: ArrayLike = True,
                    temperature: ArrayLike = 1.0) -> Law:
        """Law of dot-product logits q.k_j, scaled or not, over a temperature.

        The logits are x_j = q.k_j (/ sqrt(d_k) if scaled) / temperature
        with q, k_j ~ N(0, I_{d_k}) independent: given c = ``|q|^2`` ~
        chi^2(d_k) they are i.i.d. N(0, b^2 c / temperature^2), so every
        law is a chi^2 mixture of a Gaussian one.

        Parameters
        ----------
        n : array_like of int
            Logits per row, >= 1.
        d_k : array_like of float
            Key dimension, > 0; non-integer values interpolate (chi^2 with
            real degrees of freedom), which is what :func:`critical_d_k`
            solves over.
        scaled : array_like of bool, default True
            Divide the dot products by sqrt(d_k) (True) or not.
        temperature : array_like of float, > 0, default 1
            The softmax temperature (the logits are divided by it).

        Returns
        -------
        Law
            Broadcast over the parameters' arrays.

        Raises
        ------
        ValueError
            If an argument is out of range.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> unscaled = theory.Law.dot_product(64, 4096, scaled=False)
        >>> print(f"{float(unscaled['one_minus_max_prob'].cdf(1e-6)):.4f}")
        0.5905
        """
        scaled = np.asarray(scaled)
        if scaled.dtype != np.bool_:
            raise ValueError(f"scaled must be True or False, got {scaled!r}")
        return _DotLaw(_check_n(n), d_k=_check_positive("d_k", d_k), scaled=scaled,
                       temperature=_check_positive("temperature", temperature))

    # the frozen distributions -------------------------------------------------

    def __getitem__(self, key: str | tuple[str, str]) -> Observable:
        """``law[obs]`` or ``law[obs, target]``: :meth:`observable` at order 1."""
        if isinstance(key, tuple):
            return self.observable(*key)
        return self.observable(key)

    def observable(self, obs: str, target: str = "argmax", order: int = 1) -> Observable:
        """The law of one observable, frozen for a target and an order.

        Parameters
        ----------
        obs : str
            An observable name (``fastsoftmax.OBS_NAMES``); at n > 2 one of
            ``SATURATING``.
        target : {"argmax", "random"}, default "argmax"
            The cross-entropy target.
        order : {0, 1}, default 1
            The order of the saturation law at n > 2 (0: the two-logit law;
            1: with the first-order correction from the other logits).

        Returns
        -------
        Observable
            With ``cdf``, ``sf``, ``logcdf``, ``logsf``, ``ppf``, ``isf``,
            ``median``, ``mean`` (n <= 2), ``bounds`` and ``stated_accuracy``.

        Raises
        ------
        ValueError
            For an unknown observable, target or order, or an observable
            without a law at the law's n.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> g = theory.Law.gaussian(64, 49.0)
        >>> p0 = g.observable("one_minus_max_prob", order=0).cdf(1e-6)
        >>> p1 = g["one_minus_max_prob"].cdf(1e-6)
        >>> print(f"{float(p0):.4f} {float(p1):.4f}")
        0.5002 0.4983
        """
        return Observable(self, obs, target, order)

    @property
    def gap(self) -> Gap:
        """The law of the top-two gap G = m1 - m2, in logit units."""
        if self._gap is None:
            self._gap = Gap(self)
        return self._gap

    @property
    def rem(self) -> RandomEnergyModel:
        """The random energy model's laws at large n (entropy, max_prob, E[max])."""
        return RandomEnergyModel(self)

    def typical_scale(self) -> np.ndarray:
        """The law's typical logit scale: where its domains of validity are read.

        Returns
        -------
        ndarray
            ``scale`` for a Gaussian law; b sqrt(d_k) / temperature for a
            dot-product law (the logit scale at c = E|q|^2 = d_k; its chi^2
            spread, relative sd sqrt(2 / d_k) in c, is not accounted for).

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(theory.Law.dot_product(64, 4096, [False, True]).typical_scale())
        [64.  1.]
        """
        raise NotImplementedError

    # the mixture over the logit scale, implemented by the subclasses --------

    def _mix(self, fn: Callable[..., Any], *args: Any, log: bool = True) -> np.ndarray:
        """E over the logit scale s of fn(s, n, *args): log-values combined in
        log space (log=True) or values averaged."""
        raise NotImplementedError

    def _scale_bound(self) -> np.ndarray:
        """A logit scale that the law exceeds with probability < 1e-40."""
        raise NotImplementedError

    def _restrict(self, mask: np.ndarray, shape: tuple[int, ...]) -> Law:
        """The law at the flat positions ``mask`` of the broadcast ``shape``."""
        params = {k: np.broadcast_to(v, shape).reshape(-1)[mask] for k, v in self.params.items()}
        return type(self)(np.broadcast_to(self.n, shape).reshape(-1)[mask], **params)

    # the 0.2.0 spellings: deprecated, each calls the one above ---------------

    gap_sf = DeprecatedMethod("Law.gap_sf", "law.gap.sf(g)", lambda self, g: self.gap.sf(g))
    gap_cdf = DeprecatedMethod("Law.gap_cdf", "law.gap.cdf(g)", lambda self, g: self.gap.cdf(g))
    gap_quantile = DeprecatedMethod("Law.gap_quantile", "law.gap.ppf(q)",
                                    lambda self, q: self.gap.ppf(q))
    gap_median = DeprecatedMethod("Law.gap_median", "law.gap.median()",
                                  lambda self: self.gap.median())
    fraction_below = DeprecatedMethod(
        "Law.fraction_below", "law.observable(obs, target, order).cdf(t)",
        lambda self, obs, t, target="argmax", order=1: self.observable(obs, target, order).cdf(t))
    fraction_bounds = DeprecatedMethod(
        "Law.fraction_bounds", "law[obs, target].bounds(t)",
        lambda self, obs, t, target="argmax": self.observable(obs, target).bounds(t))
    mean = DeprecatedMethod("Law.mean", "law[obs, target].mean()",
                            lambda self, obs, target="argmax": self.observable(obs, target).mean())
    quantile = DeprecatedMethod(
        "Law.quantile", "law.observable(obs, target, order).ppf(q)",
        lambda self, obs, q, target="argmax", order=1: self.observable(obs, target, order).ppf(q))
    median = DeprecatedMethod(
        "Law.median", "law.observable(obs, target, order).median()",
        lambda self, obs, target="argmax", order=1: self.observable(obs, target, order).median())
    rem_entropy = DeprecatedMethod(
        "Law.rem_entropy", f"law.rem.observable({ENTROPY.name!r}, correction).mean()",
        lambda self, correction=True: self.rem.observable(ENTROPY.name, correction).mean())
    rem_max_prob = DeprecatedMethod("Law.rem_max_prob", f"law.rem[{MAX_PROB.name!r}].mean()",
                                    lambda self: self.rem[MAX_PROB.name].mean())
    rem_max_prob_sf = DeprecatedMethod("Law.rem_max_prob_sf", f"law.rem[{MAX_PROB.name!r}].sf(v)",
                                       lambda self, v: self.rem[MAX_PROB.name].sf(v))
    rem_max_prob_median = DeprecatedMethod("Law.rem_max_prob_median",
                                           f"law.rem[{MAX_PROB.name!r}].median()",
                                           lambda self: self.rem[MAX_PROB.name].median())
    expected_max = DeprecatedMethod("Law.expected_max", "law.rem.expected_max()",
                                    lambda self: self.rem.expected_max())
    stated_accuracy = DeprecatedMethod(
        "Law.stated_accuracy", "law[obs].stated_accuracy() or law.rem[obs].stated_accuracy()",
        lambda self, what, order=1: stated_accuracy(what, self.n, self.typical_scale(), order))


class _GaussianLaw(Law):
    def _mix(self, fn: Callable[..., Any], *args: Any, log: bool = True) -> np.ndarray:
        return fn(self.params["scale"], self.n, *args)

    def typical_scale(self) -> np.ndarray:
        scale = self.params["scale"]
        return np.broadcast_to(scale, np.broadcast(self.n, scale).shape).astype(np.float64)

    def _scale_bound(self) -> np.ndarray:
        return self.params["scale"]


class _DotLaw(Law):
    def _coef(self) -> np.ndarray:
        p = self.params
        return np.where(p["scaled"], 1.0 / np.sqrt(p["d_k"]), 1.0) / p["temperature"]

    def _mix(self, fn: Callable[..., Any], *args: Any, log: bool = True) -> np.ndarray:
        p = self.params
        arrays = np.broadcast_arrays(self.n, p["d_k"], self._coef(), *args)
        n, d, b = arrays[:3]
        c, lw = _chi2_nodes(d)
        vals = fn(b[..., None] * np.sqrt(c), n[..., None], *(a[..., None] for a in arrays[3:]))
        if log:
            return _sp.logsumexp(vals + lw, axis=-1)
        return np.sum(np.exp(lw) * vals, axis=-1)

    def typical_scale(self) -> np.ndarray:
        p = self.params
        shape = np.broadcast(self.n, *p.values()).shape
        return np.broadcast_to(self._coef() * np.sqrt(p["d_k"]), shape).astype(np.float64)

    def _scale_bound(self) -> np.ndarray:
        d = np.asarray(self.params["d_k"], dtype=np.float64)
        return self._coef() * np.sqrt(_sp.gammainccinv(0.5 * d, 1e-40) * 2.0)


def law(model: object) -> Law:
    """The :class:`Law` of a :mod:`fastsoftmax.models` object.

    The model's parameters become the law's: the same logits, in
    distribution, as ``fastsoftmax.simulate`` draws for the model.

    Parameters
    ----------
    model : Gaussian, Shifted or DotProduct
        ``Gaussian(n, scale, mean, temperature)``: scale / temperature (the
        mean drops out: softmax is shift invariant); ``Shifted(n, offset,
        spread, temperature)``: spread / temperature; ``DotProduct(n, d_k,
        scaled, method, temperature)``: the chi^2(d_k) mixture (both methods
        draw the same law).

    Returns
    -------
    Law
        The law of the model's rows.

    Raises
    ------
    ValueError
        For any other object.

    Examples
    --------
    >>> from fastsoftmax import models, theory
    >>> m = models.Shifted(n=64, offset=100.0, spread=98.0, temperature=2.0)
    >>> print(f"{float(theory.law(m).observable('one_minus_max_prob', order=0).cdf(1e-6)):.4f}")
    0.5002
    >>> print(f"{float(theory.law(m)['one_minus_max_prob'].sf(1e-6)):.4f}")
    0.5017
    """
    if isinstance(model, _models.Gaussian):
        return Law.gaussian(model.n, model.scale / model.temperature)
    if isinstance(model, _models.Shifted):
        return Law.gaussian(model.n, model.spread / model.temperature)
    if isinstance(model, _models.DotProduct):
        return Law.dot_product(model.n, model.d_k, model.scaled, model.temperature)
    raise ValueError(f"model must be a fastsoftmax.models Gaussian, Shifted or DotProduct, "
                     f"got {type(model).__name__}")
