r"""Large n: the random energy model's laws of the softmax, and extremes.

Softmax of n i.i.d. N(0, sigma^2) logits is the Gibbs measure of Derrida's
random energy model (REM) with n states.  Below its freezing scale
sigma_c = sqrt(2 ln n) (:func:`freezing_scale`) the softmax is diffuse,
above it frozen on a Poisson-Dirichlet set of top weights.  At finite n the
functions here use the Gumbel location b_n (n phi(b_n) = b_n) in the
Poisson-Dirichlet index m = b_n / sigma.  The formulas are written for logits
of one scale sigma; :class:`RandomEnergyModel` (``law(model).rem``) and
:class:`RemObservable` (``law(model).rem[obs]``) are the frozen laws of a
model, mixed over a dot product's chi^2.

Entropy.  Diffuse phase (sigma < sigma_c): ln n - sigma^2/2
[+ ((2 sigma^2 - 1) e^(sigma^2) + 1) / (2n)]; frozen phase:
psi(1) - psi(1 - m).  Exact as n -> inf: entropy / ln n -> 1 - 1/(2 ln n /
sigma^2) in the diffuse phase at fixed sigma / sigma_c < 1 (Derrida 1981),
and the frozen phase's entropy converges to that of PD(m) weights,
E sum -p ln p = psi(1) - psi(1 - m) (from the PD(m) mean measure
p^(-m-1) (1-p)^(m-1) / (Gamma(m) Gamma(1-m)) dp; Pitman & Yor 1997).  Finite
n: with Z = sum e^(sigma z_i) = n e^(sigma^2/2) (1 + eps), Var eps =
(e^(sigma^2) - 1)/n, entropy = ln Z - sigma d(ln Z)/d sigma and the delta
method give the 1/n term (valid while e^(sigma^2) << n, i.e. sigma <
sigma_c / 2 or so).  Measured (``simulate``, n = 64 ... 16,384): sigma <= 1:
within 0.003 with the correction (0.03 without at n = 64); frozen: within 5%
at m ~= 0.2, 7% at m ~= 0.4; the crossover 0.5 sigma_c < sigma < 2 sigma_c
is not described (errors up to 1 nat).

Largest probability.  Frozen phase (m < 1): conditioning on the largest
point of the Poisson process of intensity m x^(-m-1) (whose -m-th power is
Exp(1)), E[p(1)] = int_0^inf e^-s / (1 + Psi(s)) ds (Psi in
``_pd_top_mean``).  For v >= 1/2 at most one PD(m) weight exceeds v, so
P(p(1) > v) is the PD mean measure of (v, 1), int_v^1 p^(-m-1) (1-p)^(m-1)
dp / (Gamma(m) Gamma(1-m)) = ((1-v)/v)^m sin(pi m)/(pi m) (an incomplete
beta B_x(m, -m) = (x/(1-x))^m / m), exact as n -> inf; PD(m) has no closed
form below 1/2 (NaN there).  With u = 1 - v it is the n -> inf saturation
law of 1 - max_prob, P(1 - max_prob < u) = (u/(1-u))^m sin(pi m)/(pi m),
whose two-logit approximation lacks the factor sin(pi m)/(pi m).  Diffuse
phase: the max M = b_n + Gumbel / b_n and p(1) ~= e^(sigma M) /
(n e^(sigma^2/2)), a Frechet law of index m: P(p(1) > v) = 1 - exp(-(v /
v0)^-m), v0 = e^(sigma b_n - sigma^2/2) / n, and E p(1) = Gamma(1 - 1/m) v0,
-> 0 like n^(-(1 - 1/m)^2).  Measured (``simulate``, n = 64 ... 16,384):
frozen, m <= 0.45: within 1.5% of the mean; m ~ 0.65: 5% low; diffuse,
sigma <= 1: 5-30% high (the Gumbel law of M is a poor fit at small n).  At
n = 16,384, sigma = 18 (m = 0.21): P(max_prob > 1/2) = 0.926 against 0.917
and 0.931 +- 0.004 (two seeds), P(1 - max_prob < 1e-3) = 0.211 against
0.186 +- 0.006 (the finite-n saturation law gives 0.183).

Largest logit.  E[max] ~= sigma (b_n + gamma_E / b_n), gamma_E Euler's
constant: max = b_n + Gumbel / b_n + o(1/b_n) (Fisher-Tippett; David &
Nagaraja 10.5), so E max = sigma sqrt(2 ln n) (1 + o(1)) with the Gumbel
mean as the first correction; the convergence is logarithmically slow.
Relative error against the exact mean int x n phi(x) Phi(x)^(n-1) dx: +5.5%
at n = 64, +1.8% at 1,024, +0.9% at 16,384 (sqrt(2 ln n) alone: +23%, +15%,
+11%).
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy import special as _sp

from ._accuracy import stated_accuracy
from ..registries import OBSERVABLES
from ._checks import _check_t
from ._extremes import _b_n, _expected_max, _sigma_c
from ._frozen import Frozen
from ._quad import _Family, _log, _panels

# the observables with a random energy model law, and its key
_REM = {o.name: o.rem for o in OBSERVABLES if o.rem is not None}

__all__ = ["RandomEnergyModel", "RemObservable"]


def _rem_index(n, scale):
    """m = b_n / sigma (finite-n Poisson-Dirichlet parameter)."""
    with np.errstate(divide="ignore"):
        return np.where(n > 1, _b_n(np.maximum(n, 2.0)), 0.0) / scale


def _entropy(n, s, correction=True):
    """Mean entropy: diffuse, or PD(m) frozen (module docstring)."""
    n, s = np.broadcast_arrays(n, s)
    sc = _sigma_c(n)
    with np.errstate(over="ignore", invalid="ignore"):
        diffuse = np.log(n) - 0.5 * s * s
        if correction:
            diffuse = diffuse + ((2.0 * s * s - 1.0) * np.exp(s * s) + 1.0) / (2.0 * n)
        m = np.minimum(_rem_index(n, s), 1.0)
        frozen = _sp.digamma(1.0) - _sp.digamma(1.0 - m)
    return np.where(n == 1, 0.0, np.where(s < sc, diffuse, frozen))


def _pd_top_mean(m):
    """E[largest weight] of PD(m): int_0^inf e^-s / (1 + Psi(s)) ds with
    Psi(s) = int_0^1 (1 - e^(-s u)) m u^(-m-1) du
           = s^m Gamma(1-m) P(1-m, s) - 1 + e^-s (P regularised)."""
    m = np.asarray(m, dtype=np.float64)[..., None]
    # s = -ln(1 - v) maps (0, 1) onto (0, inf) with ds e^-s = dv
    v, w = _panels(np.zeros(m.shape), np.ones(m.shape), npan=8, order=24)
    s = -np.log1p(-v)
    psi = s ** m * _sp.gamma(1.0 - m) * _sp.gammainc(1.0 - m, s) - 1.0 + np.exp(-s)
    return np.sum(w / (1.0 + psi), axis=-1)


def _max_prob_mean(n, s):
    """E[max_prob]: PD(m) frozen, Frechet-Gumbel diffuse (module docstring)."""
    n, s = np.broadcast_arrays(n, s)
    b = _b_n(np.maximum(n, 2.0))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        m = _rem_index(n, s)
        # the PD(m) quadrature only where the row is frozen (m < 1): it is
        # the costly part, and a mixture's diffuse nodes are many
        frozen = np.ones(m.shape)
        live = m < 1.0
        frozen[live] = _pd_top_mean(np.clip(m[live], 1e-12, 1.0 - 1e-12))
        diffuse = _sp.gamma(1.0 - 1.0 / np.maximum(m, 1.0 + 1e-12)) \
            * np.exp(s * b - 0.5 * s * s) / n
    return np.where(n == 1, 1.0, np.where(m < 1.0, frozen, np.minimum(diffuse, 1.0)))


def _max_prob_sf(v, n, s):
    """P(max_prob > v): PD(m) frozen for v >= 1/2 (else NaN), Frechet diffuse."""
    v, n, s = np.broadcast_arrays(v, n, s)
    b = _b_n(np.maximum(n, 2.0))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        m = _rem_index(n, s)
        mc = np.clip(m, 1e-300, 1.0 - 1e-16)
        frozen = np.where(v >= 0.5, ((1.0 - v) / v) ** mc * np.sinc(mc), np.nan)
        lv0 = s * b - 0.5 * s * s - np.log(n)
        diffuse = -np.expm1(-np.exp(-m * (np.log(v) - lv0)))
    return np.where(n == 1, np.where(v < 1.0, 1.0, 0.0), np.where(m < 1.0, frozen, diffuse))


class RandomEnergyModel:
    r"""The random energy model's laws of a law at large n, and E[max logit].

    Made by :attr:`Law.rem`, not directly.  ``rem["entropy"]`` and
    ``rem["max_prob"]`` are frozen :class:`RemObservable` laws, and
    :meth:`expected_max` the extreme-value mean of the largest logit.  All
    are asymptotic in n (fastsoftmax.theory._rem states the laws, their
    derivation and their measured accuracy): for n i.i.d. N(0, s^2) logits
    exactly as written there, for a dot product the chi^2 mixture over s
    (given q the logits are Gaussian).  The freezing scale sigma_c =
    sqrt(2 ln n) is :func:`freezing_scale`.

    Parameters
    ----------
    law : Law
        The law of the rows.

    Attributes
    ----------
    law : Law
        The law of the rows.

    Examples
    --------
    >>> from fastsoftmax import theory
    >>> rem = theory.Law.gaussian(1024, [1.0, 15.0]).rem
    >>> print(rem["entropy"].mean().round(3), rem["max_prob"].mean().round(3))
    [6.433 0.407] [0.018 0.852]
    """

    def __init__(self, law: _Family) -> None:
        self.law = law

    def __repr__(self) -> str:
        return f"{self.law!r}.rem"

    def __getitem__(self, obs: str) -> RemObservable:
        return self.observable(obs)

    def observable(self, obs: str, correction: bool = True) -> RemObservable:
        """The random energy model's law of ``obs``, frozen.

        Parameters
        ----------
        obs : {"entropy", "max_prob"}
            The observable (``rem[obs]`` is the same with the defaults).
        correction : bool, default True
            Entropy only: add the first finite-n term of the diffuse phase,
            ((2 s^2 - 1) e^(s^2) + 1) / (2n).

        Returns
        -------
        RemObservable
            The frozen law.

        Raises
        ------
        ValueError
            For another observable, or ``correction=False`` for max_prob.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> rem = theory.Law.gaussian(1024, 1.0).rem
        >>> print(f"{float(rem.observable('entropy', correction=False).mean()):.4f}")
        6.4315
        """
        return RemObservable(self.law, obs, correction)

    def expected_max(self) -> np.ndarray:
        """E[max logit], asymptotically (the extreme-value law).

        Returns
        -------
        ndarray
            s (b_n + gamma_E / b_n) for logits of scale s, b_n the Gumbel
            location (n phi(b_n) = b_n), gamma_E Euler's constant, averaged
            over the law's scale; 0 for n = 1.  +5.5% at n = 64, +1.8% at
            1,024, +0.9% at 16,384 against the exact mean.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(theory.Law.gaussian([64, 16384]).rem.expected_max().round(3))
        [2.473 4.006]
        >>> print(theory.Law.dot_product(64, 64, False).rem.expected_max().round(2))
        19.71
        """
        return self.law._mix(lambda s, n: _expected_max(n, s), log=False)


class RemObservable(Frozen):
    r"""The random energy model's law of the entropy or of max_prob.

    Made by ``law.rem[obs]`` or :meth:`RandomEnergyModel.observable`, not
    directly.  Asymptotic in n (fastsoftmax.theory._rem): the entropy's
    mean; max_prob's mean, its survival function (Poisson-Dirichlet in the
    frozen phase for v >= 1/2, NaN below; Frechet in the diffuse phase) and
    the quantiles solved from it.

    Parameters
    ----------
    law : Law
        The law of the rows.
    obs : {"entropy", "max_prob"}
        The observable.
    correction : bool, default True
        Entropy only: the first finite-n term of the diffuse phase.

    Attributes
    ----------
    law : Law
        The law of the rows.
    obs : str
        The observable.
    correction : bool
        Whether the entropy's 1/n term is added.

    Raises
    ------
    ValueError
        For another observable, or ``correction=False`` for max_prob.

    Notes
    -----
    The verbs are those of every frozen law (fastsoftmax.theory._frozen).
    ``mean()``: entropy, diffuse ln n - s^2/2 [+ the 1/n term], frozen
    psi(1) - psi(1 - m); max_prob, the mean largest weight of PD(m) frozen,
    Gamma(1 - 1/m) e^(s b_n - s^2/2) / n diffuse (m = b_n / s; n = 1: 0 and
    1); averaged over the law's logit scale.  max_prob only (the entropy's
    other verbs raise ``NotImplementedError``): ``sf(v)``, v in (0, 1], is
    ((1 - v)/v)^m sin(pi m)/(pi m) frozen (m < 1) for v >= 1/2 and NaN below
    (PD(m) has no closed form there), 1 - exp(-(v / v0)^-m) diffuse;
    ``cdf`` is its complement; ``isf(q)`` is solved by bisection in ln v
    (NaN where that needs the frozen law below 1/2; 1 for n = 1; frozen
    Gaussian law, q = 1/2: 1 / (1 + (2 sin(pi m) / (pi m))^(-1/m)); diffuse:
    v0 (ln 2)^(-1/m)), ``ppf(q)`` is ``isf(1 - q)``.

    Examples
    --------
    >>> from fastsoftmax import theory
    >>> mp = theory.Law.gaussian(16384, 18.0).rem["max_prob"]
    >>> print(mp.sf([0.5, 0.999]).round(3), mp.median().round(4))
    [0.926 0.211] 0.9467
    """

    def __init__(self, law: _Family, obs: str, correction: bool = True) -> None:
        if obs not in _REM:
            raise ValueError(f"obs must be {' or '.join(map(repr, sorted(_REM)))} (the random "
                             f"energy model's laws), got {obs!r}")
        self._key = _REM[obs]
        if self._key != "rem_entropy" and correction is not True:
            raise ValueError(f"correction is the entropy's 1/n term: {obs} has none")
        self.law, self.obs, self.correction = law, obs, bool(correction)

    def __repr__(self) -> str:
        return f"{self.law!r}.rem.observable({self.obs!r}, correction={self.correction})"

    # what this law alone knows (the verbs: fastsoftmax.theory._frozen) --------

    def _max_prob_only(self) -> None:
        if self._key != "rem_max_prob":
            raise NotImplementedError("the random energy model gives the entropy's mean only, "
                                      "not its distribution")

    def _sf(self, v: ArrayLike) -> np.ndarray:
        """P(max_prob > v): PD(m) frozen, Frechet diffuse, mixed over the scale."""
        self._max_prob_only()
        v = _check_t(v, "v")
        return self.law._mix(lambda s, n, v: _max_prob_sf(v, n, s), v, log=False)

    def _logsf(self, v: ArrayLike) -> np.ndarray:
        return _log(self._sf(v))

    def _logcdf(self, v: ArrayLike) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log1p(-self._sf(v))

    def _ppf(self, q: np.ndarray) -> np.ndarray:
        return self._isf(1.0 - q)

    def _isf(self, q: np.ndarray) -> np.ndarray:
        """The v with P(max_prob > v) = q, by bisection in ln v."""
        self._max_prob_only()
        law = self.law
        shape = np.broadcast(q, law.n, *law.params.values()).shape
        qf = np.broadcast_to(q, shape).reshape(-1)
        flat = RemObservable(law._restrict(np.ones(qf.size, dtype=bool), shape), self.obs)

        def f(x: np.ndarray) -> np.ndarray:
            with np.errstate(invalid="ignore"):
                return flat._sf(np.exp(x)) - qf

        # above 1/2 or below it (where a frozen scale gives NaN, kept)
        half = np.full(qf.size, np.log(0.5))
        up = f(half) > 0
        lo, hi = np.where(up, half, -700.0), np.where(up, 0.0, half)
        for _ in range(64):             # f decreases in x
            mid = 0.5 * (lo + hi)
            fm = f(mid)
            lo = np.where(fm > 0, mid, lo)
            hi = np.where(fm > 0, hi, mid)
        x = 0.5 * (lo + hi)
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(f(x))
        one = np.broadcast_to(law.n, shape).reshape(-1) == 1
        return np.where(one, 1.0, np.where(ok, np.exp(x), np.nan)).reshape(shape)

    def _mean(self) -> np.ndarray:
        if self._key == "rem_entropy":
            c = self.correction
            return self.law._mix(lambda s, n: _entropy(n, s, c), log=False)
        return self.law._mix(lambda s, n: _max_prob_mean(n, s), log=False)

    def stated_accuracy(self) -> tuple[np.ndarray, np.ndarray]:
        """The accuracy the random energy model states for this mean.

        Returns
        -------
        rel : ndarray
            Relative tolerance, NaN where no accuracy is claimed.
        abs : ndarray
            Absolute tolerance (the diffuse entropy's 5 c^2).

        See Also
        --------
        stated_accuracy : The same at any n and scale (``"rem_entropy"``,
            ``"rem_max_prob"``).

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> rel, ab = theory.Law.gaussian(1024, [1.0, 15.0]).rem["entropy"].stated_accuracy()
        >>> print(rel, ab.round(6))
        [0.   0.07] [1.6e-05 0.0e+00]
        """
        return stated_accuracy(self._key, self.law.n, self.law.typical_scale())
