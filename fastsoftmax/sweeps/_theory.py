"""Prediction columns of a sweep (``sweep(..., theory=True)``): the laws of
:mod:`fastsoftmax.theory` beside each point's measured statistics.

Columns, for every observable ``<obs>`` of ``fastsoftmax.OBS_NAMES`` (its
record, :class:`fastsoftmax.registries.Observable`, says which laws cover
it; NaN where no law covers the point, or outside the law's stated domain):

* ``<obs>_theory_below_<t>``: P(obs < t) for each threshold t: exact for
  n <= 2 (every observable); for n > 2 the saturation law of the saturating
  observables (``theory.SATURATING``), for t <= 1e-3, where the law states an
  accuracy (m = sigma_c / sigma <= 1/2);
* ``<obs>_theory_q0.5``: the median, likewise (for n > 2 only where it lies
  below 1e-3, the law's regime);
* ``<obs>_theory_mean``: the exact mean, n <= 2 only;
* ``<obs>_theory_rem_mean``: the random energy model's means, for the
  observables it covers (``law.rem[obs]``; n > 2, where it states an
  accuracy);
* ``theory_order``: the order of the saturation law used for the row.

Models: Gaussian, Shifted, DotProduct; targets "argmax" and "random" (for
the cross-entropy observables; other targets give NaN there).
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np

from ..registries import OBSERVABLES

__all__ = ["theory_columns", "theory_record", "check_theory", "theory_order"]

# the saturation law is asymptotic as t -> 0: meant for t <= 1e-3
T_MAX = 1e-3


def check_theory(theory: Any) -> bool | int:
    """``theory`` validated: False, True (order 1 for Gaussian and Shifted, 0
    for DotProduct), or an order 0 / 1 for every model; SciPy importable."""
    if theory is False or theory is None:
        return False
    if isinstance(theory, (bool, np.bool_)):
        theory = True
    elif isinstance(theory, (int, np.integer)) and int(theory) in (0, 1):
        theory = int(theory)
    else:
        raise ValueError(f"theory must be False, True, 0 or 1 (the order of the saturation "
                         f"law), got {theory!r}")
    try:
        from .. import theory as _theory  # noqa: F401
    except ImportError as e:
        raise ImportError(f"theory=True needs SciPy: {e}") from None
    return theory


def theory_order(theory: bool | int, model: Any) -> int:
    """The order used for a model: theory=True picks 1, but 0 for DotProduct
    (its order-1 law is a chi^2 mixture of quadratures: seconds per observable)."""
    from ..models import DotProduct
    if theory is True:
        return 0 if isinstance(model, DotProduct) else 1
    return int(theory)


def theory_columns(thresholds: Sequence[float]) -> list[str]:
    """Names of a sweep table's prediction columns (``theory=True``), in order.

    Per observable ``<obs>_theory_mean``, ``<obs>_theory_q0.5`` and
    ``<obs>_theory_below_<t>`` for each threshold, ``<obs>_theory_rem_mean``
    for the observables with a random energy model law, then ``theory_order``.

    Parameters
    ----------
    thresholds : sequence of float
        The sweep's thresholds.

    Returns
    -------
    list of str
        The column names; they follow the statistics columns in a table.

    See Also
    --------
    theory_record : The values of one point.

    Examples
    --------
    >>> from fastsoftmax.sweeps import theory_columns
    >>> cols = theory_columns((1e-6,))
    >>> cols[:3], len(cols), cols[-1]
    (['max_prob_theory_mean', 'max_prob_theory_q0.5', 'max_prob_theory_below_1e-06'], 30, \
'theory_order')
    """
    cols = []
    for o in OBSERVABLES:
        cols += [f"{o.name}_theory_mean", f"{o.name}_theory_q0.5"]
        cols += [f"{o.name}_theory_below_{t:g}" for t in thresholds]
        if o.rem is not None:
            cols.append(f"{o.name}_theory_rem_mean")
    return cols + ["theory_order"]


def _f(x):
    v = float(np.asarray(x))
    return v if math.isfinite(v) else math.nan


def theory_record(model: Any, target: Any, thresholds: Sequence[float],
                  order: int) -> dict[str, Any]:
    r"""The prediction columns of one point: the laws beside its statistics.

    NaN wherever no law covers the point: other models, targets other than
    "argmax" and "random" for the cross-entropy observables, and, for
    n > 2, observables without a saturation law, thresholds above 1e-3,
    medians above 1e-3 and scales where the law states no accuracy
    (:func:`fastsoftmax.theory.stated_accuracy`).

    Parameters
    ----------
    model : fastsoftmax.models.Gaussian, Shifted or DotProduct
        The point's model.
    target : str or int
        The sweep's target.
    thresholds : sequence of float
        The sweep's thresholds.
    order : {0, 1}
        The order of the saturation law (n > 2).

    Returns
    -------
    dict
        :func:`theory_columns` -> value: exact for n <= 2 (every
        observable's mean, median and fractions); for n > 2 the saturation
        law's fractions and median of the saturating observables and the
        random energy model's means.

    Examples
    --------
    >>> from fastsoftmax import models
    >>> from fastsoftmax.sweeps import theory_record
    >>> rec = theory_record(models.Gaussian(n=2, scale=1.0), "argmax", (1e-3,), order=1)
    >>> print(round(rec["max_prob_theory_mean"], 6), rec["theory_order"])
    0.725213 1
    >>> rec = theory_record(models.Gaussian(n=64, scale=49.0), "argmax", (1e-6,), order=0)
    >>> print(round(rec["jac_diag_max_theory_below_1e-06"], 4), rec["theory_order"])
    0.5002 0
    """
    from .. import theory
    rec: dict[str, Any] = {c: math.nan for c in theory_columns(thresholds)}
    rec["theory_order"] = int(order)
    try:
        law = theory.law(model)
    except ValueError:
        return rec
    n = int(model.n)
    tgt = target if target in ("argmax", "random") else None
    t = np.asarray(thresholds, dtype=float)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        if n > 2:
            for o in OBSERVABLES:
                if o.rem is None:
                    continue
                rem = law.rem[o.name]
                if np.isfinite(rem.stated_accuracy()[0]):
                    rec[f"{o.name}_theory_rem_mean"] = _f(rem.mean())
        for o in OBSERVABLES:
            obs = o.name
            if o.targeted and tgt is None:
                continue
            tg = tgt or "argmax"
            if n <= 2:
                d = law[obs, tg]
                rec[f"{obs}_theory_mean"] = _f(d.mean())
                rec[f"{obs}_theory_q0.5"] = _f(d.median())
                for ti in t:
                    try:
                        rec[f"{obs}_theory_below_{ti:g}"] = _f(d.cdf(ti))
                    except ValueError:
                        pass
                continue
            if not o.saturates:
                continue
            d = law.observable(obs, tg, order)
            if not np.isfinite(d.stated_accuracy()[0]):
                continue
            ok = (t > 0) & (t <= T_MAX)
            if ok.any():
                fr = d.cdf(t[ok])
                for ti, v in zip(t[ok], np.atleast_1d(fr)):
                    rec[f"{obs}_theory_below_{ti:g}"] = _f(v)
            med = _f(d.median())
            if med <= T_MAX:
                rec[f"{obs}_theory_q0.5"] = med
    return rec
