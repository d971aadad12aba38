"""Two-logit rows: every observable as a function of the top-two gap, and
the exact n <= 2 laws that follow.

A row whose only logits are its top two, of gap g >= 0 (logit units), has
p = expit(g), q = 1 - p = expit(-g), and each observable is one of the
formulas ``p``, ``q``, ``h2`` = -p ln p - q ln q = ln(1 + e^-g) + g q,
``pq``, ``2pq``, ``-log p`` = ln(1 + e^-g), ``sqrt2 q`` (y the top class:
target "argmax", branch "top") and, for the targeted observables with y the
other class (target "random" at n = 2, branch "other"), ``-log q``,
``sqrt2 p``, ``p``: the record of each observable
(:class:`fastsoftmax.registries.Observable`) names its formulas.  Each
entry of the table is the value f(g), whether f increases, and the gap
threshold gamma(t) with {f(G) < t} = {G > gamma} (decreasing f) or
{G < gamma} (increasing f), clipped to [0, inf].  At n = 2 these are the
exact laws; at any n gamma(t) is the two-logit law's threshold (order 0 of
the saturation law).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special as _sp

from ..registries import OBSERVABLE, OBSERVABLES
from ._quad import _bisect, _gauss_legendre


def _q(g):
    return _sp.expit(-g)


def _gamma_q(t):
    """q(g) = t  <=>  g = ln((1 - t)/t)."""
    with np.errstate(divide="ignore"):
        return np.maximum(np.log1p(-np.minimum(t, 1.0)) - np.log(t), 0.0)


def _gamma_pq(t):
    """p q = e^-g / (1 + e^-g)^2 = t  <=>  e^-g the smaller root alpha of
    alpha / (1 + alpha)^2 = t, alpha = 2t / (1 - 2t + sqrt(1 - 4t)) (no
    cancellation); every row has p q <= 1/4."""
    tc = np.minimum(t, 0.25)
    with np.errstate(divide="ignore"):
        return np.maximum(np.log((1.0 - 2.0 * tc + np.sqrt(1.0 - 4.0 * tc)) / (2.0 * tc)), 0.0)


def _gamma_logit(t):
    """expit(g) = t  <=>  g = ln(t / (1 - t)) (0 below t = 1/2, inf from 1)."""
    with np.errstate(divide="ignore"):
        return np.maximum(np.log(t) - np.log1p(-np.minimum(t, 1.0)), 0.0)


def _entropy2(g):
    """-p ln p - q ln q = ln(1 + e^-g) + q g (ln p = -ln(1 + e^-g))."""
    finite = np.where(g < np.inf, g, 0.0)
    return np.log1p(np.exp(-g)) + _q(finite) * finite * (g < np.inf)


def _gamma_entropy(t):
    t = np.asarray(t, dtype=np.float64)
    lo = np.zeros(t.shape)
    # entropy is decreasing from ln 2 to (g + 1) e^-g, below any t > 1e-320 at g = 800
    g = _bisect(lambda g: _entropy2(g) - t, lo, np.full(t.shape, 800.0), iters=80)
    return np.where(t >= math.log(2.0), 0.0, g)


def _log_expm1(t):
    """ln(e^t - 1), t > 0, without overflow: ln(1 + e^-g) = t <=> g = -this."""
    big = t > 30.0
    return np.where(big, t + np.log1p(-np.exp(-np.where(big, t, 30.0))),
                    np.log(np.expm1(np.where(big, 30.0, t))))


_SQRT2 = math.sqrt(2.0)

# The formulas of a two-logit row of gap g, by the keys the observables'
# records name (fastsoftmax.registries.Observable.two_logit and
# .two_logit_other): p = expit(g) the top probability, q = 1 - p.
_FORMULAS = {
    "p": (lambda g: _sp.expit(g), True, _gamma_logit),
    "q": (_q, False, _gamma_q),
    "h2": (_entropy2, False, _gamma_entropy),
    "pq": (lambda g: _q(g) * _sp.expit(g), False, _gamma_pq),
    "2pq": (lambda g: 2.0 * _q(g) * _sp.expit(g), False, lambda t: _gamma_pq(0.5 * t)),
    "-log p": (lambda g: np.log1p(np.exp(-g)), False, lambda t: np.maximum(-_log_expm1(t), 0.0)),
    "sqrt2 q": (lambda g: _SQRT2 * _q(g), False, lambda t: _gamma_q(t / _SQRT2)),
    "-log q": (lambda g: g + np.log1p(np.exp(-g)), True,
               lambda t: np.maximum(_log_expm1(t), 0.0)),
    "sqrt2 p": (lambda g: _SQRT2 * _sp.expit(g), True, lambda t: _gamma_logit(t / _SQRT2)),
}
# The least value of a targeted observable on a row whose label is not its
# argmax and has p_y <= 1/2 (any row at n > 2 but the argmax's): f at
# p_y = 1/2, by the key of its other-class formula (-log p_y >= ln 2;
# 1 - p_y >= 1/2; ||p - e_y|| >= 1 - p_y >= 1/2).
_OTHER_FLOOR = {"-log q": math.log(2.0), "sqrt2 p": 0.5, "p": 0.5}

# (value f(g), whether f increases, threshold gamma(t)) per observable and
# branch ("top": y the top class; "other": y the other class, targeted only)
_TWO_LOGIT = {(o.name, "top"): _FORMULAS[o.two_logit] for o in OBSERVABLES}
_TWO_LOGIT.update({(o.name, "other"): _FORMULAS[o.two_logit_other]
                   for o in OBSERVABLES if o.two_logit_other is not None})


def _two_logit(obs, branch="top"):
    return _TWO_LOGIT[(obs, branch if (obs, branch) in _TWO_LOGIT else "top")]


def _other_floor(obs):
    """The least value of a targeted ``obs`` whose label is not the argmax, at n > 2."""
    key = OBSERVABLE[obs].two_logit_other
    if key is None:
        raise ValueError(f"{obs} does not depend on the target")
    return _OTHER_FLOOR[key]


def _mean2(f, s, n):
    """E f(s G_1) for n = 2, G_1 = |N(0, 2)|, and f(inf) for n = 1."""
    s, n = np.broadcast_arrays(np.asarray(s, dtype=np.float64), np.asarray(n, dtype=np.float64))
    # geometric panels from 1e-3 min(1, 1/s) to 14 (e^-49), 16 nodes each
    lo = 1e-3 * np.minimum(1.0, 1.0 / np.maximum(s, 1e-300))
    edges = np.concatenate([np.zeros(s.shape + (1,)),
                            np.exp(np.linspace(np.log(lo), math.log(14.0), 40, axis=-1))], -1)
    x, w = _gauss_legendre(16)
    half = 0.5 * (edges[..., 1:] - edges[..., :-1])
    g = (edges[..., :-1, None] + half[..., None] * (1.0 + x)).reshape(s.shape + (-1,))
    wg = (half[..., None] * w).reshape(g.shape)
    dens = np.exp(-0.25 * g * g) / math.sqrt(math.pi)
    val = np.sum(wg * dens * f(s[..., None] * g), axis=-1)
    return np.where(n == 1, f(np.inf) * np.ones(s.shape), val)
