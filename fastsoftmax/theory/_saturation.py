r"""The saturation law: P(obs < t) as t -> 0 for any n, and its exact bounds.

Write a = sum_{i != top} exp(x_i - m1) = e^(-G) R, R = 1 + sum_{i>=3}
exp(x_(i) - m2) in [1, n-1].  Then 1 - p1 = a / (1 + a) exactly, and each
saturating observable is, exactly or within explicit constants, a function
of a (see :meth:`fastsoftmax.theory.Observable.bounds`).  The *two-logit
law* (``order=0``) replaces the row by its top two logits (R = 1):

    P(obs < t) ~= P(G > gamma(t)),   gamma(t) = f2^-1(t),

with f2 the observable of a two-logit row of gap g (:mod:`._two`), e.g.
gamma(t) = ln(1/t) + O(t) for p1 q = a/(1+a)^2.  It is exact for n = 2 and
as sigma -> inf at fixed n and t; the other logits only add the shift
ln R >= 0 to the gap needed (a = e^(-G) R), so for the observables that are
functions of a alone (law keys "a": a/(1+a), ln(1+a); "a_pq": a/(1+a)^2,
the keys of :class:`fastsoftmax.registries.Observable`) it is an *upper*
bound, exact to first order in P(m3 near m2).

``order=1`` adds that first-order correction.  Given m2 = y, the other
logits z_k < y add ln R ~= sum_k h(exp(-sigma (y - z_k))) to the gap needed,
where h(s) is the log-factor one extra logit of relative weight s has on
the observable (ln(1 + s) for the functions of a above, ln(1 + s + s^2)/2
for the gradient norm ("norm"), ln(1 + s/2 + s^2)/2 for ``||J||_F`` ("fro"),
0 for p1 p2 ("p1p2"), whose m3-dependence is of order t).  Replacing the random shift by its
conditional mean (exact to first order; the shift is O(1/sigma) in standard
units),

    P(obs < t) ~= n (n-1) int phi(y) Phi(y)^(n-2)
                  Phi(-y - (gamma(t) + lambda(y)) / sigma) dy,
    lambda(y) = (n - 2) E[h(exp(-sigma (y - z))) | z < y]
              = (n - 2) / Phi(y) int_0^inf h(e^(-sigma u)) phi(y - u) du.

For large sigma lambda(y) ~= (n-2) phi(y) / Phi(y) * C_h / sigma with
C_h = int_0^inf h(e^-v) dv (pi^2/12 for ln(1 + s), pi^2/18 for
ln(1 + s + s^2)/2).  In the random energy model limit (n -> inf at fixed
m = sigma_c / sigma, sigma_c = sqrt(2 ln n), see :func:`freezing_scale`) the
exact law of 1 - p1 is (u / (1-u))^m sin(pi m) / (pi m) for u <= 1/2
(Poisson-Dirichlet, the random energy model's sf of p1, fastsoftmax.theory._rem)
where the two-logit law gives
(u / (1-u))^m: order 0 is high by 1 - sin(pi m)/(pi m) ~= (pi m)^2 / 6
relatively, which order 1 restores to first order.

Domain of validity, measured against ``simulate`` (float64 rows; n = 64,
1,024, 16,384; t = 1e-3, 1e-6, 1e-9; docs/theory.md), with m = sigma_c / sigma:

* m <= 1/8: order 1 within the Monte Carlo error of 10^6 rows (<= 0.5%
  relative); order 0 high by <= 2%;
* m ~= 1/4: order 1 within 2% (slightly low); order 0 high by 6-10%, never
  more than 1 - sin(pi m)/(pi m) of its value;
* m ~= 1/2 (sigma ~= 2 sigma_c): order 1 is 10-15% low, order 0 35-45% high;
* sigma ~< sigma_c: the softmax is diffuse (the rest R is a sum over many
  logits) and saturation is rare; no order is claimed there.

p1 p2 has no first-order term (its two-logit law is a lower bound
within O(n t) of the upper one) and matches at every sigma measured.  The
exact bounds hold everywhere.  The laws neglect terms of relative order t,
so they are meant for t <= 1e-3.

This module holds the laws for logits of one scale sigma (standard units
x = sigma z); the frozen per-observable law mixes them over a dot
product's chi^2 (:class:`fastsoftmax.theory.Observable`).
"""
from __future__ import annotations

import numpy as np
from scipy import special as _sp

from ..registries import OBSERVABLE, OBSERVABLES
from ._gap import _HUGE, _dell_sf, _ell_sf, _log_gap_cdf1, _log_gap_sf1, _m2_nodes
from ._quad import _CHUNK, _flat, _log_phi, _logsum, _panels
from ._two import _SQRT2, _gamma_pq, _gamma_q, _two_logit


def _hs_log1p(s):
    return np.where(s > 0, np.log1p(s) / np.where(s > 0, s, 1.0), 1.0)


def _hs_norm(s):
    return np.where(s > 0, 0.5 * np.log1p(s + s * s) / np.where(s > 0, s, 1.0), 0.5)


def _hs_fro(s):
    return np.where(s > 0, 0.5 * np.log1p(0.5 * s + s * s) / np.where(s > 0, s, 1.0), 0.25)


# h(s) / s for each saturation law key (the observables' records name theirs:
# fastsoftmax.registries.Observable.saturation), h(s) the log-factor by which
# one more logit, of weight s = exp(x - m2) relative to the second largest,
# moves the observable of a saturated row (module docstring); None: no
# first-order effect (p1 p2 does not involve m3 until order t).
_NEIGHBOUR_BY_LAW = {"a": _hs_log1p, "a_pq": _hs_log1p, "norm": _hs_norm, "fro": _hs_fro,
                     "p1p2": None}
_NEIGHBOUR = {o.name: _NEIGHBOUR_BY_LAW[o.saturation] for o in OBSERVABLES
              if o.saturation is not None}


# ----------------------------------------------------------------------------
# the saturation law at order 1 (standard units: x = sigma z)


def _log_neighbour_mean(y, sigma, hs):
    """log E[h(exp(-sigma (y - z))) | z < y], z ~ N(0, 1), by Gauss-Legendre
    in u = y - z on panels cut at 1/(1 + |y|) (the scale of phi(y - u) / Phi(y)
    near u = 0 when y << 0), 2/sigma and 40/sigma (where h(e^-sigma u) lives)
    and max(y, 0) + 12 (where phi(y - u) lives), in logs: h(e^-v) =
    e^-v hs(e^-v).  As s <= 1 and h increases, the mean is <= h(1) =
    hs(1): the clip only guards against a quadrature far outside the
    integrand's support."""
    top = np.maximum(y, 0.0) + 12.0
    cuts = np.minimum(np.stack([1.0 / (1.0 + np.abs(y)), 2.0 / sigma, 40.0 / sigma], -1),
                      top[..., None])
    edges = np.concatenate([np.zeros_like(top)[..., None], np.sort(cuts, axis=-1),
                            top[..., None]], -1)
    parts = [_panels(edges[..., k:k + 1], edges[..., k + 1:k + 2], npan=1, order=24)
             for k in range(edges.shape[-1] - 1)]
    u = np.concatenate([p[0] for p in parts], -1)
    w = np.concatenate([p[1] for p in parts], -1)
    v = sigma[..., None] * u
    logh = -v + np.log(hs(np.exp(-np.minimum(v, 700.0))))
    out = _logsum(logh + _log_phi(y[..., None] - u), w) - _sp.log_ndtr(y)
    return np.minimum(out, np.log(hs(1.0)))


def _log_sat1(gam, sigma, n, hs):
    """log P(G > gam + lambda(m2)) of the order-1 law (module docstring) for
    logits of scale sigma, broadcast arrays; hs None: the two-logit law."""
    shape, (gam, sigma, n) = _flat(gam, sigma, n)
    g1 = _std_gap(gam, sigma)
    out = _log_gap_sf1(g1, n)
    if hs is None:
        return out.reshape(shape)
    # where order 0 is already 0 (g1 >= _HUGE), order 1 <= order 0 is too
    live = np.flatnonzero((n > 2) & (gam > 0) & (sigma > 0) & (g1 < _HUGE))
    for k in range(0, live.size, _CHUNK):
        idx = live[k:k + _CHUNK]
        ga, si, nn = gam[idx, None], sigma[idx, None], n[idx, None]
        # lambda >= 0 only lowers the integrand: the order-0 nodes cover it
        y, w = _m2_nodes(_ell_sf, _dell_sf, ga / si, nn)
        lam = (nn - 2.0) * np.exp(_log_neighbour_mean(y, np.broadcast_to(si, y.shape), hs))
        out[idx] = _logsum(_ell_sf(y, (ga + lam) / si, nn), w)
    return np.minimum(out, 0.0).reshape(shape)


# ----------------------------------------------------------------------------


def _std_gap(gam, sigma):
    """gam / sigma in standard units; a threshold gam <= 0 is the gap 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gam > 0, gam / sigma, 0.0)


def _log_sat0_sf(gam, sigma, n):
    """log P(G <= gam): the complement of the two-logit law, from the gap's
    lower tail (its relative accuracy kept)."""
    shape, (gam, sigma, n) = _flat(gam, sigma, n)
    return _log_gap_cdf1(_std_gap(gam, sigma), n).reshape(shape)


def _bound_gaps(obs, t, n):
    """The gaps (g_lo, g_hi) in logit units and the mask ``valid`` of the
    exact bounds P(G > g_hi) <= P(obs < t) <= P(G > g_lo) where valid (else
    the upper bound is 1); derivation in ``Observable.bounds``."""
    ln1 = np.log(np.maximum(n - 1.0, 1.0))
    valid = np.ones(np.broadcast(t, n).shape, dtype=bool)
    key = OBSERVABLE[obs].saturation
    if key in ("a", "a_pq"):
        gamma = _two_logit(obs)[2]
        g_lo, g_hi = gamma(t), gamma(t) + ln1
        if key == "a_pq":
            valid = t <= (n - 1.0) / (n * n)
    elif key == "p1p2":
        g_hi = _gamma_pq(t)
        tn = (n - 1.0) * t
        g_lo = ln1 + _gamma_pq(tn)
        # the smaller root A of A/(1+A)^2 = (n-1)t must be the only one
        # below n - 1 (the larger is 1/A)
        valid = (tn < 0.25) & (np.exp(-_gamma_pq(tn)) * (n - 1.0) < 1.0)
    elif key == "norm":
        g_lo = _gamma_q(t * np.sqrt((n - 1.0) / np.maximum(n, 2.0)))
        g_hi = ln1 + _gamma_q(t / _SQRT2)
    else:  # "fro"
        cn = np.sqrt((n + 1.0) / np.maximum(n - 1.0, 1.0))
        g_lo = _gamma_pq(t / cn)
        valid = t / cn <= (n - 1.0) / (n * n)
        g_hi = ln1 + _gamma_q(0.5 * t)
    return g_lo, g_hi, valid
