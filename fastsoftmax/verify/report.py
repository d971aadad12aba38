"""The text report of ``verify``: the literal vector, the tables, the claims, the criteria."""
import math

from ..registries import CE_GRAD_TARGET, ENTROPY, JAC_DIAG_MAX, MAX_PROB
from .constants import CONTEXT_D_K, D_K, LEVEL, N, TARGETS
from .criteria import FAILS, HOLDS, INCONCLUSIVE, MARGIN, Z, _rows_text, describe
from .paper import ContextPrediction, DkPredictions
from .registry import Evidence


def _wrap(text, width):
    import textwrap
    return textwrap.wrap(text, width) or [""]


def _law_cell(q):
    """The law's fraction at a d_k (``DkPredictions.dk[d_k]``): its prediction
    where it states an accuracy, else (< its exact upper bound)."""
    if math.isfinite(q["predicted"]) and math.isfinite(q["rel"]):
        return f"{q['predicted']:.4f}"
    return f"(<{q['hi']:.2g})"


def format_report(res, width=100):
    m = res.meta
    P = getattr(res, "predictions", None) or {}
    pc = DkPredictions.of(P["claims"]) if P.get("claims") else None
    lines = [f"fastsoftmax {m['version']} verify: {m['samples']:,} logit vectors per point, "
             f"{m['points']} points, seed {m['seed']} for all (common random numbers), "
             f"backend {m['backend']}, {m['threads']} threads: {m['seconds']:.1f} s"
             + ((f" (the laws: {m['theory_seconds']:.1f} s)" if m["theory_seconds"] >= 0.05
                 else " (the laws: cached)") if "theory_seconds" in m else ""),
             ""]
    planned = m.get("rows_per_point") or {}
    if planned:
        lines[-1:-1] = _wrap("the laws' points, planned so that each claim can resolve the "
                             "accuracy it states: " + ", ".join(
                                 f"{k} {v:,} rows" for k, v in planned.items()), width)
    L = res.literal["literal"]
    lines.append("softmax([100, 101, 99]) = [" + ", ".join(f"{v:.6f}" for v in L["p"])
                 + "]   (float64, fs.softmax; the same for [0, 1, -1])")
    lines.append("Jacobian diag(p) - p p^T:")
    for row in L["jacobian"]:
        lines.append("   " + "  ".join(f"{v:+.6f}" for v in row))
    lines.append("")

    ev = Evidence(res.summaries, res.literal, P)
    lines.append(f"DotProduct, n={N}, per d_k: median jac_diag_max [fraction below "
                 f"{LEVEL:g}] and median cross-entropy 1 - p_y per target"
                 + (f"; law: the saturation law's fraction (order {pc.order}), "
                    "(< its exact bound) outside its domain" if pc else ""))
    lines.append(f"{'d_k':>6}  {'unscaled':>18}  {'law' if pc else '':>8}  {'scaled':>18}   "
                 f"{'1-p_y argmax':>12} {'random':>8} {'sampled':>9}  (unscaled)")
    for d in D_K:
        cells = []
        for scaled in (False, True):
            s = ev.point("dotproduct", d_k=d, scaled=scaled, target="argmax")[JAC_DIAG_MAX.name]
            cells.append(f"{s.median:9.3g} [{s.fraction_below(LEVEL):5.3f}]")
        ce = [ev.point("dotproduct", d_k=d, scaled=False, target=t)[CE_GRAD_TARGET.name].median
              for t in TARGETS]
        law = _law_cell(pc.dk[d]) if pc else ""
        lines.append(f"{d:>6}  {cells[0]:>18}  {law:>8}  {cells[1]:>18}   {ce[0]:>12.3g} "
                     f"{ce[1]:>8.3g} {ce[2]:>9.3g}")
    lines.append("")
    if ev.has(["context"], ["context"]):
        lines.extend(_context_table(res, P["context"], width))
        lines.append("")

    wc, wv = 30, 12
    we = max(30, width - wc - wv - 6)
    lines.append(f"{'#':>2} {'claim':<{wc}} {'evidence (± standard error)':<{we}} verdict")
    lines.append("-" * (wc + we + wv + 4))
    for i, c in enumerate(res.claims, 1):
        cl, ev = _wrap(c.claim, wc), _wrap(c.evidence, we)
        for k in range(max(len(cl), len(ev))):
            a = cl[k] if k < len(cl) else ""
            b = ev[k] if k < len(ev) else ""
            v = c.verdict.upper() if k == 0 else ""
            lines.append(f"{str(i) if k == 0 else '':>2} {a:<{wc}} {b:<{we}} {v}".rstrip())
        lines.append("")
    rule = _wrap("Criteria (verdicts computed, one rule: " + describe(m.get("z", Z),
                                                                   m.get("margin", MARGIN))
                 + "):", width)
    lines.extend(rule)
    for i, c in enumerate(res.claims, 1):
        # the failures first, then the undecided checks that need the most rows
        worst = sorted((ch for ch in c.checks if ch.verdict != HOLDS),
                       key=lambda ch: (ch.verdict != FAILS, -(ch.rows_needed or 0)))
        bad = list(dict.fromkeys(f"{ch.text} ({ch.verdict})" for ch in worst))
        txt = f"{i}. {c.criterion}" + (f" [not met: {'; '.join(bad[:3])}]" if bad else "")
        if c.verdict == INCONCLUSIVE:
            need = c.rows_needed
            txt += (f" Needs about {_rows_text(need)} rows per point (--samples {need})."
                    if need else
                    " No row count alone settles it.")
        wrapped = _wrap(txt, width - 2)
        lines.extend(["  " + wrapped[0]] + ["     " + w for w in wrapped[1:]])
    return "\n".join(lines)


def _pred(value, q=None, spec=".4g"):
    """A prediction: [v] where the law states an accuracy (judged), (v) where
    it is shown only, - where it has none."""
    if value is None or not math.isfinite(value):
        return "-"
    judged = q is not None and math.isfinite(q.get("rel", math.nan))
    return f"[{value:{spec}}]" if judged else f"({value:{spec}})"


def _context_table(res, pcx, width=100):
    m = res.meta
    rows = {(p["scaled"], p["n"]): s for p, s in res.summaries["context"]}
    ns = sorted({n for _, n in rows})
    out = _wrap(f"Context length: DotProduct(n, d_k={CONTEXT_D_K}), target argmax, "
                f"min({m['samples']:,}, 2^28/n) rows per point ({m.get('context_seconds', 0):.1f}"
                " s), m = sigma_c/sigma (sigma_c = sqrt(2 ln n)); measured, then the law: "
                "[judged within its stated accuracy] or (shown only: outside its stated "
                "domain)", width)
    head = f"{'n':>6} {'rows':>8} {'m':>5} {'phase':>9}"
    tab1 = [f"{head}  {'mean entropy':>19}  {'mean max_prob':>17}  {'median max_prob':>17}"]
    tab2 = [f"{head}  {'median jac_diag_max':>19}  {'fraction < ' + format(LEVEL, 'g'):>18}  "
            f"{'E[max logit]':>13}"]
    for scaled in (False, True):
        key = "scaled" if scaled else "unscaled"
        scale = ContextPrediction.at(pcx, scaled, ns[0]).scale
        title = f"{key} (typical logit scale {scale:.3g}):"
        tab1.append(title)
        tab2.append(title)
        for n in ns:
            s = rows[(scaled, n)]
            q = ContextPrediction.at(pcx, scaled, n)
            e, mp, j = s[ENTROPY.name], s[MAX_PROB.name], s[JAC_DIAG_MAX.name]
            left = f"{n:>6} {s.samples:>8,} {q.m:>5.2f} {q.phase:>9}"
            ent = f"{e.mean:.4f} {_pred(q.entropy['predicted'], q.entropy, '.4f')}"
            mpm = f"{mp.mean:.4f} {_pred(q.max_prob_mean['predicted'], q.max_prob_mean, '.4f')}"
            med = f"{mp.median:.4f} {_pred(q.max_prob_median, None, '.4f')}"
            tab1.append(f"{left}  {ent:>19}  {mpm:>17}  {med:>17}")
            b = q.below
            frac = f"{j.fraction_below(LEVEL):.4f} " + (
                _pred(b["predicted"], b, ".4f") if math.isfinite(b["predicted"])
                else f"(<{b['hi']:.1g})")
            em = f"({q.expected_max:.3g}, {q.expected_max_leading:.3g})"
            tab2.append(f"{left}  {j.median:>19.3g}  {frac:>18}  {em:>13}")
    out.extend("  " + w for w in _wrap(
        "entropy and mean max_prob: random energy model (diffuse ln n - sigma^2/2 + 1/n term; "
        "frozen Poisson-Dirichlet); median max_prob: its PD median", width - 2))
    out.extend(tab1)
    out.extend("  " + w for w in _wrap(
        f"fraction < {LEVEL:g}: saturation law (order 1); E[max logit]: extreme values, not "
        "measured (sigma (b_n + gamma_E/b_n), sigma sqrt(2 ln n))", width - 2))
    out.extend(tab2)
    return out
