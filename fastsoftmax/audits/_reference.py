r"""Exact values of a case and the errors of an implementation's output.

The exact values are those of the logits as the implementation received
them (rounded to its dtype, read back as float64), computed through
fastsoftmax's log-domain float64 path: :func:`fastsoftmax.log_softmax`
(:math:`\log p_j = (x_j - m) - \operatorname{log1p}(a)`, exact at the max)
and :func:`fastsoftmax.observables` (``ce_loss`` = :math:`-\log p_y`,
``ce_grad_target`` = :math:`1 - p_y` never formed as a difference,
``ce_grad_norm``).  That reference errs by a few float64 units, far below
the unit of a float32, bfloat16 or float16 implementation.  For a float64
implementation the errors of a subsample of rows are computed in mpmath at
113 bits instead (those rows decide its error figures); rows longer than
the mpmath budget keep the float64 reference, and the report says which
reference each figure used.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import api, registries
from ._kinds import CE_GRAD, CE_LOSS, LOG_SOFTMAX, SOFTMAX
from ._units import softmax_condition, target_condition

__all__ = ["Exact", "exact_values", "add_targets", "element_errors", "mpmath_errors", "MP_ELEMENTS",
           "MP_PREC"]

# mpmath's share of a float64 audit: rows up to MP_MAX_N long, about
# MP_ELEMENTS elements per case (at least one row)
MP_ELEMENTS = 512
MP_MAX_N = 1024
MP_PREC = 113


@dataclass
class Exact:
    """The exact values of a (judged) case in float64.

    ``x`` the logits as received, ``d`` = x - m, ``lp`` the
    log-probabilities, ``p`` the probabilities, ``c`` the bound's
    coefficients of every element; for the CE kinds ``labels``,
    ``loss`` (-log p_y), ``target`` (1 - p_y), ``norm`` (||p - e_y||) and
    ``c_target`` (the coefficient of 1 - p_y)."""
    x: np.ndarray
    d: np.ndarray
    lp: np.ndarray
    p: np.ndarray
    c: np.ndarray
    labels: Any = None
    loss: Any = None
    target: Any = None
    norm: Any = None
    c_target: Any = None


def exact_values(x: np.ndarray) -> Exact:
    """The exact values of rows ``x`` (float64, each with a finite logit)."""
    lp = np.asarray(api.log_softmax(x, axis=-1), dtype=np.float64)
    m = np.max(x, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        d = x - m
    p = np.exp(lp)
    return Exact(x=x, d=d, lp=lp, p=p, c=softmax_condition(d, p))


def add_targets(ex: Exact, labels: np.ndarray) -> None:
    """Add the cross-entropy quantities of ``labels`` (one per row) to ``ex``."""
    obs = api.observables(ex.x, target=labels)
    ex.labels = labels
    ex.loss = obs[registries.CE_LOSS.name]
    ex.target = obs[registries.CE_GRAD_TARGET.name]
    ex.norm = obs[registries.CE_GRAD_NORM.name]
    ex.c_target = target_condition(ex.d, ex.lp, labels)


def _abs_err(out: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|out - exact|: 0 where they are equal (infinities included), inf
    where the output is NaN."""
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.where(out == exact, 0.0, np.abs(out - exact))
    return np.where(np.isnan(err), np.inf, err)


def element_errors(kind: str, out: np.ndarray, ex: Exact) -> dict[str, np.ndarray]:
    """Exact values, absolute errors and coefficients of every judged
    element of ``out`` against the float64 reference.

    Returns a dict with ``exact``, ``err``, ``c`` (arrays of the output's
    shape) and, for ``ce_grad``, ``t_exact``, ``t_err``, ``t_c`` (the target
    component 1 - p_y per row: the output's -g_y) and ``norm_exact``,
    ``norm_err`` (per row)."""
    rows = np.arange(ex.x.shape[0])
    if kind == SOFTMAX:
        return dict(exact=ex.p, err=_abs_err(out, ex.p), c=ex.c)
    if kind == LOG_SOFTMAX:
        return dict(exact=ex.lp, err=_abs_err(out, ex.lp), c=ex.c)
    if kind == CE_LOSS:
        return dict(exact=ex.loss, err=_abs_err(out, ex.loss), c=ex.c[rows, ex.labels])
    g = ex.p.copy()
    g[rows, ex.labels] = -ex.target
    c = ex.c.copy()
    c[rows, ex.labels] = ex.c_target
    t_out = -out[rows, ex.labels]
    with np.errstate(over="ignore", invalid="ignore"):
        norm_out = np.sqrt(np.sum(out * out, axis=-1))
    return dict(exact=g, err=_abs_err(out, g), c=c, t_exact=ex.target,
                t_err=_abs_err(t_out, ex.target), t_c=ex.c_target, norm_exact=ex.norm,
                norm_err=_abs_err(norm_out, ex.norm))


def mp_rows(n: int, rows: int) -> int:
    """How many rows of length n mpmath recomputes (0: rows too long)."""
    if n > MP_MAX_N:
        return 0
    return min(rows, max(1, MP_ELEMENTS // n))


def mpmath_errors(kind: str, out: np.ndarray, ex: Exact, nrows: int) -> dict[str, np.ndarray]:
    """:func:`element_errors` for the first ``nrows`` rows with every exact
    value and every error computed in mpmath at ``MP_PREC`` bits."""
    import mpmath
    with mpmath.workprec(MP_PREC):
        return _mp(kind, out, ex, nrows, mpmath)


def _mp(kind, out, ex, nrows, ctx):
    mpf, exp, log, fsum, sqrt = ctx.mpf, ctx.exp, ctx.log, ctx.fsum, ctx.sqrt
    n = ex.x.shape[1]
    shape = (nrows,) if kind == CE_LOSS else (nrows, n)
    exact = np.zeros(shape)
    err = np.zeros(shape)
    t_exact, t_err, norm_exact, norm_err = (np.zeros(nrows) for _ in range(4))
    for r in range(nrows):
        xs = ex.x[r]
        m = mpf(float(np.max(xs)))
        e = [exp(mpf(float(v)) - m) if np.isfinite(v) else mpf(0) for v in xs]
        s = fsum(e)
        logs = log(s)

        def lp(j):
            return mpf(float(xs[j])) - m - logs

        def put(dst_e, dst_err, idx, value, o):
            dst_e[idx] = float(value)
            if np.isfinite(o):
                dst_err[idx] = float(abs(mpf(float(o)) - value))
            else:
                dst_err[idx] = 0.0 if float(value) == o else np.inf     # NaN: inf

        if kind == SOFTMAX:
            for j in range(n):
                put(exact, err, (r, j), e[j] / s, out[r, j])
        elif kind == LOG_SOFTMAX:
            for j in range(n):
                if np.isfinite(xs[j]):
                    put(exact, err, (r, j), lp(j), out[r, j])
                else:
                    exact[r, j] = -np.inf
                    err[r, j] = 0.0 if out[r, j] == -np.inf else np.inf
        elif kind == CE_LOSS:
            y = int(ex.labels[r])
            put(exact, err, r, -lp(y), out[r])
        else:
            y = int(ex.labels[r])
            g = [e[j] / s for j in range(n)]
            rest = fsum(e[j] for j in range(n) if j != y) / s      # 1 - p_y
            g[y] = -rest
            for j in range(n):
                put(exact, err, (r, j), g[j], out[r, j])
            put(t_exact, t_err, r, rest, -out[r, y])
            nrm = sqrt(fsum(v * v for v in g))
            o = float(np.sqrt(np.sum(out[r] * out[r])))
            put(norm_exact, norm_err, r, nrm, o)
    res = dict(exact=exact, err=err, c=ex.c[:nrows] if kind != CE_LOSS
               else ex.c[np.arange(nrows), ex.labels[:nrows]])
    if kind == CE_GRAD:
        rows = np.arange(nrows)
        c = ex.c[:nrows].copy()
        c[rows, ex.labels[:nrows]] = ex.c_target[:nrows]
        res.update(c=c, t_exact=t_exact, t_err=t_err, t_c=ex.c_target[:nrows],
                   norm_exact=norm_exact, norm_err=norm_err)
    return res
