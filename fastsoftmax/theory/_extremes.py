r"""Extremes of n i.i.d. normals: the Gumbel location b_n, E[max], sigma_c.

The largest of n standard normals is b_n + Gumbel / b_n + o(1/b_n)
(Fisher-Tippett; David & Nagaraja 10.5), b_n the Gumbel location
(n phi(b_n) = b_n); the top logits form a Poisson process of intensity
e^(-b_n x).  The random energy model (fastsoftmax.theory._rem) and the
stated accuracies (fastsoftmax.theory._accuracy) read their index
m = b_n / sigma from here, and :func:`freezing_scale` is its leading order.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._checks import _check_n
from ._quad import _LOG_SQRT_2PI

__all__ = ["freezing_scale"]


def _sigma_c(n):
    """sigma_c = sqrt(2 ln n) of checked n (:func:`freezing_scale`)."""
    return np.sqrt(2.0 * np.log(n))


def _b_n(n):
    """The Gumbel location of the max of n standard normals: n phi(b) = b
    (P(max <= b + x/b) -> exp(-e^-x)), by Newton from sigma_c = sqrt(2 ln n).
    Solved once per distinct n: the laws pass n broadcast against their
    quadrature nodes, where it takes a few values."""
    n = np.asarray(n, dtype=np.float64)
    u, inv = np.unique(n, return_inverse=True)
    ln = np.log(u)
    b = _sigma_c(u)
    for _ in range(30):
        f = ln - 0.5 * b * b - _LOG_SQRT_2PI - np.log(b)
        b = b + f / (b + 1.0 / b)
    return b[inv.reshape(-1)].reshape(n.shape)


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
    return _sigma_c(_check_n(n))


def _expected_max(n, s):
    """E[max logit] ~= sigma (b_n + gamma_E / b_n) (module docstring)."""
    b = _b_n(np.maximum(n, 2.0))
    return np.where(n == 1, 0.0, s * (b + np.euler_gamma / b))
