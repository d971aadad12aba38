"""The probe's figures for loggers: the short view of a frame, its key scalars,
and :func:`log_probe` for any SummaryWriter-like object.

The key scalars, per module (layer): the largest logit ``max_logit``, the
median of log10 jac_diag_max ``jac_diag_max_log10_q0.5``, the mean entropy
``entropy_mean`` and the fraction of rows with jac_diag_max below 1e-6
``jac_diag_max_below_1e-06``, named ``<prefix>/<module>/<column>``.
"""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ..registries import ENTROPY, JAC_DIAG_MAX

__all__ = ["KEY_COLUMNS", "SCALAR_COLUMNS", "key_frame", "probe_scalars", "log_probe"]

_LEVEL_PREFIX = f"{JAC_DIAG_MAX.name}_below_"
LEVEL_COLUMN = f"{_LEVEL_PREFIX}1e-06"
#: The columns that become logged scalars.
SCALAR_COLUMNS = ("max_logit", f"{JAC_DIAG_MAX.name}_log10_q0.5", f"{ENTROPY.name}_mean",
                  LEVEL_COLUMN)
#: The columns of the short view (those a frame has, in this order).
KEY_COLUMNS = ("step", "module", "head", "heads", "calls", "rows") + SCALAR_COLUMNS
_HIST_QUANTILES = np.linspace(0.005, 0.995, 100)


def _key_columns(columns) -> list[str]:
    cols = [c for c in KEY_COLUMNS if c in columns]
    if LEVEL_COLUMN not in columns:      # the probe's thresholds leave out 1e-6
        cols += [c for c in columns if c.startswith(_LEVEL_PREFIX)]
    return cols


def key_frame(frame: Any) -> Any:
    """The short view of a probe frame or history: its key columns.

    A probe frame has about 200 columns (every statistic of every
    observable); the short view keeps those a training log needs: the step,
    the module and head, the counts, the largest logit, the median log10
    jac_diag_max, the mean entropy and the fraction of rows with
    jac_diag_max below 1e-6.

    Parameters
    ----------
    frame : pandas.DataFrame
        :meth:`AttentionProbe.to_frame` (by head or by module),
        :meth:`AttentionProbe.snapshot` or :attr:`AttentionProbe.history`.

    Returns
    -------
    pandas.DataFrame
        The columns of :data:`KEY_COLUMNS` that ``frame`` has, in that order
        (a copy); without a ``jac_diag_max_below_1e-06`` column (a probe whose
        thresholds leave out 1e-6), every ``jac_diag_max_below_<t>`` column.

    Examples
    --------
    >>> import torch
    >>> from fastsoftmax.torch import AttentionProbe
    >>> from fastsoftmax.torch import key_frame
    >>> mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> x = torch.randn(2, 5, 8)
    >>> with AttentionProbe(mha) as probe:
    ...     _ = mha(x, x, x, need_weights=False)
    >>> list(key_frame(probe.to_frame()).columns)        # doctest: +NORMALIZE_WHITESPACE
    ['module', 'head', 'calls', 'rows', 'max_logit', 'jac_diag_max_log10_q0.5',
     'entropy_mean', 'jac_diag_max_below_1e-06']
    >>> len(probe.to_frame().columns)
    205
    """
    return frame[_key_columns(frame.columns)].copy()


def probe_scalars(frame: Any, prefix: str = "attention") -> dict[str, float]:
    """The key scalars of a probe frame, as ``{tag: value}``.

    One entry per row of the frame (a module, or a module's head) and per
    column of :data:`SCALAR_COLUMNS`, tagged ``<prefix>/<module>/<column>``
    (``<prefix>/<module>/<head>/<column>`` for a frame by head): the values
    :func:`log_probe` and the training callbacks write.

    Parameters
    ----------
    frame : pandas.DataFrame
        A frame of :meth:`AttentionProbe.to_frame`: by module (tags
        ``<prefix>/<module>/<column>``) or by head (tags
        ``<prefix>/<module>/<head>/<column>``).
    prefix : str, default "attention"
        The first part of every tag.

    Returns
    -------
    dict of str to float
        One entry per row of ``frame`` and column of :data:`SCALAR_COLUMNS`
        (or, without ``jac_diag_max_below_1e-06``, every
        ``jac_diag_max_below_<t>`` column).

    Examples
    --------
    >>> import pandas as pd
    >>> from fastsoftmax.torch import probe_scalars
    >>> f = pd.DataFrame({"module": ["h.0.attn"], "heads": [4], "max_logit": [12.5],
    ...                   "jac_diag_max_log10_q0.5": [-1.2], "entropy_mean": [2.0],
    ...                   "jac_diag_max_below_1e-06": [0.016]})
    >>> probe_scalars(f)["attention/h.0.attn/max_logit"]
    12.5
    """
    cols = [c for c in _key_columns(frame.columns)
            if c in SCALAR_COLUMNS or c.startswith(_LEVEL_PREFIX)]
    by_head = "head" in frame.columns
    out: dict[str, float] = {}
    for rec in frame.to_dict("records"):
        name = f"{rec['module']}/{int(rec['head'])}" if by_head else str(rec["module"])
        for c in cols:
            out[f"{prefix}/{name}/{c}"] = float(rec[c])
    return out


def _module_summaries(probe: Any) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for (module, _), s in probe.summaries.items():
        merged[module] = s if module not in merged else merged[module].merge(s)
    return merged


def log_probe(probe: Any, writer: Any, step: int, *, prefix: str = "attention",
              histograms: bool = False) -> dict[str, float]:
    """Write a probe's current figures to a SummaryWriter-like object.

    One ``writer.add_scalar(tag, value, step)`` per module and key scalar
    (:func:`probe_scalars` of ``probe.to_frame(by="module")``); with
    ``histograms``, one ``writer.add_histogram(tag, values, step)`` per
    module of log10 jac_diag_max, drawn as the 100 quantiles at 0.5%, 1.5%,
    ..., 99.5% of the module's merged Summary (equal-mass points: their
    histogram follows the distribution to the sketch's accuracy; rows at
    jac_diag_max = 0, log10 -inf, are left out).

    The figures are those since the last :meth:`AttentionProbe.snapshot`:
    call it before ``snapshot``.

    Parameters
    ----------
    probe : AttentionProbe
        The probe.
    writer : object
        Anything with ``add_scalar(tag, value, step)`` (and
        ``add_histogram(tag, values, step)`` for ``histograms``):
        ``torch.utils.tensorboard.SummaryWriter``, tensorboardX, ...
    step : int
        The global step of the scalars.
    prefix : str, default "attention"
        The first part of every tag.
    histograms : bool, default False
        Also write histograms of log10 jac_diag_max (tag
        ``<prefix>/<module>/jac_diag_max_log10``).

    Returns
    -------
    dict of str to float
        The scalars written (empty when nothing was probed).

    Raises
    ------
    TypeError
        ``writer`` lacks ``add_scalar`` (or ``add_histogram`` with
        ``histograms``).

    Examples
    --------
    >>> import torch
    >>> from fastsoftmax.torch import AttentionProbe
    >>> from fastsoftmax.torch import log_probe
    >>> class Writer:
    ...     def __init__(self):
    ...         self.calls = []
    ...     def add_scalar(self, tag, value, step):
    ...         self.calls.append((tag, step))
    >>> mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> x = torch.randn(2, 5, 8)
    >>> with AttentionProbe(mha) as probe:
    ...     _ = mha(x, x, x, need_weights=False)
    >>> w = Writer()
    >>> _ = log_probe(probe, w, step=3)
    >>> w.calls[0]
    ('attention/MultiheadAttention/max_logit', 3)
    """
    if not callable(getattr(writer, "add_scalar", None)):
        raise TypeError(f"writer must have an add_scalar(tag, value, step) method, got "
                        f"{type(writer).__name__}")
    if histograms and not callable(getattr(writer, "add_histogram", None)):
        raise TypeError(f"histograms=True needs writer.add_histogram(tag, values, step); "
                        f"{type(writer).__name__} has none")
    if not isinstance(step, numbers.Integral) or isinstance(step, bool):
        raise TypeError(f"step must be an int, got {step!r}")
    scalars = probe_scalars(probe.to_frame(by="module"), prefix)
    for tag, value in scalars.items():
        writer.add_scalar(tag, value, int(step))
    if histograms:
        for module, s in _module_summaries(probe).items():
            v = np.asarray(s[JAC_DIAG_MAX.name].log10_quantile(_HIST_QUANTILES), float)
            v = v[np.isfinite(v)]
            if v.size:
                writer.add_histogram(f"{prefix}/{module}/{JAC_DIAG_MAX.name}_log10", v, int(step))
    return scalars
