r"""The criteria of ``verify``: estimates against the bands a claim states -> :class:`Check`.

A public module: what a claim of one's own needs (:class:`Est` and the
estimates of a :class:`~fastsoftmax.Stat`, the criteria, :func:`all_of`,
:class:`~fastsoftmax.verify.ClaimSpec` to declare it).  One rule decides
every verdict (:func:`describe` states it from its parameters):

* **holds** when the whole ``Z``-SE interval of the measurement lies inside
  the band the claim states (a prediction and its stated accuracy, exact
  bounds, a one-sided bound, an equivalence margin);
* **fails** when it lies wholly outside;
* **inconclusive** otherwise, with the rows per point that would settle it
  (:attr:`Check.rows_needed`: the rows at which ``Z`` standard errors take
  at most ``MARGIN`` of the distance from the estimate to the band's edge).

A fraction's interval is Wilson's at ``Z``, so that a zero count is not
"exact"; a difference of two estimates has the interval
+/- Z (SE_a + SE_b), valid whatever the correlation between them (common
random numbers only make it safer).  Against a law: :func:`judge_band`,
:func:`judge_prediction` and :func:`judge_law` (a :class:`LawPoint` each).
Along a sweep: :func:`crossing`.  Nothing here knows about the paper's
claims.

>>> from fastsoftmax.verify.criteria import Est, below
>>> below(Est.normal(1e-8, 1e-9), 1e-6)
Check(verdict='holds', text='value 1e-08 < 1e-06')
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Iterable, Mapping, Sequence

from .constants import LEVEL, Z
from .stats import Est, est_fraction, est_log10_mean, est_mean, est_quantile, measures

__all__ = ["Check", "Est", "est_mean", "est_log10_mean", "est_quantile", "est_fraction",
           "measures", "LawPoint", "below", "above", "ratio_below", "drop", "within_factor",
           "close", "near", "same", "all_of", "judge_band", "judge_prediction", "judge_law",
           "crossing", "describe", "rows_to_resolve", "HOLDS", "FAILS", "INCONCLUSIVE", "Z",
           "MARGIN"]

#: The verdicts.
HOLDS, FAILS, INCONCLUSIVE = "holds", "fails", "inconclusive"

#: The share of the distance to a band's edge that ``Z`` standard errors may
#: take when rows are planned, or asked for by an inconclusive check.
MARGIN = 0.75


@dataclasses.dataclass(frozen=True)
class Check:
    """One condition of a claim, judged: its verdict and what was compared.

    What every criterion returns; a claim's verdict is :func:`all_of` its
    checks.

    Parameters
    ----------
    verdict : {"holds", "fails", "inconclusive"}
        The interval inside the band, wholly outside it, or neither.
    text : str
        What was compared, with the numbers (and, when inconclusive, why
        and the rows that would settle it).
    rows_needed : int, optional
        When inconclusive: about how many rows per point would settle it
        (None: unknown, or no row count does).

    See Also
    --------
    all_of : The verdict of several checks.

    Examples
    --------
    >>> from fastsoftmax.verify.criteria import Check, all_of
    >>> all_of([Check("holds", "a"), Check("inconclusive", "b")])
    'inconclusive'
    """
    verdict: str        # holds / fails / inconclusive
    text: str           # what was compared, with the numbers
    rows_needed: int | None = dataclasses.field(default=None, repr=False)


def describe(z: float = Z, margin: float = MARGIN) -> str:
    """The verdict rule in words, from its parameters (printed under ``verify``'s table).

    Every criterion of this module applies this rule; the report prints
    this text rather than a description written apart from the code.

    Parameters
    ----------
    z : float, default 4.0
        Standard errors of the intervals.
    margin : float, default 0.75
        The share of the distance to a band's edge that ``z`` standard
        errors may take in a planned run.

    Returns
    -------
    str
        One paragraph.

    Examples
    --------
    >>> from fastsoftmax.verify.criteria import describe
    >>> describe()[:72]
    'HOLDS when the whole interval of the measurement (4 standard errors each'
    >>> "at most 0.5 of the distance" in describe(margin=0.5)
    True
    """
    return (f"HOLDS when the whole interval of the measurement ({z:g} standard errors each "
            f"side, Wilson's for a fraction, +/- {z:g} (SE_a + SE_b) for a difference) lies "
            f"inside the band the claim states (a prediction and its stated accuracy, exact "
            f"bounds, a bound, an equivalence margin); FAILS when it lies wholly outside; "
            f"INCONCLUSIVE otherwise, with the rows per point at which {z:g} standard errors "
            f"take at most {margin:g} of the distance to the band's edge")


def _v(holds: bool, fails: bool) -> str:
    return HOLDS if holds else (FAILS if fails else INCONCLUSIVE)


def _rows_text(rows: float) -> str:
    if rows >= 1e6:
        return f"{rows / 1e6:.2g} million"
    if rows >= 1e4:
        return f"{rows / 1e3:.0f} thousand"
    return f"{int(rows):,}"


def rows_to_resolve(decide: Callable[..., tuple[bool, bool]], ests: Sequence[Est],
                    z: float = Z, margin: float = MARGIN) -> int | None:
    """About how many rows per point would settle an undecided criterion.

    The smallest row count at which ``decide`` (the criterion's rule on the
    estimates: ``(holds, fails)``) reaches a verdict when every estimate is
    projected to that many rows (:meth:`Est.at_rows`) with its bounds at
    ``z / margin`` standard errors: ``z`` standard errors then take at most
    ``margin`` of the distance to the band's edge.

    Parameters
    ----------
    decide : callable
        ``decide(*ests) -> (holds, fails)``.
    ests : sequence of Est
        The estimates as measured.
    z : float, default 4.0
        Standard errors of the intervals.
    margin : float, default 0.75
        The share of the distance that ``z`` standard errors may take.

    Returns
    -------
    int or None
        The rows per point; None when the estimates' rows are unknown or
        no count up to 10^8 times theirs settles it (the value on the
        band's edge, a quantile at the sketch's resolution).

    Examples
    --------
    >>> from fastsoftmax.verify.criteria import est_fraction, rows_to_resolve
    >>> n = rows_to_resolve(lambda e: (e.hi < 1e-3, e.lo >= 1e-3), [est_fraction(0.0, 2000)])
    >>> 28_000 < n < 29_000                      # Wilson at p = 0: (4 / 0.75)^2 / 1e-3
    True
    """
    rows = max((e.rows for e in ests if e.kind != "exact"), default=0)
    if rows <= 0:
        return None

    def settled(n: float) -> bool:
        holds, fails = decide(*[e.at_rows(n * e.rows / rows, z / margin) if e.rows > 0 else e
                                for e in ests])
        return bool(holds or fails)

    lo, hi = math.log(rows), math.log(rows) + math.log(1e8)
    if not settled(math.exp(hi)):
        return None
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if settled(math.exp(mid)) else (mid, hi)
    return int(math.ceil(math.exp(hi)))


def _check(decide: Callable[..., tuple[bool, bool]], ests: Sequence[Est], text: str) -> Check:
    """The one rule: ``decide`` says whether the interval lies inside the band
    (holds) or wholly outside (fails); neither is inconclusive, with the rows
    that would settle it."""
    v = _v(*decide(*ests))
    if v != INCONCLUSIVE:
        return Check(v, text)
    rows = rows_to_resolve(decide, ests)
    if rows is None:
        why = ("exact numbers" if all(e.kind == "exact" for e in ests) else
               "no row count settles it (the value lies at the band's edge)")
        return Check(v, f"{text}: the {Z:g}-SE interval overlaps the band's edge; {why}")
    return Check(v, f"{text}: the {Z:g}-SE interval overlaps the band's edge; needs about "
                    f"{_rows_text(rows)} rows per point to resolve it", rows)


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
    >>> from fastsoftmax.verify.criteria import Est, below
    >>> below(Est.normal(1e-8, 1e-9), 1e-6, "median")
    Check(verdict='holds', text='median 1e-08 < 1e-06')
    >>> below(Est.normal(1e-6, 1e-6), 1e-6).verdict
    'inconclusive'
    """
    return _check(lambda e: (e.hi < bound, e.lo >= bound), [a],
                  f"{what} {a.value:.3g} < {bound:g}")


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
    >>> from fastsoftmax.verify.criteria import Est, above
    >>> above(Est.normal(0.3, 0.01), 0.1).verdict, above(Est.normal(0.3, 0.1), 0.1).verdict
    ('holds', 'inconclusive')
    """
    return _check(lambda e: (e.lo > bound, e.hi <= bound), [a],
                  f"{what} {a.value:.3g} > {bound:g}")


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
    >>> from fastsoftmax.verify.criteria import Est, ratio_below
    >>> ratio_below(Est.exact(1e-8), Est.normal(0.05, 0.001), 1e-3, "median")
    Check(verdict='holds', text='median ratio 2e-07 < 0.001')
    """
    return _check(lambda x, y: (x.hi < factor * y.lo, x.lo >= factor * y.hi), [a, b],
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
    >>> from fastsoftmax.verify.criteria import Est, drop
    >>> drop(Est.normal(-1.25, 0.01), Est.normal(-10.6, 0.1), 3.0, "log10-mean").verdict
    'holds'
    """
    def decide(x: Est, y: Est) -> tuple[bool, bool]:
        d, se = x.value - y.value, x.se + y.se
        return d - z * se > amount, d + z * se <= amount

    return _check(decide, [a, b],
                  f"{what} drop {a.value - b.value:.3g} ± {a.se + b.se:.2g} > {amount:g}")


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
    >>> from fastsoftmax.verify.criteria import Est, within_factor
    >>> within_factor(Est.normal(0.0868, 0.001), Est.normal(0.0551, 0.001), 2.0).verdict
    'holds'
    """
    def decide(x: Est, y: Est) -> tuple[bool, bool]:
        return (x.lo >= y.hi / factor and x.hi <= y.lo * factor,
                x.hi < y.lo / factor or x.lo > y.hi * factor)

    return _check(decide, [a, b], f"{what} ratio {_ratio(a.value, b.value)} within "
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
    >>> from fastsoftmax.verify.criteria import Est, close
    >>> close(Est.normal(-1.05, 0.01), Est.normal(-1.25, 0.01), 0.3).verdict
    'holds'
    """
    return _check(_within(amount, z), [a, b],
                  f"{what} |diff| {abs(a.value - b.value):.3g} ± {a.se + b.se:.2g} < "
                  f"{amount:g}")


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
    >>> from fastsoftmax.verify.criteria import Est, near
    >>> near(Est.normal(1.416, 0.01), math.sqrt(2), 0.05, "median |grad|")
    Check(verdict='holds', text='median |grad| 1.416 within 5% of 1.414')
    """
    lo, hi = target * (1 - rel), target * (1 + rel)
    return _check(_in_band(lo, hi), [a], f"{what} {a.value:.4g} within {rel:.0%} of "
                                         f"{target:.4g}")


def same(a: Est, b: Est, margin: float, what: str = "value", z: float = Z) -> Check:
    """Criterion a equals b within an equivalence ``margin``, beyond z (SE_a + SE_b).

    Holds if the interval of the difference, a - b -/+ z (SE_a + SE_b),
    lies inside [-margin, margin]; fails if it lies wholly outside;
    inconclusive otherwise (failing to find a difference is not
    equivalence: the margin says which difference would matter).  SE_a +
    SE_b is valid whatever the correlation between the two estimates.

    Parameters
    ----------
    a, b : Est
        The two estimates.
    margin : float
        The largest difference that counts as equal (> 0, in a's units).
    what : str, default "value"
        What is compared, for the check's text.
    z : float, default 4.0
        Standard errors of the difference to the decision.

    Returns
    -------
    Check
        The verdict and the difference with its margin.

    Raises
    ------
    TypeError
        ``margin`` is not a number.
    ValueError
        ``margin`` is not finite and > 0.

    Examples
    --------
    >>> from fastsoftmax.verify.criteria import Est, same
    >>> same(Est.normal(0.0937, 1e-4), Est.normal(0.0937, 1e-4), 0.001).verdict
    'holds'
    >>> same(Est.normal(0.09, 1e-4), Est.normal(0.1, 1e-4), 0.001).verdict
    'fails'
    >>> same(Est.normal(0.0937, 1e-3), Est.normal(0.0937, 1e-3), 0.001).verdict
    'inconclusive'
    """
    if isinstance(margin, (str, bool)) or not isinstance(margin, (int, float)):
        raise TypeError(f"margin must be a number (same(a, b, margin, what)), got {margin!r}")
    if not (math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be finite and > 0, got {margin!r}")
    return _check(_within(float(margin), z), [a, b],
                  f"{what} diff {a.value - b.value:+.2g} ± {z:g} x {a.se + b.se:.2g} within "
                  f"± {margin:.2g}")


def _within(amount: float, z: float) -> Callable[[Est, Est], tuple[bool, bool]]:
    """The rule for |a - b| < amount: the interval of the difference inside
    (-amount, amount), or wholly outside it."""
    def decide(x: Est, y: Est) -> tuple[bool, bool]:
        d, se = abs(x.value - y.value), x.se + y.se
        return d + z * se < amount, d - z * se >= amount
    return decide


def _in_band(lo: float, hi: float) -> Callable[[Est], tuple[bool, bool]]:
    """The rule for a band [lo, hi]: the interval inside it, or wholly outside."""
    def decide(e: Est) -> tuple[bool, bool]:
        return lo <= e.lo and e.hi <= hi, e.hi < lo or e.lo > hi
    return decide


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
    >>> from fastsoftmax.verify.criteria import Check, all_of
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
    """Criterion lo <= a <= hi for a band that a law states, beyond a's bounds.

    Holds if a's Z-SE interval lies inside [lo, hi]; fails if it lies wholly
    outside; inconclusive otherwise, with the rows that would settle it.  A
    band narrower than the interval is never held: a vanishing band is not
    "met" by a measurement that cannot tell it from twice its value.

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
    >>> from fastsoftmax.verify.criteria import Est, judge_band
    >>> judge_band(Est.normal(0.55, 0.0007), 0.50, 0.59, "fraction").verdict
    'holds'
    >>> judge_band(Est.normal(0.70, 0.0007), 0.50, 0.59).verdict
    'fails'
    >>> judge_band(Est.normal(0.589, 0.0007), 0.50, 0.59).verdict
    'inconclusive'
    """
    lo, hi = float(min(lo, hi)), float(max(lo, hi))
    return _check(_in_band(lo, hi), [a],
                  f"{what} {a.value:.4g} ± {a.se:.2g} in [{lo:.4g}, {hi:.4g}]")


def judge_prediction(a: Est, predicted: float, rel: float, abs_tol: float = 0.0,
                     what: str = "value") -> Check:
    """Criterion: a measurement agrees with a law's prediction within its stated accuracy.

    The band is predicted -/+ (rel ``|predicted|`` + abs_tol), the accuracy the
    law states there (:func:`fastsoftmax.theory.stated_accuracy`): holds if
    the measurement's Z-SE interval lies inside it, fails if it lies wholly
    outside, inconclusive otherwise (:func:`judge_band`'s rule).

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
    >>> from fastsoftmax.verify.criteria import Est, judge_prediction
    >>> judge_prediction(Est.normal(0.5905, 0.0005), 0.5905, 0.005, what="fraction")
    Check(verdict='holds', text='fraction 0.5905 ± 0.0005 vs law 0.5905 ± 0.003 (stated)')
    >>> judge_prediction(Est.normal(0.590, 0.0007), 0.5905, 0.005).verdict
    'inconclusive'
    >>> judge_prediction(Est.normal(0.62, 0.0007), 0.5905, 0.005).verdict
    'fails'
    """
    if not (math.isfinite(rel) and rel >= 0 and math.isfinite(abs_tol) and abs_tol >= 0):
        raise ValueError(f"rel and abs_tol must be finite and >= 0, got {rel!r}, {abs_tol!r}")
    tol = rel * abs(predicted) + abs_tol
    return _check(_in_band(predicted - tol, predicted + tol), [a],
                  f"{what} {a.value:.4g} ± {a.se:.2g} vs law {predicted:.4g} ± {tol:.2g} "
                  "(stated)")


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
    >>> from fastsoftmax.verify.criteria import Est, crossing
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
    >>> from fastsoftmax.verify.criteria import Est, LawPoint
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
        >>> from fastsoftmax.verify.criteria import Est, LawPoint
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
    >>> from fastsoftmax.verify.criteria import Est, all_of, judge_law
    >>> p = dict(what="d_k=4096", measured=Est.normal(0.5905, 0.0003), predicted=0.5905,
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
