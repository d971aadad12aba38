r"""The frozen law of one observable of a :class:`~fastsoftmax.theory.Law`,
with scipy.stats' verbs.

:class:`Observable` is one softmax observable for one target at one order of
the saturation law (``law[obs]``, ``law.observable(obs, target, order)``):
exact for n <= 2 (fastsoftmax.theory._two), the saturation law for n > 2
(fastsoftmax.theory._saturation).  Its siblings are the gap's law
(:class:`~fastsoftmax.theory.Gap`, fastsoftmax.theory._gap) and the random
energy model's (:class:`~fastsoftmax.theory.RemObservable`,
fastsoftmax.theory._rem).

Each tail is written once, for logits of one scale sigma, and mixed over
the law's scale by the law (a Gaussian law has one scale; a dot product's
is b sqrt(c) / T with c ~ chi^2(d_k)).  The verbs (``cdf``, ``sf``,
``logcdf``, ``logsf``, ``ppf``, ``isf``, ``median``, ``mean``) are those of
every frozen law (fastsoftmax.theory._frozen): this module supplies the two
log-tails, the quantiles and the exact mean.  The laws are continuous for
n >= 2 and a logit scale > 0, so ``cdf(t)`` is also P(X < t), the fraction
that ``Summary[obs].fraction_below(t)`` measures.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._accuracy import stated_accuracy
from ._checks import (SATURATING, _check_obs, _check_order, _check_t, _check_target,
                      _real_array, _record)
from ._frozen import Frozen
from ._quad import _Family, _log, _solve
from ._saturation import _NEIGHBOUR, _bound_gaps, _log_sat0_sf, _log_sat1
from ._two import _mean2, _other_floor, _two_logit

__all__ = ["Observable"]


class Observable(Frozen):
    r"""The law of one softmax observable, frozen for a target and an order.

    Made by ``law[obs]``, ``law[obs, target]`` or :meth:`Law.observable`,
    not directly.  Exact for n <= 2 (every observable, targets "argmax" and
    "random": a two-logit row is a function of its gap).  For n > 2, the
    saturation law of the observables in ``SATURATING`` (the Jacobian ones,
    1 - max_prob and the cross-entropy ones): asymptotic as t -> 0, meant
    for t <= 1e-3, with the accuracy :meth:`stated_accuracy` states
    (fastsoftmax.theory._saturation derives it) and exact bounds valid
    everywhere (:meth:`bounds`).

    Parameters
    ----------
    law : Law
        The law of the rows.
    obs : str
        An observable name (``fastsoftmax.OBS_NAMES``).
    target : {"argmax", "random"}, default "argmax"
        The cross-entropy target; "random" (a uniform label) is, for n > 2
        and t <= 1/2 (ln 2 for ce_loss), exactly 1/n times the argmax law:
        a row whose label is not its argmax has 1 - p_y >= 1/2.
    order : {0, 1}, default 1
        The order of the saturation law (n > 2): 0, the two-logit law
        P(obs < t) ~= P(G > gamma(t)); 1, with the first-order correction
        from the other logits.  Equal for n <= 2.

    Attributes
    ----------
    law : Law
        The law of the rows.
    obs : str
        The observable.
    target : str
        The target.
    order : int
        The order of the saturation law.

    Raises
    ------
    ValueError
        For an unknown observable, target or order, or an observable without
        a law at the law's n (max_prob and entropy at n > 2: see
        :attr:`Law.rem`).

    See Also
    --------
    Law.observable : The constructor.
    Gap : The law of the top-two gap.

    Notes
    -----
    Two-logit law: with gamma(t) the gap at which a two-logit row has
    obs = t (e.g. jac_diag_max = e^-g / (1 + e^-g)^2, gamma = ln(1/t) +
    2t + O(t^2)), P(obs < t) ~= P(G > gamma(t)).  Order 1 adds to gamma the
    mean log-factor lambda(m2) of the logits below m2.  Accuracy (measured
    against ``simulate``, docs/theory.md), with m = sigma_c / sigma,
    sigma_c = sqrt(2 ln n), t <= 1e-3: order 1 within 0.5% for m <= 1/8 and
    2% at m = 1/4, 10-15% low at m = 1/2; order 0 high by about
    (pi m)^2 / 6 relatively (at most 1 - sin(pi m)/(pi m)).

    The verbs: thresholds t lie in (0, 1] (beyond 1 at n <= 2 for the
    observables that exceed 1).  Exact laws (n <= 2, and order 0) take each
    tail from the gap's, with its relative accuracy; the order-1 law's upper
    tail is log(1 - cdf).  ``ppf`` is f2(gap quantile) where the law is a
    function of the gap (f2 the two-logit observable, monotone in G);
    otherwise it is solved in ln t over (1e-300, 1] (to the least value of a
    row labelled off its argmax, 1/2 or ln 2, for a random label at n > 2;
    NaN where the law does not reach q there).  ``mean`` is exact for
    n <= 2 only (a ``ValueError`` for n > 2, where it is not set by the
    saturated rows): E f(G) = int_0^inf f(s g) e^(-g^2/4)/sqrt(pi) dg for
    n = 2 (x1 - x2 ~ N(0, 2 s^2)), by Gauss-Legendre on geometric panels;
    target "random": the average of the argmax and the other class; n = 1:
    the value at G = inf.

    Examples
    --------
    >>> from fastsoftmax import models, theory
    >>> law = theory.law(models.Gaussian(n=64, scale=49.0))
    >>> print(f"{float(law['one_minus_max_prob'].cdf(1e-6)):.4f}")
    0.4983
    >>> print(f"{float(law.observable('one_minus_max_prob', order=0).cdf(1e-6)):.4f}")
    0.5002
    """

    def __init__(self, law: _Family, obs: str, target: str = "argmax", order: int = 1) -> None:
        rec = _record(obs)
        _check_target(target)
        _check_order(order)
        if not rec.saturates and (law.n > 2).any():
            raise ValueError(f"obs must be one of {', '.join(SATURATING)} for n > 2: {obs!r} "
                             f"has no saturation law there (its law here is for n <= 2; at "
                             f"large n see law.rem[{obs!r}])")
        self.law, self.obs, self.target, self.order = law, obs, target, order
        self._rec = rec
        self._f, self._increasing, self._gamma = _two_logit(obs)
        self._random = target == "random" and rec.targeted

    def __repr__(self) -> str:
        return f"{self.law!r}.observable({self.obs!r}, target={self.target!r}, " \
               f"order={self.order})"

    # the tails, in logs: every verb below is one of these ---------------------

    def _check_threshold(self, t: ArrayLike) -> np.ndarray:
        n = self.law.n
        if not self._rec.unit_interval and not (n > 2).any():
            a = _real_array("t", t)
            if not (a > 0).all():
                raise ValueError(f"t must be > 0, got {t!r}")
            return a
        a = _check_t(t)
        if self._random and (n > 2).any():
            lim = _other_floor(self.obs)
            if (a > lim).any():
                raise ValueError(f"t must be <= {lim:.4g} for target 'random' at n > 2 "
                                 f"(the law counts only the rows labelled by their argmax)")
        return a

    def _log_top(self, t: np.ndarray, upper: bool) -> np.ndarray:
        """log P(obs < t) (upper False) or log P(obs > t) for the argmax
        target: {f(G) < t} = {G > gamma(t)} for decreasing f, {G < gamma(t)}
        for increasing f, with the other logits' shift at order 1."""
        law, gam = self.law, self._gamma(t)
        if self._increasing:
            return law.gap.logsf(gam) if upper else law.gap.logcdf(gam)
        if not upper:
            hs = _NEIGHBOUR.get(self.obs) if self.order == 1 else None
            return law._mix(lambda s, n, gam: _log_sat1(gam, s, n, hs), gam)
        big = law.n > 2
        if self.order == 1 and big.any():
            # order 1 has no closed lower tail of its own: its complement
            with np.errstate(divide="ignore"):
                comp = np.log(-np.expm1(self._log_top(t, False)))
            if big.all():
                return comp
        direct = law._mix(lambda s, n, gam: _log_sat0_sf(gam, s, n), gam)
        return np.where(big, comp, direct) if self.order == 1 and big.any() else direct

    def _with_random(self, t: np.ndarray, ltop: np.ndarray, upper: bool) -> np.ndarray:
        """Target "random": the label is the argmax with probability 1/n,
        else the other class (n = 2) or one whose 1 - p_y >= 1/2 > t (n > 2:
        never below the thresholds the check allows)."""
        if not self._random:
            return ltop
        n = self.law.n
        go = _two_logit(self.obs, "other")[2](t)
        lother = self.law.gap.logsf(go) if upper else self.law.gap.logcdf(go)
        lother = np.where(n == 2, lother, 0.0 if upper else -np.inf)
        with np.errstate(divide="ignore"):
            mixed = np.logaddexp(ltop - np.log(n), np.log1p(-1.0 / n) + lother)
        return np.where(n == 1, ltop, mixed)

    def _log_tail(self, t: ArrayLike, upper: bool) -> np.ndarray:
        a = self._check_threshold(t)
        return self._with_random(a, self._log_top(a, upper), upper)

    # what this law alone knows (the verbs: fastsoftmax.theory._frozen) --------

    def _logcdf(self, t: ArrayLike) -> np.ndarray:
        return self._log_tail(t, False)

    def _logsf(self, t: ArrayLike) -> np.ndarray:
        return self._log_tail(t, True)

    def _ppf(self, q: np.ndarray) -> np.ndarray:
        return self._quantile(q, False)

    def _isf(self, q: np.ndarray) -> np.ndarray:
        return self._quantile(q, True)

    def _quantile(self, q: np.ndarray, upper: bool) -> np.ndarray:
        law = self.law
        if (self.order == 0 or not (law.n > 2).any()) and not self._random:
            # cdf(t) = P(G <= gamma(t)) (increasing f) or P(G > gamma(t))
            gap = law.gap
            return self._f(gap.isf(q) if self._increasing == upper else gap.ppf(q))
        if upper:
            return self._quantile(1.0 - q, False)
        shape = np.broadcast(q, law.n, *law.params.values()).shape
        qf = np.broadcast_to(q, shape).reshape(-1)
        full = law._restrict(np.ones(qf.size, dtype=bool), shape)
        dist = Observable(full, self.obs, self.target, self.order)
        hi = 0.0 if (law.n > 2).any() or self._rec.unit_interval else 700.0
        if self._random and (law.n > 2).any():
            # the law of a random label at n > 2 stops at the threshold check's limit
            hi = float(np.log(_other_floor(self.obs)))

        def fun(x: np.ndarray) -> np.ndarray:
            return dist.cdf(np.exp(x)) - qf

        lo, up = np.full(qf.shape, -690.0), np.full(qf.shape, float(hi))
        flo = fup = None
        if self.order == 1 and not self._increasing and not self._random:
            # order 1 lies below order 0 (lambda >= 0 only widens the gap
            # needed), so the order-0 quantile t0 brackets the root from
            # below, and the rest R <= n - 1 puts it within about
            # ln(n - 1) above: a bracket of a few units of ln t, not 690
            nf = np.broadcast_to(law.n, shape).reshape(-1)
            with np.errstate(divide="ignore", invalid="ignore"):
                x0 = np.log(Observable(full, self.obs, self.target, 0).ppf(qf))
            x0 = np.where(np.isfinite(x0), np.clip(x0, -690.0, hi), -690.0)
            x1 = np.minimum(x0 + np.log(np.maximum(nf - 1.0, 1.0)) + 1.0, hi)
            f0, f1 = fun(x0), fun(x1)
            lo, up = np.where(f0 <= 0, x0, lo), np.where(f1 >= 0, x1, up)
            flo = f0 if (f0 <= 0).all() else fun(lo)
            fup = f1 if (f1 >= 0).all() else fun(up)
        if flo is None or fup is None:
            flo, fup = fun(lo), fun(up)
        x = _solve(fun, lo, up, flo=flo, fhi=fup)
        ok = (fup >= 0) & (flo <= 0)
        # n = 1: one class, the observable is the constant f(G = inf)
        one = np.broadcast_to(law.n, shape).reshape(-1) == 1
        return np.where(one, self._f(np.inf), np.where(ok, np.exp(x), np.nan)).reshape(shape)

    def _mean(self) -> np.ndarray:
        # n = 2: E f(G), x1 - x2 ~ N(0, 2 s^2) (fastsoftmax.theory._two._mean2);
        # target "random": the average of the argmax and the other class;
        # n = 1: the value at G = inf
        law, obs = self.law, self.obs
        if (law.n > 2).any():
            raise ValueError("mean is exact for n <= 2 only: for n > 2 the saturation law gives "
                             "cdf, sf, ppf and median, and law.rem the random energy model's "
                             "mean entropy and max_prob")
        branches = ["top"] + (["other"] if self._random else [])
        # n = 1 has no other class: its value there (infinite for ce_loss) is
        # not used, so it is evaluated as n = 2
        vals = [law._mix(lambda s, n: _mean2(_two_logit(obs, b)[0], s,
                                             n if b == "top" else np.maximum(n, 2)), log=False)
                for b in branches]
        if len(vals) == 1:
            return vals[0]
        return np.where(law.n == 1, vals[0], 0.5 * (vals[0] + vals[1]))

    def bounds(self, t: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        r"""Exact bounds lo <= P(obs < t) <= hi for a saturating observable.

        Valid for any n and any logit scale: they follow from the exact gap
        law alone (no asymptotics).

        Parameters
        ----------
        t : array_like of float in (0, 1]
            The threshold.

        Returns
        -------
        lo : ndarray
            The lower bound.
        hi : ndarray
            The upper bound; 1 where the bound needs a smaller t (see Notes).

        Raises
        ------
        ValueError
            For an observable outside ``SATURATING`` or t out of range.

        Notes
        -----
        With a = sum_{i != top} exp(x_i - m1), q = 1 - p1 = a/(1+a) and
        u2 = sum_{i != top} p_i^2, e^-G <= a <= (n-1) e^-G and
        q^2/(n-1) <= u2 <= q^2 (Cauchy-Schwarz).  Each observable lies
        between functions of a:

        * 1 - max_prob = ce_grad_target = a/(1+a), ce_loss = ln(1+a),
          jac_diag_max = a/(1+a)^2 (the branch a < 1 when
          t <= (n-1)/n^2, p1 >= 1/n): {obs < t} = {a < e^-gamma(t)}, so
          P(G > gamma + ln(n-1)) <= P <= P(G > gamma(t)).
        * jac_offdiag_max = p1 p2 = e^-G/(1+a)^2 lies between
          e^-G/(1+(n-1)e^-G)^2 and e^-G/(1+e^-G)^2: the two-logit law is a
          lower bound, the upper one is P(G > ln(n-1) + gamma((n-1)t)),
          valid for (n-1)^2 t < 1/(1+1/(n-1))^2 roughly (else 1).
        * ce_grad_norm = sqrt(q^2 + u2) is in [sqrt(n/(n-1)) q, sqrt(2) q].
        * jac_fro: ``||J||_F^2`` = p1^2 (q^2 + 2 u2) + sum_{j != top}
          p_j^2 (1 - 2 p_j) + u2^2 (fastsoftmax._kernels.row), hence
          sqrt((n+1)/(n-1)) p1 q <= ``||J||_F`` <= 2q (every term is >= 0 as
          p_j <= 1/2 off the top, and 3 p1^2 + 1 + q^2 <= 4).

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> lo, hi = theory.Law.gaussian(64, 49.0)["one_minus_max_prob"].bounds(1e-6)
        >>> print(f"{float(lo):.3f} {float(hi):.3f}")
        0.401 0.500
        """
        _check_obs(self.obs, SATURATING)
        t = self._check_threshold(t)
        n, sf = self.law.n, self.law.gap.sf
        g_lo, g_hi, valid = _bound_gaps(self.obs, t, n)
        lo = np.where(n == 1, 1.0, sf(g_hi))
        hi = np.where(n == 1, 1.0, np.where(valid, sf(g_lo), 1.0))
        if self._random:
            lo, hi = (np.exp(self._with_random(t, _log(b), False)) for b in (lo, hi))
        return lo, hi

    def stated_accuracy(self) -> tuple[np.ndarray, np.ndarray]:
        """The accuracy this law states for its cdf, at the law's parameters.

        Returns
        -------
        rel : ndarray
            Relative tolerance, NaN where no accuracy is claimed (m > 1/2).
        abs : ndarray
            Absolute tolerance.

        See Also
        --------
        stated_accuracy : The same at any n and scale (``"fraction_below"``).

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> law = theory.Law.dot_product(64, [64, 4096], False)
        >>> rel, _ = law["one_minus_max_prob"].stated_accuracy()
        >>> print(rel)
        [0.15  0.005]
        """
        return stated_accuracy("fraction_below", self.law.n, self.law.typical_scale(),
                               self.order)
