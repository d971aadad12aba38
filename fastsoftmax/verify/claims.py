r"""The claims of ``verify``: estimates with standard errors, the criteria
(small pure functions of estimates and numbers -> :class:`Check`), and the
claims built from the measured summaries.  Nothing here runs a simulation.

>>> from fastsoftmax import verify as V
>>> V.below(V.Est.normal(1e-8, 1e-9), 1e-6)
Check(verdict='holds', text='value 1e-08 < 1e-06')
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from .._math import OBS_NAMES
from .._util import jsonable

if TYPE_CHECKING:
    from ..summary import Stat

__all__ = [
    "Est", "Check", "Claim", "est_mean", "est_log10_mean", "est_quantile", "est_fraction",
    "measures", "below", "above", "ratio_below", "drop", "within_factor", "close", "near",
    "same", "all_of", "judge_saturation", "judge_flat", "judge_literal", "judge_shift",
    "judge_ce_right", "judge_ce_wrong", "crossing", "judge_scale", "judge_band",
    "judge_prediction", "judge_law", "judge_critical",
    "DEFAULT_SAMPLES", "N", "D_K", "OFFSETS", "SCALES", "TARGETS", "LITERAL", "Z", "LEVEL",
    "CONTEXT_N", "CONTEXT_D_K", "CONTEXT_LOGITS",
    "SKETCH_REL", "HOLDS", "FAILS", "INCONCLUSIVE",
]

#: Logit vectors per point of a ``verify`` run.
DEFAULT_SAMPLES = 500_000
#: Logits per row (keys, for DotProduct) of every experiment.
N = 64
#: The d_k of the DotProduct sweeps (scaled and unscaled).
D_K = (1, 4, 16, 64, 256, 1024, 4096)
#: The offsets of the Shifted experiment (float64 logits).
OFFSETS = (0.0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6)
#: The scales sigma of the Gaussian sweep: 2**(k/2), 1 to 256.
SCALES = tuple(float(2.0 ** (k / 2)) for k in range(17))
#: The cross-entropy targets of the unscaled DotProduct sweep.
TARGETS = ("argmax", "random", "sampled")
#: The literal vector of the objection.
LITERAL = (100.0, 101.0, 99.0)
#: Standard errors for "significant".
Z = 4.0
#: The level below which a gradient "vanishes" (a threshold of every Summary).
LEVEL = 1e-6
#: Relative resolution of the quantiles (the DDSketch-style sketch's 1%).
SKETCH_REL = 0.01
#: The context lengths n of ``verify --context`` (DotProduct, scaled and unscaled).
CONTEXT_N = (16, 64, 256, 1024, 4096, 16384, 65536)
#: The key dimension of the context-length experiment (the Transformer's d_k = 512 / 8 heads).
CONTEXT_D_K = 64
#: Logits per point of the context-length experiment: rows = min(samples, this / n).
CONTEXT_LOGITS = 2 ** 28
#: The verdicts.
HOLDS, FAILS, INCONCLUSIVE = "holds", "fails", "inconclusive"


# --------------------------------------------------------------------------
# estimates with standard errors

@dataclasses.dataclass(frozen=True)
class Est:
    """An estimate, its standard error and its Z-SE bounds [lo, hi].

    What the criteria compare.  ``lo`` and ``hi`` bound the quantity beyond
    ``Z`` standard errors: value -/+ Z se for a normal estimate, the
    order-statistic bounds of a quantile, the Wilson bounds of a fraction.

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

    See Also
    --------
    est_mean, est_log10_mean, est_quantile, est_fraction : Estimates of a Stat.

    Examples
    --------
    >>> from fastsoftmax.verify import Est
    >>> Est.normal(1.0, 0.1)
    Est(value=1.0, se=0.1, lo=0.6, hi=1.4)
    >>> Est.exact(0.25).se
    0.0
    """
    value: float
    se: float
    lo: float
    hi: float

    @classmethod
    def normal(cls, value: float, se: float, z: float = Z) -> Est:
        """A normal estimate: bounds value -/+ z se.

        Parameters
        ----------
        value : float
            The estimate.
        se : float
            Its standard error.
        z : float, default 4.0
            Standard errors to the bounds.

        Returns
        -------
        Est
            ``Est(value, se, value - z se, value + z se)``.

        Examples
        --------
        >>> from fastsoftmax.verify import Est
        >>> Est.normal(0.5, 0.01, z=2).hi
        0.52
        """
        return cls(float(value), float(se), float(value - z * se), float(value + z * se))

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
        >>> from fastsoftmax.verify import Est
        >>> Est.exact(0.222695)
        Est(value=0.222695, se=0.0, lo=0.222695, hi=0.222695)
        """
        return cls(float(value), 0.0, float(value), float(value))

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
        >>> from fastsoftmax.verify import Est
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
    >>> from fastsoftmax.verify import est_mean
    >>> s = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))
    >>> e = est_mean(s["max_prob"])
    >>> round(e.value, 4), round(e.se, 4)
    (0.347, 0.0078)
    """
    return Est.normal(stat.mean, stat.sem, z)


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
    >>> from fastsoftmax.verify import est_log10_mean
    >>> s = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))
    >>> round(est_log10_mean(s["max_prob"]).value, 4)
    -0.4793
    """
    return Est.normal(stat.log10_mean, stat.log10_sem, z)


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
    >>> from fastsoftmax.verify import est_quantile
    >>> s = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))
    >>> e = est_quantile(s["max_prob"])
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
    return Est(value, se, lo, hi)


def est_fraction(p: float, n: int, z: float = Z) -> Est:
    r"""A fraction p of n rows: binomial standard error and Wilson score bounds.

    .. math::

        \mathrm{se} = \sqrt{p (1 - p) / n}, \qquad
        \frac{p + z^2 / 2n \mp z \sqrt{p (1 - p) / n + z^2 / 4n^2}}{1 + z^2 / n}

    The Wilson bounds stay inside [0, 1] and are informative at p = 0.

    Parameters
    ----------
    p : float
        The observed fraction.
    n : int
        The number of rows (> 0).
    z : float, default 4.0
        Standard errors to the bounds.

    Returns
    -------
    Est
        The fraction, its standard error and the Wilson bounds.

    Examples
    --------
    >>> from fastsoftmax.verify import est_fraction
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
    return Est(p, se, max(0.0, c - h), min(1.0, c + h))


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
    >>> from fastsoftmax.verify import measures
    >>> s = fs.simulate(fs.models.DotProduct(n=64, d_k=4096, scaled=False), 10_000)
    >>> m = measures(s["jac_diag_max"])
    >>> sorted(m)
    ['below', 'log10_mean', 'mean', 'median']
    >>> round(m["below"].value, 2)
    0.6
    """
    return dict(median=est_quantile(stat, 0.5, z), mean=est_mean(stat, z),
                log10_mean=est_log10_mean(stat, z),
                below=est_fraction(stat.fraction_below(level), stat.count, z))


# --------------------------------------------------------------------------
# criteria: pure functions of estimates and numbers -> Check

@dataclasses.dataclass(frozen=True)
class Check:
    """One condition of a claim, judged: its verdict and what was compared.

    What every criterion returns; a claim's verdict is :func:`all_of` its
    checks.

    Parameters
    ----------
    verdict : {"holds", "fails", "inconclusive"}
        Met beyond the standard errors, contradicted beyond them, or neither.
    text : str
        What was compared, with the numbers.

    See Also
    --------
    all_of : The verdict of several checks.

    Examples
    --------
    >>> from fastsoftmax.verify import Check, all_of
    >>> all_of([Check("holds", "a"), Check("inconclusive", "b")])
    'inconclusive'
    """
    verdict: str        # holds / fails / inconclusive
    text: str           # what was compared, with the numbers


def _v(holds, fails):
    return HOLDS if holds else (FAILS if fails else INCONCLUSIVE)


def below(a: Est, bound: float, what: str = "value") -> Check:
    """Criterion a < bound: holds if a.hi < bound, fails if a.lo >= bound.

    Inconclusive when ``bound`` lies within a's Z-SE bounds.

    Parameters
    ----------
    a : Est
        The estimate.
    bound : float
        The bound.
    what : str, default "value"
        What is compared, for the check's text.

    Returns
    -------
    Check
        The verdict and the comparison.

    Examples
    --------
    >>> from fastsoftmax.verify import Est, below
    >>> below(Est.normal(1e-8, 1e-9), 1e-6, "median")
    Check(verdict='holds', text='median 1e-08 < 1e-06')
    >>> below(Est.normal(1e-6, 1e-6), 1e-6).verdict
    'inconclusive'
    """
    return Check(_v(a.hi < bound, a.lo >= bound), f"{what} {a.value:.3g} < {bound:g}")


def above(a: Est, bound: float, what: str = "value") -> Check:
    """Criterion a > bound: holds if a.lo > bound, fails if a.hi <= bound.

    Inconclusive when ``bound`` lies within a's Z-SE bounds.

    Parameters
    ----------
    a : Est
        The estimate.
    bound : float
        The bound.
    what : str, default "value"
        What is compared, for the check's text.

    Returns
    -------
    Check
        The verdict and the comparison.

    Examples
    --------
    >>> from fastsoftmax.verify import Est, above
    >>> above(Est.normal(0.3, 0.01), 0.1).verdict, above(Est.normal(0.3, 0.1), 0.1).verdict
    ('holds', 'inconclusive')
    """
    return Check(_v(a.lo > bound, a.hi <= bound), f"{what} {a.value:.3g} > {bound:g}")


def ratio_below(a: Est, b: Est, factor: float, what: str = "value") -> Check:
    """Criterion a < factor * b, beyond both estimates' bounds.

    Holds if a.hi < factor * b.lo, fails if a.lo >= factor * b.hi.

    Parameters
    ----------
    a, b : Est
        The two estimates.
    factor : float
        The largest ratio a / b for which it holds.
    what : str, default "value"
        What is compared, for the check's text.

    Returns
    -------
    Check
        The verdict and the observed ratio.

    Examples
    --------
    >>> from fastsoftmax.verify import Est, ratio_below
    >>> ratio_below(Est.exact(1e-8), Est.normal(0.05, 0.001), 1e-3, "median")
    Check(verdict='holds', text='median ratio 2e-07 < 0.001')
    """
    return Check(_v(a.hi < factor * b.lo, a.lo >= factor * b.hi),
                 f"{what} ratio {_ratio(a.value, b.value)} < {factor:g}")


def drop(a: Est, b: Est, amount: float, what: str = "value", z: float = Z) -> Check:
    """Criterion a - b > amount, beyond z (SE_a + SE_b).

    Holds if d - z se > amount, fails if d + z se <= amount, with
    d = a - b and se = SE_a + SE_b (valid whatever the correlation between
    the two estimates, which common random numbers introduce).

    Parameters
    ----------
    a, b : Est
        The two estimates.
    amount : float
        The smallest drop for which it holds.
    what : str, default "value"
        What is compared, for the check's text.
    z : float, default 4.0
        Standard errors of the difference to the decision.

    Returns
    -------
    Check
        The verdict and the observed drop.

    Examples
    --------
    >>> from fastsoftmax.verify import Est, drop
    >>> drop(Est.normal(-1.25, 0.01), Est.normal(-10.6, 0.1), 3.0, "log10-mean").verdict
    'holds'
    """
    d, se = a.value - b.value, a.se + b.se
    return Check(_v(d - z * se > amount, d + z * se <= amount),
                 f"{what} drop {d:.3g} ± {se:.2g} > {amount:g}")


def within_factor(a: Est, b: Est, factor: float, what: str = "value") -> Check:
    """Criterion b / factor <= a <= b * factor (flat), beyond the bounds.

    Holds if a's bounds lie inside b's bounds widened by ``factor``, fails
    if a's bounds lie outside them.

    Parameters
    ----------
    a, b : Est
        The two estimates.
    factor : float
        The largest ratio either way (> 1).
    what : str, default "value"
        What is compared, for the check's text.

    Returns
    -------
    Check
        The verdict and the observed ratio.

    Examples
    --------
    >>> from fastsoftmax.verify import Est, within_factor
    >>> within_factor(Est.normal(0.0868, 0.001), Est.normal(0.0551, 0.001), 2.0).verdict
    'holds'
    """
    holds = a.lo >= b.hi / factor and a.hi <= b.lo * factor
    fails = a.hi < b.lo / factor or a.lo > b.hi * factor
    return Check(_v(holds, fails), f"{what} ratio {_ratio(a.value, b.value)} within "
                                   f"[1/{factor:g}, {factor:g}]")


def close(a: Est, b: Est, amount: float, what: str = "value", z: float = Z) -> Check:
    """Criterion ``|a - b| < amount``, beyond z (SE_a + SE_b).

    Holds if d + z se < amount, fails if d - z se >= amount, with
    ``d = |a - b|`` and se = SE_a + SE_b.

    Parameters
    ----------
    a, b : Est
        The two estimates.
    amount : float
        The largest difference for which it holds.
    what : str, default "value"
        What is compared, for the check's text.
    z : float, default 4.0
        Standard errors of the difference to the decision.

    Returns
    -------
    Check
        The verdict and the observed difference.

    Examples
    --------
    >>> from fastsoftmax.verify import Est, close
    >>> close(Est.normal(-1.05, 0.01), Est.normal(-1.25, 0.01), 0.3).verdict
    'holds'
    """
    d, se = abs(a.value - b.value), a.se + b.se
    return Check(_v(d + z * se < amount, d - z * se >= amount),
                 f"{what} |diff| {d:.3g} ± {se:.2g} < {amount:g}")


def near(a: Est, target: float, rel: float, what: str = "value") -> Check:
    """Criterion a within a relative ``rel`` of ``target``, beyond the bounds.

    Holds if a's bounds lie inside target (1 -/+ rel), fails if they lie
    outside.

    Parameters
    ----------
    a : Est
        The estimate.
    target : float
        The value a should be near.
    rel : float
        The relative tolerance.
    what : str, default "value"
        What is compared, for the check's text.

    Returns
    -------
    Check
        The verdict and the comparison.

    Examples
    --------
    >>> import math
    >>> from fastsoftmax.verify import Est, near
    >>> near(Est.normal(1.416, 0.01), math.sqrt(2), 0.05, "median |grad|")
    Check(verdict='holds', text='median |grad| 1.416 within 5% of 1.414')
    """
    lo, hi = target * (1 - rel), target * (1 + rel)
    return Check(_v(a.lo >= lo and a.hi <= hi, a.hi < lo or a.lo > hi),
                 f"{what} {a.value:.4g} within {rel:.0%} of {target:.4g}")


def same(a: Est, b: Est, what: str = "value", z: float = Z) -> Check:
    """Criterion no detectable difference: holds if ``|a - b| <= z (SE_a + SE_b)``.

    Fails otherwise (never inconclusive).

    Parameters
    ----------
    a, b : Est
        The two estimates.
    what : str, default "value"
        What is compared, for the check's text.
    z : float, default 4.0
        Standard errors of the difference to the decision.

    Returns
    -------
    Check
        The verdict and the difference in standard errors.

    Examples
    --------
    >>> from fastsoftmax.verify import Est, same
    >>> same(Est.normal(0.0937, 1e-4), Est.normal(0.0937, 1e-4)).verdict
    'holds'
    >>> same(Est.normal(0.09, 1e-4), Est.normal(0.1, 1e-4)).verdict
    'fails'
    """
    d, se = abs(a.value - b.value), a.se + b.se
    ok = d <= z * se
    return Check(HOLDS if ok else FAILS, f"{what} |diff| {d:.2g} <= {z:g} x {se:.2g}")


def all_of(checks: Iterable[Check]) -> str:
    """The verdict of several checks: fails if any fails, holds if all hold.

    Inconclusive otherwise (none fails, some are inconclusive).

    Parameters
    ----------
    checks : iterable of Check
        The conditions of a claim.

    Returns
    -------
    str
        ``"holds"``, ``"fails"`` or ``"inconclusive"``.

    Examples
    --------
    >>> from fastsoftmax.verify import Check, all_of
    >>> all_of([Check("holds", "a"), Check("holds", "b")])
    'holds'
    >>> all_of([Check("inconclusive", "a"), Check("fails", "b")])
    'fails'
    """
    checks = list(checks)
    if any(c.verdict == FAILS for c in checks):
        return FAILS
    if all(c.verdict == HOLDS for c in checks):
        return HOLDS
    return INCONCLUSIVE


def judge_band(a: Est, lo: float, hi: float, what: str = "value") -> Check:
    """Criterion lo <= a <= hi for a band that a law states, within a's bounds.

    Fails if a's Z-SE bounds lie wholly outside [lo, hi]; holds if they
    meet it and the measurement resolves the band (its bounds are no wider
    than the band or than the band's centre, so that a vanishing band is not
    "met" by a measurement that cannot tell it from twice its value);
    inconclusive otherwise (more samples would decide).

    Parameters
    ----------
    a : Est
        The measurement.
    lo, hi : float
        The band: a prediction -/+ its stated accuracy, or exact bounds.
    what : str, default "value"
        What is compared, for the check's text.

    Returns
    -------
    Check
        The verdict and the comparison.

    See Also
    --------
    judge_prediction : The band of a prediction and its stated accuracy.

    Examples
    --------
    >>> from fastsoftmax.verify import Est, judge_band
    >>> judge_band(Est.normal(0.59, 0.0007), 0.50, 0.59, "fraction").verdict
    'holds'
    >>> judge_band(Est.normal(0.70, 0.0007), 0.50, 0.59).verdict
    'fails'
    >>> judge_band(Est.normal(0.004, 0.003), 0.0035, 0.0045).verdict
    'inconclusive'
    """
    lo, hi = float(min(lo, hi)), float(max(lo, hi))
    apart = a.hi < lo or a.lo > hi
    resolved = (a.hi - a.lo) <= max(hi - lo, abs(lo + hi) / 2)
    return Check(_v(not apart and resolved, apart),
                 f"{what} {a.value:.4g} ± {a.se:.2g} in [{lo:.4g}, {hi:.4g}]")


def judge_prediction(a: Est, predicted: float, rel: float, abs_tol: float = 0.0,
                     what: str = "value") -> Check:
    """Criterion: a measurement agrees with a law's prediction within its stated accuracy.

    The band is predicted -/+ (rel ``|predicted|`` + abs_tol), the accuracy the
    law states there (:func:`fastsoftmax.theory.stated_accuracy`), and the
    measurement's Z-SE bounds must meet it (:func:`judge_band`): fails if
    they lie wholly outside, holds if they meet it and resolve it,
    inconclusive otherwise.

    Parameters
    ----------
    a : Est
        The measurement.
    predicted : float
        The law's value.
    rel : float
        The law's stated relative accuracy there (finite: where the law
        states none, there is nothing to judge).
    abs_tol : float, default 0.0
        The law's stated absolute accuracy there.
    what : str, default "value"
        What is compared, for the check's text.

    Returns
    -------
    Check
        The verdict, the measurement and the prediction with its accuracy.

    Raises
    ------
    ValueError
        If ``rel`` or ``abs_tol`` is not a finite number >= 0.

    Examples
    --------
    >>> from fastsoftmax.verify import Est, judge_prediction
    >>> judge_prediction(Est.normal(0.590, 0.0007), 0.5905, 0.005, what="fraction")
    Check(verdict='holds', text='fraction 0.59 ± 0.0007 vs law 0.5905 ± 0.003 (stated)')
    >>> judge_prediction(Est.normal(0.62, 0.0007), 0.5905, 0.005).verdict
    'fails'
    """
    if not (math.isfinite(rel) and rel >= 0 and math.isfinite(abs_tol) and abs_tol >= 0):
        raise ValueError(f"rel and abs_tol must be finite and >= 0, got {rel!r}, {abs_tol!r}")
    tol = rel * abs(predicted) + abs_tol
    c = judge_band(a, predicted - tol, predicted + tol, what)
    return Check(c.verdict, f"{what} {a.value:.4g} ± {a.se:.2g} vs law {predicted:.4g} ± "
                            f"{tol:.2g} (stated)")


def _ratio(a, b):
    return f"{a / b:.3g}" if b else "inf"


# the claims' criteria, on measures() dicts / numbers

def judge_saturation(small: dict[str, Est], large: dict[str, Est]) -> list[Check]:
    """Claim 1 (the paper): the gradient collapses from small d_k to large d_k.

    The median falls below 1e-3 times its small-d_k value, the log10-mean
    drops by more than 3, the mean falls below half, each beyond the
    standard errors, and more than 25% of the rows are below ``LEVEL``.

    Parameters
    ----------
    small : dict of str to Est
        :func:`measures` of the observable at that point.
    large : dict of str to Est
        :func:`measures` of the observable at that point.

    Returns
    -------
    list of Check
        The four conditions (:func:`all_of` gives the verdict).

    Examples
    --------
    >>> from fastsoftmax.verify import Est, all_of, judge_saturation
    >>> small = dict(median=Est.normal(0.055, 6e-4), mean=Est.normal(0.076, 1e-4),
    ...              log10_mean=Est.normal(-1.25, 5e-4), below=Est.exact(0.0))
    >>> large = dict(median=Est.normal(1.6e-8, 6e-10), mean=Est.normal(0.018, 7e-5),
    ...              log10_mean=Est.normal(-10.6, 0.01), below=Est.normal(0.59, 7e-4))
    >>> all_of(judge_saturation(small, large))
    'holds'
    """
    return [ratio_below(large["median"], small["median"], 1e-3, "median"),
            drop(small["log10_mean"], large["log10_mean"], 3.0, "log10-mean"),
            ratio_below(large["mean"], small["mean"], 0.5, "mean"),
            above(large["below"], 0.25, f"fraction < {LEVEL:g}")]


def judge_flat(ref: dict[str, Est], others: Sequence[dict[str, Est]]) -> list[Check]:
    """Claim 2 (the fix): with scaling the statistics are flat in d_k.

    At every d_k the median is within a factor 2 of the reference's, the
    log10-mean within 0.3 of it (beyond the standard errors), and fewer
    than 1e-3 of the rows are below ``LEVEL``.

    Parameters
    ----------
    ref : dict of str to Est
        :func:`measures` of the observable at that point.
    others : sequence of dict of str to Est
        :func:`measures` at the other points.

    Returns
    -------
    list of Check
        Three conditions per point, the reference included.

    Examples
    --------
    >>> from fastsoftmax.verify import Est, all_of, judge_flat
    >>> m = dict(median=Est.normal(0.0868, 9e-4), log10_mean=Est.normal(-1.05, 5e-4),
    ...          below=Est.exact(0.0))
    >>> all_of(judge_flat(m, [m, m]))
    'holds'
    """
    checks = []
    for m in [ref] + list(others):
        checks.append(within_factor(m["median"], ref["median"], 2.0, "median"))
        checks.append(close(m["log10_mean"], ref["log10_mean"], 0.3, "log10-mean"))
        checks.append(below(m["below"], 1e-3, f"fraction < {LEVEL:g}"))
    return checks


def judge_literal(jac_diag_max: float, jac_diag_max_shifted: float,
                  rel: float = 1e-12) -> list[Check]:
    """Claim 3 (the objection): [100, 101, 99] keeps healthy gradients.

    Its largest Jacobian entry is healthy (> 0.1; the maximum possible,
    p(1 - p) at p = 1/2, is 0.25) and equal to that of [0, 1, -1] within
    ``rel`` (softmax is shift-invariant).  Exact numbers: holds or fails.

    Parameters
    ----------
    jac_diag_max : float
        ``jac_diag_max`` of [100, 101, 99].
    jac_diag_max_shifted : float
        ``jac_diag_max`` of [0, 1, -1].
    rel : float, default 1e-12
        Relative tolerance of the equality.

    Returns
    -------
    list of Check
        The two conditions.

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> from fastsoftmax.verify import all_of, judge_literal
    >>> a = float(fs.observables([[100.0, 101.0, 99.0]])["jac_diag_max"][0])
    >>> b = float(fs.observables([[0.0, 1.0, -1.0]])["jac_diag_max"][0])
    >>> all_of(judge_literal(a, b))
    'holds'
    """
    healthy = jac_diag_max > 0.1
    equal = abs(jac_diag_max - jac_diag_max_shifted) <= rel * abs(jac_diag_max_shifted)
    return [Check(HOLDS if healthy else FAILS, f"jac_diag_max {jac_diag_max:.6g} > 0.1"),
            Check(HOLDS if equal else FAILS,
                  f"equal to [0, 1, -1]'s {jac_diag_max_shifted:.6g} within {rel:g}")]


def judge_shift(ref: dict[str, Any], others: Sequence[dict[str, Any]]) -> list[Check]:
    """Claim 4 (the objection): a common offset changes nothing.

    Every offset's statistics equal the offset-0 ones (each observable's
    mean and log10-mean, within 4 SE: :func:`same`) and are far from
    vanishing (median jac_diag_max > 1e-2, fewer than 1e-3 of the rows below
    ``LEVEL``).

    Parameters
    ----------
    ref : dict
        The offset-0 point: observable name -> dict(mean=Est,
        log10_mean=Est), and ``"jac"`` -> :func:`measures` of jac_diag_max.
    others : sequence of dict
        The other offsets, alike.

    Returns
    -------
    list of Check
        Two conditions per observable and other offset, two per point.

    Examples
    --------
    >>> from fastsoftmax.verify import Est, all_of, judge_shift
    >>> m = dict(entropy=dict(mean=Est.normal(3.2, 1e-3), log10_mean=Est.normal(0.5, 1e-4)),
    ...          jac=dict(median=Est.normal(0.087, 1e-3), below=Est.exact(0.0)))
    >>> all_of(judge_shift(m, [m]))
    'holds'
    """
    checks = []
    for m in others:
        for name in m:
            if name == "jac":
                continue
            checks.append(same(m[name]["mean"], ref[name]["mean"], f"{name} mean"))
            checks.append(same(m[name]["log10_mean"], ref[name]["log10_mean"],
                               f"{name} log10-mean"))
    for m in [ref] + list(others):
        checks.append(above(m["jac"]["median"], 1e-2, "median"))
        checks.append(below(m["jac"]["below"], 1e-3, f"fraction < {LEVEL:g}"))
    return checks


def judge_ce_right(small: dict[str, Est], large: dict[str, Est]) -> list[Check]:
    """Claim 5: cross-entropy, confidently right model: the gradient vanishes.

    With target "argmax", 1 - p_y's median at large d_k is below ``LEVEL``
    and below 1e-3 times its small-d_k value.

    Parameters
    ----------
    small : dict of str to Est
        :func:`measures` of ce_grad_target at that point.
    large : dict of str to Est
        :func:`measures` of ce_grad_target at that point.

    Returns
    -------
    list of Check
        The two conditions.

    Examples
    --------
    >>> from fastsoftmax.verify import Est, all_of, judge_ce_right
    >>> all_of(judge_ce_right(dict(median=Est.normal(0.93, 0.01)),
    ...                       dict(median=Est.normal(1.6e-8, 6e-10))))
    'holds'
    """
    return [below(large["median"], LEVEL, "median"),
            ratio_below(large["median"], small["median"], 1e-3, "median")]


def judge_ce_wrong(target_m: dict[str, Est], norm_median: Est) -> list[Check]:
    r"""Claim 6: cross-entropy, wrong model: the gradient stays near 1.

    With target "random" at saturation, 1 - p_y's median and mean are above
    0.9, and the median of :math:`\lVert p - e_y \rVert_2` is within 5%
    of sqrt(2) (one-hot p on another class).

    Parameters
    ----------
    target_m : dict of str to Est
        :func:`measures` of ce_grad_target at that point.
    norm_median : Est
        The median of ce_grad_norm (:func:`est_quantile`).

    Returns
    -------
    list of Check
        The three conditions.

    Examples
    --------
    >>> from fastsoftmax.verify import Est, all_of, judge_ce_wrong
    >>> all_of(judge_ce_wrong(dict(median=Est.normal(0.99, 0.01), mean=Est.normal(0.98, 2e-4)),
    ...                       Est.normal(1.416, 0.01)))
    'holds'
    """
    return [above(target_m["median"], 0.9, "median 1 - p_y"),
            above(target_m["mean"], 0.9, "mean 1 - p_y"),
            near(norm_median, math.sqrt(2), 0.05, "median |grad|")]


def crossing(xs: Sequence[float], ests: Sequence[Est],
             level: float = LEVEL) -> dict[str, Any] | None:
    """Where a median falls below ``level`` along a sweep.

    The last grid interval where the median goes from >= level to < level,
    the point x* there (log10 of the median interpolated linearly in x), and
    whether it is located beyond the standard errors: some point at or
    before the interval significantly above ``level`` and some point at or
    after it significantly below.

    Parameters
    ----------
    xs : sequence of float
        The sweep's x values (increasing).
    ests : sequence of Est
        The median at each x.
    level : float, default 1e-6
        The level.

    Returns
    -------
    dict or None
        ``x`` (x*), ``x_lo``, ``x_hi`` (the interval) and ``significant``
        (bool); None if the median never crosses ``level``.

    Examples
    --------
    >>> from fastsoftmax.verify import Est, crossing
    >>> meds = [Est.normal(v, v / 100) for v in (1e-2, 1e-4, 1e-8, 1e-12)]
    >>> crossing([1.0, 2.0, 4.0, 8.0], meds)
    {'x': 3.0, 'x_lo': 2.0, 'x_hi': 4.0, 'significant': True}
    >>> crossing([1.0, 2.0], meds[:2]) is None
    True
    """
    vals = [e.value for e in ests]
    idx = [i for i in range(len(vals) - 1) if vals[i] >= level > vals[i + 1]]
    if not idx:
        return None
    i = idx[-1]
    l0, l1 = math.log10(vals[i]), math.log10(vals[i + 1]) if vals[i + 1] > 0 else -400.0
    t = (l0 - math.log10(level)) / (l0 - l1) if l0 != l1 else 0.0
    x = xs[i] + t * (xs[i + 1] - xs[i])
    sig = any(e.lo > level for e in ests[:i + 1]) and any(e.hi < level for e in ests[i + 1:])
    return dict(x=float(x), x_lo=float(xs[i]), x_hi=float(xs[i + 1]), significant=bool(sig))


def judge_scale(cross_gauss: dict[str, Any] | None, cross_dk: dict[str, Any] | None,
                tol: float = 0.1) -> list[Check]:
    """Claim 7: saturation is set by the logit scale.

    Both sweeps cross ``LEVEL`` (located beyond the standard errors), and
    the Gaussian sweep's sigma* equals sqrt(d_k*) of the unscaled d_k sweep
    within ``tol`` (unscaled logits have a spread of about sqrt(d_k)).

    Parameters
    ----------
    cross_gauss : dict or None
        :func:`crossing` of the Gaussian scale sweep (x = sigma).
    cross_dk : dict or None
        :func:`crossing` of the unscaled d_k sweep (x = sqrt(d_k)).
    tol : float, default 0.1
        Relative tolerance of sigma* / sqrt(d_k*) - 1.

    Returns
    -------
    list of Check
        One per sweep (fails if it never crosses) and the comparison.

    Examples
    --------
    >>> from fastsoftmax.verify import all_of, judge_scale
    >>> c = dict(x=49.3, x_lo=45.3, x_hi=64.0, significant=True)
    >>> all_of(judge_scale(c, dict(c, x=49.0)))
    'holds'
    >>> all_of(judge_scale(c, None))
    'fails'
    """
    checks = []
    for name, c in (("scale sweep", cross_gauss), ("d_k sweep", cross_dk)):
        if c is None:
            checks.append(Check(FAILS, f"{name} never crosses {LEVEL:g}"))
        else:
            checks.append(Check(HOLDS if c["significant"] else INCONCLUSIVE,
                                f"{name} crosses {LEVEL:g} in [{c['x_lo']:.4g}, "
                                f"{c['x_hi']:.4g}]"))
    if cross_gauss is not None and cross_dk is not None:
        r = cross_gauss["x"] / cross_dk["x"]
        checks.append(Check(HOLDS if abs(r - 1) <= tol else FAILS,
                            f"sigma*/sqrt(d_k*) = {r:.3f} within {tol:.0%} of 1"))
    return checks


def judge_law(points: Sequence[dict[str, Any]]) -> list[Check]:
    """Claims 8 and 10-11: measurements against a law, within its stated accuracy.

    Each point is judged by :func:`judge_prediction` where the law states an
    accuracy (a finite ``rel``) and, where the point has exact bounds, by
    :func:`judge_band` on them; points outside the law's stated domain are
    shown in the evidence but not judged.  With no point judged the claim
    is inconclusive (nothing was tested).

    Parameters
    ----------
    points : sequence of dict
        ``what`` (str), ``measured`` (:class:`Est`), ``predicted`` (float),
        ``rel`` and ``abs`` (the stated accuracy:
        :func:`fastsoftmax.theory.stated_accuracy`; ``rel`` NaN where none
        is stated) and optionally ``lo``, ``hi`` (exact bounds).

    Returns
    -------
    list of Check
        One or two per judged point.

    Examples
    --------
    >>> from fastsoftmax.verify import Est, all_of, judge_law
    >>> p = dict(what="d_k=4096", measured=Est.normal(0.590, 0.0007), predicted=0.5905,
    ...          rel=0.005, abs=0.0, lo=0.502, hi=0.592)
    >>> all_of(judge_law([p, dict(p, what="d_k=1", rel=float("nan"))]))
    'holds'
    >>> all_of(judge_law([dict(p, measured=Est.normal(0.55, 0.0007))]))
    'fails'
    """
    checks = []
    for p in points:
        rel = float(p.get("rel", math.nan))
        if not math.isfinite(rel):
            continue
        checks.append(judge_prediction(p["measured"], p["predicted"], rel,
                                       float(p.get("abs", 0.0)), p["what"]))
        if p.get("lo") is not None and p.get("hi") is not None:
            checks.append(judge_band(p["measured"], p["lo"], p["hi"],
                                     f"{p['what']} (exact bounds)"))
    if not checks:
        checks.append(Check(INCONCLUSIVE, "no point inside the law's stated domain"))
    return checks


def judge_critical(at_star: Est, predicted: float, rel: float, star: float,
                   cross: dict[str, Any] | None, what: str = "sigma*") -> list[Check]:
    """Claim 9, one sweep: the law's critical point, measured where it predicts it.

    At the predicted critical point (sigma* or d_k*) the fraction of rows
    below ``LEVEL`` is the law's (1/2) within its stated accuracy
    (:func:`judge_prediction`), and the predicted point lies in the grid
    interval where the sweep's median crosses ``LEVEL``
    (:func:`crossing`): holds if it does and the crossing is located beyond
    the standard errors, fails if it lies outside a located interval.

    Parameters
    ----------
    at_star : Est
        The fraction below ``LEVEL`` measured at the predicted point.
    predicted : float
        The law's fraction there (1/2 up to the rounding of the point).
    rel : float
        The law's stated relative accuracy of that fraction.
    star : float
        The predicted critical point, in the sweep's x (sigma, or sqrt(d_k)).
    cross : dict or None
        :func:`crossing` of the sweep (None: it never crosses).
    what : str, default "sigma*"
        Its name, for the checks' text.

    Returns
    -------
    list of Check
        The two conditions.

    Examples
    --------
    >>> from fastsoftmax.verify import Est, all_of, judge_critical
    >>> c = dict(x=49.3, x_lo=45.3, x_hi=64.0, significant=True)
    >>> all_of(judge_critical(Est.normal(0.4995, 0.0007), 0.5, 0.005, 49.23, c))
    'holds'
    >>> all_of(judge_critical(Est.normal(0.4995, 0.0007), 0.5, 0.005, 70.0, c))
    'fails'
    """
    checks = [judge_prediction(at_star, predicted, rel, 0.0,
                               f"fraction < {LEVEL:g} at the predicted {what}")]
    if cross is None:
        checks.append(Check(FAILS, f"the sweep never crosses {LEVEL:g}"))
        return checks
    inside = cross["x_lo"] <= star <= cross["x_hi"]
    text = (f"predicted {what} {star:.4g} in the measured crossing interval "
            f"[{cross['x_lo']:.4g}, {cross['x_hi']:.4g}]")
    sig = bool(cross["significant"])
    checks.append(Check(_v(inside and sig, not inside and sig), text))
    return checks


@dataclasses.dataclass
class Claim:
    """A claim of ``verify``, the evidence measured and its computed verdict.

    The verdict is never written in: it is :func:`all_of` the checks,
    computed from the measurements by the claim's criterion.

    Parameters
    ----------
    key : str
        Short name: ``paper``, ``fix``, ``literal``, ``offset``,
        ``ce_right``, ``ce_wrong``, ``scale``.
    claim : str
        The claim, in words.
    evidence : str
        The measurements behind the verdict, with standard errors.
    criterion : str
        The criterion, in words.
    checks : list of Check
        The conditions, judged.
    numbers : dict
        The estimates behind the evidence (JSON-able through ``to_dict``).

    See Also
    --------
    VerifyResult : Holds the claims of a run.

    Examples
    --------
    >>> from fastsoftmax.verify import Check, Claim
    >>> c = Claim("literal", "[100, 101, 99] keeps healthy gradients", "0.2227",
    ...           "> 0.1", [Check("holds", "jac_diag_max 0.222695 > 0.1")], {})
    >>> c.verdict
    'holds'
    """
    key: str
    claim: str
    evidence: str
    criterion: str
    checks: list[Check]
    numbers: dict[str, Any]

    @property
    def verdict(self) -> str:
        """The claim's verdict, :func:`all_of` its checks: holds, fails or inconclusive."""
        return all_of(self.checks)

    def to_dict(self) -> dict[str, Any]:
        """The claim as plain JSON types, verdict and checks included.

        Returns
        -------
        dict
            ``key``, ``claim``, ``evidence``, ``criterion``, ``verdict``,
            ``checks`` (dicts of verdict and text) and ``numbers``.

        Examples
        --------
        >>> from fastsoftmax.verify import Check, Claim
        >>> c = Claim("k", "a claim", "evidence", "criterion", [Check("holds", "x")], {})
        >>> c.to_dict()["checks"]
        [{'verdict': 'holds', 'text': 'x'}]
        """
        return dict(key=self.key, claim=self.claim, evidence=self.evidence,
                    criterion=self.criterion, verdict=self.verdict,
                    checks=[dataclasses.asdict(c) for c in self.checks],
                    numbers=jsonable(self.numbers))


def _pick(summaries, name, **want):
    for p, s in summaries[name]:
        if all(p.get(k) == v for k, v in want.items()):
            return s
    raise KeyError(f"no {name} point with {want}")


def _claims(S, lit, P=None):
    """The claims from the summaries ``S``, the literal results ``lit`` and the
    laws' predictions ``P`` (:mod:`.predict`; claims 8-11 need them)."""
    P = P or {}
    pc = P.get("claims")
    dk0, dk1 = D_K[0], D_K[-1]
    ds = lambda d_k, scaled, target="argmax": _pick(S, "dotproduct", d_k=d_k,  # noqa: E731
                                                    scaled=scaled, target=target)
    claims = []

    # 1. the paper
    m = {d: measures(ds(d, False)["jac_diag_max"]) for d in D_K}
    small, large = m[dk0], m[dk1]
    claims.append(Claim(
        "paper", f"Without scaling, softmax(q.k) saturates as d_k grows (DotProduct, n={N})",
        f"unscaled jac_diag_max, d_k={dk0} -> {dk1}: median {_e(small['median'])} -> "
        f"{_e(large['median'])}; mean {_e(small['mean'])} -> {_e(large['mean'])}; log10-mean "
        f"{_f(small['log10_mean'])} -> {_f(large['log10_mean'])}; fraction < {LEVEL:g} "
        f"{_p(small['below'])} -> {_p(large['below'])}"
        + (f" (law {pc['dk'][dk1]['predicted']:.4f}: claim 8)" if pc else ""),
        f"d_k={dk1} vs {dk0}: median < 1e-3 x, log10-mean down by > 3, mean < 0.5 x, "
        "each beyond 4 SE; over 25% of rows below 1e-6",
        judge_saturation(small, large),
        {"unscaled_jac_diag_max": {str(d): m[d] for d in D_K}}))

    # 2. the fix
    ms = {d: measures(ds(d, True)["jac_diag_max"]) for d in D_K}
    meds = [ms[d]["median"].value for d in D_K]
    lms = [ms[d]["log10_mean"].value for d in D_K]
    fr = max(ms[d]["below"].value for d in D_K)
    claims.append(Claim(
        "fix", "Scaling by 1/sqrt(d_k) keeps the gradients flat in d_k",
        f"scaled jac_diag_max over d_k={dk0}..{dk1}: median {min(meds):.3g} to {max(meds):.3g}"
        f" (d_k={dk1}: {_e(ms[dk1]['median'])}); log10-mean {min(lms):.3f} to {max(lms):.3f}; "
        f"largest fraction < {LEVEL:g}: {fr:.3g}",
        f"every d_k: median within 2x and log10-mean within 0.3 of d_k={dk0}'s (4 SE), "
        "fraction < 1e-6 below 1e-3",
        judge_flat(ms[dk0], [ms[d] for d in D_K[1:]]),
        {"scaled_jac_diag_max": {str(d): ms[d] for d in D_K}}))

    # 3. the literal vector
    L = lit["literal"]
    claims.append(Claim(
        "literal", "Large-but-close logits [100, 101, 99] keep healthy gradients",
        f"p = [{', '.join(f'{v:.6f}' for v in L['p'])}]; Jacobian diagonal p(1-p) = "
        f"[{', '.join(f'{v:.6f}' for v in np.diag(L['jacobian']))}]; jac_diag_max "
        f"{L['jac_diag_max']:.6f} (max possible 0.25), equal to [0, 1, -1]'s "
        f"{lit['shifted']['jac_diag_max']:.6f}; differences x10 [1000, 1010, 990]: "
        f"{lit['spread_x10']['jac_diag_max']:.2g}",
        "exact (float64): jac_diag_max > 0.1 and equal to that of [0, 1, -1] within 1e-12",
        judge_literal(L["jac_diag_max"], lit["shifted"]["jac_diag_max"]),
        {"jac_diag_max": L["jac_diag_max"], "shifted": lit["shifted"]["jac_diag_max"]}))

    # 4. the offsets

    def shift_m(s):
        d = {o: dict(mean=est_mean(s[o]), log10_mean=est_log10_mean(s[o])) for o in OBS_NAMES}
        d["jac"] = measures(s["jac_diag_max"])
        return d

    sh = [(p["offset"], s) for p, s in S["shifted"]]
    ref = shift_m(sh[0][1])
    rest = [shift_m(s) for _, s in sh[1:]]
    worst = 0.0
    for r in rest:
        for o in OBS_NAMES:
            for k in ("mean", "log10_mean"):
                se = r[o][k].se + ref[o][k].se
                if se > 0:
                    worst = max(worst, abs(r[o][k].value - ref[o][k].value) / se)
    jm = [r["jac"]["median"].value for r in [ref] + rest]
    claims.append(Claim(
        "offset", f"Adding a large offset (0 to {_sci(OFFSETS[-1])}) changes nothing "
        f"(Shifted, n={N}, spread 1, float64)",
        f"median jac_diag_max {min(jm):.4g} to {max(jm):.4g} over offsets "
        f"(offset 0: {_e(ref['jac']['median'])}); mean {_e(ref['jac']['mean'])}; "
        f"fraction < {LEVEL:g}: {max(r['jac']['below'].value for r in [ref] + rest):.3g}; "
        f"largest difference from offset 0 over all observables' means and log10-means: "
        f"{worst:.2g} SE",
        "every offset: each observable's mean and log10-mean equal offset 0's within 4 SE; "
        "median jac_diag_max > 1e-2 and fraction < 1e-6 below 1e-3 (4 SE)",
        judge_shift(ref, rest),
        {"median_jac_diag_max": {str(o): r["jac"]["median"] for (o, _), r
                                 in zip(sh, [ref] + rest)}, "largest_diff_se": worst}))

    # 5. CE, confidently right
    ca = {d: measures(ds(d, False, "argmax")["ce_grad_target"]) for d in D_K}
    claims.append(Claim(
        "ce_right", "Cross-entropy, model confidently right (target argmax): "
        "the gradient vanishes when saturated",
        f"unscaled, 1 - p_y: median {_e(ca[dk0]['median'])} (d_k={dk0}) -> "
        f"{_e(ca[dk1]['median'])} (d_k={dk1}); mean {_e(ca[dk1]['mean'])}; "
        f"fraction < {LEVEL:g} {_p(ca[dk1]['below'])}",
        f"d_k={dk1}: median 1 - p_y < 1e-6 and < 1e-3 x its d_k={dk0} value (4 SE)",
        judge_ce_right(ca[dk0], ca[dk1]),
        {"ce_grad_target": {str(d): ca[d] for d in D_K}}))

    # 6. CE, wrong
    sr = ds(dk1, False, "random")
    cr = measures(sr["ce_grad_target"])
    nm = est_quantile(sr["ce_grad_norm"], 0.5)
    jr = est_quantile(sr["jac_diag_max"], 0.5)
    claims.append(Claim(
        "ce_wrong", "Cross-entropy, model wrong (target random): the gradient stays "
        "near 1 (norm near sqrt 2) when saturated",
        f"unscaled d_k={dk1} (median jac_diag_max {_e(jr)}): 1 - p_y median "
        f"{_f(cr['median'])}, mean {_f(cr['mean'])}; |grad| median {_f(nm)} "
        f"(sqrt 2 = 1.4142)",
        "1 - p_y: median and mean > 0.9; median |p - e_y| within 5% of sqrt 2 (4 SE)",
        judge_ce_wrong(cr, nm),
        {"ce_grad_target": cr, "ce_grad_norm_median": nm}))

    # 7. the scale sweep
    gm = [est_quantile(s["jac_diag_max"], 0.5) for _, s in S["gaussian"]]
    gx = [p["scale"] / p["temperature"] for p, _ in S["gaussian"]]
    cg = crossing(gx, gm)
    dm = [m[d]["median"] for d in D_K]
    cd = crossing([math.sqrt(d) for d in D_K], dm)
    ev = (f"N(0, sigma^2) logits, sigma = {gx[0]:g}..{gx[-1]:g}: median < {LEVEL:g} from "
          f"sigma* = {cg['x']:.3g} (between {cg['x_lo']:.3g} and {cg['x_hi']:.3g}; "
          f"temperature 1/sigma* = {1 / cg['x']:.3g})" if cg else
          f"median never falls below {LEVEL:g} for sigma = {gx[0]:g}..{gx[-1]:g}")
    if cg and pc:
        ev += f" (law {pc['sigma_star']:.4g}: claim 9)"
    ev += (f"; unscaled d_k sweep: d_k* = {cd['x'] ** 2:.4g}, sqrt = {cd['x']:.3g}" if cd else
           f"; the d_k sweep never crosses {LEVEL:g}")
    if cd and pc:
        ev += f" (law {pc['dk_star']:.4g})"
    claims.append(Claim(
        "scale", "Saturation is set by the logit scale: Gaussian logits cross "
        f"median jac_diag_max = {LEVEL:g} at sigma* = sqrt(d_k*) of the unscaled sweep",
        ev,
        "both sweeps cross 1e-6 (points beyond 4 SE on each side); sigma*/sqrt(d_k*) "
        "within 10% of 1",
        judge_scale(cg, cd),
        {"gaussian_crossing": cg, "dk_crossing": cd,
         "gaussian_median": {f"{x:.6g}": e for x, e in zip(gx, gm)}}))
    if pc is not None and "law" in S:
        claims.extend(_law_claims(S, pc, m, cg, cd))
    if "context" in S and "context" in P:
        claims.extend(_context_claims(S, P["context"]))
    return claims


def _law_claims(S, pc, m, cg, cd):
    """Claims 8 and 9: the saturation law beside the d_k sweep and sigma*, d_k*."""
    order = pc["order"]
    pts, inside, outside = [], [], []
    for d in D_K:
        q = pc["dk"][d]
        meas = m[d]["below"]
        pts.append(dict(what=f"d_k={d}", measured=meas, predicted=q["predicted"], rel=q["rel"],
                        abs=q["abs"], lo=q["lo"], hi=q["hi"]))
        if math.isfinite(q["rel"]):
            inside.append(f"d_k={d}: {_p4(meas)} vs {q['predicted']:.4f} ± {_pct(q['rel'])}")
        else:
            outside.append(f"{d}: {_p(meas)} (bounds {q['lo']:.2g}..{q['hi']:.2g})")
    claims = [Claim(
        "law_dk", f"The saturation law (order {order}) predicts the unscaled fraction of rows "
        f"below {LEVEL:g} at each d_k (DotProduct, n={N})",
        "measured vs law: " + "; ".join(inside) + "; outside the law's domain (m > 1/2), "
        "not judged, d_k=" + ", ".join(outside),
        "each d_k where the law states an accuracy (m = sigma_c/sqrt(d_k) <= 1/2): the "
        "fraction within it (0.5% for m <= 1/8, 2% for <= 1/4, 15% for <= 1/2) and inside "
        "the exact bounds, 4 SE",
        judge_law(pts), {"points": {str(d): dict(pc["dk"][d], measured=m[d]["below"])
                                    for d in D_K}})]
    g = _pick(S, "law", scale=pc["sigma_star"])["jac_diag_max"]
    k = _pick(S, "law", d_k=pc["dk_point"])["jac_diag_max"]
    fg = est_fraction(g.fraction_below(LEVEL), g.count)
    fk = est_fraction(k.fraction_below(LEVEL), k.count)
    ag, ak = pc["at_sigma_star"], pc["at_dk_star"]
    checks = judge_critical(fg, ag["predicted"], ag["rel"], pc["sigma_star"], cg, "sigma*")
    checks += judge_critical(fk, ak["predicted"], ak["rel"], math.sqrt(pc["dk_star"]), cd,
                             "sqrt(d_k*)")

    def rel_diff(c, law):
        return f"{c['x']:.4g} ({(c['x'] / law - 1):+.1%})" if c else "none"

    claims.append(Claim(
        "law_scale", f"The law predicts sigma* and d_k*: half the rows below {LEVEL:g} there, "
        "where the sweeps cross",
        f"sigma* = {pc['sigma_star']:.4g} (law, ± {_pct(pc['sigma_star_rel'])}): fraction < "
        f"{LEVEL:g} there {_p4(fg)} (law {ag['predicted']:.4f}); the scale sweep crosses at "
        f"{rel_diff(cg, pc['sigma_star'])} by interpolation; d_k* = {pc['dk_star']:.4g} (law, "
        f"± {_pct(pc['dk_star_rel'])}): at d_k={pc['dk_point']} {_p4(fk)} (law "
        f"{ak['predicted']:.4f}); the d_k sweep crosses at "
        f"{rel_diff(dict(cd, x=cd['x'] ** 2) if cd else None, pc['dk_star'])}",
        "at the predicted sigma* and d_k*: the fraction below 1e-6 equals the law's (1/2) "
        "within its stated accuracy (4 SE); each predicted point lies in the grid interval "
        "where the sweep's median crosses 1e-6",
        checks, {"sigma_star": pc["sigma_star"], "dk_star": pc["dk_star"],
                 "at_sigma_star": fg, "at_dk_star": fk}))
    return claims


def _context_claims(S, pcx):
    """Claims 10 and 11: the context-length axis beside the laws of large n."""
    rows = {(p["scaled"], p["n"]): s for p, s in S["context"]}
    ns = sorted({n for _, n in rows})
    sat, rem = [], []
    for scaled in (False, True):
        for n in ns:
            s = rows[(scaled, n)]
            q = pcx[f"{'scaled' if scaled else 'unscaled'}:{n}"]
            tag = f"{'scaled' if scaled else 'unscaled'} n={n}"
            j = s["jac_diag_max"]
            fb = est_fraction(j.fraction_below(LEVEL), j.count)
            b = q["below"]
            sat.append(dict(what=tag, measured=fb, predicted=b["predicted"], rel=b["rel"],
                            abs=b["abs"], lo=b["lo"], hi=b["hi"]))
            for name, stat, key in (("entropy", s["entropy"], "entropy"),
                                    ("max_prob", s["max_prob"], "max_prob_mean")):
                e = est_mean(stat)
                pr = q[key]
                rem.append(dict(what=f"{tag} mean {name}", measured=e, predicted=pr["predicted"],
                                rel=pr["rel"], abs=pr["abs"], group=f"{name}, "
                                f"{'scaled' if scaled else 'unscaled'}", n=n))
    un = [rows[(False, n)]["jac_diag_max"] for n in ns]
    f0 = est_fraction(un[0].fraction_below(LEVEL), un[0].count)
    f1 = est_fraction(un[-1].fraction_below(LEVEL), un[-1].count)
    checks = [drop(f0, f1, 0.0, f"unscaled fraction < {LEVEL:g}, n={ns[0]} -> {ns[-1]}")]
    checks += judge_law(sat)
    claims = [Claim(
        "context_saturation", f"At a fixed logit scale, longer contexts saturate less: the "
        f"fraction below {LEVEL:g} falls with n (DotProduct, d_k={CONTEXT_D_K}), as the "
        "saturation law predicts",
        f"unscaled fraction < {LEVEL:g}: n={ns[0]} {_p4(f0)} -> n={ns[-1]} {_p4(f1)}; "
        "against the law where it states an accuracy: " + _departures(
            [dict(p, group="unscaled fraction", n=int(p["what"].split("=")[1])) for p in sat]),
        f"the fraction at n={ns[0]} above that at n={ns[-1]} (4 SE); at each n where the "
        "law states an accuracy (m <= 1/2), within it and inside the exact bounds",
        checks, {"fraction_first": f0, "fraction_last": f1})]
    claims.append(Claim(
        "context_rem", "The random energy model predicts the mean entropy and max_prob "
        "against n, diffuse (scaled) and frozen (unscaled)",
        "against the law where it states an accuracy: " + _departures(rem),
        "mean entropy and max_prob within the REM's stated accuracy at each n where it "
        "states one (diffuse: sigma <= sigma_c/2; frozen: sigma >= 2 sigma_c), 4 SE",
        judge_law(rem), {}))
    return claims


def _p4(est):
    return f"{est.value:.4f} ± {est.se:.1g}"


def _pct(rel):
    return f"{100 * rel:.3g}%"


def _departures(points):
    """Per group of judged points: the n range and the largest relative
    departure from the law, with the stated accuracy there."""
    groups: dict[str, list] = {}
    for p in points:
        if math.isfinite(p["rel"]):
            groups.setdefault(p["group"], []).append(p)
    parts = []
    for g, ps in groups.items():
        worst = max(ps, key=lambda p: abs(p["measured"].value / p["predicted"] - 1)
                    if p["predicted"] else math.inf)
        d = worst["measured"].value - worst["predicted"]
        tol = worst["rel"] * abs(worst["predicted"]) + worst["abs"]
        rel = d / worst["predicted"] if worst["predicted"] else math.inf
        parts.append(f"{g} n={min(p['n'] for p in ps)}..{max(p['n'] for p in ps)}: largest "
                     f"departure {rel:+.1%} at n={worst['n']} ({worst['measured'].value:.4g} vs "
                     f"{worst['predicted']:.4g}, stated ± {tol:.2g})")
    return "; ".join(parts) or "none"


def _sci(x):
    return f"{x:.0e}".replace("e+0", "e").replace("e+", "e")


def _e(est):
    return f"{est.value:.3g} ± {est.se:.1g}"


def _f(est):
    return f"{est.value:.4f} ± {est.se:.1g}"


def _p(est):
    return f"{est.value:.3f} ± {est.se:.1g}" if est.value else "0"
