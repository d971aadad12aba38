"""The PNG figures of ``verify`` (its four panels and the context-length
figure); matplotlib is imported only when a plot is made."""
import functools
import os

import numpy as np

from .._util import figure as _figure
from .._util import save_figure as _save
from ..registries import CE_GRAD_TARGET, ENTROPY, JAC_DIAG_MAX, MAX_PROB
from ..sweeps.plot import FLOOR, _col, quantile_bands

__all__ = ["verify_plots", "context_plot"]


def _level(ax, level=1e-6):
    ax.axhline(level, color="0.4", lw=0.8, ls=":")
    ax.annotate(f"{level:g}", (0.995, level), xycoords=("axes fraction", "data"),
                ha="right", va="bottom", fontsize=7, color="0.3")


def _dk_panel(ax, dot, law=None):
    for scaled, color, lab in ((False, "C3", "unscaled q.k"),
                               (True, "C0", "scaled q.k / sqrt(d_k)")):
        d = dot[(dot["scaled"] == scaled) & (dot["target"] == "argmax")].sort_values("d_k")
        quantile_bands(ax, d["d_k"].to_numpy(float), d, JAC_DIAG_MAX.name, color, lab)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _level(ax)
    ax.set_xlabel("d_k")
    ax.set_ylabel("jac_diag_max = max_i p_i (1 - p_i)")
    ax.set_title("Jacobian vs d_k (n=64): median, 10-90%, 1-99%", fontsize=9)
    ax.legend(fontsize=8, loc="lower left")
    if law:
        _dk_law(ax, dot, law)


def _dk_law(ax, dot, law):
    """Right axis: the unscaled fraction below the level, measured and as the
    saturation law predicts it (its stated accuracy as a band, its exact
    bounds shaded)."""
    lev = law["level"]
    col = f"{JAC_DIAG_MAX.name}_below_{lev:g}"
    d = dot[(~dot["scaled"].astype(bool)) & (dot["target"] == "argmax")].sort_values("d_k")
    tw = ax.twinx()
    ks = sorted(int(k) for k in law["dk"])
    x = np.array(ks, float)
    lo = np.array([law["dk"][k]["lo"] for k in ks])
    hi = np.array([law["dk"][k]["hi"] for k in ks])
    tw.fill_between(x, lo, hi, color="0.5", alpha=0.15, lw=0, label="exact bounds")
    live = [k for k in ks if np.isfinite(law["dk"][k]["rel"])]
    if live:
        xl = np.array(live, float)
        p = np.array([law["dk"][k]["predicted"] for k in live])
        r = np.array([law["dk"][k]["rel"] for k in live])
        tw.errorbar(xl, p, yerr=r * p, color="k", lw=1.0, ls="--", capsize=2,
                    label=f"saturation law (order {law['order']}) ± stated")
    if col in d.columns:
        tw.plot(d["d_k"].to_numpy(float), d[col].to_numpy(float), color="C3", ls="none",
                marker="x", ms=6, label="measured, unscaled")
    tw.set_ylim(0, 1)
    tw.set_ylabel(f"fraction of rows with jac_diag_max < {lev:g}", fontsize=8)
    tw.legend(fontsize=7, loc="center left")


def _ce_panel(ax, dot):
    # (target, color, marker, line width): sampled is drawn first and thicker
    # so that argmax, which it follows closely when saturated, stays visible
    styles = (("sampled", "C1", "^", 3.0), ("random", "C2", "s", 1.5), ("argmax", "C3", "o", 1.5))
    for target, color, mk, lw in styles:
        for scaled, ls in ((False, "-"), (True, "--")):
            d = dot[(dot["scaled"] == scaled) & (dot["target"] == target)].sort_values("d_k")
            if not len(d):
                continue
            x = d["d_k"].to_numpy(float)
            med = _col(d, CE_GRAD_TARGET.name, "q0.5")
            if not scaled and target != "random":
                ax.fill_between(x, _col(d, CE_GRAD_TARGET.name, "q0.1"),
                                _col(d, CE_GRAD_TARGET.name, "q0.9"), color=color, alpha=0.15,
                                lw=0)
            ax.plot(x, med, color=color, ls=ls, marker=mk, ms=4, lw=lw if not scaled else 1.0,
                    alpha=0.8 if target == "sampled" else 1.0,
                    label=f"target {target}" + (", scaled" if scaled else ", unscaled"))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _level(ax)
    ax.set_xlabel("d_k")
    ax.set_ylabel("cross-entropy gradient, target component 1 - p_y")
    ax.set_title("Cross-entropy gradient vs d_k per target (median, 10-90% unscaled)",
                 fontsize=9)
    ax.legend(fontsize=7, loc="lower left", ncol=2)


def _scale_panel(ax, gauss, cross=None, dk_cross=None, law=None):
    g = gauss.sort_values("scale")
    x = (g["scale"] / g["temperature"]).to_numpy(float)
    quantile_bands(ax, x, g, JAC_DIAG_MAX.name, "C4", "Gaussian logits N(0, sigma^2)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylim(max(1e-45, ax.get_ylim()[0]), 2.0)
    _level(ax)
    if cross:
        ax.axvline(cross["x"], color="C4", lw=0.8, ls="--")
        ax.annotate(f"sigma* = {cross['x']:.3g}", (cross["x"], 1e-30), xytext=(-4, 0),
                    textcoords="offset points", fontsize=8, color="C4", ha="right")
    if dk_cross:
        ax.axvline(dk_cross["x"], color="C3", lw=0.8, ls=":")
        ax.annotate(f"unscaled q.k: sqrt(d_k*) = {dk_cross['x']:.3g}", (dk_cross["x"], 1e-36),
                    xytext=(-4, 0), textcoords="offset points", fontsize=8, color="C3",
                    ha="right")
    if law:
        _scale_law(ax, law, x)
    ax.set_xlabel("sigma = scale / temperature")
    ax.set_ylabel(JAC_DIAG_MAX.name)
    ax.set_title("Scale sweep (n=64): where the median falls below 1e-6", fontsize=9)
    ax.legend(fontsize=8, loc="lower left")


@functools.lru_cache(maxsize=8)
def _scale_law_median(n, obs, order, lo, hi):
    """The law's median on 24 scales in [lo, hi] (a quantile solve per
    scale: verify's scale panel is drawn twice, alone and in the grid)."""
    from .. import theory
    grid = np.geomspace(lo, hi, 24)
    return grid, theory.Law.gaussian(n, grid).observable(obs, order=order).median()


def _scale_law(ax, law, x):
    """The saturation law's median over the scale sweep (order 1, where it
    states an accuracy: sigma >= 2 sigma_c) and its sigma*."""
    from .. import theory
    n = law["n"]
    lo = max(2.0 * float(theory.freezing_scale(n)), float(np.min(x)))
    grid, med = _scale_law_median(n, law["obs"], law["order"], lo, float(np.max(x)))
    ax.plot(grid, np.maximum(med, FLOOR), color="k", ls="--", lw=1.0,
            label=f"saturation law, median (order {law['order']})")
    ax.axvline(law["sigma_star"], color="k", lw=0.8, ls="-.")
    ax.annotate(f"law: sigma* = {law['sigma_star']:.4g}", (law["sigma_star"], 1e-24),
                xytext=(4, 0), textcoords="offset points", fontsize=8, ha="left")


def _shift_panel(ax, shifted, literal):
    s = shifted.sort_values("offset")
    pos = np.arange(len(s))
    quantile_bands(ax, pos, s, JAC_DIAG_MAX.name, "C2", "Shifted(n=64, offset, spread=1), float64")
    jd = literal["literal"][JAC_DIAG_MAX.name]
    ax.axhline(jd, color="C1", lw=1.2, label=f"[100, 101, 99]: {jd:.4f}")
    ax.set_yscale("log")
    ax.set_ylim(1e-8, 1)
    _level(ax)
    ax.set_xticks(pos, [f"{o:g}" for o in s["offset"]], fontsize=8)
    ax.set_xlabel("offset added to every logit")
    ax.set_ylabel(JAC_DIAG_MAX.name)
    ax.set_title("Large but close: no dependence on the offset", fontsize=9)
    ax.legend(fontsize=8, loc="lower left")


def verify_plots(res, out):
    """The plots of a VerifyResult into directory ``out``; returns the paths."""
    t = res.tables
    cl = {c.key: c for c in res.claims}
    nums = cl["scale"].numbers if "scale" in cl else {}
    cross, dk_cross = nums.get("gaussian_crossing"), nums.get("dk_crossing")
    P = getattr(res, "predictions", None) or {}
    law = P.get("claims")
    paths = []
    fig, ax = _figure(6.4, 4.4)
    _dk_panel(ax[0, 0], t["dotproduct"], law)
    paths.append(_save(fig, os.path.join(out, "jac_vs_dk.png")))
    fig, ax = _figure(6.4, 4.4)
    _ce_panel(ax[0, 0], t["dotproduct"])
    paths.append(_save(fig, os.path.join(out, "ce_grad_vs_dk.png")))
    fig, ax = _figure(6.4, 4.4)
    _scale_panel(ax[0, 0], t["gaussian"], cross, dk_cross, law)
    paths.append(_save(fig, os.path.join(out, "scale_sweep.png")))
    fig, ax = _figure(12, 8.4, 2, 2)
    _dk_panel(ax[0, 0], t["dotproduct"], law)
    _ce_panel(ax[0, 1], t["dotproduct"])
    _scale_panel(ax[1, 0], t["gaussian"], cross, dk_cross, law)
    _shift_panel(ax[1, 1], t["shifted"], res.literal)
    m = res.meta
    fig.suptitle(f"fastsoftmax verify: {m['samples']:,} logit vectors per point, seed "
                 f"{m['seed']} (common random numbers)", fontsize=10)
    paths.append(_save(fig, os.path.join(out, "verify.png")))
    if "context" in t and P.get("context"):
        paths.append(context_plot(res, os.path.join(out, "context_length.png")))
    return paths


# --------------------------------------------------------------------------
# context length

def context_plot(res, path):
    """The context-length figure of a ``verify --context`` result: entropy,
    max_prob and the saturated fraction against n, measured beside the laws
    of large n (random energy model, Poisson-Dirichlet, saturation law).
    Dense law curves: the random energy model is cheap; the saturation law
    (order 1) is drawn at the measured n inside its stated domain."""
    from .. import theory
    ctx = res.tables["context"]
    pcx = res.predictions["context"]
    m = res.meta
    d_k = int(ctx["d_k"].iloc[0])
    lev = m.get("level", 1e-6)
    fig, axes = _figure(15, 4.6, 1, 3)
    a0, a1, a2 = axes[0]
    ngrid = np.unique(np.round(np.geomspace(ctx["n"].min(), ctx["n"].max(), 40)))
    for scaled, color, lab in ((False, "C3", "unscaled q.k"), (True, "C0", "scaled")):
        d = ctx[ctx["scaled"] == scaled].sort_values("n")
        n = d["n"].to_numpy(float)
        L = theory.Law.dot_product(ngrid, d_k, scaled)
        sem = d[f"{ENTROPY.name}_sem"].to_numpy(float)
        a0.errorbar(n, d[f"{ENTROPY.name}_mean"], yerr=4 * sem, color=color, marker="o", ms=4,
                    ls="none", label=f"{lab}: measured mean")
        a0.plot(ngrid, L.rem[ENTROPY.name].mean(), color=color, ls="--", lw=1,
                label=f"{lab}: random energy model")
        a1.errorbar(n, d[f"{MAX_PROB.name}_mean"], yerr=4 * d[f"{MAX_PROB.name}_sem"], color=color, marker="o",
                    ms=4, ls="none", label=f"{lab}: mean")
        a1.plot(n, d[f"{MAX_PROB.name}_q0.5"], color=color, marker="s", ms=3, ls="none", alpha=0.6,
                label=f"{lab}: median")
        a1.plot(ngrid, L.rem[MAX_PROB.name].mean(), color=color, ls="--", lw=1,
                label=f"{lab}: REM mean")
        with np.errstate(invalid="ignore"):
            a1.plot(ngrid, L.rem[MAX_PROB.name].median(), color=color, ls=":", lw=1,
                    label=f"{lab}: PD median")
        if not scaled:
            col = f"{JAC_DIAG_MAX.name}_below_{lev:g}"
            a2.errorbar(n, d[col], yerr=4 * np.sqrt(d[col] * (1 - d[col]) / d["samples"]),
                        color=color, marker="o", ms=4, ls="none",
                        label=f"{lab}: fraction < {lev:g}")
            keys = [f"unscaled:{int(v)}" for v in n]
            lo = np.array([pcx[k]["below"]["lo"] for k in keys])
            hi = np.array([pcx[k]["below"]["hi"] for k in keys])
            a2.fill_between(n, lo, hi, color="0.5", alpha=0.2, lw=0, label="exact bounds")
            p = np.array([pcx[k]["below"]["predicted"] for k in keys])
            r = np.array([pcx[k]["below"]["rel"] for k in keys])
            ok = np.isfinite(p) & np.isfinite(r)
            a2.errorbar(n[ok], p[ok], yerr=(r * p)[ok], color="k", ls="--", lw=1, capsize=2,
                        label="saturation law (order 1) ± stated")
    a0.plot(ngrid, np.log(ngrid), color="0.5", lw=0.8, ls=":", label="ln n (uniform)")
    for a in (a0, a1, a2):
        a.set_xscale("log", base=2)
        a.set_xlabel("context length n")
    a1.set_yscale("log")
    a2.set_yscale("log")
    a0.set_ylabel("entropy (nats)")
    a1.set_ylabel(MAX_PROB.name)
    a2.set_ylabel(f"fraction of rows with jac_diag_max < {lev:g}")
    a0.set_title(f"Entropy vs n (DotProduct d_k={d_k})", fontsize=9)
    a1.set_title("Largest probability vs n", fontsize=9)
    a2.set_title("Saturated rows vs n (unscaled)", fontsize=9)
    for a in (a0, a1, a2):
        a.legend(fontsize=6.5)
    fig.suptitle(f"fastsoftmax verify --context: min({m['samples']:,}, 2^28/n) rows per "
                 "point, measured (4 SE) beside the laws of large n", fontsize=10)
    return _save(fig, os.fspath(path))
