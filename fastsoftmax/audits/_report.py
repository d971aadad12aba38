"""The figures of an audited case and :class:`AuditReport`."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ._cases import Case
from ._kinds import CE_GRAD, LOG_KINDS, LOG_SOFTMAX, PROB_KINDS, SOFTMAX
from ._units import FloatFormat, ulp, units_log, units_relative

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["AuditReport", "case_figures", "failure_figures", "masked_figures",
           "DEFAULT_MAX_ULP", "COLUMNS", "LOG_KINDS", "PROB_KINDS"]

#: The default pass bound, in units of the error bound (see the module
#: ``fastsoftmax.audits._units``).
DEFAULT_MAX_ULP = 4.0
# metrics judged against max_ulp, and those that must be 0
UNIT_METRICS = ("units", "target_units", "norm_units")
ZERO_METRICS = ("error", "nonfinite", "false_zeros", "false_neg_inf")
COLUMNS = ["implementation", "kind", "dtype", "framework", "case", "regime", "target", "n",
           "rows", "scale", "metric", "value", "q0.999", "elements", "reference", "judged",
           "note"]
#: The metrics of a report (the ``metric`` column of ``AuditReport.to_frame``).
METRIC_DOC = {
    "units": "max error in units of the bound (judged: <= max_ulp)",
    "ulps": "max error in plain ulps of the dtype at the exact value",
    "rel_err": "max relative error where the exact value is normal",
    "target_units": "1 - p_y: max error in units of its bound (judged)",
    "target_rel_err": "1 - p_y: max relative error",
    "norm_units": "||p - e_y||: max error in units of the largest element bound (judged)",
    "norm_rel_err": "||p - e_y||: max relative error",
    "nonfinite": "non-finite outputs where the exact value is finite (judged: 0)",
    "false_zeros": "outputs 0 where the exact value is a normal number (judged: 0)",
    "false_neg_inf": "log outputs -inf (a loss +inf) where the exact value is finite "
                     "(judged: 0)",
    "sum_err": "max |sum_j p_j - 1| over rows (reported)",
    "error": "the implementation raised or returned the wrong shape (judged: 0)",
    "returns": "what the implementation returns for a fully masked row (reported)",
}


def _q(a: np.ndarray, q: float) -> float:
    return float(np.quantile(a, q, method="higher")) if a.size else math.nan


def _max(a: np.ndarray) -> float:
    return float(np.max(a)) if a.size else math.nan


def _error_rows(prefix: str, err: np.ndarray, exact: np.ndarray, c: np.ndarray, log: bool,
                fmt: FloatFormat, ref: str) -> list[dict[str, Any]]:
    units = (units_log if log else units_relative)(err, exact, c, fmt)
    with np.errstate(invalid="ignore", divide="ignore"):
        ulps = np.where(np.isfinite(exact), err / ulp(exact, fmt),
                        np.where(err == 0, 0.0, np.inf))
        normal = np.isfinite(exact) & (np.abs(exact) >= fmt.tiny)
        rel = err[normal] / np.abs(exact[normal])
    units = units.ravel()
    out = [dict(metric=f"{prefix}units", value=_max(units), q=_q(units, 0.999),
                elements=units.size, reference=ref, judged=True)]
    if not prefix:
        out.append(dict(metric="ulps", value=_max(ulps.ravel()), q=_q(ulps.ravel(), 0.999),
                        elements=ulps.size, reference=ref, judged=False))
    out.append(dict(metric=f"{prefix}rel_err", value=_max(rel), q=_q(rel, 0.999),
                    elements=rel.size, reference=ref, judged=False))
    return out


def case_figures(kind: str, out: np.ndarray, errs: dict[str, np.ndarray],
                 fmt: FloatFormat, ref: str, counts: dict[str, np.ndarray],
                 count_ref: str) -> list[dict[str, Any]]:
    """The metric rows of a judged case.

    ``errs`` (from ``_reference.element_errors`` or ``mpmath_errors``)
    gives the error figures, with reference ``ref``; ``counts`` (the
    float64 errors of every row, reference ``count_ref``) the counts of
    non-finite outputs, false zeros and false -inf and the sum error."""
    log = kind in LOG_KINDS
    rows = _error_rows("", errs["err"], errs["exact"], errs["c"], log, fmt, ref)
    if kind == CE_GRAD:
        rows += _error_rows("target_", errs["t_err"], errs["t_exact"], errs["t_c"], False,
                            fmt, ref)
        c_norm = np.max(np.where(np.isfinite(errs["c"]), errs["c"], 0.0), axis=-1)
        rows += _error_rows("norm_", errs["norm_err"], errs["norm_exact"], c_norm, False,
                            fmt, ref)
    exact, cout = counts["exact"], counts["out"]
    finite_exact = np.isfinite(exact)
    bad = finite_exact & ~np.isfinite(cout)
    rows.append(dict(metric="nonfinite", value=int(bad.sum()), q=math.nan,
                     elements=int(finite_exact.sum()), reference=count_ref, judged=True))
    if log:
        sign = -np.inf if kind == LOG_SOFTMAX else np.inf
        rows.append(dict(metric="false_neg_inf", value=int((finite_exact & (cout == sign)).sum()),
                         q=math.nan, elements=int(finite_exact.sum()), reference=count_ref,
                         judged=True))
    else:
        normal = finite_exact & (np.abs(exact) >= fmt.tiny)
        rows.append(dict(metric="false_zeros", value=int((normal & (cout == 0)).sum()),
                         q=math.nan, elements=int(normal.sum()), reference=count_ref,
                         judged=True))
        target = 1.0 if kind == SOFTMAX else 0.0
        with np.errstate(invalid="ignore", over="ignore"):
            sums = np.array([abs(math.fsum(r) - target) if np.isfinite(r).all() else math.nan
                             for r in cout])
        fin = sums[np.isfinite(sums)]
        rows.append(dict(metric="sum_err", value=_max(fin), q=math.nan, elements=fin.size,
                         reference="exact sum", judged=False))
    return rows


def failure_figures(message: str) -> list[dict[str, Any]]:
    """The one metric row of a case the implementation failed on."""
    return [dict(metric="error", value=1, q=math.nan, elements=1, reference="-",
                 judged=True, note=message)]


def describe_output(out: np.ndarray) -> str:
    """What an output is, in words (for rows with no exact value)."""
    flat = out.ravel()
    if flat.size == 0:
        return "an empty array"
    if np.isnan(flat).all():
        return "NaN"
    if np.isfinite(flat).all() and out.ndim == 2 and np.allclose(out, 1.0 / out.shape[1]):
        return f"uniform 1/{out.shape[1]}"
    vals = np.unique(flat[~np.isnan(flat)])
    nan = int(np.isnan(flat).sum())
    text = ", ".join(f"{v:g}" for v in vals[:3]) + (", ..." if vals.size > 3 else "")
    return f"{text}" + (f" ({nan} NaN)" if nan else "")


def masked_figures(out: np.ndarray) -> list[dict[str, Any]]:
    """The metric row of a case with fully masked rows: reported, not judged."""
    return [dict(metric="returns", value=math.nan, q=math.nan, elements=out.size,
                 reference="none (no exact value)", judged=False,
                 note=describe_output(out))]


@dataclass
class AuditReport:
    """The result of :func:`fastsoftmax.audit`: the figures of every case.

    Built by :func:`fastsoftmax.audit`; one record per case and metric (see
    :meth:`to_frame`), verdicts at any pass bound (:meth:`passed`,
    :meth:`failures`, :meth:`worst`), a text table (its repr) and a plot.

    Parameters
    ----------
    implementation : str
        What was audited (a registry name, ``module:function`` or the
        function's qualified name).
    kind : str
        One of :data:`fastsoftmax.audits.KINDS`.
    dtype : str
        The logits' dtype.
    framework : str
        The array type the implementation received.
    device : object
        Where the logits were placed (None: the framework's default).
    cases : list of Case
        The cases, in order (name, regime, description, nominal scale).
    records : list of dict
        One per case and metric (the rows of :meth:`to_frame`).
    seconds_implementation : float, default 0
        Wall time in the implementation's calls.
    seconds_reference : float, default 0
        Wall time in the exact values and the figures.

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> rep = fs.audit("scipy", cases=["gauss_s1_n64"])
    >>> rep.passed(), rep.implementation, len(rep.cases)
    (True, 'scipy', 1)
    """
    implementation: str
    kind: str
    dtype: str
    framework: str
    device: Any
    cases: list[Case]
    records: list[dict[str, Any]] = field(repr=False)
    seconds_implementation: float = 0.0
    seconds_reference: float = 0.0

    # ---------------------------------------------------------------- verdicts
    def _case_records(self, label: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r["case_label"] == label]

    def case_score(self, label: str) -> float:
        """A case's largest judged error in units (its score against ``max_ulp``).

        Parameters
        ----------
        label : str
            The case's label (``Case.label``: its name, with the target rule
            of a cross-entropy kind, ``gap_20_n64[argmax]``).

        Returns
        -------
        float
            The largest of its judged unit figures; inf when a judged count
            (non-finite outputs, false zeros, false -inf) is not 0 or the
            implementation failed; NaN for a case that is not judged.

        Examples
        --------
        >>> import fastsoftmax as fs
        >>> rep = fs.audit("numpy-naive", cases=["offset_1e4_n64", "mask_full_n64"])
        >>> rep.case_score("offset_1e4_n64"), rep.case_score("mask_full_n64")
        (inf, nan)
        """
        recs = self._case_records(label)
        if not any(r["judged"] for r in recs):
            return math.nan
        if any(r["metric"] in ZERO_METRICS and r["value"] for r in recs):
            return math.inf
        vals = [r["value"] for r in recs if r["metric"] in UNIT_METRICS
                and not math.isnan(r["value"])]
        return max(vals) if vals else 0.0

    def failures(self, max_ulp: float = DEFAULT_MAX_ULP) -> list[str]:
        """The labels of the judged cases that do not pass at ``max_ulp``.

        Parameters
        ----------
        max_ulp : float, default 4
            The largest error allowed, in units of the error bound.

        Returns
        -------
        list of str
            The failing cases' labels, in the report's order.

        Examples
        --------
        >>> import fastsoftmax as fs
        >>> fs.audit("numpy-naive", cases=["gauss_s1_n64", "gap_100_n64"]).failures()
        ['gap_100_n64']
        """
        return [c.label for c in self.cases if self.case_score(c.label) > max_ulp]

    def passed(self, max_ulp: float = DEFAULT_MAX_ULP) -> bool:
        """Whether every judged case passes.

        Parameters
        ----------
        max_ulp : float, default 4
            The largest error allowed, in units of the error bound.

        Returns
        -------
        bool
            True when every judged case has its unit figures at most
            ``max_ulp`` and no non-finite output, false zero, false -inf or
            failure.

        Examples
        --------
        >>> import fastsoftmax as fs
        >>> fs.audit("scipy", cases=["gauss_s1e3_n64"]).passed(max_ulp=4)
        True
        """
        return not self.failures(max_ulp)

    def worst(self) -> dict[str, Any]:
        """The worst judged case: its label, regime, description and figures.

        Returns
        -------
        dict
            ``case``, ``regime``, ``description``, ``score`` (its largest
            unit figure, inf for a judged count or a failure) and
            ``figures`` (metric -> value, with ``note`` where one is set).

        Raises
        ------
        ValueError
            No case of the report is judged.

        Examples
        --------
        >>> import fastsoftmax as fs
        >>> w = fs.audit("numpy-naive", cases=["gauss_s1_n64", "gap_100_n64"]).worst()
        >>> w["case"], w["regime"], w["figures"]["nonfinite"]
        ('gap_100_n64', 'dominant logit', 64)
        """
        judged = [c for c in self.cases if not math.isnan(self.case_score(c.label))]
        if not judged:
            raise ValueError("no judged case in this report")
        c = max(judged, key=lambda c: self.case_score(c.label))
        figs: dict[str, Any] = {r["metric"]: r["value"] for r in self._case_records(c.label)}
        notes = [r["note"] for r in self._case_records(c.label) if r.get("note")]
        if notes:
            figs["note"] = "; ".join(notes)
        return dict(case=c.label, regime=c.regime, description=c.description,
                    score=self.case_score(c.label), figures=figs)

    # ------------------------------------------------------------------ tables
    def to_frame(self, max_ulp: float = DEFAULT_MAX_ULP) -> pd.DataFrame:
        """One row per case and metric, as a pandas DataFrame.

        Parameters
        ----------
        max_ulp : float, default 4
            The bound of the ``passed`` column.

        Returns
        -------
        pandas.DataFrame
            Columns ``implementation``, ``kind``, ``dtype``, ``framework``,
            ``case``, ``regime``, ``target``, ``n``, ``rows``, ``scale``,
            ``metric``, ``value`` (the maximum, or the count), ``q0.999``,
            ``elements`` (how many values the figure is over),
            ``reference`` (the exact values it was measured against),
            ``judged``, ``note`` and ``passed`` (the case's verdict, on each
            of its rows; None where not judged).

        Examples
        --------
        >>> import fastsoftmax as fs
        >>> df = fs.audit("scipy", cases=["gap_20_n64"]).to_frame()
        >>> df[["case", "metric", "judged"]].values.tolist()[:2]
        [['gap_20_n64', 'units', True], ['gap_20_n64', 'ulps', False]]
        """
        import pandas as pd
        rows = []
        for r in self.records:
            d = {k: r.get(k) for k in COLUMNS if k not in ("q0.999", "case")}
            d["case"] = r["case"]
            d["q0.999"] = r["q"]
            score = self.case_score(r["case_label"])
            d["passed"] = None if math.isnan(score) else bool(score <= max_ulp)
            rows.append(d)
        return pd.DataFrame.from_records(rows, columns=COLUMNS + ["passed"])

    def table(self, max_ulp: float = DEFAULT_MAX_ULP) -> str:
        """The report as a text table, one line per case (what repr shows).

        Parameters
        ----------
        max_ulp : float, default 4
            The pass bound of the verdict column.

        Returns
        -------
        str
            A header line and a table: the case, its regime, the maximum and
            99.9th percentile of the error in units, the maximum in plain
            ulps, the counts, ``|sum p - 1|``, the verdict.

        Examples
        --------
        >>> import fastsoftmax as fs
        >>> print(fs.audit("scipy", cases=["ties_equal_n64"]).table().splitlines()[1])
        ... # doctest: +NORMALIZE_WHITESPACE
        case regime units units q99.9 ulps nonfinite false 0 |sum-1| verdict
        """
        cols = ["units", "units q99.9", "ulps"]
        if self.kind == CE_GRAD:
            cols += ["1-p_y units", "norm units"]
        cols += ["nonfinite", "false -inf" if self.kind in LOG_KINDS else "false 0"]
        if self.kind in PROB_KINDS:
            cols.append("|sum-1|" if self.kind == SOFTMAX else "|sum g|")
        head = ["case", "regime"] + cols + ["verdict"]
        lines = []

        def num(v, spec=".3g"):
            if v is None or (isinstance(v, float) and math.isnan(v)):
                return "-"
            if isinstance(v, float) and math.isinf(v):
                return "inf"
            if isinstance(v, (int, np.integer)):
                return str(v)
            return format(v, spec)

        for c in self.cases:
            recs = {r["metric"]: r for r in self._case_records(c.label)}
            score = self.case_score(c.label)
            if "returns" in recs:
                cells = ["-"] * len(cols)
                verdict = f"returns {recs['returns']['note']} (not judged)"
            elif "error" in recs:
                cells = ["-"] * len(cols)
                verdict = "FAIL: " + str(recs["error"]["note"])[:60]
            else:
                get = {"units": ("units", "value"), "units q99.9": ("units", "q"),
                       "ulps": ("ulps", "value"), "1-p_y units": ("target_units", "value"),
                       "norm units": ("norm_units", "value"), "nonfinite": ("nonfinite", "value"),
                       "false -inf": ("false_neg_inf", "value"),
                       "false 0": ("false_zeros", "value"), "|sum-1|": ("sum_err", "value"),
                       "|sum g|": ("sum_err", "value")}
                cells = [num(recs[get[k][0]][get[k][1]]) if get[k][0] in recs else "-"
                         for k in cols]
                verdict = "pass" if score <= max_ulp else "FAIL"
            lines.append([c.label, c.regime] + cells + [verdict])
        widths = [max(len(h), *(len(r[i]) for r in lines)) if lines else len(h)
                  for i, h in enumerate(head)]
        nfail = len(self.failures(max_ulp))
        njudged = sum(not math.isnan(self.case_score(c.label)) for c in self.cases)
        title = (f"audit of {self.implementation}: {self.kind}, {self.dtype}, {self.framework}"
                 + (f" on {self.device}" if self.device is not None else "")
                 + f"; {njudged - nfail} of {njudged} judged cases pass at max_ulp="
                 f"{max_ulp:g} (units of the error bound u(1 + ceil(log2 n) + |x_j - m| + "
                 "sum_i p_i |x_i - m|))")
        out = [title, "  ".join(h.ljust(w) if i < 2 else h.rjust(w)
                                for i, (h, w) in enumerate(zip(head, widths)))]
        out += ["  ".join(v.ljust(w) if i < 2 or i == len(head) - 1 else v.rjust(w)
                          for i, (v, w) in enumerate(zip(r, widths))) for r in lines]
        return "\n".join(out)

    def __repr__(self) -> str:
        return self.table()

    # -------------------------------------------------------------------- plot
    def plot(self, path: Any = None, max_ulp: float = DEFAULT_MAX_ULP, ax: Any = None) -> Any:
        """Error against logit scale: each judged case's largest error in units.

        The error (log scale) at the case's nominal logit scale, one marker
        style per regime, the pass bound as a line, failing cases labelled.

        Parameters
        ----------
        path : str or path, optional
            Write the figure there (PNG, PDF, SVG: by extension).
        max_ulp : float, default 4
            The pass bound drawn.
        ax : matplotlib Axes, optional
            Draw into it instead of a new figure.

        Returns
        -------
        matplotlib.figure.Figure
            The figure.

        Examples
        --------
        >>> import fastsoftmax as fs
        >>> fig = fs.audit("scipy", cases=["gauss_s1_n64", "gap_100_n64"]).plot()
        >>> fig.axes[0].get_xscale()
        'log'
        """
        if ax is None:
            from matplotlib.figure import Figure
            fig = Figure(figsize=(8, 5))
            ax = fig.subplots()
        else:
            fig = ax.figure
        regimes = sorted({c.regime for c in self.cases})
        markers = "osD^v<>ph*x+"
        scores = {c.label: self.case_score(c.label) for c in self.cases}
        finite = [s for s in scores.values() if math.isfinite(s) and s > 0]
        top = max([max_ulp * 10] + [s * 3 for s in finite])
        for i, reg in enumerate(regimes):
            cs = [c for c in self.cases if c.regime == reg and not math.isnan(scores[c.label])]
            if not cs:
                continue
            xs = [max(c.scale, 1e-3) for c in cs]
            ys = [min(max(scores[c.label], 1e-4), top) for c in cs]
            ax.scatter(xs, ys, marker=markers[i % len(markers)], label=reg)
            for c, xv, yv in zip(cs, xs, ys):
                if scores[c.label] > max_ulp:
                    ax.annotate(c.label, (xv, yv), fontsize=6, xytext=(3, 3),
                                textcoords="offset points")
        ax.axhline(max_ulp, color="k", ls="--", lw=1, label=f"max_ulp = {max_ulp:g}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("nominal logit scale of the case")
        ax.set_ylabel("largest error (units of the error bound)")
        ax.set_title(f"{self.implementation}: {self.kind}, {self.dtype}", fontsize=10)
        ax.legend(fontsize=7)
        if path is not None:
            fig.savefig(path, dpi=120, bbox_inches="tight")
        return fig
