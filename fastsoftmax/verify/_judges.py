r"""The judges of this paper's claims (private): :func:`measures` of the points -> checks.

Each judge states one claim's conditions with the public criteria of
:mod:`fastsoftmax.verify.criteria` (one rule, ``Z`` standard errors) and
returns the list of :class:`~fastsoftmax.verify.criteria.Check`;
:func:`~fastsoftmax.verify.criteria.all_of` of it is the claim's verdict.  The
claims themselves (what each needs, how its evidence reads) are the entries
of :data:`fastsoftmax.verify.CLAIMS`.

>>> from fastsoftmax.verify.criteria import Est, all_of
>>> from fastsoftmax.verify._judges import judge_ce_right
>>> all_of(judge_ce_right(dict(median=Est.normal(0.93, 0.01)),
...                       dict(median=Est.normal(1.6e-8, 6e-10))))
'holds'
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from ..registries import JAC_DIAG_MAX
from .constants import EQUIV_DECADES, EQUIV_REL, LEVEL, Z
from .criteria import (FAILS, HOLDS, INCONCLUSIVE, Check, _v, above, below, close, drop,
                       judge_prediction, near, ratio_below, same, within_factor)
from .stats import Est

__all__ = ["judge_saturation", "judge_flat", "judge_literal", "judge_shift", "judge_ce_right",
           "judge_ce_wrong", "judge_scale", "judge_critical"]


def judge_saturation(small: dict[str, Est], large: dict[str, Est]) -> list[Check]:
    """The paper (claim ``paper``): the gradient collapses from small d_k to large d_k.

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
    >>> from fastsoftmax.verify.criteria import Est, all_of
    >>> from fastsoftmax.verify._judges import judge_saturation
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
    """The fix (claim ``fix``): with scaling the statistics are flat in d_k.

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
    >>> from fastsoftmax.verify.criteria import Est, all_of
    >>> from fastsoftmax.verify._judges import judge_flat
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


def judge_literal(jac: float, jac_shifted: float, rel: float = 1e-12) -> list[Check]:
    """The objection (claim ``literal``): [100, 101, 99] keeps healthy gradients.

    Its largest Jacobian entry is healthy (> 0.1; the maximum possible,
    p(1 - p) at p = 1/2, is 0.25) and equal to that of [0, 1, -1] within
    ``rel`` (softmax is shift-invariant).  Exact numbers: holds or fails.

    Parameters
    ----------
    jac : float
        The largest diagonal entry of the Jacobian of [100, 101, 99].
    jac_shifted : float
        The same of [0, 1, -1].
    rel : float, default 1e-12
        Relative tolerance of the equality.

    Returns
    -------
    list of Check
        The two conditions.

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> from fastsoftmax.registries import JAC_DIAG_MAX
    >>> from fastsoftmax.verify.criteria import all_of
    >>> from fastsoftmax.verify._judges import judge_literal
    >>> a = float(fs.observables([[100.0, 101.0, 99.0]])[JAC_DIAG_MAX.name][0])
    >>> b = float(fs.observables([[0.0, 1.0, -1.0]])[JAC_DIAG_MAX.name][0])
    >>> all_of(judge_literal(a, b))
    'holds'
    """
    healthy = jac > 0.1
    equal = abs(jac - jac_shifted) <= rel * abs(jac_shifted)
    return [Check(HOLDS if healthy else FAILS, f"{JAC_DIAG_MAX.name} {jac:.6g} > 0.1"),
            Check(HOLDS if equal else FAILS,
                  f"equal to [0, 1, -1]'s {jac_shifted:.6g} within {rel:g}")]


def judge_shift(ref: dict[str, Any], others: Sequence[dict[str, Any]]) -> list[Check]:
    """The objection (claim ``offset``): a common offset changes nothing.

    Every offset's statistics equal the offset-0 ones within an equivalence
    margin (:func:`same`: each observable's mean within ``EQUIV_REL`` of
    offset 0's, its log10-mean within ``EQUIV_DECADES``, the interval of the
    difference included) and are far from
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
    >>> from fastsoftmax.verify.criteria import Est, all_of
    >>> from fastsoftmax.verify._judges import judge_shift
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
            r = ref[name]["mean"]
            checks.append(same(m[name]["mean"], r, EQUIV_REL * (abs(r.value) or 1.0),
                               f"{name} mean"))
            checks.append(same(m[name]["log10_mean"], ref[name]["log10_mean"], EQUIV_DECADES,
                               f"{name} log10-mean"))
    for m in [ref] + list(others):
        checks.append(above(m["jac"]["median"], 1e-2, "median"))
        checks.append(below(m["jac"]["below"], 1e-3, f"fraction < {LEVEL:g}"))
    return checks


def judge_ce_right(small: dict[str, Est], large: dict[str, Est]) -> list[Check]:
    """Claim ``ce_right``: cross-entropy, confidently right model: the gradient vanishes.

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
    >>> from fastsoftmax.verify.criteria import Est, all_of
    >>> from fastsoftmax.verify._judges import judge_ce_right
    >>> all_of(judge_ce_right(dict(median=Est.normal(0.93, 0.01)),
    ...                       dict(median=Est.normal(1.6e-8, 6e-10))))
    'holds'
    """
    return [below(large["median"], LEVEL, "median"),
            ratio_below(large["median"], small["median"], 1e-3, "median")]


def judge_ce_wrong(target_m: dict[str, Est], norm_median: Est) -> list[Check]:
    r"""Claim ``ce_wrong``: cross-entropy, wrong model: the gradient stays near 1.

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
    >>> from fastsoftmax.verify.criteria import Est, all_of
    >>> from fastsoftmax.verify._judges import judge_ce_wrong
    >>> all_of(judge_ce_wrong(dict(median=Est.normal(0.99, 0.01), mean=Est.normal(0.98, 2e-4)),
    ...                       Est.normal(1.416, 0.01)))
    'holds'
    """
    return [above(target_m["median"], 0.9, "median 1 - p_y"),
            above(target_m["mean"], 0.9, "mean 1 - p_y"),
            near(norm_median, math.sqrt(2), 0.05, "median |grad|")]


def judge_scale(cross_gauss: dict[str, Any] | None, cross_dk: dict[str, Any] | None,
                tol: float = 0.1) -> list[Check]:
    """Claim ``scale``: saturation is set by the logit scale.

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
    >>> from fastsoftmax.verify.criteria import all_of
    >>> from fastsoftmax.verify._judges import judge_scale
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
            text = f"{name} crosses {LEVEL:g} in [{c['x_lo']:.4g}, {c['x_hi']:.4g}]"
            checks.append(Check(HOLDS, text) if c["significant"] else Check(
                INCONCLUSIVE, f"{text}: no point on each side beyond {Z:g} SE"))
    if cross_gauss is not None and cross_dk is not None:
        r = cross_gauss["x"] / cross_dk["x"]
        checks.append(Check(HOLDS if abs(r - 1) <= tol else FAILS,
                            f"sigma*/sqrt(d_k*) = {r:.3f} within {tol:.0%} of 1"))
    return checks


def judge_critical(at_star: Est, predicted: float, rel: float, star: float,
                   cross: dict[str, Any] | None, what: str = "sigma*") -> list[Check]:
    """Claim ``law_scale``, one sweep: the law's critical point, measured where it predicts it.

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
    >>> from fastsoftmax.verify.criteria import Est, all_of
    >>> from fastsoftmax.verify._judges import judge_critical
    >>> c = dict(x=49.3, x_lo=45.3, x_hi=64.0, significant=True)
    >>> all_of(judge_critical(Est.normal(0.5, 0.0004), 0.5, 0.005, 49.23, c))
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
    if not sig:
        text += f": the crossing is not located beyond {Z:g} SE"
    checks.append(Check(_v(inside and sig, not inside and sig), text))
    return checks
