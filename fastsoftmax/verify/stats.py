r"""Estimates with standard errors: what ``verify``'s criteria compare.

An :class:`Est` is a number, its standard error and its bounds beyond ``Z``
standard errors; :func:`est_mean`, :func:`est_log10_mean`,
:func:`est_quantile` and :func:`est_fraction` make one from a
:class:`~fastsoftmax.Stat`, :func:`measures` the four that describe a
vanishing gradient.  Nothing here knows about the paper's claims.

>>> from fastsoftmax.verify.criteria import Est
>>> Est.normal(1e-8, 1e-9).hi
1.4e-08
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from .constants import LEVEL, SKETCH_REL, Z

if TYPE_CHECKING:
    from ..summary import Stat

__all__ = ["Est", "est_mean", "est_log10_mean", "est_quantile", "est_fraction", "measures"]


@dataclasses.dataclass(frozen=True)
class Est:
    """An estimate, its standard error and its Z-SE bounds [lo, hi].

    What the criteria compare.  ``lo`` and ``hi`` bound the quantity beyond
    ``Z`` standard errors: value -/+ Z se for a normal estimate, the
    order-statistic bounds of a quantile, the Wilson bounds of a fraction.
    ``rows`` (the rows behind it, 0 when unknown) and ``kind`` let
    :meth:`at_rows` say what the estimate would be with more rows: how a
    criterion that is undecided finds the rows that would decide it.

    Parameters
    ----------
    value : float
        The estimate.
    se : float
        Its standard error.
    lo : float
        Lower bound (Z standard errors).
    hi : float
        Upper bound (Z standard errors).
    rows : int, default 0
        The rows it was measured on (0: unknown, or an exact number).
    kind : {"normal", "fraction", "quantile", "exact"}, default "normal"
        How its bounds narrow with more rows: as 1/sqrt(rows) (normal,
        quantile, down to the sketch's resolution), as Wilson's bounds
        (fraction), or not at all (exact).

    See Also
    --------
    est_mean, est_log10_mean, est_quantile, est_fraction : Estimates of a Stat.

    Examples
    --------
    >>> from fastsoftmax.verify.criteria import Est
    >>> Est.normal(1.0, 0.1)
    Est(value=1.0, se=0.1, lo=0.6, hi=1.4)
    >>> Est.exact(0.25).se
    0.0
    """
    value: float
    se: float
    lo: float
    hi: float
    rows: int = dataclasses.field(default=0, repr=False)
    kind: str = dataclasses.field(default="normal", repr=False)

    @classmethod
    def normal(cls, value: float, se: float, z: float = Z, rows: int = 0) -> Est:
        """A normal estimate: bounds value -/+ z se.

        Parameters
        ----------
        value : float
            The estimate.
        se : float
            Its standard error.
        z : float, default 4.0
            Standard errors to the bounds.
        rows : int, default 0
            The rows it was measured on (0: unknown).

        Returns
        -------
        Est
            ``Est(value, se, value - z se, value + z se)``.

        Examples
        --------
        >>> from fastsoftmax.verify.criteria import Est
        >>> Est.normal(0.5, 0.01, z=2).hi
        0.52
        """
        return cls(float(value), float(se), float(value - z * se), float(value + z * se),
                   int(rows), "normal")

    @classmethod
    def exact(cls, value: float) -> Est:
        """An exact number: no standard error, both bounds at ``value``.

        Parameters
        ----------
        value : float
            The number.

        Returns
        -------
        Est
            ``Est(value, 0.0, value, value)``.

        Examples
        --------
        >>> from fastsoftmax.verify.criteria import Est
        >>> Est.exact(0.222695)
        Est(value=0.222695, se=0.0, lo=0.222695, hi=0.222695)
        """
        return cls(float(value), 0.0, float(value), float(value), 0, "exact")

    def at_rows(self, rows: float, z: float = Z) -> Est:
        r"""The same estimate measured on ``rows`` rows, with bounds at ``z`` SE.

        The value stays; the standard error scales as
        :math:`\sqrt{\mathrm{rows_0} / \mathrm{rows}}` and the bounds with
        it (a quantile's never inside the sketch's 1%); a fraction's bounds
        are Wilson's at ``rows``.  An exact number, or one whose rows are
        unknown, is returned as it is.

        Parameters
        ----------
        rows : float
            The rows (> 0).
        z : float, default 4.0
            Standard errors to the bounds (the ones given were at ``Z``).

        Returns
        -------
        Est
            The projected estimate.

        Examples
        --------
        >>> from fastsoftmax.verify.criteria import Est, est_fraction
        >>> Est.normal(0.5, 0.02, rows=100).at_rows(400).se
        0.01
        >>> est_fraction(0.0, 1000).at_rows(10**6).hi < 2e-5
        True
        """
        if self.kind == "exact" or self.rows <= 0:
            return self
        if self.kind == "fraction":
            return est_fraction(self.value, rows, z)
        f = math.sqrt(self.rows / rows)
        w = f * z / Z
        lo = self.value - w * (self.value - self.lo)
        hi = self.value + w * (self.hi - self.value)
        se = self.se * f
        if self.kind == "quantile":
            v = abs(self.value)
            lo, hi = min(lo, self.value - SKETCH_REL * v), max(hi, self.value + SKETCH_REL * v)
            se = max(se, SKETCH_REL * v)
        return Est(self.value, se, lo, hi, int(math.ceil(rows)), self.kind)

    def fmt(self, spec: str = ".3g") -> str:
        """The estimate as text, ``value ± se``.

        Parameters
        ----------
        spec : str, default ".3g"
            Format spec of the value (the standard error gets 2 digits).

        Returns
        -------
        str
            For example ``"0.0551 ± 0.0006"``.

        Examples
        --------
        >>> from fastsoftmax.verify.criteria import Est
        >>> Est.normal(0.05512, 0.00061).fmt()
        '0.0551 ± 0.00061'
        """
        return f"{self.value:{spec}} ± {self.se:.2g}"


def est_mean(stat: Stat, z: float = Z) -> Est:
    """The mean of a Stat with its standard error: mean ± z sem.

    The standard error of the mean is std / sqrt(N) over the N finite values
    (normal approximation: the bounds are the mean -/+ z sem).

    Parameters
    ----------
    stat : Stat
        The statistics of one observable (``summary[name]``).
    z : float, default 4.0
        Standard errors to the bounds.

    Returns
    -------
    Est
        ``Est.normal(stat.mean, stat.sem, z)``.

    See Also
    --------
    est_log10_mean, est_quantile, measures

    Examples
    --------
    >>> import numpy as np, fastsoftmax as fs
    >>> from fastsoftmax.registries import MAX_PROB
    >>> from fastsoftmax.verify.criteria import est_mean
    >>> s = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))
    >>> e = est_mean(s[MAX_PROB.name])
    >>> round(e.value, 4), round(e.se, 4)
    (0.347, 0.0078)
    """
    return Est.normal(stat.mean, stat.sem, z, stat.count)


def est_log10_mean(stat: Stat, z: float = Z) -> Est:
    """The log10-mean of a Stat with its standard error: log10_mean ± z log10_sem.

    The mean of log10 of the value (log10 of the geometric mean), finite
    where the values underflow: how many decades a gradient has lost.

    Parameters
    ----------
    stat : Stat
        The statistics of one observable.
    z : float, default 4.0
        Standard errors to the bounds.

    Returns
    -------
    Est
        ``Est.normal(stat.log10_mean, stat.log10_sem, z)``.

    Examples
    --------
    >>> import numpy as np, fastsoftmax as fs
    >>> from fastsoftmax.registries import MAX_PROB
    >>> from fastsoftmax.verify.criteria import est_log10_mean
    >>> s = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))
    >>> round(est_log10_mean(s[MAX_PROB.name]).value, 4)
    -0.4793
    """
    return Est.normal(stat.log10_mean, stat.log10_sem, z, stat.count)


def est_quantile(stat: Stat, q: float = 0.5, z: float = Z) -> Est:
    r"""The q-quantile with an order-statistic standard error and Z-SE bounds.

    With N rows and :math:`s = \sqrt{q (1 - q) / N}`, the standard error is
    half the spread of the quantiles at :math:`q \pm s` (never below the
    sketch's 1% of the value) and the bounds are the quantiles at
    :math:`q \pm z s`, widened by the sketch's 1% resolution.

    Parameters
    ----------
    stat : Stat
        The statistics of one observable.
    q : float, default 0.5
        The quantile level.
    z : float, default 4.0
        Standard errors to the bounds.

    Returns
    -------
    Est
        The quantile, its standard error and bounds.

    Examples
    --------
    >>> import numpy as np, fastsoftmax as fs
    >>> from fastsoftmax.registries import MAX_PROB
    >>> from fastsoftmax.verify.criteria import est_quantile
    >>> s = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))
    >>> e = est_quantile(s[MAX_PROB.name])
    >>> bool(e.lo < e.value < e.hi and e.se >= 0.01 * e.value)
    True
    """
    n = stat.count
    value = float(stat.quantile(q))
    s = math.sqrt(q * (1 - q) / n) if n > 0 else math.nan
    lo_q, hi_q = max(0.0, q - z * s), min(1.0, q + z * s)
    se = (float(stat.quantile(min(1.0, q + s))) - float(stat.quantile(max(0.0, q - s)))) / 2
    se = max(se, SKETCH_REL * abs(value))
    lo = float(stat.quantile(lo_q)) / (1 + SKETCH_REL)
    hi = float(stat.quantile(hi_q)) * (1 + SKETCH_REL)
    return Est(value, se, lo, hi, int(n), "quantile")


def est_fraction(p: float, n: float, z: float = Z) -> Est:
    r"""A fraction p of n rows: binomial standard error and Wilson score bounds.

    .. math::

        \mathrm{se} = \sqrt{p (1 - p) / n}, \qquad
        \frac{p + z^2 / 2n \mp z \sqrt{p (1 - p) / n + z^2 / 4n^2}}{1 + z^2 / n}

    The Wilson bounds stay inside [0, 1] and are informative at p = 0.

    Parameters
    ----------
    p : float
        The observed fraction.
    n : float
        The number of rows (> 0; a projected count may be fractional).
    z : float, default 4.0
        Standard errors to the bounds.

    Returns
    -------
    Est
        The fraction, its standard error and the Wilson bounds.

    Examples
    --------
    >>> from fastsoftmax.verify.criteria import est_fraction
    >>> e = est_fraction(0.3, 1000)
    >>> round(e.se, 4), round(e.lo, 3), round(e.hi, 3)
    (0.0145, 0.246, 0.361)
    >>> est_fraction(0.0, 1000).hi < 0.02
    True
    """
    p = float(p)
    se = math.sqrt(max(p * (1 - p), 0.0) / n)
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return Est(p, se, max(0.0, c - h), min(1.0, c + h), int(math.ceil(n)), "fraction")


def measures(stat: Stat, level: float = LEVEL, z: float = Z) -> dict[str, Est]:
    """The four measures of a vanishing gradient, each an :class:`Est`.

    A gradient spread over hundreds of decades is described by its typical
    row (the median), its average (the mean, carried by the few unsaturated
    rows), the decades lost (the log10-mean) and how often it vanishes (the
    fraction of rows below ``level``).

    Parameters
    ----------
    stat : Stat
        The statistics of one observable.
    level : float, default 1e-6
        The level for ``below`` (a configured threshold: counted exactly).
    z : float, default 4.0
        Standard errors to the bounds.

    Returns
    -------
    dict of str to Est
        ``median`` (:func:`est_quantile`), ``mean`` (:func:`est_mean`),
        ``log10_mean`` (:func:`est_log10_mean`) and ``below``, the fraction
        of rows below ``level`` (:func:`est_fraction`).

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> from fastsoftmax.registries import JAC_DIAG_MAX
    >>> from fastsoftmax.verify.criteria import measures
    >>> s = fs.simulate(fs.models.DotProduct(n=64, d_k=4096, scaled=False), 10_000)
    >>> m = measures(s[JAC_DIAG_MAX.name])
    >>> sorted(m)
    ['below', 'log10_mean', 'mean', 'median']
    >>> round(m["below"].value, 2)
    0.6
    """
    return dict(median=est_quantile(stat, 0.5, z), mean=est_mean(stat, z),
                log10_mean=est_log10_mean(stat, z),
                below=est_fraction(stat.fraction_below(level), stat.count, z))
