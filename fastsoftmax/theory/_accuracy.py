r"""The accuracy each law states, as measured against ``simulate``.

``ACCURACY`` names the laws and their measured domains (docs/theory.md);
:func:`stated_accuracy` turns them into (relative, absolute) tolerances at
n logits of scale sigma, so that tools (``fastsoftmax verify``,
``sweep(..., theory=True)``) judge agreement against what a law states
rather than against a number chosen after the fact.  The frozen laws give
the same at their own parameters (``law(model)[obs].stated_accuracy()``,
``law(model).rem[obs].stated_accuracy()``).
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._checks import _check_n, _check_order, _check_scale
from ._extremes import _b_n, _sigma_c

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
        A key of ``ACCURACY``: ``"fraction_below"`` (the cdf P(obs < t) of a
        saturating observable, ``law(model)[obs].cdf(t)``, t <= 1e-3),
        ``"critical_scale"``, ``"critical_d_k"``, ``"rem_entropy"``,
        ``"rem_max_prob"`` (the means of ``law(model).rem[obs]``).
    n : array_like of int, >= 1
        Logits per row.
    scale : array_like of float, >= 0
        The logit scale sigma (for a dot product: :meth:`Law.typical_scale`).
    order : {0, 1}, default 1
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
    Observable.stated_accuracy : The same at a frozen law's parameters.
    RemObservable.stated_accuracy : The same for the random energy model.

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
    sc = _sigma_c(n)
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
