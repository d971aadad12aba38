"""PNG plots of sweeps and of ``verify`` (matplotlib, Agg canvas).

Figures are built with ``matplotlib.figure.Figure`` and an Agg canvas: no
pyplot, no global backend switch, nothing shown.  matplotlib is imported
only when a plot is made.
"""
import os

import numpy as np

__all__ = ["plot_sweep", "verify_plots", "quantile_bands", "context_plot", "plot_history"]

from ._config import QUANTILES

QCOLS = tuple(f"q{q:g}" for q in QUANTILES)
FLOOR = 1e-300          # quantiles that underflow float64 are drawn at the floor


def _figure(w, h, nrows=1, ncols=1):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("plots need matplotlib: pip install 'fastsoftmax[plot]'") from None
    fig = Figure(figsize=(w, h), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def _col(df, obs, q):
    return np.maximum(df[f"{obs}_{q}"].to_numpy(dtype=float), FLOOR)


def quantile_bands(ax, x, df, obs, color, label, marker="o", ls="-"):
    """Median line with 10-90% and 1-99% bands of ``obs`` from a sweep table."""
    q = {c: _col(df, obs, c) for c in QCOLS}
    ax.fill_between(x, q["q0.01"], q["q0.99"], color=color, alpha=0.12, lw=0)
    ax.fill_between(x, q["q0.1"], q["q0.9"], color=color, alpha=0.25, lw=0)
    ax.plot(x, q["q0.5"], color=color, marker=marker, ms=4, ls=ls, label=label)


def _level(ax, level=1e-6):
    ax.axhline(level, color="0.4", lw=0.8, ls=":")
    ax.annotate(f"{level:g}", (0.995, level), xycoords=("axes fraction", "data"),
                ha="right", va="bottom", fontsize=7, color="0.3")


def _save(fig, path):
    fig.savefig(path, dpi=110)
    return path


# --------------------------------------------------------------------------
# verify

def _dk_panel(ax, dot, law=None):
    for scaled, color, lab in ((False, "C3", "unscaled q.k"),
                               (True, "C0", "scaled q.k / sqrt(d_k)")):
        d = dot[(dot["scaled"] == scaled) & (dot["target"] == "argmax")].sort_values("d_k")
        quantile_bands(ax, d["d_k"].to_numpy(float), d, "jac_diag_max", color, lab)
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
    col = f"jac_diag_max_below_{lev:g}"
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
            med = _col(d, "ce_grad_target", "q0.5")
            if not scaled and target != "random":
                ax.fill_between(x, _col(d, "ce_grad_target", "q0.1"),
                                _col(d, "ce_grad_target", "q0.9"), color=color, alpha=0.15,
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
    quantile_bands(ax, x, g, "jac_diag_max", "C4", "Gaussian logits N(0, sigma^2)")
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
    ax.set_ylabel("jac_diag_max")
    ax.set_title("Scale sweep (n=64): where the median falls below 1e-6", fontsize=9)
    ax.legend(fontsize=8, loc="lower left")


def _scale_law(ax, law, x):
    """The saturation law's median over the scale sweep (order 1, where it
    states an accuracy: sigma >= 2 sigma_c) and its sigma*."""
    from . import theory
    n = law["n"]
    lo = max(2.0 * float(theory.freezing_scale(n)), float(np.min(x)))
    grid = np.geomspace(lo, float(np.max(x)), 24)
    med = theory.Law.gaussian(n, grid).observable(law["obs"], order=law["order"]).median()
    ax.plot(grid, np.maximum(med, FLOOR), color="k", ls="--", lw=1.0,
            label=f"saturation law, median (order {law['order']})")
    ax.axvline(law["sigma_star"], color="k", lw=0.8, ls="-.")
    ax.annotate(f"law: sigma* = {law['sigma_star']:.4g}", (law["sigma_star"], 1e-24),
                xytext=(4, 0), textcoords="offset points", fontsize=8, ha="left")


def _shift_panel(ax, shifted, literal):
    s = shifted.sort_values("offset")
    pos = np.arange(len(s))
    quantile_bands(ax, pos, s, "jac_diag_max", "C2", "Shifted(n=64, offset, spread=1), float64")
    jd = literal["literal"]["jac_diag_max"]
    ax.axhline(jd, color="C1", lw=1.2, label=f"[100, 101, 99]: {jd:.4f}")
    ax.set_yscale("log")
    ax.set_ylim(1e-8, 1)
    _level(ax)
    ax.set_xticks(pos, [f"{o:g}" for o in s["offset"]], fontsize=8)
    ax.set_xlabel("offset added to every logit")
    ax.set_ylabel("jac_diag_max")
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
    from . import theory
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
        sem = d["entropy_sem"].to_numpy(float)
        a0.errorbar(n, d["entropy_mean"], yerr=4 * sem, color=color, marker="o", ms=4,
                    ls="none", label=f"{lab}: measured mean")
        a0.plot(ngrid, L.rem["entropy"].mean(), color=color, ls="--", lw=1,
                label=f"{lab}: random energy model")
        a1.errorbar(n, d["max_prob_mean"], yerr=4 * d["max_prob_sem"], color=color, marker="o",
                    ms=4, ls="none", label=f"{lab}: mean")
        a1.plot(n, d["max_prob_q0.5"], color=color, marker="s", ms=3, ls="none", alpha=0.6,
                label=f"{lab}: median")
        a1.plot(ngrid, L.rem["max_prob"].mean(), color=color, ls="--", lw=1,
                label=f"{lab}: REM mean")
        with np.errstate(invalid="ignore"):
            a1.plot(ngrid, L.rem["max_prob"].median(), color=color, ls=":", lw=1,
                    label=f"{lab}: PD median")
        if not scaled:
            col = f"jac_diag_max_below_{lev:g}"
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
    a1.set_ylabel("max_prob")
    a2.set_ylabel(f"fraction of rows with jac_diag_max < {lev:g}")
    a0.set_title(f"Entropy vs n (DotProduct d_k={d_k})", fontsize=9)
    a1.set_title("Largest probability vs n", fontsize=9)
    a2.set_title("Saturated rows vs n (unscaled)", fontsize=9)
    for a in (a0, a1, a2):
        a.legend(fontsize=6.5)
    fig.suptitle(f"fastsoftmax verify --context: min({m['samples']:,}, 2^28/n) rows per "
                 "point, measured (4 SE) beside the laws of large n", fontsize=10)
    return _save(fig, os.fspath(path))


# --------------------------------------------------------------------------
# sweeps

def _numeric(values):
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
               for v in values)


def plot_sweep(df, path, grid_keys, observable="jac_diag_max", x=None):
    """Median and quantile bands of ``observable`` against one grid key (the
    first numeric one with several values unless ``x`` is given), one curve
    per combination of the other grid keys.  Log axes where the values allow."""
    col = f"{observable}_q0.5"
    if col not in df.columns:
        raise ValueError(f"no column {col!r}: is {observable!r} an observable?")
    grid_keys = [k for k in grid_keys if k in df.columns]
    if x is None:
        multi = [k for k in grid_keys if df[k].nunique() > 1]
        nums = [k for k in multi if _numeric(df[k].tolist())]
        x = nums[0] if nums else (multi[0] if multi else (grid_keys[0] if grid_keys else None))
    others = [k for k in grid_keys if k != x and df[k].nunique() > 1]
    fig, axes = _figure(6.4, 4.4)
    ax = axes[0, 0]
    numeric = x is not None and _numeric(df[x].tolist())
    groups = df.groupby(others, sort=False) if others else [((), df)]
    for i, (key, d) in enumerate(groups):
        key = key if isinstance(key, tuple) else (key,)
        label = ", ".join(f"{k}={v}" for k, v in zip(others, key)) or observable
        if x is None:
            xs = np.arange(len(d))
        elif numeric:
            d = d.sort_values(x)
            xs = d[x].to_numpy(float)
        else:
            xs = np.arange(len(d))
            ax.set_xticks(xs, [str(v) for v in d[x]], fontsize=8)
        quantile_bands(ax, xs, d, observable, f"C{i % 10}", label)
    if numeric:
        xv = df[x].to_numpy(float)
        if np.all(xv > 0) and xv.max() / xv.min() >= 10:
            ax.set_xscale("log")
    qv = df[[f"{observable}_q{q}" for q in ("0.01", "0.99")]].to_numpy(float)
    if np.all(qv > 0) and qv.max() / max(qv.min(), FLOOR) >= 100:
        ax.set_yscale("log")
    ax.set_xlabel(x or "point")
    ax.set_ylabel(observable)
    ax.set_title(f"{observable}: median, 10-90% and 1-99% of {int(df['samples'].iloc[0]):,} "
                 "samples per point", fontsize=9)
    ax.legend(fontsize=8)
    return _save(fig, os.fspath(path))


# --------------------------------------------------------------------------
# the attention probe's history

HISTORY_PANELS = (
    ("max_logit", "largest attention logit"),
    ("jac_diag_max_log10_q0.5", "median log10 jac_diag_max"),
    ("entropy_mean", "mean attention entropy (nats)"),
    ("jac_diag_max_below_1e-06", "fraction of rows, jac_diag_max < 1e-6"),
)


def _history_lines(history, by):
    """(label, frame with the panel columns against step) per line."""
    import pandas as pd
    if by == "head":
        keys = ["module", "head"] if "head" in history.columns else ["module"]
        for key, d in history.groupby(keys, sort=False):
            key = key if isinstance(key, tuple) else (key,)
            yield " head ".join(str(k) for k in key), d.sort_values("step")
        return
    for module, d in history.groupby("module", sort=False):
        if "head" not in d.columns or d.groupby("step").size().max() == 1:
            yield str(module), d.sort_values("step")
            continue
        # heads merged: the largest logit is the heads' largest; fractions and
        # means over rows are row-weighted means (exact); the median is the
        # median of the heads' medians (the history keeps no merged sketch)
        g = d.groupby("step")
        w = d["rows"] / g["rows"].transform("sum")
        out = {"max_logit": g["max_logit"].max(),
               "jac_diag_max_log10_q0.5": g["jac_diag_max_log10_q0.5"].median()}
        for col in ("entropy_mean", "jac_diag_max_below_1e-06"):
            if col in d.columns:
                out[col] = (w * d[col]).groupby(d["step"]).sum()
        yield str(module), pd.DataFrame(out).reset_index()


def plot_history(history, path=None, by="module", title=None):
    """The attention probe's history against step: four panels per layer.

    Panels: the largest logit (log axis where every value is positive), the
    median log10 jac_diag_max, the mean entropy and the fraction of rows with
    jac_diag_max below 1e-6 (the probe's default thresholds include 1e-6),
    one line per module (``by="module"``: its heads merged; the median is
    the median of the heads' medians) or per (module, head).  The step axis
    has integer ticks.

    Parameters
    ----------
    history : pandas.DataFrame
        ``AttentionProbe.history`` (or any frame of ``snapshot`` rows: a
        ``step`` and a ``module`` column and the panels' columns).
    path : str or os.PathLike, optional
        Where to write the PNG; nothing is written without it.
    by : {"module", "head"}, default "module"
        One line per module or per head.
    title : str, optional
        The figure's title.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (its four axes in panel order).

    Raises
    ------
    ValueError
        ``by`` is neither "module" nor "head", ``history`` is empty or lacks
        ``step``, ``module`` or a panel's column.
    ImportError
        matplotlib is not installed.

    Examples
    --------
    >>> import pandas as pd
    >>> from fastsoftmax.plot import plot_history
    >>> h = pd.DataFrame({"step": [0, 10], "module": ["h.0.attn"] * 2, "heads": [4, 4],
    ...                   "max_logit": [3.0, 40.0], "jac_diag_max_log10_q0.5": [-1.2, -6.5],
    ...                   "entropy_mean": [2.9, 0.4], "jac_diag_max_below_1e-06": [0.02, 0.6]})
    >>> fig = plot_history(h)
    >>> fig.axes[0].get_lines()[0].get_ydata().tolist()
    [3.0, 40.0]
    """
    from matplotlib.ticker import MaxNLocator
    if by not in ("module", "head"):
        raise ValueError(f"by must be 'module' or 'head', got {by!r}")
    if len(history) == 0:
        raise ValueError("history is empty: nothing was probed (snapshot after a probed step)")
    need = ["step", "module"] + [c for c, _ in HISTORY_PANELS]
    missing = [c for c in need if c not in history.columns]
    if missing:
        raise ValueError(f"history lacks the column(s) {missing}: pass AttentionProbe.history")
    fig, axes = _figure(10, 6.6, 2, 2)
    axes = axes.ravel()
    positive = True
    for i, (label, d) in enumerate(_history_lines(history, by)):
        x = d["step"].to_numpy()
        for ax, (col, _) in zip(axes, HISTORY_PANELS):
            y = d[col].to_numpy(float)
            y = np.where(np.isfinite(y), y, np.nan)
            if col == "max_logit":
                positive &= bool(np.all(y[np.isfinite(y)] > 0))
            ax.plot(x, y, color=f"C{i % 10}", marker=".", label=label)
    for ax, (col, name) in zip(axes, HISTORY_PANELS):
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    if positive:
        axes[0].set_yscale("log")
    axes[0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    if path is not None:
        _save(fig, os.fspath(path))
    return fig
