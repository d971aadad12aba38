"""The 0.2.0 module-level twins of the laws, kept as deprecated aliases.

Each warns ``DeprecationWarning`` once (fastsoftmax.theory._deprecation),
naming its new spelling, and returns exactly what that spelling returns:
the standard gap is the gap of ``Law.gaussian(n)`` (scale 1), the random
energy model's functions of (n, scale) are those of ``Law.gaussian(n,
scale).rem``.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..registries import ENTROPY, MAX_PROB
from ._deprecation import deprecated_function
from ._law import Law


def _gap_sf(g: ArrayLike, n: ArrayLike) -> np.ndarray:
    return Law.gaussian(n).gap.sf(g)


def _gap_cdf(g: ArrayLike, n: ArrayLike) -> np.ndarray:
    return Law.gaussian(n).gap.cdf(g)


def _gap_quantile(q: ArrayLike, n: ArrayLike) -> np.ndarray:
    return Law.gaussian(n).gap.ppf(q)


def _gap_median(n: ArrayLike) -> np.ndarray:
    return Law.gaussian(n).gap.median()


def _rem_entropy(n: ArrayLike, scale: ArrayLike, correction: bool = True) -> np.ndarray:
    return Law.gaussian(n, scale).rem.observable(ENTROPY.name, correction).mean()


def _rem_max_prob(n: ArrayLike, scale: ArrayLike) -> np.ndarray:
    return Law.gaussian(n, scale).rem[MAX_PROB.name].mean()


def _rem_max_prob_sf(v: ArrayLike, n: ArrayLike, scale: ArrayLike) -> np.ndarray:
    return Law.gaussian(n, scale).rem[MAX_PROB.name].sf(v)


def _expected_max(n: ArrayLike, scale: ArrayLike = 1.0) -> np.ndarray:
    return Law.gaussian(n, scale).rem.expected_max()


gap_sf = deprecated_function("gap_sf", "Law.gaussian(n).gap.sf(g)", _gap_sf)
gap_cdf = deprecated_function("gap_cdf", "Law.gaussian(n).gap.cdf(g)", _gap_cdf)
gap_quantile = deprecated_function("gap_quantile", "Law.gaussian(n).gap.ppf(q)", _gap_quantile)
gap_median = deprecated_function("gap_median", "Law.gaussian(n).gap.median()", _gap_median)
rem_entropy = deprecated_function(
    "rem_entropy", f"Law.gaussian(n, scale).rem.observable({ENTROPY.name!r}, correction).mean()",
    _rem_entropy)
rem_max_prob = deprecated_function(
    "rem_max_prob", f"Law.gaussian(n, scale).rem[{MAX_PROB.name!r}].mean()", _rem_max_prob)
rem_max_prob_sf = deprecated_function(
    "rem_max_prob_sf", f"Law.gaussian(n, scale).rem[{MAX_PROB.name!r}].sf(v)", _rem_max_prob_sf)
expected_max = deprecated_function("expected_max", "Law.gaussian(n, scale).rem.expected_max()",
                                   _expected_max)
