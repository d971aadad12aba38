"""The text report of ``verify``."""
from .claims import D_K, HOLDS, INCONCLUSIVE, LEVEL, N, TARGETS, _pick


def _wrap(text, width):
    import textwrap
    return textwrap.wrap(text, width) or [""]


def format_report(res, width=100):
    m = res.meta
    lines = [f"fastsoftmax {m['version']} verify: {m['samples']:,} logit vectors per point, "
             f"{m['points']} points, seed {m['seed']} for all (common random numbers), "
             f"backend {m['backend']}, {m['threads']} threads: {m['seconds']:.1f} s", ""]
    L = res.literal["literal"]
    lines.append("softmax([100, 101, 99]) = [" + ", ".join(f"{v:.6f}" for v in L["p"])
                 + "]   (float64, fs.softmax; the same for [0, 1, -1])")
    lines.append("Jacobian diag(p) - p p^T:")
    for row in L["jacobian"]:
        lines.append("   " + "  ".join(f"{v:+.6f}" for v in row))
    lines.append("")

    S = res.summaries
    lines.append(f"DotProduct, n={N}, per d_k: median jac_diag_max [fraction below "
                 f"{LEVEL:g}] and median cross-entropy 1 - p_y per target")
    lines.append(f"{'d_k':>6}  {'unscaled':>18}  {'scaled':>18}   "
                 f"{'1-p_y argmax':>12} {'random':>8} {'sampled':>9}  (unscaled)")
    for d in D_K:
        cells = []
        for scaled in (False, True):
            s = _pick(S, "dotproduct", d_k=d, scaled=scaled, target="argmax")["jac_diag_max"]
            cells.append(f"{s.median:9.3g} [{s.fraction_below(LEVEL):5.3f}]")
        ce = [_pick(S, "dotproduct", d_k=d, scaled=False, target=t)["ce_grad_target"].median
              for t in TARGETS]
        lines.append(f"{d:>6}  {cells[0]:>18}  {cells[1]:>18}   {ce[0]:>12.3g} {ce[1]:>8.3g} "
                     f"{ce[2]:>9.3g}")
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
    lines.append("Criteria (verdicts computed: HOLDS beyond 4 standard errors, FAILS if "
                 "contradicted beyond 4, else INCONCLUSIVE):")
    for i, c in enumerate(res.claims, 1):
        bad = list(dict.fromkeys(f"{ch.text} ({ch.verdict})" for ch in c.checks
                                 if ch.verdict != HOLDS))
        txt = f"{i}. {c.criterion}" + (f" [not met: {'; '.join(bad[:3])}]" if bad else "")
        if c.verdict == INCONCLUSIVE:
            txt += " More --samples would decide."
        wrapped = _wrap(txt, width - 2)
        lines.extend(["  " + wrapped[0]] + ["     " + w for w in wrapped[1:]])
    return "\n".join(lines)
