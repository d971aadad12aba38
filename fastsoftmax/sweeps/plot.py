"""The sweep's figure: median and quantile bands of an observable against a
grid key (PNG, matplotlib's Figure on an Agg canvas; matplotlib is imported
only when a plot is made).

:func:`quantile_bands` draws one curve of any table with the sweep's
quantile columns (``<obs>_q0.01`` ... ``<obs>_q0.99``): ``verify``'s panels
use it too.
"""
from __future__ import annotations

import os

import numpy as np

from .._config import QUANTILES
from .._util import figure as _figure
from .._util import save_figure as _save
from ..registries import JAC_DIAG_MAX

__all__ = ["plot_sweep", "quantile_bands", "QCOLS", "FLOOR"]

QCOLS = tuple(f"q{q:g}" for q in QUANTILES)
FLOOR = 1e-300          # quantiles that underflow float64 are drawn at the floor


def _col(df, obs, q):
    return np.maximum(df[f"{obs}_{q}"].to_numpy(dtype=float), FLOOR)


def quantile_bands(ax, x, df, obs, color, label, marker="o", ls="-"):
    """Median line with 10-90% and 1-99% bands of ``obs`` from a sweep table."""
    q = {c: _col(df, obs, c) for c in QCOLS}
    ax.fill_between(x, q["q0.01"], q["q0.99"], color=color, alpha=0.12, lw=0)
    ax.fill_between(x, q["q0.1"], q["q0.9"], color=color, alpha=0.25, lw=0)
    ax.plot(x, q["q0.5"], color=color, marker=marker, ms=4, ls=ls, label=label)


def _numeric(values):
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
               for v in values)


def plot_sweep(df, path, grid_keys, observable=JAC_DIAG_MAX.name, x=None):
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
