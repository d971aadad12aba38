r"""Critical scales: the logit scale sigma*(t) and the key dimension d_k*(t)
at which a fraction of the rows (half, by default) has obs < t.

Solved on the saturation law (fastsoftmax.theory._saturation): at order 0 in
closed form from the standard gap's quantile, at order 1 by a bracketed
solve over the frozen law ``Law.gaussian(n, sigma)[obs]``; d_k* over the
chi^2 mixture ``Law.dot_product(n, d_k, False)[obs]``.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..registries import JAC_DIAG_MAX
from ._checks import (SATURATING, _check_n, _check_obs, _check_order, _check_positive,
                      _check_prob, _check_t)
from ._law import Law
from ._quad import _bracket_up, _flat, _solve
from ._two import _two_logit

__all__ = ["critical_scale", "critical_d_k"]


def critical_scale(t: ArrayLike, n: ArrayLike, obs: str = JAC_DIAG_MAX.name, order: int = 1,
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
    order : {0, 1}, default 1
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
        s0 = np.where(gam > 0, gam / Law.gaussian(n).gap.isf(fr), 0.0)
    if order == 0 or not ((n > 2) & (s0 > 0)).any():
        return s0
    shape, (t, n, fr, s0) = _flat(t, n, fr, s0)
    live = (n > 2) & (s0 > 0)
    tl, nl, fl, sl = t[live], n[live], fr[live], s0[live]

    def f(x):
        return Law.gaussian(nl, np.exp(x)).observable(obs, order=1).cdf(tl) - fl

    lo = np.log(sl)
    hi = _bracket_up(f, lo + 0.05)
    out = s0.copy()
    out[live] = np.exp(_solve(f, lo, hi, tol=1e-12))
    return out.reshape(shape)


def critical_d_k(t: ArrayLike, n: ArrayLike, obs: str = JAC_DIAG_MAX.name,
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
        return Law.dot_product(nl, np.exp(x), False, Tl).observable(obs, order=order).cdf(tl) \
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
