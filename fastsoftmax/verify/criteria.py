r"""The criteria of ``verify``: pure functions of estimates and numbers -> :class:`Check`.

Each compares :class:`~fastsoftmax.verify.Est` values beyond their standard
errors and says "holds" (met beyond them), "fails" (contradicted beyond
them) or "inconclusive" (neither: more samples would decide);
:func:`all_of` combines the checks of a claim.  Against a law:
:func:`judge_band`, :func:`judge_prediction` and :func:`judge_law`
(a :class:`LawPoint` each).  Along a sweep: :func:`crossing`.  Nothing here
knows about the paper's claims.

>>> from fastsoftmax import verify as V
>>> V.below(V.Est.normal(1e-8, 1e-9), 1e-6)
Check(verdict='holds', text='value 1e-08 < 1e-06')
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Iterable, Mapping, Sequence

from .constants import LEVEL, Z
from .stats import Est

__all__ = ["Check", "LawPoint", "below", "above", "ratio_below", "drop", "within_factor",
           "close", "near", "same", "all_of", "judge_band", "judge_prediction", "judge_law",
           "crossing", "HOLDS", "FAILS", "INCONCLUSIVE"]

#: The verdicts.
HOLDS, FAILS, INCONCLUSIVE = "holds", "fails", "inconclusive"


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


@dataclasses.dataclass(frozen=True)
class LawPoint:
    """One measurement beside a law's prediction: what :func:`judge_law` judges.

    The law states an accuracy (``rel``, ``abs``:
    :func:`fastsoftmax.theory.stated_accuracy`) where it claims one, NaN
    ``rel`` where it does not (the point is then shown, not judged), and
    optionally exact bounds ``lo``, ``hi`` that hold everywhere.

    Parameters
    ----------
    what : str
        The point, for the checks' text (``"d_k=4096"``).
    measured : Est
        The measurement.
    predicted : float
        The law's value.
    rel : float
        The law's stated relative accuracy there (NaN: none stated).
    abs : float, default 0.0
        The law's stated absolute accuracy there.
    lo, hi : float, optional
        Exact bounds of the quantity.

    See Also
    --------
    judge_law : Judges a sequence of them.

    Examples
    --------
    >>> from fastsoftmax.verify import Est, LawPoint
    >>> p = LawPoint("d_k=4096", Est.normal(0.590, 0.0007), 0.5905, 0.005, lo=0.502, hi=0.592)
    >>> p.judged
    True
    >>> LawPoint.of(dict(what="d_k=1", measured=Est.exact(0.0), predicted=float("nan"),
    ...                  rel=float("nan"))).judged
    False
    """
    what: str
    measured: Est
    predicted: float
    rel: float
    abs: float = 0.0
    lo: float | None = None
    hi: float | None = None

    @property
    def judged(self) -> bool:
        """Whether the law states an accuracy here (a finite ``rel``)."""
        return math.isfinite(float(self.rel))

    @classmethod
    def of(cls, p: LawPoint | Mapping[str, Any]) -> LawPoint:
        """A LawPoint from itself or from a dict of its fields.

        Parameters
        ----------
        p : LawPoint or mapping
            ``what``, ``measured``, ``predicted``, ``rel`` (NaN when
            missing), optionally ``abs``, ``lo``, ``hi``; other keys are
            ignored.

        Returns
        -------
        LawPoint
            ``p`` itself if it is one.

        Examples
        --------
        >>> from fastsoftmax.verify import Est, LawPoint
        >>> LawPoint.of(dict(what="x", measured=Est.exact(1.0), predicted=1.0, rel=0.01)).abs
        0.0
        """
        if isinstance(p, LawPoint):
            return p
        return cls(p["what"], p["measured"], float(p["predicted"]),
                   float(p.get("rel", math.nan)), float(p.get("abs", 0.0)),
                   p.get("lo"), p.get("hi"))


def judge_law(points: Sequence[LawPoint | Mapping[str, Any]]) -> list[Check]:
    """Measurements against a law, each within the accuracy the law states there.

    Each point is judged by :func:`judge_prediction` where the law states an
    accuracy (a finite ``rel``) and, where the point has exact bounds, by
    :func:`judge_band` on them; points outside the law's stated domain are
    shown in the evidence but not judged.  With no point judged the claim
    is inconclusive (nothing was tested).

    Parameters
    ----------
    points : sequence of LawPoint or dict
        The points (:class:`LawPoint`, or dicts of its fields:
        :meth:`LawPoint.of`).

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
    for p in map(LawPoint.of, points):
        if not p.judged:
            continue
        checks.append(judge_prediction(p.measured, p.predicted, float(p.rel), float(p.abs),
                                       p.what))
        if p.lo is not None and p.hi is not None:
            checks.append(judge_band(p.measured, p.lo, p.hi, f"{p.what} (exact bounds)"))
    if not checks:
        checks.append(Check(INCONCLUSIVE, "no point inside the law's stated domain"))
    return checks
