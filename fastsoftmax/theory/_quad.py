"""Quadrature and root-finding primitives of the laws, vectorised over arrays.

Arrays carry the parameters' broadcast shape S plus a trailing axis: of
length 1 while a peak is located, of the nodes after.  Everything here is
generic numerics: Gauss-Legendre panels, the nodes of a log-concave
integrand around its peak, log-space sums, a bracketed solver, and the
nodes of a chi^2 mixture (the dot-product laws); and the interface of
that mixture (``_Family``) that the frozen distributions call.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Protocol

import numpy as np
from numpy.typing import ArrayLike
from scipy import special as _sp

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
# drop of the log-integrand at which a concave integrand is cut (e^-60 ~ 1e-26)
_DROP = 60.0
# panels x Gauss-Legendre order on each side of a peak; halvings that locate
# a peak's mode and cut points (``_peak_nodes``)
_PANELS, _ORDER = 2, 32
_PEAK_ITERS = 32
# chi^2 mixtures: cut where the log-density of ln c has dropped by this much
# (e^-120 ~ 8e-53); panels on the far left and near the mode (x 8 nodes)
_CHI2_DROP, _CHI2_FAR, _CHI2_NEAR = 120.0, 6, 12
# elements evaluated at once (times the nodes: bounds the memory, ~10 MB an
# array): _CHUNK for the order-1 law (y x u nodes), more for the gap's
_CHUNK = 256

_GL: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _gauss_legendre(k: int) -> tuple[np.ndarray, np.ndarray]:
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
    side of the mode.  The cut tails hold < e^-_DROP of the integral.

    The three points only place the panels (the integrand is smooth across
    the mode, and a cut moved by d changes the tail dropped by a factor
    e^(d ell')), so they are located to 2^-_PEAK_ITERS of their bracket,
    not to float64 resolution: the gap's brackets are at most ~1e6 wide, a
    located point within ~2e-4 of the true one, far inside a peak's width
    (>= ~0.03 for any n < 1e300)."""
    y0 = _bisect(dell, lo, hi, _PEAK_ITERS)
    cut = ell(y0) - _DROP
    yl = _bisect(lambda y: cut - ell(y), lo, y0, _PEAK_ITERS)
    yr = _bisect(lambda y: ell(y) - cut, y0, hi, _PEAK_ITERS)
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


def _flat(*arrays: ArrayLike) -> tuple[tuple[int, ...], list[np.ndarray]]:
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in arrays))
    return arrays[0].shape, [a.reshape(-1) for a in arrays]


def _bracket_up(f, x0, step=math.log(2.0), tries=60):
    """hi >= x0 with f(hi) >= 0 (f increasing), by steps of ``step``."""
    hi = np.array(x0, dtype=np.float64)
    for _ in range(tries):
        bad = f(hi) < 0
        if not bad.any():
            return hi
        hi = np.where(bad, hi + step, hi)
    return hi


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


class _Family(Protocol):
    """What a frozen distribution needs of its law (:class:`fastsoftmax.theory.Law`):
    the one mixture over the logit scale, and the law restricted to a subset."""

    n: np.ndarray
    params: dict[str, np.ndarray]

    def _mix(self, fn: Callable[..., Any], *args: Any, log: bool = True) -> np.ndarray: ...

    def _restrict(self, mask: np.ndarray, shape: tuple[int, ...]) -> Any: ...

    def _scale_bound(self) -> np.ndarray: ...

    def typical_scale(self) -> np.ndarray: ...

    @property
    def gap(self) -> Any: ...


def _log(x: Any) -> np.ndarray:
    """log x, log 0 = -inf without a warning."""
    with np.errstate(divide="ignore"):
        return np.log(x)
