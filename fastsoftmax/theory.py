r"""Laws of softmax saturation: what ``simulate`` should measure, by quadrature.

For n i.i.d. N(0, sigma^2) logits x_1..x_n with order statistics
m1 >= m2 >= m3 ..., every statistic of the softmax is a function of the
*gaps*.  This module gives

* the exact law of the top-two gap G = m1 - m2 (in logit units) for any n:
  ``gap_sf``, ``gap_cdf``, ``gap_quantile``, ``gap_median`` for the standard
  gap G_1 (sigma = 1), and the same methods on a :class:`Law`;
* the exact laws of all nine observables for n <= 2 (``Law.fraction_below``,
  ``Law.mean``, ``Law.quantile``), where the row is a function of G alone;
* the saturation law P(obs < t) of the Jacobian and cross-entropy observables
  as t -> 0 for any n, with exact bounds (``Law.fraction_bounds``), the
  leading-order *two-logit* law (``order=0``) and its first-order correction
  from the other logits (``order=1``, the default);
* the scale sigma*(t) and, for unscaled dot products, d_k*(t) at which the
  median of an observable crosses t (``critical_scale``, ``critical_d_k``);
* the random-energy-model asymptotics at large n (``freezing_scale``,
  ``rem_entropy``, ``rem_max_prob``, ``expected_max``).

Models
------
``law(model)`` turns a :mod:`fastsoftmax.models` object into a :class:`Law`:
``Gaussian(n, scale, mean, temperature)`` and ``Shifted(n, offset, spread,
temperature)`` are Gaussian laws of logit scale s = scale / T (softmax is
shift invariant, so ``mean`` and ``offset`` drop out); ``DotProduct(n, d_k,
scaled, temperature)`` is, given the query, Gaussian of scale
s = b sqrt(c) / T with c = ``|q|^2`` ~ chi^2(d_k) and b = 1/sqrt(d_k) if scaled
else 1, so its laws are one-dimensional chi^2 mixtures of the Gaussian ones
(the kernels' ``method="exact"`` uses the same fact).  Every function is
vectorised over its arguments and the law's parameters by NumPy broadcasting.

The top-two gap
---------------
Conditioning on m2 = y (density n(n-1) phi(y) Phi(y)^(n-2) Phi(-y)), the top
logit is a normal truncated to (y, inf) and the other n - 2 are normals
truncated to (-inf, y), all independent (the Markov property of order
statistics).  Hence, for the standard gap G_1 = G / sigma,

    P(G_1 > g) = n (n-1) int phi(y) Phi(y)^(n-2) Phi(-y-g) dy
               = n int phi(x) Phi(x-g)^(n-1) dx          (the issue's form),

exact for any n >= 2 (n = 1 has no second logit: G = inf).  The integrand is
log-concave in y (phi, Phi and Phi(-y-g) all are), so its log has a single
maximum: we locate it by bisection on the derivative, find where the log has
dropped by 60 on each side (bisection again: concavity makes each side
monotone) and integrate exp(log-integrand) with Gauss-Legendre panels on
each side, in log space (``scipy.special.log_ndtr``).  Nothing depends on
where the peak is or how sharp it is, so n = 2 and n = 10^9 take the same
time, and tails keep their relative accuracy until they underflow.  The
lower tail P(G_1 < g) is integrated from the density of G_1, never taken as
1 - sf.  Measured against 30-digit mpmath (tests/test_theory.py): relative
error <= 1e-12 for n = 2 ... 65,536 down to sf = 1e-122 (observed 3e-14),
1e-11 for the lower tail down to cdf = 1e-10; chi^2 mixtures (dot
products): <= 1e-10 down to 1e-25, degrading below 1e-30 (the mixture nodes
are fixed, not placed on the tail's peak).

Saturation
----------
Write a = sum_{i != top} exp(x_i - m1) = e^(-G) R, R = 1 + sum_{i>=3}
exp(x_(i) - m2) in [1, n-1].  Then 1 - p1 = a / (1 + a) exactly, and each
saturating observable is, exactly or within explicit constants, a function
of a (see :meth:`Law.fraction_bounds`).  The *two-logit law* (``order=0``)
replaces the row by its top two logits (R = 1):

    P(obs < t) ~= P(G > gamma(t)),   gamma(t) = f2^-1(t),

with f2 the observable of a two-logit row of gap g, e.g. gamma(t) =
ln(1/t) + O(t) for jac_diag_max.  It is exact for n = 2 and as sigma -> inf
at fixed n and t; the other logits only add the shift ln R >= 0 to the gap
needed (a = e^(-G) R), so for 1 - max_prob, jac_diag_max, ce_grad_target and
ce_loss it is an *upper* bound, exact to first order in P(m3 near m2).

``order=1`` adds that first-order correction.  Given m2 = y, the other
logits z_k < y add ln R ~= sum_k h(exp(-sigma (y - z_k))) to the gap needed,
where h(s) is the log-factor one extra logit of relative weight s has on
the observable (ln(1 + s) for the a-functions above, ln(1 + s + s^2)/2 for
ce_grad_norm, ln(1 + s/2 + s^2)/2 for jac_fro, 0 for jac_offdiag_max = p1 p2
whose m3-dependence is of order t).  Replacing the random shift by its
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
exact law of 1 - max_prob is (u / (1-u))^m sin(pi m) / (pi m) for u <= 1/2
(Poisson-Dirichlet, :func:`rem_max_prob_sf`) where the two-logit law gives
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

jac_offdiag_max has no first-order term (its two-logit law is a lower bound
within O(n t) of the upper one) and matches at every sigma measured.  The
exact bounds of :meth:`Law.fraction_bounds` hold everywhere.  The laws
neglect terms of relative order t, so they are meant for t <= 1e-3.

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
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

try:
    from scipy import special as _sp
except ImportError as _err:  # pragma: no cover - exercised in a subprocess test
    raise ImportError("fastsoftmax.theory needs SciPy: pip install 'fastsoftmax[theory]'") \
        from _err

from . import models as _models
from ._math import OBS_NAMES

__all__ = ["Law", "law", "gap_sf", "gap_cdf", "gap_quantile", "gap_median",
           "critical_scale", "critical_d_k", "freezing_scale", "rem_entropy",
           "rem_max_prob", "rem_max_prob_sf", "expected_max", "stated_accuracy",
           "ACCURACY", "SATURATING"]

#: The observables with a saturation law (a small value means a saturated row):
#: :meth:`Law.fraction_below` covers them at any n, with bounds from
#: :meth:`Law.fraction_bounds`.
SATURATING = ("one_minus_max_prob", "jac_diag_max", "jac_offdiag_max", "jac_fro",
              "ce_loss", "ce_grad_norm", "ce_grad_target")
# the ones whose value depends on the target class
_TARGETED = ("ce_loss", "ce_grad_norm", "ce_grad_target")
_TARGETS = ("argmax", "random")

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
# drop of the log-integrand at which a concave integrand is cut (e^-60 ~ 1e-26)
_DROP = 60.0
# panels x Gauss-Legendre order on each side of a peak
_PANELS, _ORDER = 2, 32
# chi^2 mixtures: cut where the log-density of ln c has dropped by this much
# (e^-120 ~ 8e-53); panels on the far left and near the mode (x 8 nodes)
_CHI2_DROP, _CHI2_FAR, _CHI2_NEAR = 120.0, 6, 12
_HUGE = 1e6
# elements evaluated at once (times the nodes: bounds the memory, ~10 MB an
# array): _CHUNK for the order-1 law (y x u nodes), more for the gap's
_CHUNK = 256


# ----------------------------------------------------------------------------
# argument checks


def _real_array(name: str, v: ArrayLike) -> np.ndarray:
    try:
        a = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be real numbers, got {v!r}") from None
    if np.isnan(a).any():
        raise ValueError(f"{name} must not be NaN, got {v!r}")
    return a


def _check_n(n: ArrayLike) -> np.ndarray:
    a = _real_array("n", n)
    if (a < 1).any() or (a != np.floor(a)).any() or np.isinf(a).any():
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    return a


def _check_scale(name: str, v: ArrayLike) -> np.ndarray:
    a = _real_array(name, v)
    if (a < 0).any() or np.isinf(a).any():
        raise ValueError(f"{name} must be finite and >= 0, got {v!r}")
    return a


def _check_positive(name: str, v: ArrayLike) -> np.ndarray:
    a = _real_array(name, v)
    if not (a > 0).all() or np.isinf(a).any():
        raise ValueError(f"{name} must be finite and > 0, got {v!r}")
    return a


def _check_t(t: ArrayLike, name: str = "t") -> np.ndarray:
    a = _real_array(name, t)
    if not ((a > 0) & (a <= 1)).all():
        raise ValueError(f"{name} must lie in (0, 1], got {t!r}")
    return a


def _check_prob(name: str, q: ArrayLike) -> np.ndarray:
    a = _real_array(name, q)
    if not ((a >= 0) & (a <= 1)).all():
        raise ValueError(f"{name} must lie in [0, 1], got {q!r}")
    return a


def _check_obs(obs: str, allowed: tuple[str, ...] = OBS_NAMES) -> str:
    if obs not in allowed:
        raise ValueError(f"obs must be one of {', '.join(allowed)}; got {obs!r}")
    return obs


def _check_target(target: str) -> str:
    if target not in _TARGETS:
        raise ValueError(f"target must be 'argmax' or 'random', got {target!r}")
    return target


def _check_order(order: int) -> int:
    if order not in (0, 1):
        raise ValueError(f"order must be 0 or 1, got {order!r}")
    return order


# ----------------------------------------------------------------------------
# quadrature primitives.  Arrays carry the parameters' broadcast shape S plus
# a trailing axis: of length 1 while a peak is located, of the nodes after.

_GL: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _gauss_legendre(k):
    if k not in _GL:
        _GL[k] = np.polynomial.legendre.leggauss(k)
    return _GL[k]


def _log_phi(x):
    return -0.5 * x * x - _LOG_SQRT_2PI


def _bisect(f, lo, hi, iters=64):
    """Root of f between lo and hi elementwise, f(lo) > 0 > f(hi) (either end
    may be the larger).  64 halvings reach float64 resolution of any bracket
    used here."""
    lo = np.array(lo, dtype=np.float64)
    hi = np.array(hi, dtype=np.float64)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        pos = f(mid) > 0
        lo = np.where(pos, mid, lo)
        hi = np.where(pos, hi, mid)
    return 0.5 * (lo + hi)


def _panels(a, b, npan=_PANELS, order=_ORDER):
    """Gauss-Legendre nodes and weights on [a, b] (shape S + (1,)) cut into
    npan equal panels: shape S + (npan * order,)."""
    x, w = _gauss_legendre(order)
    half = 0.5 * (b - a) / npan
    start = a + 2.0 * half * np.arange(npan)
    nodes = start[..., :, None] + half[..., None] * (1.0 + x)
    weights = np.broadcast_to(half[..., None] * w, nodes.shape)
    shape = nodes.shape[:-2] + (npan * order,)
    return nodes.reshape(shape), weights.reshape(shape)


def _peak_nodes(ell, dell, lo, hi):
    """Nodes and weights for int exp(ell(y)) dy, ell concave on [lo, hi]: the
    mode by bisection on dell, the points where ell has dropped by _DROP (each
    side of a concave function is monotone), Gauss-Legendre panels on each
    side of the mode.  The cut tails hold < e^-_DROP of the integral."""
    y0 = _bisect(dell, lo, hi)
    cut = ell(y0) - _DROP
    yl = _bisect(lambda y: cut - ell(y), lo, y0)
    yr = _bisect(lambda y: ell(y) - cut, y0, hi)
    xl, wl = _panels(yl, y0)
    xr, wr = _panels(y0, yr)
    return np.concatenate([xl, xr], -1), np.concatenate([wl, wr], -1)


def _logsum(values, w):
    """log sum_k w_k exp(values_k) over the trailing axis (w >= 0)."""
    with np.errstate(divide="ignore"):
        return _sp.logsumexp(values + np.log(w), axis=-1)


def _solve(f, lo, hi, tol=1e-13, maxiter=200, flo=None, fhi=None):
    """x in [lo, hi] with f(x) = 0 for increasing f, f(lo) <= 0 <= f(hi),
    elementwise: Illinois false position (superlinear on smooth f), with a
    bisection every fourth step so that the bracket shrinks geometrically
    whatever f looks like.  ``flo``, ``fhi``: f(lo), f(hi) if known."""
    lo, hi = (np.array(v, dtype=np.float64) for v in np.broadcast_arrays(lo, hi))
    flo = f(lo) if flo is None else np.array(flo, dtype=np.float64)
    fhi = f(hi) if fhi is None else np.array(fhi, dtype=np.float64)
    side = np.zeros(lo.shape, dtype=np.int8)
    for it in range(maxiter):
        done = ((hi - lo) <= tol * (1.0 + np.abs(lo) + np.abs(hi))) | (flo == 0) | (fhi == 0)
        if done.all():
            break
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            x = hi - fhi * (hi - lo) / (fhi - flo)
        mid = 0.5 * (lo + hi)
        x = np.where(~np.isfinite(x) | (x <= lo) | (x >= hi) | (it % 4 == 3), mid, x)
        fx = f(x)
        up = (fx > 0) & ~done
        dn = ~(fx > 0) & ~done
        # Illinois: an end kept twice in a row has its value halved
        flo = np.where(up & (side == 1), 0.5 * flo, flo)
        fhi = np.where(dn & (side == -1), 0.5 * fhi, fhi)
        hi, fhi = np.where(up, x, hi), np.where(up, fx, fhi)
        lo, flo = np.where(dn, x, lo), np.where(dn, fx, flo)
        side = np.where(up, 1, np.where(dn, -1, side)).astype(np.int8)
    with np.errstate(invalid="ignore", divide="ignore"):
        x = hi - fhi * (hi - lo) / (fhi - flo)
    x = np.where(np.isfinite(x) & (x >= lo) & (x <= hi), x, 0.5 * (lo + hi))
    return np.where(flo == 0, lo, np.where(fhi == 0, hi, x))


# ----------------------------------------------------------------------------
# the standard gap G_1 (sigma = 1): y is m2, the integrands are log-concave


def _ell_sf(y, g, n):
    """log of n(n-1) phi(y) Phi(y)^(n-2) Phi(-y-g): the density of m2 = y
    times P(m1 > y + g | m2 = y)."""
    return (np.log(n) + np.log(n - 1) + _log_phi(y) + (n - 2) * _sp.log_ndtr(y)
            + _sp.log_ndtr(-(y + g)))


def _dell_sf(y, g, n):
    return (-y + (n - 2) * np.exp(_log_phi(y) - _sp.log_ndtr(y))
            - np.exp(_log_phi(y + g) - _sp.log_ndtr(-(y + g))))


def _ell_pdf(y, s, n):
    """log of n(n-1) phi(y) Phi(y)^(n-2) phi(y+s): the density of G_1 at s is
    its integral over y."""
    return (np.log(n) + np.log(n - 1) + _log_phi(y) + (n - 2) * _sp.log_ndtr(y)
            + _log_phi(y + s))


def _dell_pdf(y, s, n):
    return -y + (n - 2) * np.exp(_log_phi(y) - _sp.log_ndtr(y)) - (y + s)


def _m2_nodes(ell, dell, g, n):
    """Nodes over m2 for a gap integrand; g, n of shape S + (1,).  The mode
    lies in [-g - 40, 40] for any n < 1e300: the derivative is > 0 at the left
    end and < 0 at the right one."""
    lo = -g - 40.0
    return _peak_nodes(lambda y: ell(y, g, n), lambda y: dell(y, g, n),
                       lo, np.full_like(lo, 40.0))


def _flat(*arrays: ArrayLike) -> tuple[tuple[int, ...], list[np.ndarray]]:
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in arrays))
    return arrays[0].shape, [a.reshape(-1) for a in arrays]


def _log_gap_sf1(g, n):
    """log P(G_1 > g), arrays g, n broadcast (n = 1: G_1 = inf)."""
    shape, (g, n) = _flat(g, n)
    out = np.zeros(g.shape)
    # P(G_1 > g) < e^(-g^2/4) underflows long before _HUGE (whose square
    # would overflow in the integrand)
    out[(n >= 2) & (g >= _HUGE)] = -np.inf
    live = (n >= 2) & (g > 0) & (g < _HUGE)
    idx = np.flatnonzero(live)
    for k in range(0, idx.size, 64 * _CHUNK):
        i = idx[k:k + 64 * _CHUNK]
        gl, nl = g[i, None], n[i, None]
        y, w = _m2_nodes(_ell_sf, _dell_sf, gl, nl)
        out[i] = _logsum(_ell_sf(y, gl, nl), w)
    return np.minimum(out, 0.0).reshape(shape)


def _log_gap_pdf1(s, n):
    """log density of G_1 at s > 0 (1-d arrays, n >= 2)."""
    s, n = s[:, None], n[:, None]
    y, w = _m2_nodes(_ell_pdf, _dell_pdf, s, n)
    return _logsum(_ell_pdf(y, s, n), w)


def _log_gap_cdf1(g, n):
    """log P(G_1 <= g): 1 - sf where sf <= 1/2, else the integral of the
    density over [0, g], so that the lower tail keeps its relative accuracy."""
    shape, (g, n) = _flat(g, n)
    lsf = _log_gap_sf1(g, n)
    with np.errstate(divide="ignore"):
        out = np.log(-np.expm1(lsf))
    out[(n < 2) | (g <= 0)] = -np.inf
    idx = np.flatnonzero((n >= 2) & (g > 0) & (lsf > -math.log(2.0)))
    for k in range(0, idx.size, 2 * _CHUNK):
        i = idx[k:k + 2 * _CHUNK]
        gl, nl = g[i, None], n[i, None]
        s, w = _panels(np.zeros_like(gl), gl, npan=2, order=24)
        lp = _log_gap_pdf1(s.reshape(-1), np.broadcast_to(nl, s.shape).reshape(-1))
        out[i] = _logsum(lp.reshape(s.shape), w)
    return np.minimum(out, 0.0).reshape(shape)


# ----------------------------------------------------------------------------
# two-logit rows: every observable as a function of the gap g >= 0 (logit
# units) of a row whose only logits are its top two, with p1 = expit(g),
# q = 1 - p1 = expit(-g).  "top": the target is the argmax; "other": it is the
# other class (target "random" at n = 2).  Each entry: value f(g), increasing?,
# and the gap threshold gamma(t) with {f(G) < t} = {G > gamma} (decreasing f)
# or {G < gamma} (increasing f), clipped to [0, inf].


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

_TWO_LOGIT = {
    ("max_prob", "top"): (lambda g: _sp.expit(g), True, _gamma_logit),
    ("one_minus_max_prob", "top"): (_q, False, _gamma_q),
    ("entropy", "top"): (_entropy2, False, _gamma_entropy),
    ("jac_diag_max", "top"): (lambda g: _q(g) * _sp.expit(g), False, _gamma_pq),
    ("jac_offdiag_max", "top"): (lambda g: _q(g) * _sp.expit(g), False, _gamma_pq),
    ("jac_fro", "top"): (lambda g: 2.0 * _q(g) * _sp.expit(g), False,
                         lambda t: _gamma_pq(0.5 * t)),
    ("ce_loss", "top"): (lambda g: np.log1p(np.exp(-g)), False,
                         lambda t: np.maximum(-_log_expm1(t), 0.0)),
    ("ce_grad_norm", "top"): (lambda g: _SQRT2 * _q(g), False,
                              lambda t: _gamma_q(t / _SQRT2)),
    ("ce_grad_target", "top"): (_q, False, _gamma_q),
    ("ce_loss", "other"): (lambda g: g + np.log1p(np.exp(-g)), True,
                           lambda t: np.maximum(_log_expm1(t), 0.0)),
    ("ce_grad_norm", "other"): (lambda g: _SQRT2 * _sp.expit(g), True,
                                lambda t: _gamma_logit(t / _SQRT2)),
    ("ce_grad_target", "other"): (lambda g: _sp.expit(g), True, _gamma_logit),
}


def _two_logit(obs, branch="top"):
    return _TWO_LOGIT[(obs, branch if obs in _TARGETED else "top")]


def _hs_log1p(s):
    return np.where(s > 0, np.log1p(s) / np.where(s > 0, s, 1.0), 1.0)


def _hs_norm(s):
    return np.where(s > 0, 0.5 * np.log1p(s + s * s) / np.where(s > 0, s, 1.0), 0.5)


def _hs_fro(s):
    return np.where(s > 0, 0.5 * np.log1p(0.5 * s + s * s) / np.where(s > 0, s, 1.0), 0.25)


# h(s) / s for each saturating observable, h(s) the log-factor by which one
# more logit, of weight s = exp(x - m2) relative to the second largest, moves
# the observable of a saturated row (module docstring); None: no first-order
# effect (p1 p2 does not involve m3 until order t).
_NEIGHBOUR = {
    "one_minus_max_prob": _hs_log1p, "jac_diag_max": _hs_log1p, "ce_grad_target": _hs_log1p,
    "ce_loss": _hs_log1p, "ce_grad_norm": _hs_norm, "jac_fro": _hs_fro,
    "jac_offdiag_max": None,
}


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
    with np.errstate(divide="ignore", invalid="ignore"):
        g1 = np.where(gam > 0, gam / sigma, 0.0)
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
# laws


class Law:
    """The laws of the softmax observables for one family of logit models.

    Do not construct directly: use :func:`law` (from a model object),
    :meth:`Law.gaussian` or :meth:`Law.dot_product` (from parameter arrays,
    broadcast against each other and against every method's arguments, like
    a frozen :mod:`scipy.stats` distribution).

    A Gaussian law has n i.i.d. N(0, scale^2) logits; a dot-product law has,
    given ``|q|^2`` = c ~ chi^2(d_k), n i.i.d. N(0, s^2) logits with
    s = b sqrt(c) / temperature, b = 1/sqrt(d_k) if scaled else 1.  Every
    method of a dot-product law is the chi^2 mixture of the Gaussian one
    (Gauss-Legendre in ln c around the mode of its log-concave density, cut
    where it has dropped by e^-120, weights normalised).

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
    >>> print(f"{float(g.fraction_below('jac_diag_max', 1e-6)):.4f}")
    0.4983
    >>> d = theory.Law.dot_product([64, 1024], 4096, scaled=False)
    >>> print(d.gap_median().round(1))
    [18.1 13.3]
    """

    def __init__(self, n: np.ndarray, **params: np.ndarray) -> None:
        self.n = n
        self.params = params
        # gap quantiles already solved (a law's parameters never change):
        # the medians of all nine observables share one
        self._gap_quantiles: dict[tuple[Any, ...], np.ndarray] = {}

    # construction -----------------------------------------------------------

    @classmethod
    def gaussian(cls, n: ArrayLike, scale: ArrayLike = 1.0) -> "Law":
        """Law of n i.i.d. N(0, scale^2) logits.

        Parameters
        ----------
        n : array_like of int
            Logits per row, >= 1.
        scale : array_like of float
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
        >>> print(f"{float(theory.Law.gaussian(64, 49.0).gap_median()):.3f}")
        13.824
        """
        return _GaussianLaw(_check_n(n), scale=_check_scale("scale", scale))

    @classmethod
    def dot_product(cls, n: ArrayLike, d_k: ArrayLike, scaled: ArrayLike = True,
                    temperature: ArrayLike = 1.0) -> "Law":
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
        scaled : array_like of bool
            Divide the dot products by sqrt(d_k) (True) or not.
        temperature : array_like of float, > 0
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
        >>> print(f"{float(unscaled.fraction_below('jac_diag_max', 1e-6)):.4f}")
        0.5905
        """
        scaled = np.asarray(scaled)
        if scaled.dtype != np.bool_:
            raise ValueError(f"scaled must be True or False, got {scaled!r}")
        return _DotLaw(_check_n(n), d_k=_check_positive("d_k", d_k), scaled=scaled,
                       temperature=_check_positive("temperature", temperature))

    # the mixture over the logit scale, implemented by the subclasses --------

    def _mix(self, fn, *args, log=True):
        """E over the logit scale s of fn(s, n, *args): log-values combined in
        log space (log=True) or values averaged."""
        raise NotImplementedError

    def _scale_bound(self):
        """A logit scale that the law exceeds with probability < 1e-40."""
        raise NotImplementedError

    # the top-two gap ---------------------------------------------------------

    def gap_sf(self, g: ArrayLike) -> np.ndarray:
        """P(G > g), the survival function of the top-two gap G = m1 - m2.

        G is in logit units (the standard gap times the logit scale).

        Parameters
        ----------
        g : array_like of float
            The gap, in logit units.

        Returns
        -------
        ndarray
            Broadcast over g and the law's parameters.  Exact up to quadrature
            (relative error <= 1e-13 where the value is >= 1e-30, tails keep
            relative accuracy until they underflow); 1 for n = 1 (no second
            logit: G = inf).

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(f"{float(theory.Law.gaussian(2, 1.0).gap_sf(20.0)):.6e}")
        2.088488e-45
        """
        g = _real_array("g", g)
        return np.exp(self._mix(lambda s, n, g: _log_gap_sf1(_per_scale(g, s), n), g))

    def gap_cdf(self, g: ArrayLike) -> np.ndarray:
        """P(G <= g), the lower tail of the top-two gap.

        Integrated from the density, never taken as 1 - sf, so that it keeps
        its relative accuracy for small g.

        Parameters
        ----------
        g : array_like of float
            The gap, in logit units.

        Returns
        -------
        ndarray
            Broadcast over g and the law's parameters; 0 for n = 1.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(f"{float(theory.Law.gaussian(2, 1.0).gap_cdf(1e-9)):.6e}")
        5.641896e-10
        """
        g = _real_array("g", g)
        return np.exp(self._mix(lambda s, n, g: _log_gap_cdf1(_per_scale(g, s), n), g))

    def gap_quantile(self, q: ArrayLike) -> np.ndarray:
        """The q-quantile of G: the g with P(G <= g) = q.

        Parameters
        ----------
        q : array_like of float in [0, 1]
            The probability level.

        Returns
        -------
        ndarray
            Solved on the log cdf (q <= 1/2) or the log sf (q > 1/2) in ln g,
            to 1e-13 relative.  0 for q = 0, inf for q = 1 (and for n = 1).

        Raises
        ------
        ValueError
            If q is outside [0, 1].

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(f"{float(theory.Law.gaussian(64, 1.0).gap_quantile(0.5)):.4f}")
        0.2821
        """
        q = _check_prob("q", q)
        key = (q.shape, q.tobytes())
        if key not in self._gap_quantiles:
            self._gap_quantiles[key] = self._gap_quantile(q)
        return self._gap_quantiles[key].copy()

    def _gap_quantile(self, q: np.ndarray) -> np.ndarray:
        shape, (q, n, scale) = _flat(q, self.n, self._scale_bound())
        out = np.full(q.shape, np.inf)
        out[q == 0] = 0.0
        out[(q > 0) & (scale == 0) & (n >= 2)] = 0.0
        live = (q > 0) & (q < 1) & (n >= 2) & (scale > 0)
        if live.any():
            sub = self._restrict(live, shape)
            ql = q[live]
            lq, l1q = np.log(ql), np.log1p(-ql)
            # the lower tail where q < 1/2 (relative accuracy), the upper one
            # elsewhere: each element evaluates only its own branch (the
            # lower tail integrates the density: many times the cost)
            low = ql < 0.5
            sub_lo, sub_hi = sub._restrict(low, low.shape), sub._restrict(~low, low.shape)

            def f(x):
                g = np.exp(x)
                out = np.empty(g.shape)
                if low.any():
                    out[low] = sub_lo._log_cdf_flat(g[low]) - lq[low]
                if not low.all():
                    out[~low] = l1q[~low] - sub_hi._log_sf_flat(g[~low])
                return out

            hi = np.log(100.0 * scale[live])
            out[live] = np.exp(_solve(f, np.full(ql.shape, -700.0), hi))
        return out.reshape(shape)

    def gap_median(self) -> np.ndarray:
        """The median of G (``gap_quantile(0.5)``).

        Returns
        -------
        ndarray
            The median gap in logit units, broadcast over the parameters.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(f"{float(theory.Law.gaussian(2, 1.0).gap_median()):.6f}")
        0.953873
        """
        return self.gap_quantile(0.5)

    def _restrict(self, mask, shape):
        """The law at the flat positions ``mask`` of the broadcast ``shape``."""
        params = {k: np.broadcast_to(v, shape).reshape(-1)[mask] for k, v in self.params.items()}
        return type(self)(np.broadcast_to(self.n, shape).reshape(-1)[mask], **params)

    def _log_sf_flat(self, g):
        return self._mix(lambda s, n, g: _log_gap_sf1(_per_scale(g, s), n), g)

    def _log_cdf_flat(self, g):
        return self._mix(lambda s, n, g: _log_gap_cdf1(_per_scale(g, s), n), g)

    # observables -------------------------------------------------------------

    def fraction_below(self, obs: str, t: ArrayLike, target: str = "argmax",
                       order: int = 1) -> np.ndarray:
        r"""P(obs < t): the fraction of rows whose observable is below t.

        Exact for n <= 2 (every observable, targets "argmax" and "random").
        For n > 2, the saturation law of the observables in ``SATURATING``
        (the Jacobian ones, 1 - max_prob and the cross-entropy ones): an
        asymptotic law as t -> 0 (module docstring).

        Parameters
        ----------
        obs : str
            An observable name (``fastsoftmax.OBS_NAMES``).
        t : array_like of float
            The threshold, in (0, 1] (ce_loss, ce_grad_norm and entropy may
            exceed 1 at n <= 2).
        target : {"argmax", "random"}
            The cross-entropy target; "random" (a uniform label) is, for
            n > 2 and t <= 1/2 (ln 2 for ce_loss), exactly 1/n times the
            argmax law: a row whose label is not its argmax has
            1 - p_y >= 1/2.
        order : {0, 1}
            0: the two-logit law P(G > gamma(t)); 1: with the first-order
            correction from the other logits.  Equal for n <= 2.

        Returns
        -------
        ndarray
            Broadcast over t and the law's parameters.

        Raises
        ------
        ValueError
            For an unknown observable, target or order, t out of range, an
            observable without a law at that n (max_prob and entropy at
            n > 2: see :func:`rem_max_prob`, :func:`rem_entropy`).

        Notes
        -----
        Two-logit law: with gamma(t) the gap at which a two-logit row has
        obs = t (e.g. jac_diag_max = e^-g / (1 + e^-g)^2, gamma = ln(1/t) +
        2t + O(t^2)), P(obs < t) ~= P(G > gamma(t)).  Order 1 adds to gamma
        the mean log-factor lambda(m2) of the logits below m2.  Accuracy
        (measured against ``simulate``, module docstring and docs/theory.md),
        with m = sigma_c / sigma, sigma_c = sqrt(2 ln n), t <= 1e-3: order 1
        within 0.5% for m <= 1/8 and 2% at m = 1/4, 10-15% low at m = 1/2;
        order 0 high by about (pi m)^2 / 6 relatively (at most
        1 - sin(pi m)/(pi m)).  :meth:`fraction_bounds` gives bounds valid
        everywhere.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> g = theory.Law.gaussian(64, 49.0)
        >>> p0 = g.fraction_below("jac_diag_max", 1e-6, order=0)
        >>> p1 = g.fraction_below("jac_diag_max", 1e-6)
        >>> print(f"{float(p0):.4f} {float(p1):.4f}")
        0.5002 0.4983
        """
        _check_obs(obs)
        _check_target(target)
        _check_order(order)
        t = self._check_threshold(obs, t, target)
        self._check_law(obs)
        f, increasing, gamma = _two_logit(obs)
        gam = gamma(t)
        if increasing:
            return np.exp(self._log_cdf(gam))
        hs = _NEIGHBOUR.get(obs) if order == 1 else None
        top = np.exp(self._mix(lambda s, n, gam: _log_sat1(gam, s, n, hs), gam))
        if target == "argmax" or obs not in _TARGETED:
            return top
        return self._random(obs, t, top)

    def _check_law(self, obs):
        if obs in ("max_prob", "entropy") and (self.n > 2).any():
            raise ValueError(f"obs {obs!r} has no saturation law for n > 2 (see rem_max_prob, "
                             "rem_entropy); its law here is for n <= 2")

    def _log_cdf(self, g):
        return self._mix(lambda s, n, g: _log_gap_cdf1(_per_scale(g, s), n), g)

    def _random(self, obs, t, top):
        """target "random": the label is the argmax with probability 1/n."""
        n = self.n
        _, inc, gamma = _two_logit(obs, "other")
        other = np.exp(self._log_cdf(gamma(t)))
        # n > 2: a row whose label is not the argmax has 1 - p_y >= 1/2, so
        # (the thresholds being checked) only the argmax rows count
        other = np.where(n == 2, other, 0.0)
        return np.where(n == 1, top, top / n + (1.0 - 1.0 / n) * other)

    def _check_threshold(self, obs: str, t: ArrayLike, target: str) -> np.ndarray:
        wide = obs in ("ce_loss", "ce_grad_norm", "entropy") and not (self.n > 2).any()
        if wide:
            a = _real_array("t", t)
            if not (a > 0).all():
                raise ValueError(f"t must be > 0, got {t!r}")
            return a
        a = _check_t(t)
        if target == "random" and obs in _TARGETED and (self.n > 2).any():
            lim = math.log(2.0) if obs == "ce_loss" else 0.5
            if (a > lim).any():
                raise ValueError(f"t must be <= {lim:.4g} for target 'random' at n > 2 "
                                 f"(the law counts only the rows labelled by their argmax)")
        return a

    def fraction_bounds(self, obs: str, t: ArrayLike,
                        target: str = "argmax") -> tuple[np.ndarray, np.ndarray]:
        r"""Exact bounds lo <= P(obs < t) <= hi for a saturating observable.

        Valid for any n and any logit scale: they follow from the exact gap
        law alone (no asymptotics).

        Parameters
        ----------
        obs : str
            One of ``SATURATING``.
        t : array_like of float in (0, 1]
            The threshold.
        target : {"argmax", "random"}
            The cross-entropy target (as :meth:`fraction_below`).

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
          p_j^2 (1 - 2 p_j) + u2^2 (fastsoftmax._math), hence
          sqrt((n+1)/(n-1)) p1 q <= ``||J||_F`` <= 2q (every term is >= 0 as
          p_j <= 1/2 off the top, and 3 p1^2 + 1 + q^2 <= 4).

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> lo, hi = theory.Law.gaussian(64, 49.0).fraction_bounds("jac_diag_max", 1e-6)
        >>> print(f"{float(lo):.3f} {float(hi):.3f}")
        0.401 0.500
        """
        _check_obs(obs, SATURATING)
        _check_target(target)
        t = self._check_threshold(obs, t, target)
        n = self.n
        ln1 = np.log(np.maximum(n - 1.0, 1.0))
        valid = np.ones(np.broadcast(t, n).shape, dtype=bool)
        if obs in ("one_minus_max_prob", "ce_grad_target", "ce_loss", "jac_diag_max"):
            gamma = _two_logit(obs)[2]
            g_lo, g_hi = gamma(t), gamma(t) + ln1
            if obs == "jac_diag_max":
                valid = t <= (n - 1.0) / (n * n)
        elif obs == "jac_offdiag_max":
            g_hi = _gamma_pq(t)
            tn = (n - 1.0) * t
            g_lo = ln1 + _gamma_pq(tn)
            # the smaller root A of A/(1+A)^2 = (n-1)t must be the only one
            # below n - 1 (the larger is 1/A)
            valid = (tn < 0.25) & (np.exp(-_gamma_pq(tn)) * (n - 1.0) < 1.0)
        elif obs == "ce_grad_norm":
            g_lo = _gamma_q(t * np.sqrt((n - 1.0) / np.maximum(n, 2.0)))
            g_hi = ln1 + _gamma_q(t / _SQRT2)
        else:  # jac_fro
            cn = np.sqrt((n + 1.0) / np.maximum(n - 1.0, 1.0))
            g_lo = _gamma_pq(t / cn)
            valid = t / cn <= (n - 1.0) / (n * n)
            g_hi = ln1 + _gamma_q(0.5 * t)
        sf = self.gap_sf
        lo = sf(g_hi)
        hi = np.where(valid, sf(g_lo), 1.0)
        lo = np.where(n == 1, 1.0, lo)
        hi = np.where(n == 1, 1.0, hi)
        if target == "random" and obs in _TARGETED:
            lo, hi = self._random(obs, t, lo), self._random(obs, t, hi)
        return lo, hi

    def mean(self, obs: str, target: str = "argmax") -> np.ndarray:
        r"""E[obs], exact for n <= 2.

        Parameters
        ----------
        obs : str
            An observable name (``fastsoftmax.OBS_NAMES``).
        target : {"argmax", "random"}
            The cross-entropy target.

        Returns
        -------
        ndarray
            The mean, broadcast over the law's parameters.

        Raises
        ------
        ValueError
            If n > 2 (the mean is not set by the saturated rows), or for an
            unknown observable or target.

        Notes
        -----
        For n = 2 the row is a two-logit row of gap G = ``|x1 - x2|``, and
        x1 - x2 ~ N(0, 2 s^2), so E f(G) = int_0^inf f(s g) e^(-g^2/4)/sqrt(pi)
        dg, by Gauss-Legendre on geometric panels (f varies on the scale 1/s,
        the density on the scale 1).  Target "random": the average of the
        argmax and the other class.  n = 1: the value at G = inf.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(f"{float(theory.Law.gaussian(2, 1.0).mean('max_prob')):.6f}")
        0.725213
        """
        _check_obs(obs)
        _check_target(target)
        if (self.n > 2).any():
            raise ValueError("mean is exact for n <= 2 only (for n > 2 see fraction_below, "
                             "quantile, rem_entropy, rem_max_prob)")
        branches = ["top"] + (["other"] if target == "random" and obs in _TARGETED else [])
        # n = 1 has no other class: its value there (infinite for ce_loss) is
        # not used, so it is evaluated as n = 2
        vals = [self._mix(lambda s, n: _mean2(_two_logit(obs, b)[0], s,
                                              n if b == "top" else np.maximum(n, 2)), log=False)
                for b in branches]
        if len(vals) == 1:
            return vals[0]
        return np.where(self.n == 1, vals[0], 0.5 * (vals[0] + vals[1]))

    def quantile(self, obs: str, q: ArrayLike, target: str = "argmax",
                 order: int = 1) -> np.ndarray:
        """The q-quantile of obs: the t with ``fraction_below(obs, t) = q``.

        Parameters
        ----------
        obs : str
            An observable name (``fastsoftmax.OBS_NAMES``).
        q : array_like of float in [0, 1]
            The probability level.
        target : {"argmax", "random"}
            The cross-entropy target.
        order : {0, 1}
            The order of the saturation law (as :meth:`fraction_below`).

        Returns
        -------
        ndarray
            For the argmax target at n <= 2 and for ``order=0``, f2(gap
            quantile) with f2 the two-logit observable (monotone in G);
            otherwise solved in ln t over (1e-300, 1] (NaN where the law does
            not reach q there).

        Raises
        ------
        ValueError
            As :meth:`fraction_below`, or q outside [0, 1].

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(f"{float(theory.Law.gaussian(64, 49.0).quantile('jac_diag_max', 0.5)):.3e}")
        1.067e-06
        """
        q = _check_prob("q", q)
        _check_obs(obs)
        _check_target(target)
        _check_order(order)
        self._check_law(obs)
        f, increasing, _ = _two_logit(obs)
        direct = (order == 0 or not (self.n > 2).any()) and (
            target == "argmax" or obs not in _TARGETED)
        if direct:
            return f(self.gap_quantile(q if increasing else 1.0 - q))
        shape = np.broadcast(q, self.n, *self.params.values()).shape
        qf = np.broadcast_to(q, shape).reshape(-1)
        full = self._restrict(np.ones(qf.size, dtype=bool), shape)
        hi = 0.0 if (self.n > 2).any() or obs not in ("ce_loss", "ce_grad_norm") else 700.0

        def fun(x):
            return full.fraction_below(obs, np.exp(x), target, order) - qf

        lo, up = np.full(qf.shape, -690.0), np.full(qf.shape, float(hi))
        flo = fup = None
        if order == 1 and not increasing and (target == "argmax" or obs not in _TARGETED):
            # order 1 lies below order 0 (lambda >= 0 only widens the gap
            # needed), so the order-0 quantile t0 brackets the root from
            # below, and the rest R <= n - 1 puts it within about
            # ln(n - 1) above: a bracket of a few units of ln t, not 690
            nf = np.broadcast_to(self.n, shape).reshape(-1)
            with np.errstate(divide="ignore", invalid="ignore"):
                x0 = np.log(full.quantile(obs, qf, target, order=0))
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
        one = np.broadcast_to(self.n, shape).reshape(-1) == 1
        return np.where(one, f(np.inf), np.where(ok, np.exp(x), np.nan)).reshape(shape)

    def median(self, obs: str, target: str = "argmax", order: int = 1) -> np.ndarray:
        """The median of obs (``quantile(obs, 0.5, ...)``).

        Parameters
        ----------
        obs : str
            An observable name (``fastsoftmax.OBS_NAMES``).
        target : {"argmax", "random"}
            The cross-entropy target.
        order : {0, 1}
            The order of the saturation law (as :meth:`fraction_below`).

        Returns
        -------
        ndarray
            The median, broadcast over the law's parameters.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(f"{float(theory.Law.gaussian(2, 3.0).median('jac_diag_max')):.6f}")
        0.051159
        """
        return self.quantile(obs, 0.5, target, order)

    # large n and the stated accuracy -------------------------------------------

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

    def rem_entropy(self, correction: bool = True) -> np.ndarray:
        """Mean softmax entropy at large n (:func:`rem_entropy`, mixed over the scale).

        Parameters
        ----------
        correction : bool, default True
            Add the first finite-n term of the diffuse phase.

        Returns
        -------
        ndarray
            The random-energy-model entropy, averaged over the law's logit
            scale (exact for a Gaussian law; the chi^2 mixture for a dot
            product: given q the logits are Gaussian).

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(theory.Law.dot_product(1024, 64, True).rem_entropy().round(3))
        6.433
        """
        return self._mix(lambda s, n: rem_entropy(n, s, correction), log=False)

    def rem_max_prob(self) -> np.ndarray:
        """Mean largest probability at large n (:func:`rem_max_prob`, mixed over the scale).

        Returns
        -------
        ndarray
            The random-energy-model mean of max_prob, averaged over the law's
            logit scale.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(theory.Law.dot_product(1024, 64, False).rem_max_prob().round(3))
        0.711
        """
        return self._mix(lambda s, n: rem_max_prob(n, s), log=False)

    def rem_max_prob_sf(self, v: ArrayLike) -> np.ndarray:
        """P(max_prob > v) at large n (:func:`rem_max_prob_sf`, mixed over the scale).

        Parameters
        ----------
        v : array_like of float in (0, 1]
            The level of the largest probability.

        Returns
        -------
        ndarray
            Broadcast over v and the law's parameters; NaN where a frozen
            scale of the mixture meets v < 1/2 (no closed form there).

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(theory.Law.gaussian(16384, 18.0).rem_max_prob_sf(0.5).round(3))
        0.926
        """
        v = _check_t(v, "v")
        return self._mix(lambda s, n, v: rem_max_prob_sf(v, n, s), v, log=False)

    def rem_max_prob_median(self) -> np.ndarray:
        """The median of max_prob at large n, from :meth:`rem_max_prob_sf`.

        Returns
        -------
        ndarray
            The v with ``rem_max_prob_sf(v) = 1/2``, by bisection in ln v;
            NaN where that needs the frozen law below v = 1/2.  Frozen
            Gaussian law: 1 / (1 + (2 sin(pi m) / (pi m))^(-1/m)); diffuse:
            v0 (ln 2)^(-1/m) (notation of :func:`rem_max_prob_sf`).

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(theory.Law.gaussian(16384, 18.0).rem_max_prob_median().round(4))
        0.9467
        """
        shape = np.broadcast(self.n, *self.params.values()).shape
        flat = self._restrict(np.ones(int(np.prod(shape)), dtype=bool), shape)

        def f(x):
            with np.errstate(invalid="ignore"):
                return flat.rem_max_prob_sf(np.exp(x)) - 0.5

        # above 1/2 or below it (where a frozen scale gives NaN, kept)
        half = np.full(int(np.prod(shape)), math.log(0.5))
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
        one = np.broadcast_to(self.n, shape).reshape(-1) == 1
        return np.where(one, 1.0, np.where(ok, np.exp(x), np.nan)).reshape(shape)

    def expected_max(self) -> np.ndarray:
        """E[max logit] (:func:`expected_max`, mixed over the scale).

        Returns
        -------
        ndarray
            The extreme-value mean of the largest logit, averaged over the
            law's logit scale.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(theory.Law.dot_product(64, 64, False).expected_max().round(2))
        19.71
        """
        return self._mix(lambda s, n: expected_max(n, s), log=False)

    def stated_accuracy(self, what: str,
                        order: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """The accuracy a law states at this law's parameters (:func:`stated_accuracy`).

        Parameters
        ----------
        what : str
            As :func:`stated_accuracy`.
        order : {0, 1}
            The order of the saturation law.

        Returns
        -------
        rel : ndarray
            Relative tolerance, NaN where no accuracy is claimed.
        abs : ndarray
            Absolute tolerance.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> rel, _ = theory.Law.dot_product(64, [64, 4096], False).stated_accuracy(
        ...     "fraction_below")
        >>> print(rel)
        [0.15  0.005]
        """
        return stated_accuracy(what, self.n, self.typical_scale(), order)


def _per_scale(g, s):
    """g / s in the standard gap's units (s = 0: every gap is 0)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(s > 0, g / s, np.where(g >= 0, np.inf, -np.inf))


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


class _GaussianLaw(Law):
    def _mix(self, fn, *args, log=True):
        return fn(self.params["scale"], self.n, *args)

    def typical_scale(self) -> np.ndarray:
        scale = self.params["scale"]
        return np.broadcast_to(scale, np.broadcast(self.n, scale).shape).astype(np.float64)

    def _scale_bound(self):
        return self.params["scale"]


def _chi2_nodes(d):
    """Nodes c and normalised log-weights for E f(c), c ~ chi^2(d), d an
    array: Gauss-Legendre in w = ln c, where the density of w is
    log-concave, exp((d/2) w - e^w / 2), with its mode at ln d; cut where the
    log-density has dropped by _CHI2_DROP.  Uniform panels on [ln d - 12,
    ln d + ...] (a mixture's integrand has features of width ~1 in w where
    the logit scale sqrt(c) meets the gap of interest), geometric ones on the
    long left tail of small d."""
    d = d[..., None]
    w0 = np.log(d)

    def ell(w):
        return 0.5 * d * (w - w0) - 0.5 * (np.exp(w) - d)

    drop = _CHI2_DROP
    # brackets: ell <= -2 drop at both far ends (ell = -(d/2)(e^x - 1 - x), x = w - w0)
    wl = _bisect(lambda w: ell(w) + drop, w0, w0 - 1.0 - 4.0 * drop / d)
    wr = _bisect(lambda w: ell(w) + drop, w0, w0 + 8.0 + np.sqrt(8.0 * drop / d))
    wm = np.maximum(wl, w0 - 12.0)
    # far left: panels halving towards wm (zero width where wl = wm)
    edges = wm + (wl - wm) * 0.5 ** np.arange(_CHI2_FAR + 1)
    edges[..., -1:] = wm
    parts = [_panels(edges[..., k:k + 1], edges[..., k + 1:k + 2], npan=1, order=8)
             for k in range(_CHI2_FAR)]
    parts += [_panels(wm, w0, npan=_CHI2_NEAR, order=8), _panels(w0, wr, npan=_CHI2_NEAR, order=8)]
    w = np.concatenate([p[0] for p in parts], -1)
    with np.errstate(divide="ignore"):
        lw = np.log(np.concatenate([p[1] for p in parts], -1)) + ell(w)
    lw -= _sp.logsumexp(lw, axis=-1, keepdims=True)
    return np.exp(w), lw


class _DotLaw(Law):
    def _coef(self):
        p = self.params
        return np.where(p["scaled"], 1.0 / np.sqrt(p["d_k"]), 1.0) / p["temperature"]

    def _mix(self, fn, *args, log=True):
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

    def _scale_bound(self):
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
    >>> print(f"{float(theory.law(m).fraction_below('jac_diag_max', 1e-6, order=0)):.4f}")
    0.5002
    """
    if isinstance(model, _models.Gaussian):
        return Law.gaussian(model.n, model.scale / model.temperature)
    if isinstance(model, _models.Shifted):
        return Law.gaussian(model.n, model.spread / model.temperature)
    if isinstance(model, _models.DotProduct):
        return Law.dot_product(model.n, model.d_k, model.scaled, model.temperature)
    raise ValueError(f"model must be a fastsoftmax.models Gaussian, Shifted or DotProduct, "
                     f"got {type(model).__name__}")


# ----------------------------------------------------------------------------
# the standard gap, module level


def gap_sf(g: ArrayLike, n: ArrayLike) -> np.ndarray:
    """P(G_1 > g) for the gap G_1 between the two largest of n i.i.d. N(0, 1).

    Exact up to quadrature for any n (module docstring): relative error
    <= 1e-12 down to 1e-122, tails keep their relative accuracy.

    Parameters
    ----------
    g : array_like of float
        The standard gap.
    n : array_like of int, >= 1
        Logits per row.

    Returns
    -------
    ndarray
        ``Law.gaussian(n).gap_sf(g)``; for n = 2, G_1 = ``|N(0, 2)|`` and
        P(G_1 > g) = erfc(g / 2).

    Raises
    ------
    ValueError
        If n is not an integer >= 1.

    Examples
    --------
    >>> from fastsoftmax import theory
    >>> print(f"{float(theory.gap_sf(1.0, 2)):.12f}")
    0.479500122187
    """
    return Law.gaussian(n).gap_sf(g)


def gap_cdf(g: ArrayLike, n: ArrayLike) -> np.ndarray:
    """P(G_1 <= g), the lower tail of the standard gap.

    Integrated from the density (see :meth:`Law.gap_cdf`), so it keeps its
    relative accuracy for small g.

    Parameters
    ----------
    g : array_like of float
        The standard gap.
    n : array_like of int, >= 1
        Logits per row.

    Returns
    -------
    ndarray
        Broadcast over g and n; 0 for n = 1.

    Examples
    --------
    >>> from fastsoftmax import theory
    >>> print(f"{float(theory.gap_cdf(1.0, 2)):.12f}")
    0.520499877813
    """
    return Law.gaussian(n).gap_cdf(g)


def gap_quantile(q: ArrayLike, n: ArrayLike) -> np.ndarray:
    """The q-quantile of the standard gap G_1.

    Solved on the log cdf or log sf to 1e-13 relative (see
    :meth:`Law.gap_quantile`).

    Parameters
    ----------
    q : array_like of float in [0, 1]
        The probability level.
    n : array_like of int, >= 1
        Logits per row.

    Returns
    -------
    ndarray
        Broadcast over q and n; inf for n = 1.

    Examples
    --------
    >>> from fastsoftmax import theory
    >>> print(theory.gap_quantile([0.1, 0.5, 0.9], 1024).round(4))
    [0.0323 0.2076 0.6512]
    """
    return Law.gaussian(n).gap_quantile(q)


def gap_median(n: ArrayLike) -> np.ndarray:
    """The median of the standard gap G_1.

    The scale-free number behind sigma* (:func:`critical_scale`): at order
    0, sigma* = gamma(t) / median(G_1).

    Parameters
    ----------
    n : array_like of int, >= 1
        Logits per row.

    Returns
    -------
    ndarray
        0.2821 at n = 64 (the issue's anchor: 200,000 NumPy rows give
        0.2820); about ln 2 / b_n for large n (the top spacing is close to an
        exponential of rate b_n, see :func:`expected_max`).

    Examples
    --------
    >>> from fastsoftmax import theory
    >>> print(theory.gap_median([2, 64, 16384]).round(4))
    [0.9539 0.2821 0.1712]
    """
    return Law.gaussian(n).gap_median()


# ----------------------------------------------------------------------------
# critical scales


def _bracket_up(f, x0, step=math.log(2.0), tries=60):
    """hi >= x0 with f(hi) >= 0 (f increasing), by steps of ``step``."""
    hi = np.array(x0, dtype=np.float64)
    for _ in range(tries):
        bad = f(hi) < 0
        if not bad.any():
            return hi
        hi = np.where(bad, hi + step, hi)
    return hi


def critical_scale(t: ArrayLike, n: ArrayLike, obs: str = "jac_diag_max", order: int = 1,
                   fraction: ArrayLike = 0.5) -> np.ndarray:
    r"""The critical scale sigma*(t) of Gaussian logits.

    sigma* is the logit scale at which a ``fraction`` of the rows (half of
    them, by default: the median) has obs < t.

    Parameters
    ----------
    t : array_like of float in (0, 1]
        The threshold.
    n : array_like of int, >= 1
        Logits per row.
    obs : str
        One of ``SATURATING``.
    order : {0, 1}
        0: sigma* = gamma(t) / Q(1 - fraction), Q the quantile of the
        standard gap (the two-logit law, closed form); 1: solved on the
        order-1 law.
    fraction : float in (0, 1)
        The fraction of rows below t (0.5: the median crosses t).

    Returns
    -------
    ndarray
        0 for n = 1 (every row is saturated).  The temperature at which
        N(0, 1) logits saturate is 1 / sigma*.

    Raises
    ------
    ValueError
        For an observable outside ``SATURATING`` or arguments out of range.

    Notes
    -----
    P(obs < t) increases with sigma, so the root is unique.  At n = 64,
    t = 1e-6, jac_diag_max: gamma = ln(1/t) + 2t + ... = 13.8155, the
    median of G_1 is 0.2821, so sigma* = 48.97 at order 0; the other
    logits (order 1) raise it to 49.23.  ``fastsoftmax verify`` measures
    49.3 (log-linear interpolation between its grid points 45.3 and 64).
    Accuracy: that of the order-1 law at fraction 1/2, where m =
    sigma_c / sigma* < 1/8 for t <= 1e-3: about 0.2% in sigma* (at n = 64,
    sigma = 49, 10^6 rows agree with order 1 within 0.0005 in the fraction,
    whose slope is 0.011 per unit of sigma); order 0 is 0.5% low.

    Examples
    --------
    >>> from fastsoftmax import theory
    >>> print(theory.critical_scale(1e-6, 64, order=0).round(2),
    ...       theory.critical_scale(1e-6, 64).round(2))
    48.97 49.23
    """
    _check_obs(obs, SATURATING)
    _check_order(order)
    t = _check_t(t)
    fr = _check_prob("fraction", fraction)
    if not ((fr > 0) & (fr < 1)).all():
        raise ValueError(f"fraction must lie in (0, 1), got {fraction!r}")
    n = _check_n(n)
    gam = _two_logit(obs)[2](t)
    with np.errstate(divide="ignore", invalid="ignore"):
        s0 = np.where(gam > 0, gam / gap_quantile(1.0 - fr, n), 0.0)
    if order == 0 or not ((n > 2) & (s0 > 0)).any():
        return s0
    shape, (t, n, fr, s0) = _flat(t, n, fr, s0)
    live = (n > 2) & (s0 > 0)
    tl, nl, fl, sl = t[live], n[live], fr[live], s0[live]

    def f(x):
        return Law.gaussian(nl, np.exp(x)).fraction_below(obs, tl, order=1) - fl

    lo = np.log(sl)
    hi = _bracket_up(f, lo + 0.05)
    out = s0.copy()
    out[live] = np.exp(_solve(f, lo, hi, tol=1e-12))
    return out.reshape(shape)


def critical_d_k(t: ArrayLike, n: ArrayLike, obs: str = "jac_diag_max",
                 temperature: ArrayLike = 1.0, scaled: bool = False, order: int = 1,
                 fraction: ArrayLike = 0.5) -> np.ndarray:
    r"""The critical key dimension d_k*(t) of unscaled dot products.

    d_k* is the key dimension at which a ``fraction`` of the rows (half of
    them, by default: the median) of an unscaled DotProduct has obs < t.

    Parameters
    ----------
    t : array_like of float in (0, 1]
        The threshold.
    n : array_like of int, >= 1
        Keys (logits) per row.
    obs : str
        One of ``SATURATING``.
    temperature : array_like of float, > 0
        The softmax temperature.
    scaled : bool
        Must be False: see Raises.
    order : {0, 1}
        The order of the saturation law solved (order 1 costs a few
        seconds per call; order 0 a fraction of that).
    fraction : float in (0, 1)
        The fraction of rows below t (0.5: the median crosses t).

    Returns
    -------
    ndarray
        A real d_k (the chi^2 mixture with real degrees of freedom), solved
        in ln d_k from (temperature sigma*)^2.

    Raises
    ------
    ValueError
        For ``scaled=True``: the logit scale sqrt(chi^2(d_k) / d_k) / T tends
        to 1/T as d_k grows, so scaled dot products never saturate with d_k
        (use :func:`critical_scale`: they saturate below the temperature
        1/sigma*).  Also for arguments out of range.

    Notes
    -----
    Unscaled, the logit scale is sqrt(c) / T, c ~ chi^2(d_k), so d_k* is
    close to (T sigma*)^2; the spread of c (relative sd sqrt(2/d_k)) moves
    it by less than 0.5% at d_k* ~ 2,400.  At n = 64, t = 1e-6:
    2,425 (order 1; 2,399 at order 0); ``fastsoftmax verify`` measures 2,435 by interpolating
    its d_k grid (1,024 and 4,096) in sqrt(d_k).

    Examples
    --------
    >>> from fastsoftmax import theory
    >>> print(f"{float(theory.critical_d_k(1e-6, 64)):.0f}")
    2425
    """
    if scaled is not False:
        raise ValueError("scaled=True: the logit scale sqrt(chi2(d_k)/d_k)/temperature tends "
                         "to 1/temperature as d_k grows, so scaled dot products never "
                         "saturate with d_k; use critical_scale (temperature* = 1/sigma*)")
    T = _check_positive("temperature", temperature)
    s = critical_scale(t, n, obs, order, fraction)
    shape, (t, n, T, s, fr) = _flat(t, n, T, s, fraction)
    out = np.zeros(t.shape)
    live = s > 0
    tl, nl, Tl, fl = t[live], n[live], T[live], fr[live]

    def f(x):
        return Law.dot_product(nl, np.exp(x), False, Tl).fraction_below(obs, tl, order=order) \
            - fl

    # the chi^2 spread moves d_k* off (T sigma*)^2 by well under 1% once
    # d_k* is in the hundreds: a tight first bracket, widened where needed
    # (each evaluation is a chi^2 mixture of the order-1 law: the cost)
    x0 = np.log((Tl * s[live]) ** 2)
    lo, hi = x0 - 0.01, x0 + 0.01
    flo, fhi = f(lo), f(hi)
    for _ in range(60):
        bad_lo, bad_hi = flo > 0, fhi < 0
        if not (bad_lo.any() or bad_hi.any()):
            break
        lo, hi = np.where(bad_lo, lo - 0.5, lo), np.where(bad_hi, hi + 0.5, hi)
        if bad_lo.any():
            flo = f(lo)
        if bad_hi.any():
            fhi = f(hi)
    out[live] = np.exp(_solve(f, lo, hi, tol=1e-8, flo=flo, fhi=fhi))
    return out.reshape(shape)


# ----------------------------------------------------------------------------
# random energy model (large n)


def _b_n(n):
    """The Gumbel location of the max of n standard normals: n phi(b) = b
    (P(max <= b + x/b) -> exp(-e^-x)), by Newton from sqrt(2 ln n)."""
    ln = np.log(n)
    b = np.sqrt(2.0 * ln)
    for _ in range(30):
        f = ln - 0.5 * b * b - _LOG_SQRT_2PI - np.log(b)
        b = b + f / (b + 1.0 / b)
    return b


def freezing_scale(n: ArrayLike) -> np.ndarray:
    r"""The random energy model's freezing scale sigma_c = sqrt(2 ln n).

    Below it the softmax of n i.i.d. N(0, sigma^2) logits is diffuse, above
    it frozen on a few logits (Notes).

    Parameters
    ----------
    n : array_like of int, >= 1
        Logits per row.

    Returns
    -------
    ndarray
        sqrt(2 ln n), broadcast over n (0 for n = 1).

    Notes
    -----
    Softmax of n i.i.d. N(0, sigma^2) logits is the Gibbs measure of
    Derrida's random energy model with 2^N = n states at inverse temperature
    beta = sigma sqrt(2/N) (energies of variance N/2): the phase transition
    beta_c = 2 sqrt(ln 2) is sigma_c = sqrt(2 ln n) (Derrida 1981).  Below
    it the softmax is diffuse (entropy ln n - sigma^2/2, the weights spread
    over n^(1 - 1/m^2) states), above it frozen: the weights converge to a
    Poisson-Dirichlet PD(m) law, m = sigma_c / sigma, with
    E sum p_i^2 = 1 - m, entropy psi(1) - psi(1 - m) and a top weight of
    order 1.  The REM functions here use, at finite n, the Gumbel location
    b_n (n phi(b_n) = b_n; b_n / sigma_c = 0.77 at n = 64, 0.88 at 16,384,
    -> 1 logarithmically slowly) in m = b_n / sigma: the top logits form a
    Poisson process of intensity e^(-b_n x) (extreme-value theory), and
    this m matches ``simulate`` within a few per cent where sigma_c / sigma
    is off by 20-30%.

    Examples
    --------
    >>> from fastsoftmax import theory
    >>> print(theory.freezing_scale([64, 1024, 16384]).round(3))
    [2.884 3.723 4.405]
    """
    return np.sqrt(2.0 * np.log(_check_n(n)))


def _rem_index(n, scale):
    """m = b_n / sigma (finite-n Poisson-Dirichlet parameter)."""
    with np.errstate(divide="ignore"):
        return np.where(n > 1, _b_n(np.maximum(n, 2.0)), 0.0) / scale


def rem_entropy(n: ArrayLike, scale: ArrayLike, correction: bool = True) -> np.ndarray:
    r"""Mean softmax entropy of n i.i.d. N(0, scale^2) logits at large n.

    The random energy model's law: diffuse below sigma_c = sqrt(2 ln n),
    Poisson-Dirichlet above it; asymptotic, not accurate in the crossover
    (Notes).

    Parameters
    ----------
    n : array_like of int, >= 1
        Logits per row.
    scale : array_like of float, >= 0
        The logit scale sigma.
    correction : bool
        Add the first finite-n term of the diffuse phase (Notes).

    Returns
    -------
    ndarray
        Diffuse phase (scale < sigma_c = sqrt(2 ln n)):
        ln n - sigma^2/2 [+ ((2 sigma^2 - 1) e^(sigma^2) + 1) / (2n)];
        frozen phase: psi(1) - psi(1 - m), m = b_n / sigma
        (:func:`freezing_scale`).  n = 1: 0.

    Raises
    ------
    ValueError
        For n or scale out of range.

    Notes
    -----
    Exact as n -> inf: entropy / ln n -> 1 - 1/(2 ln n / sigma^2) in the
    diffuse phase at fixed sigma / sigma_c < 1 (Derrida 1981), and the frozen
    phase's entropy converges to that of PD(m) weights, E sum -p ln p =
    psi(1) - psi(1 - m) (from the PD(m) mean measure
    p^(-m-1) (1-p)^(m-1) / (Gamma(m) Gamma(1-m)) dp; Pitman & Yor 1997).
    Finite n: with Z = sum e^(sigma z_i) = n e^(sigma^2/2) (1 + eps),
    Var eps = (e^(sigma^2) - 1)/n, entropy = ln Z - sigma d(ln Z)/d sigma and
    the delta method give the 1/n term above (valid while e^(sigma^2) << n,
    i.e. sigma < sigma_c / 2 or so).  Measured (``simulate``, n = 64 ...
    16,384): sigma <= 1: within 0.003 with the correction (0.03 without at
    n = 64); frozen: within 5% at m ~= 0.2, 7% at m ~= 0.4; the crossover
    0.5 sigma_c < sigma < 2 sigma_c is not described (errors up to 1 nat).

    Examples
    --------
    >>> from fastsoftmax import theory
    >>> print(theory.rem_entropy(1024, [1.0, 15.0]).round(3))
    [6.433 0.407]
    """
    n = _check_n(n)
    s = _check_scale("scale", scale)
    n, s = np.broadcast_arrays(n, s)
    sc = np.sqrt(2.0 * np.log(n))
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


def rem_max_prob(n: ArrayLike, scale: ArrayLike) -> np.ndarray:
    r"""Mean largest softmax probability of n i.i.d. N(0, scale^2) logits.

    The random energy model's law at large n: Poisson-Dirichlet in the
    frozen phase, a Frechet-Gumbel estimate in the diffuse one (Notes).

    Parameters
    ----------
    n : array_like of int, >= 1
        Logits per row.
    scale : array_like of float, >= 0
        The logit scale sigma.

    Returns
    -------
    ndarray
        Frozen phase (m = b_n / sigma < 1): the mean largest weight of
        PD(m); diffuse phase: Gamma(1 - 1/m) e^(sigma b_n - sigma^2/2) / n.
        n = 1: 1.

    Notes
    -----
    Frozen: conditioning on the largest point of the Poisson process of
    intensity m x^(-m-1) (whose -m-th power is Exp(1)), E[p(1)] =
    int_0^inf e^-s / (1 + Psi(s)) ds (Psi in the code).  In this phase
    P(max_prob > v) = ((1-v)/v)^m sin(pi m)/(pi m) exactly for v >= 1/2
    (at most one weight exceeds 1/2, so it is the PD mean measure of
    (v, 1)), i.e. P(1 - max_prob < u) ~ u^m sin(pi m)/(pi m): the n -> inf
    form of the saturation law, whose two-logit approximation lacks the
    factor sin(pi m)/(pi m).  Diffuse: p(1) ~= e^(sigma M) / (n e^(sigma^2/2))
    with M = b_n + Gumbel / b_n, E e^(sigma Gumbel / b_n) = Gamma(1 - 1/m);
    -> 0 like n^(-(1 - 1/m)^2).  Measured (``simulate``, n = 64 ... 16,384):
    frozen, m <= 0.45: within 1.5% of the mean; m ~ 0.65: 5% low; diffuse,
    sigma <= 1: 5-30% high (the Gumbel law of M is a poor fit at small n).

    Examples
    --------
    >>> from fastsoftmax import theory
    >>> print(theory.rem_max_prob(1024, [1.0, 15.0]).round(3))
    [0.018 0.852]
    """
    n = _check_n(n)
    s = _check_scale("scale", scale)
    n, s = np.broadcast_arrays(n, s)
    b = _b_n(np.maximum(n, 2.0))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        m = _rem_index(n, s)
        frozen = _pd_top_mean(np.clip(m, 1e-12, 1.0 - 1e-12))
        diffuse = _sp.gamma(1.0 - 1.0 / np.maximum(m, 1.0 + 1e-12)) \
            * np.exp(s * b - 0.5 * s * s) / n
    return np.where(n == 1, 1.0, np.where(m < 1.0, frozen, np.minimum(diffuse, 1.0)))


def rem_max_prob_sf(v: ArrayLike, n: ArrayLike, scale: ArrayLike) -> np.ndarray:
    r"""P(max_prob > v) for n i.i.d. N(0, scale^2) logits at large n.

    The random energy model's law: exact as n -> inf in the frozen phase for
    v >= 1/2 (Poisson-Dirichlet), a Frechet law in the diffuse one.

    Parameters
    ----------
    v : array_like of float in (0, 1]
        The level of the largest probability.
    n : array_like of int, >= 1
        Logits per row.
    scale : array_like of float, >= 0
        The logit scale sigma.

    Returns
    -------
    ndarray
        Frozen phase (m = b_n / sigma < 1), v >= 1/2:
        ((1 - v) / v)^m sin(pi m) / (pi m); NaN for v < 1/2 there (PD(m)
        has no closed form below 1/2).  Diffuse phase: 1 - exp(-(v / v0)^-m),
        v0 = e^(sigma b_n - sigma^2/2) / n.

    Raises
    ------
    ValueError
        For v, n or scale out of range.

    Notes
    -----
    Frozen: for v >= 1/2 at most one PD(m) weight exceeds v, so P(p(1) > v)
    is the PD mean measure of (v, 1), int_v^1 p^(-m-1) (1-p)^(m-1) dp /
    (Gamma(m) Gamma(1-m)) = ((1-v)/v)^m / (m Gamma(m) Gamma(1-m)) (an
    incomplete beta B_x(m, -m) = (x/(1-x))^m / m), exact as n -> inf.  With
    u = 1 - v it is the n -> inf saturation law of 1 - max_prob,
    P(1 - max_prob < u) = (u/(1-u))^m sin(pi m)/(pi m).  Diffuse: the max
    M = b_n + Gumbel / b_n and p(1) ~= e^(sigma M) / (n e^(sigma^2/2)), a
    Frechet law of index m.  Measured (``simulate``): frozen, n = 16,384,
    sigma = 18 (m = 0.21): P(max_prob > 1/2) = 0.926 against 0.917 and
    0.931 +- 0.004 (two seeds), P(1 - max_prob < 1e-3) = 0.211 against
    0.186 +- 0.006 (the finite-n saturation law, :meth:`Law.fraction_below`,
    gives 0.183).

    Examples
    --------
    >>> from fastsoftmax import theory
    >>> print(theory.rem_max_prob_sf([0.5, 0.999], 16384, 18.0).round(3))
    [0.926 0.211]
    """
    v = _check_t(v, "v")
    n = _check_n(n)
    s = _check_scale("scale", scale)
    v, n, s = np.broadcast_arrays(v, n, s)
    b = _b_n(np.maximum(n, 2.0))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        m = _rem_index(n, s)
        mc = np.clip(m, 1e-300, 1.0 - 1e-16)
        frozen = np.where(v >= 0.5, ((1.0 - v) / v) ** mc * np.sinc(mc), np.nan)
        lv0 = s * b - 0.5 * s * s - np.log(n)
        diffuse = -np.expm1(-np.exp(-m * (np.log(v) - lv0)))
    return np.where(n == 1, np.where(v < 1.0, 1.0, 0.0), np.where(m < 1.0, frozen, diffuse))


def expected_max(n: ArrayLike, scale: ArrayLike = 1.0) -> np.ndarray:
    r"""E[max logit] of n i.i.d. N(0, scale^2) logits, asymptotically.

    The extreme-value (Gumbel) law: about sigma sqrt(2 ln n) with its first
    correction, within a few per cent from n = 64 on.

    Parameters
    ----------
    n : array_like of int, >= 1
        Logits per row.
    scale : array_like of float, >= 0
        The logit scale sigma.

    Returns
    -------
    ndarray
        sigma (b_n + gamma_E / b_n), b_n the Gumbel location (n phi(b_n) =
        b_n, b_n = sqrt(2 ln n) - (ln ln n + ln 4 pi) / (2 sqrt(2 ln n)) +
        ...), gamma_E Euler's constant.  0 for n = 1.

    Notes
    -----
    max = b_n + Gumbel / b_n + o(1/b_n) (Fisher-Tippett; David & Nagaraja
    10.5), so E max = sigma sqrt(2 ln n) (1 + o(1)) with the Gumbel mean as
    the first correction; the convergence is logarithmically slow.  Relative
    error against the exact mean int x n phi(x) Phi(x)^(n-1) dx: +5.5% at
    n = 64, +1.8% at 1,024, +0.9% at 16,384 (sqrt(2 ln n) alone: +23%, +15%,
    +11%).

    Examples
    --------
    >>> from fastsoftmax import theory
    >>> print(theory.expected_max([64, 16384]).round(3))
    [2.473 4.006]
    """
    n = _check_n(n)
    s = _check_scale("scale", scale)
    b = _b_n(np.maximum(n, 2.0))
    return np.where(n == 1, 0.0, s * (b + np.euler_gamma / b))


# ----------------------------------------------------------------------------
# the accuracy each law states (measured against simulate: docs/theory.md)

#: The laws whose accuracy :func:`stated_accuracy` states, and where: the
#: measured domains of docs/theory.md, with m = sigma_c / sigma for the
#: saturation law and m_b = b_n / sigma for the random energy model.
ACCURACY = {
    "fraction_below": "saturation law, t <= 1e-3, any n > 2: order 1 relative 0.5% "
                      "(m <= 1/8), 2% (m <= 1/4), 15% (m <= 1/2); order 0 2%, 10%, 45%; "
                      "m > 1/2 none; n <= 2 exact",
    "critical_scale": "sigma* at t <= 1e-3: order 1 relative 0.2%, order 0 2%",
    "critical_d_k": "d_k* (about sigma*^2): order 1 relative 0.4%, order 0 4%",
    "rem_entropy": "diffuse, sigma <= sigma_c / 2 and the 1/n term c <= 0.1: absolute "
                   "5 c^2 (the delta method's next term, measured 3-4 c^2); frozen, "
                   "sigma >= 2 sigma_c: relative 7%; between: none",
    "rem_max_prob": "frozen, m_b <= 0.45: relative 1.5%, m_b <= 0.65: 5%; elsewhere none "
                    "(diffuse: 5-40% high, the Gumbel law of the max is a poor fit)",
}

# the saturation law's relative accuracy by m = sigma_c / sigma (upper edges)
_SAT_EDGES = (0.125, 0.25, 0.5)
_SAT_REL = {1: (0.005, 0.02, 0.15), 0: (0.02, 0.10, 0.45)}


def stated_accuracy(what: str, n: ArrayLike, scale: ArrayLike,
                    order: int = 1) -> tuple[np.ndarray, np.ndarray]:
    r"""The accuracy a law states at n logits of scale sigma, as measured.

    A prediction p of the law ``what`` is claimed within rel ``|p|`` + abs of
    the truth; where the law claims nothing (outside its measured domain)
    rel is NaN.  These are the accuracies measured against ``simulate``
    (docs/theory.md and the functions' Notes), as step functions of the
    scale (the next wider bracket between measured points), so that tools
    (``fastsoftmax verify``) judge agreement against what the law states
    rather than against a number chosen after the fact.

    Parameters
    ----------
    what : str
        A key of ``ACCURACY``: ``"fraction_below"`` (:meth:`Law.fraction_below`
        of a saturating observable, t <= 1e-3), ``"critical_scale"``,
        ``"critical_d_k"``, ``"rem_entropy"``, ``"rem_max_prob"`` (the mean).
    n : array_like of int, >= 1
        Logits per row.
    scale : array_like of float, >= 0
        The logit scale sigma (for a dot product: :meth:`Law.typical_scale`).
    order : {0, 1}
        The order of the saturation law (``fraction_below``, ``critical_*``).

    Returns
    -------
    rel : ndarray
        Relative tolerance (NaN: no accuracy claimed there).
    abs : ndarray
        Absolute tolerance (0 except for the diffuse entropy).

    Raises
    ------
    ValueError
        For an unknown ``what`` or ``order``, or n, scale out of range.

    See Also
    --------
    Law.stated_accuracy : The same at a law's parameters.

    Notes
    -----
    With sigma_c = sqrt(2 ln n) (:func:`freezing_scale`), m = sigma_c / sigma
    and m_b = b_n / sigma (b_n the Gumbel location):

    * ``fraction_below``: order 1 within 0.5% for m <= 1/8, 2% for
      m <= 1/4, 15% for m <= 1/2 (it is 10-15% low at m = 1/2); order 0 2%,
      10%, 45% (it is high); nothing for m > 1/2; n <= 2 exact (1e-9,
      quadrature).
    * ``critical_scale``: order 1 0.2%, order 0 2%; ``critical_d_k``: 0.4%
      and 4% (d_k* is about sigma*^2).
    * ``rem_entropy``: diffuse (sigma <= sigma_c / 2, and its 1/n term
      c = ((2 sigma^2 - 1) e^(sigma^2) + 1) / (2n) at most 0.1): 5 c^2 nat
      absolute (the delta method's neglected next term: measured 3-4 c^2,
      e.g. 0.0032 at n = 64, sigma = 1, where c = 0.029; 0.00015 at n =
      256); frozen (sigma >= 2 sigma_c): 7% relative; nothing in the
      crossover.
    * ``rem_max_prob``: frozen m_b <= 0.45: 1.5%, m_b <= 0.65: 5%; nothing
      elsewhere (diffuse: 5-40% high).

    Examples
    --------
    >>> from fastsoftmax import theory
    >>> rel, ab = theory.stated_accuracy("fraction_below", 64, [49.0, 12.0, 6.0, 2.0])
    >>> print(rel)
    [0.005 0.02  0.15    nan]
    >>> rel, ab = theory.stated_accuracy("rem_entropy", 1024, [1.0, 15.0])
    >>> print(rel, ab.round(6))
    [0.   0.07] [1.6e-05 0.0e+00]
    """
    if what not in ACCURACY:
        raise ValueError(f"what must be one of {', '.join(ACCURACY)}; got {what!r}")
    _check_order(order)
    n, s = np.broadcast_arrays(_check_n(n), _check_scale("scale", scale))
    sc = np.sqrt(2.0 * np.log(n))
    with np.errstate(divide="ignore", invalid="ignore"):
        m = np.where(s > 0, sc / s, np.inf)
        mb = np.where(s > 0, _b_n(np.maximum(n, 2.0)) / s, np.inf)
    zero = np.zeros(n.shape)
    nan = np.full(n.shape, np.nan)
    if what == "fraction_below":
        rel = nan.copy()
        for edge, r in zip(reversed(_SAT_EDGES), reversed(_SAT_REL[order])):
            rel = np.where(m <= edge, r, rel)
        return np.where(n <= 2, 1e-9, rel), zero
    if what in ("critical_scale", "critical_d_k"):
        r = {("critical_scale", 1): 0.002, ("critical_scale", 0): 0.02,
             ("critical_d_k", 1): 0.004, ("critical_d_k", 0): 0.04}[(what, order)]
        return np.where(n <= 2, 1e-9, r) + zero, zero
    if what == "rem_entropy":
        with np.errstate(over="ignore", invalid="ignore"):
            c = ((2.0 * s * s - 1.0) * np.exp(s * s) + 1.0) / (2.0 * n)
        diffuse = (s <= 0.5 * sc) & (np.abs(c) <= 0.1)
        rel = np.where(diffuse, 0.0, np.where(m <= 0.5, 0.07, np.nan))
        return (np.where(n == 1, 0.0, rel),
                np.where(diffuse & (n > 1), 5.0 * np.where(diffuse, c, 0.0) ** 2, 0.0))
    rel = np.where(mb <= 0.45, 0.015, np.where(mb <= 0.65, 0.05, np.nan))
    return np.where(n == 1, 0.0, rel), zero
