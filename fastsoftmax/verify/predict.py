"""The laws' predictions for ``verify``'s experiments (:mod:`fastsoftmax.theory`).

Everything here depends only on the experiments' constants (n, the d_k and
scale grids, the level), never on the samples or the seed, so each set is
computed once per process and cached.  Order 1 of the saturation law
throughout, where it is affordable: the fractions below the level at the
d_k of the sweep inside the law's stated domain, sigma* and d_k* (about
1 s, one chi^2-mixture solve), the context-length axis; the plots' dense
curves use order 1 for Gaussian logits and show the order they use.
"""
from __future__ import annotations

import functools
import math
import time
from typing import Any

import numpy as np

from ..registries import ENTROPY, JAC_DIAG_MAX, MAX_PROB
from .constants import CONTEXT_D_K, CONTEXT_N, D_K, LEVEL, N

ORDER = 1
OBS = JAC_DIAG_MAX.name


def _f(x):
    return float(np.asarray(x))


@functools.lru_cache(maxsize=None)
def claim_predictions() -> dict[str, Any]:
    """Claims 1 and 7: the d_k sweep's fraction below LEVEL, sigma*, d_k*."""
    from .. import theory
    t0 = time.perf_counter()
    dk = np.array(D_K, dtype=float)
    unscaled = theory.Law.dot_product(N, dk, False).observable(OBS, order=ORDER)
    lo, hi = unscaled.bounds(LEVEL)
    rel, ab = unscaled.stated_accuracy()
    slo, shi = theory.Law.dot_product(N, dk, True)[OBS].bounds(LEVEL)
    sigma_star = _f(theory.critical_scale(LEVEL, N, OBS, ORDER))
    dk_star = _f(theory.critical_d_k(LEVEL, N, OBS, order=ORDER))
    dk_point = int(round(dk_star))
    live = np.isfinite(rel)
    # one chi^2-mixture evaluation: the d_k in the domain and the point d_k*
    frac = theory.Law.dot_product(N, np.r_[dk[live], dk_point], False).observable(
        OBS, order=ORDER).cdf(LEVEL)
    pred = np.full(dk.shape, math.nan)
    pred[live] = frac[:-1]
    g_rel, _ = theory.Law.gaussian(N, sigma_star).observable(OBS, order=ORDER).stated_accuracy()
    d_rel, _ = theory.Law.dot_product(N, dk_point, False).observable(
        OBS, order=ORDER).stated_accuracy()
    return dict(
        order=ORDER, obs=OBS, level=LEVEL, n=N,
        dk={int(d): dict(predicted=_f(pred[i]), rel=_f(rel[i]), abs=_f(ab[i]), lo=_f(lo[i]),
                         hi=_f(hi[i])) for i, d in enumerate(D_K)},
        dk_scaled={int(d): dict(lo=_f(slo[i]), hi=_f(shi[i])) for i, d in enumerate(D_K)},
        sigma_star=sigma_star, dk_star=dk_star, dk_point=dk_point,
        sigma_star_rel=_f(theory.stated_accuracy("critical_scale", N, sigma_star, ORDER)[0]),
        dk_star_rel=_f(theory.stated_accuracy("critical_d_k", N, sigma_star, ORDER)[0]),
        at_sigma_star=dict(predicted=0.5, rel=_f(g_rel)),
        at_dk_star=dict(predicted=_f(frac[-1]), rel=_f(d_rel)),
        seconds=time.perf_counter() - t0)


def _phase(n, scale):
    from .. import theory
    sc = float(theory.freezing_scale(n))
    if scale <= 0.5 * sc:
        return "diffuse"
    if scale >= 2.0 * sc:
        return "frozen"
    return "crossover"


@functools.lru_cache(maxsize=None)
def context_predictions() -> dict[str, Any]:
    """The context-length axis: REM entropy and max_prob, the saturation law,
    E[max], per (scaled, n), each with the accuracy the law states."""
    from .. import theory
    t0 = time.perf_counter()
    ns = np.array(CONTEXT_N, dtype=float)
    out: dict[str, Any] = {}
    for scaled in (False, True):
        L = theory.Law.dot_product(ns, CONTEXT_D_K, scaled)
        typ = L.typical_scale()
        entl, mpl = L.rem[ENTROPY.name], L.rem[MAX_PROB.name]
        ent, mp = entl.mean(), mpl.mean()
        with np.errstate(invalid="ignore"):
            med = mpl.median()
        emax = L.rem.expected_max()
        lo, hi = L[OBS].bounds(LEVEL)
        rel_f, ab_f = L.observable(OBS, order=ORDER).stated_accuracy()
        live = np.isfinite(rel_f)
        frac = np.full(ns.shape, math.nan)
        if live.any():
            frac[live] = theory.Law.dot_product(ns[live], CONTEXT_D_K, scaled).observable(
                OBS, order=ORDER).cdf(LEVEL)
        rel_e, ab_e = entl.stated_accuracy()
        rel_m, ab_m = mpl.stated_accuracy()
        sc = theory.freezing_scale(ns)
        for i, n in enumerate(CONTEXT_N):
            out[f"{'scaled' if scaled else 'unscaled'}:{n}"] = dict(
                scaled=scaled, n=n, scale=_f(typ[i]), sigma_c=_f(sc[i]),
                m=_f(sc[i] / typ[i]), phase=_phase(n, _f(typ[i])),
                entropy=dict(predicted=_f(ent[i]), rel=_f(rel_e[i]), abs=_f(ab_e[i])),
                max_prob_mean=dict(predicted=_f(mp[i]), rel=_f(rel_m[i]), abs=_f(ab_m[i])),
                max_prob_median=_f(med[i]), expected_max=_f(emax[i]),
                expected_max_leading=_f(typ[i] * sc[i]),
                below=dict(predicted=_f(frac[i]), rel=_f(rel_f[i]), abs=_f(ab_f[i]),
                           lo=_f(lo[i]), hi=_f(hi[i])))
    out["seconds"] = time.perf_counter() - t0
    return out


@functools.lru_cache(maxsize=None)
def planned_rows() -> dict[str, int]:
    """The rows each law point needs for its claim to resolve, planned from the law.

    For each point the law's claims judge (the unscaled d_k where the
    saturation law states an accuracy, its sigma* and d_k*): a measurement
    equal to the prediction must lie, ``Z`` standard errors each side
    (Wilson's), inside the band the claim states (the stated accuracy and
    the exact bounds) with ``Z`` standard errors at most ``MARGIN`` of the
    distance to the band's nearer edge: the criteria's own
    :func:`~fastsoftmax.verify.criteria.rows_to_resolve`.  Keys ``"d_k=64"``,
    ..., ``"sigma*"``, ``"d_k*"``.
    """
    from .criteria import LawPoint, est_fraction, judge_law, judge_prediction
    pc = claim_predictions()
    out: dict[str, int] = {}

    def need(checks):
        return max(c.rows_needed or 0 for c in checks)

    for d, q in pc["dk"].items():
        if not math.isfinite(q["rel"]):
            continue
        p = q["predicted"]
        out[f"d_k={d}"] = need(judge_law([LawPoint(f"d_k={d}", est_fraction(p, 1), p, q["rel"],
                                                   q["abs"], q["lo"], q["hi"])]))
    for key, name in (("at_sigma_star", "sigma*"), ("at_dk_star", "d_k*")):
        p, rel = pc[key]["predicted"], pc[key]["rel"]
        out[name] = need([judge_prediction(est_fraction(p, 1), p, rel)])
    return out
