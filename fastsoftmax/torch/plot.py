"""The attention probe's history against step (PNG, matplotlib's Figure on
an Agg canvas; matplotlib is imported only when a plot is made)."""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from .._util import figure as _figure
from .._util import save_figure as _save
from ..registries import ENTROPY, JAC_DIAG_MAX

__all__ = ["plot_history", "HISTORY_PANELS"]


_JAC = JAC_DIAG_MAX.name
HISTORY_PANELS = (
    ("max_logit", "largest attention logit"),
    (f"{_JAC}_log10_q0.5", f"median log10 {_JAC}"),
    (f"{ENTROPY.name}_mean", "mean attention entropy (nats)"),
    (f"{_JAC}_below_1e-06", f"fraction of rows, {_JAC} < 1e-6"),
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
    >>> from fastsoftmax.torch.plot import plot_history
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
