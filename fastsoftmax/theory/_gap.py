r"""The exact law of the top-two gap G_1 = (m1 - m2) / sigma of n i.i.d. N(0, 1).

Conditioning on m2 = y (density n(n-1) phi(y) Phi(y)^(n-2) Phi(-y)), the top
logit is a normal truncated to (y, inf) and the other n - 2 are normals
truncated to (-inf, y), all independent (the Markov property of order
statistics).  Hence

    P(G_1 > g) = n (n-1) int phi(y) Phi(y)^(n-2) Phi(-y-g) dy
               = n int phi(x) Phi(x-g)^(n-1) dx,

exact for any n >= 2 (n = 1 has no second logit: G = inf).  The integrand is
log-concave in y (phi, Phi and Phi(-y-g) all are), so its log has a single
maximum: it is located by bisection on the derivative, the points where the
log has dropped by 60 on each side are found by bisection again (concavity
makes each side monotone), and exp(log-integrand) is integrated with
Gauss-Legendre panels on each side, in log space
(``scipy.special.log_ndtr``).  Nothing depends on where the peak is or how
sharp it is, so n = 2 and n = 10^9 take the same time, and tails keep their
relative accuracy until they underflow.  The lower tail P(G_1 < g) is
integrated from the density of G_1, never taken as 1 - sf.  Measured against
30-digit mpmath (tests/test_theory_gap.py): relative error <= 1e-12 for
n = 2 ... 65,536 down to sf = 1e-122 (observed 3e-14), 1e-11 for the lower
tail down to cdf = 1e-10.

This module holds the standard gap's log-sf and log-cdf as functions of
(g, n), and :class:`Gap`, the frozen law of the gap of a law in logit units
(scaled, mixed over a dot product's chi^2): ``law(model).gap``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special as _sp

from ._checks import _real_array
from ._frozen import Frozen
from ._quad import _CHUNK, _Family, _flat, _log_phi, _logsum, _panels, _peak_nodes, _solve

__all__ = ["Gap"]

# P(G_1 > g) < e^(-g^2/4) underflows long before _HUGE (whose square would
# overflow in the integrand)
_HUGE = 1e6

# y is m2 below; the integrands are log-concave in y


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


def _log_gap_sf1(g, n):
    """log P(G_1 > g), arrays g, n broadcast (n = 1: G_1 = inf)."""
    shape, (g, n) = _flat(g, n)
    out = np.zeros(g.shape)
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


def _per_scale(g, s):
    """g / s in the standard gap's units (s = 0: every gap is 0)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(s > 0, g / s, np.where(g >= 0, np.inf, -np.inf))


class Gap(Frozen):
    r"""The top-two gap G = m1 - m2 of a law, in logit units: its exact law.

    Made by :attr:`Law.gap`, not directly.  For n i.i.d. N(0, s^2) logits
    G = s G_1 with G_1 the standard gap, P(G_1 > g) = n int phi(x)
    Phi(x - g)^(n-1) dx (fastsoftmax.theory._gap); for a dot product the
    chi^2 mixture over s.  Exact up to quadrature: relative error <= 1e-12
    (<= 1e-10 for dot products down to 1e-25) where the value is >= 1e-30,
    and tails keep relative accuracy until they underflow.  For n = 1 there
    is no second logit: G = inf.  For n = 2, G = ``|N(0, 2 s^2)|``
    (``scipy.stats.halfnorm(scale=sqrt(2) s)``).  Its verbs (``cdf``, ``sf``,
    ``logcdf``, ``logsf``, ``ppf``, ``isf``, ``median``) are those of every
    frozen law: the lower tail is integrated from the density (never
    1 - sf) and ``isf`` is solved on the upper tail; the median is 0.2821 s
    for 64 logits of scale s, about s ln 2 / b_n for large n (the top
    spacing is close to an exponential of rate b_n).  Its mean is not
    computed.

    Parameters
    ----------
    law : Law
        The law whose gap this is.

    Attributes
    ----------
    law : Law
        The law whose gap this is.

    See Also
    --------
    Observable : The law of one observable.

    Examples
    --------
    >>> from fastsoftmax import theory
    >>> gap = theory.Law.gaussian(64, 1.0).gap
    >>> print(f"{float(gap.median()):.4f} {float(gap.sf(1.0)):.4f}")
    0.2821 0.0639
    """

    def __init__(self, law: _Family) -> None:
        self.law = law
        # quantiles already solved (a law never changes): the medians of
        # all nine observables share one
        self._quantiles: dict[tuple[Any, ...], np.ndarray] = {}

    def __repr__(self) -> str:
        return f"{self.law!r}.gap"

    # what the gap's law alone knows (the verbs: fastsoftmax.theory._frozen)

    def _logsf(self, g: ArrayLike) -> np.ndarray:
        g = _real_array("g", g)
        return self.law._mix(lambda s, n, g: _log_gap_sf1(_per_scale(g, s), n), g)

    def _logcdf(self, g: ArrayLike) -> np.ndarray:
        # integrated from the density, never taken as 1 - sf
        g = _real_array("g", g)
        return self.law._mix(lambda s, n, g: _log_gap_cdf1(_per_scale(g, s), n), g)

    def _ppf(self, q: np.ndarray) -> np.ndarray:
        # solved on the log cdf (q < 1/2) or the log sf (q >= 1/2) in ln g, to
        # 1e-13 relative; 0 for q = 0, inf for q = 1 (and for n = 1)
        with np.errstate(divide="ignore"):
            return self._quantile(np.log(q), np.log1p(-q), q < 0.5)

    def _isf(self, q: np.ndarray) -> np.ndarray:
        # on the upper tail where q <= 1/2: small q keep their relative accuracy
        with np.errstate(divide="ignore"):
            return self._quantile(np.log1p(-q), np.log(q), q > 0.5)

    def _quantile(self, lcdf: np.ndarray, lsf: np.ndarray, low: np.ndarray) -> np.ndarray:
        """The g with log P(G <= g) = lcdf, equivalently log P(G > g) = lsf,
        solved on the lower tail where ``low`` (the level below 1/2)."""
        key = (lcdf.shape, lcdf.tobytes(), lsf.tobytes())
        if key not in self._quantiles:
            self._quantiles[key] = self._solve(lcdf, lsf, low)
        return self._quantiles[key].copy()

    def _solve(self, lcdf: np.ndarray, lsf: np.ndarray, low: np.ndarray) -> np.ndarray:
        law = self.law
        shape, (lcdf, lsf, low, n, scale) = _flat(lcdf, lsf, low, law.n, law._scale_bound())
        low = low > 0
        out = np.full(lcdf.shape, np.inf)
        out[lcdf == -np.inf] = 0.0
        out[(lcdf > -np.inf) & (scale == 0) & (n >= 2)] = 0.0
        live = (lcdf > -np.inf) & (lsf > -np.inf) & (n >= 2) & (scale > 0)
        if live.any():
            sub = law._restrict(live, shape)
            lq, l1q, low = lcdf[live], lsf[live], low[live]
            # the lower tail where the level is below 1/2 (relative accuracy),
            # the upper one elsewhere: each element evaluates only its own
            # branch (the lower tail integrates the density: many times the cost)
            sub_lo, sub_hi = sub._restrict(low, low.shape), sub._restrict(~low, low.shape)

            def f(x: np.ndarray) -> np.ndarray:
                g = np.exp(x)
                out = np.empty(g.shape)
                if low.any():
                    out[low] = sub_lo.gap.logcdf(g[low]) - lq[low]
                if not low.all():
                    out[~low] = l1q[~low] - sub_hi.gap.logsf(g[~low])
                return out

            hi = np.log(100.0 * scale[live])
            out[live] = np.exp(_solve(f, np.full(lq.shape, -700.0), hi))
        return out.reshape(shape)
