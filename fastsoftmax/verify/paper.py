r"""This paper's claims: one :class:`~fastsoftmax.verify.ClaimSpec` each, in :data:`CLAIMS`.

Each entry says what the claim states, which experiments and predictions
it needs, how it picks its record from the run (a small frozen dataclass
below), which judge of :mod:`.judges` decides it, and how its evidence
reads.  A new claim is one more entry (and, if it needs one, one more
record and judge).  The laws' predictions (:mod:`.predict`, plain dicts:
they go into the JSON as they are) are read through
:class:`DkPredictions` and :class:`ContextPrediction`.

>>> from fastsoftmax.verify import CLAIMS
>>> [s.key for s in CLAIMS][:3]
['paper', 'fix', 'literal']
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from .._kernels.row import OBS_NAMES
from ..registries import CE_GRAD_NORM, CE_GRAD_TARGET, ENTROPY, JAC_DIAG_MAX, MAX_PROB
from .constants import (CONTEXT_D_K, CONTEXT_N, D_K, EQUIV_DECADES, EQUIV_REL, LEVEL, N,
                        OFFSETS, Z)
from .criteria import Check, LawPoint, crossing, drop, judge_law
from ._judges import (judge_ce_right, judge_ce_wrong, judge_critical, judge_flat, judge_literal,
                     judge_saturation, judge_scale, judge_shift)
from .registry import ClaimSpec, Evidence
from .stats import Est, est_fraction, est_log10_mean, est_mean, est_quantile, measures

if TYPE_CHECKING:
    from ..summary import Stat, Summary

__all__ = ["CLAIMS", "claim_number", "DkPredictions", "ContextPrediction"]

_DK0, _DK1 = D_K[0], D_K[-1]
_Z = f"{Z:g}"


# --------------------------------------------------------------------------
# the laws' predictions, typed

@dataclasses.dataclass(frozen=True)
class DkPredictions:
    """The saturation law's predictions for the d_k sweep and sigma*, d_k*.

    A typed view of :func:`fastsoftmax.verify.predict.claim_predictions`
    (whose plain dict is what ``VerifyResult.predictions["claims"]`` and the
    JSON hold).

    Parameters
    ----------
    order : int
        The law's order.
    dk : dict of int to dict
        Per d_k of the sweep: ``predicted``, ``rel``, ``abs`` (its stated
        accuracy, NaN outside its domain), ``lo``, ``hi`` (exact bounds).
    sigma_star, dk_star : float
        The predicted critical scale and d_k (median jac_diag_max at the level).
    dk_point : int
        d_k* rounded: the point simulated.
    sigma_star_rel, dk_star_rel : float
        Their stated relative accuracies.
    at_sigma_star, at_dk_star : tuple of float
        (predicted fraction below the level, its stated relative accuracy) at
        the two simulated points.
    """
    order: int
    dk: Mapping[int, Mapping[str, float]]
    sigma_star: float
    dk_star: float
    dk_point: int
    sigma_star_rel: float
    dk_star_rel: float
    at_sigma_star: tuple[float, float]
    at_dk_star: tuple[float, float]

    @classmethod
    def of(cls, pc: Mapping[str, Any]) -> DkPredictions:
        """The view of a :func:`~fastsoftmax.verify.predict.claim_predictions` dict.

        Parameters
        ----------
        pc : mapping
            The dict.

        Returns
        -------
        DkPredictions
            Its fields.
        """
        return cls(pc["order"], pc["dk"], pc["sigma_star"], pc["dk_star"], pc["dk_point"],
                   pc["sigma_star_rel"], pc["dk_star_rel"],
                   (pc["at_sigma_star"]["predicted"], pc["at_sigma_star"]["rel"]),
                   (pc["at_dk_star"]["predicted"], pc["at_dk_star"]["rel"]))

    def point(self, d_k: int, measured: Est) -> LawPoint:
        """The law's fraction at a d_k of the sweep, beside its measurement.

        Parameters
        ----------
        d_k : int
            A d_k of ``D_K``.
        measured : Est
            The measured fraction below the level there.

        Returns
        -------
        LawPoint
            With the law's stated accuracy and exact bounds.
        """
        q = self.dk[d_k]
        return LawPoint(f"d_k={d_k}", measured, q["predicted"], q["rel"], q["abs"], q["lo"],
                        q["hi"])


@dataclasses.dataclass(frozen=True)
class ContextPrediction:
    """The laws of large n at one point of the context-length axis.

    A typed view of one entry of
    :func:`fastsoftmax.verify.predict.context_predictions`.

    Parameters
    ----------
    scaled : bool
        Scaled or unscaled dot products.
    n : int
        The context length.
    scale : float
        The typical logit scale.
    m : float
        sigma_c / scale.
    phase : str
        ``diffuse``, ``crossover`` or ``frozen``.
    entropy, max_prob_mean, below : dict
        ``predicted``, ``rel``, ``abs`` (and for ``below``, ``lo``, ``hi``).
    max_prob_median, expected_max, expected_max_leading : float
        Shown only.
    """
    scaled: bool
    n: int
    scale: float
    m: float
    phase: str
    entropy: Mapping[str, float]
    max_prob_mean: Mapping[str, float]
    below: Mapping[str, float]
    max_prob_median: float
    expected_max: float
    expected_max_leading: float

    @classmethod
    def at(cls, pcx: Mapping[str, Any], scaled: bool, n: int) -> ContextPrediction:
        """The entry for (scaled, n) of a ``context_predictions()`` dict.

        Parameters
        ----------
        pcx : mapping
            The dict.
        scaled : bool
            Scaled or unscaled.
        n : int
            The context length.

        Returns
        -------
        ContextPrediction
            Its fields.
        """
        q = pcx[f"{'scaled' if scaled else 'unscaled'}:{n}"]
        return cls(**{f.name: q[f.name] for f in dataclasses.fields(cls)})

    def law_point(self, what: str, measured: Est, key: str) -> LawPoint:
        """The law's ``entropy``, ``max_prob_mean`` or ``below`` beside a measurement.

        Parameters
        ----------
        what : str
            The point, for the checks' text.
        measured : Est
            The measurement.
        key : str
            Which prediction: a field of this record (``entropy``,
            ``max_prob_mean`` or ``below``).

        Returns
        -------
        LawPoint
            With the stated accuracy (and for ``below`` the exact bounds).
        """
        q = getattr(self, key)
        return LawPoint(what, measured, q["predicted"], q["rel"], q["abs"], q.get("lo"),
                        q.get("hi"))


def _dk_predictions(ev: Evidence) -> DkPredictions | None:
    pc = ev.predictions.get("claims")
    return DkPredictions.of(pc) if pc else None


# --------------------------------------------------------------------------
# how the numbers read

def _e(est: Est) -> str:
    return f"{est.value:.3g} ± {est.se:.1g}"


def _f(est: Est) -> str:
    return f"{est.value:.4f} ± {est.se:.1g}"


def _p(est: Est) -> str:
    return f"{est.value:.3f} ± {est.se:.1g}" if est.value else "0"


def _p4(est: Est) -> str:
    return f"{est.value:.4f} ± {est.se:.1g}"


def _pct(rel: float) -> str:
    return f"{100 * rel:.3g}%"


def _sci(x: float) -> str:
    return f"{x:.0e}".replace("e+0", "e").replace("e+", "e")


def _below(stat: Stat) -> Est:
    return est_fraction(stat.fraction_below(LEVEL), stat.count)


def claim_number(key: str) -> int:
    """The number of a claim in the report: its place in :data:`CLAIMS`, from 1.

    Evidence texts that point to another claim ("law 0.5905: claim 8") take
    the number from here, so that a new entry renumbers them too.

    Parameters
    ----------
    key : str
        The claim's key.

    Returns
    -------
    int
        Its number.

    Raises
    ------
    KeyError
        No claim has this key.

    Examples
    --------
    >>> from fastsoftmax.verify import claim_number
    >>> claim_number("paper")
    1
    """
    for i, spec in enumerate(CLAIMS, 1):
        if spec.key == key:
            return i
    raise KeyError(f"no claim {key!r}")


# --------------------------------------------------------------------------
# the records, the picks and the evidence of each claim

def _dotproduct(ev: Evidence, d_k: int, scaled: bool, target: str = "argmax") -> Summary:
    return ev.point("dotproduct", d_k=d_k, scaled=scaled, target=target)


def _sweep_measures(ev: Evidence, scaled: bool, obs: str = JAC_DIAG_MAX.name,
                    target: str = "argmax") -> dict[int, dict[str, Est]]:
    return {d: measures(_dotproduct(ev, d, scaled, target)[obs]) for d in D_K}


@dataclasses.dataclass(frozen=True)
class Sweep:
    """:func:`measures` of one observable per d_k of a DotProduct sweep (claims
    ``paper``, ``fix``, ``ce_right``), and the law's fraction at the largest d_k."""
    by_dk: dict[int, dict[str, Est]]
    law_last: float | None = None

    @property
    def first(self) -> dict[str, Est]:
        return self.by_dk[_DK0]

    @property
    def last(self) -> dict[str, Est]:
        return self.by_dk[_DK1]


def _pick_paper(ev: Evidence) -> Sweep:
    pc = _dk_predictions(ev)
    return Sweep(_sweep_measures(ev, False), pc.dk[_DK1]["predicted"] if pc else None)


def _evidence_paper(r: Sweep) -> str:
    small, large = r.first, r.last
    return (f"unscaled jac_diag_max, d_k={_DK0} -> {_DK1}: median {_e(small['median'])} -> "
            f"{_e(large['median'])}; mean {_e(small['mean'])} -> {_e(large['mean'])}; "
            f"log10-mean {_f(small['log10_mean'])} -> {_f(large['log10_mean'])}; fraction < "
            f"{LEVEL:g} {_p(small['below'])} -> {_p(large['below'])}"
            + (f" (law {r.law_last:.4f}: claim {claim_number('law_dk')})"
               if r.law_last is not None else ""))


def _evidence_fix(r: Sweep) -> str:
    meds = [r.by_dk[d]["median"].value for d in D_K]
    lms = [r.by_dk[d]["log10_mean"].value for d in D_K]
    fr = max(r.by_dk[d]["below"].value for d in D_K)
    return (f"scaled jac_diag_max over d_k={_DK0}..{_DK1}: median {min(meds):.3g} to "
            f"{max(meds):.3g} (d_k={_DK1}: {_e(r.last['median'])}); log10-mean {min(lms):.3f} "
            f"to {max(lms):.3f}; largest fraction < {LEVEL:g}: {fr:.3g}")


@dataclasses.dataclass(frozen=True)
class Literal:
    """The exact results of [100, 101, 99], [0, 1, -1] and [1000, 1010, 990] (claim ``literal``)."""
    p: list[float]
    jac_diagonal: list[float]
    jac: float
    shifted: float
    spread_x10: float


def _pick_literal(ev: Evidence) -> Literal:
    L = ev.literal["literal"]
    return Literal(list(L["p"]), [float(v) for v in np.diag(L["jacobian"])], L[JAC_DIAG_MAX.name],
                   ev.literal["shifted"][JAC_DIAG_MAX.name],
                   ev.literal["spread_x10"][JAC_DIAG_MAX.name])


def _evidence_literal(r: Literal) -> str:
    return (f"p = [{', '.join(f'{v:.6f}' for v in r.p)}]; Jacobian diagonal p(1-p) = "
            f"[{', '.join(f'{v:.6f}' for v in r.jac_diagonal)}]; jac_diag_max "
            f"{r.jac:.6f} (max possible 0.25), equal to [0, 1, -1]'s "
            f"{r.shifted:.6f}; differences x10 [1000, 1010, 990]: {r.spread_x10:.2g}")


@dataclasses.dataclass(frozen=True)
class Offsets:
    """Per offset of the Shifted experiment: each observable's mean and
    log10-mean, and ``"jac"``: :func:`measures` of jac_diag_max (claim ``offset``)."""
    offsets: list[float]
    points: list[dict[str, Any]]

    @property
    def ref(self) -> dict[str, Any]:
        return self.points[0]

    @property
    def rest(self) -> list[dict[str, Any]]:
        return self.points[1:]

    @property
    def worst_se(self) -> float:
        """The largest difference from offset 0, in standard errors of the difference."""
        worst = 0.0
        for r in self.rest:
            for o in OBS_NAMES:
                for k in ("mean", "log10_mean"):
                    se = r[o][k].se + self.ref[o][k].se
                    if se > 0:
                        worst = max(worst, abs(r[o][k].value - self.ref[o][k].value) / se)
        return worst


def _pick_offset(ev: Evidence) -> Offsets:
    def shift_m(s: Summary) -> dict[str, Any]:
        d: dict[str, Any] = {o: dict(mean=est_mean(s[o]), log10_mean=est_log10_mean(s[o]))
                             for o in OBS_NAMES}
        d["jac"] = measures(s[JAC_DIAG_MAX.name])
        return d
    sh = ev.points("shifted")
    return Offsets([p["offset"] for p, _ in sh], [shift_m(s) for _, s in sh])


def _evidence_offset(r: Offsets) -> str:
    jm = [m["jac"]["median"].value for m in r.points]
    return (f"median jac_diag_max {min(jm):.4g} to {max(jm):.4g} over offsets "
            f"(offset 0: {_e(r.ref['jac']['median'])}); mean {_e(r.ref['jac']['mean'])}; "
            f"fraction < {LEVEL:g}: {max(m['jac']['below'].value for m in r.points):.3g}; "
            f"largest difference from offset 0 over all observables' means and log10-means: "
            f"{r.worst_se:.2g} SE")


def _evidence_ce_right(r: Sweep) -> str:
    return (f"unscaled, 1 - p_y: median {_e(r.first['median'])} (d_k={_DK0}) -> "
            f"{_e(r.last['median'])} (d_k={_DK1}); mean {_e(r.last['mean'])}; "
            f"fraction < {LEVEL:g} {_p(r.last['below'])}")


@dataclasses.dataclass(frozen=True)
class Wrong:
    """Target "random" at the largest unscaled d_k (claim ``ce_wrong``)."""
    jac_median: Est
    target: dict[str, Est]
    norm_median: Est


def _pick_ce_wrong(ev: Evidence) -> Wrong:
    s = _dotproduct(ev, _DK1, False, "random")
    return Wrong(est_quantile(s[JAC_DIAG_MAX.name], 0.5), measures(s[CE_GRAD_TARGET.name]),
                 est_quantile(s[CE_GRAD_NORM.name], 0.5))


def _evidence_ce_wrong(r: Wrong) -> str:
    return (f"unscaled d_k={_DK1} (median jac_diag_max {_e(r.jac_median)}): 1 - p_y median "
            f"{_f(r.target['median'])}, mean {_f(r.target['mean'])}; |grad| median "
            f"{_f(r.norm_median)} (sqrt 2 = 1.4142)")


@dataclasses.dataclass(frozen=True)
class Crossings:
    """Where the Gaussian scale sweep and the unscaled d_k sweep cross the level
    (claims ``scale`` and ``law_scale``; :func:`crossing`, x = sigma and sqrt(d_k))."""
    sigmas: list[float]
    gaussian_medians: list[Est]
    gaussian: dict[str, Any] | None
    dk: dict[str, Any] | None
    law: DkPredictions | None


def _pick_crossings(ev: Evidence) -> Crossings:
    gs = ev.points("gaussian")
    gm = [est_quantile(s[JAC_DIAG_MAX.name], 0.5) for _, s in gs]
    gx = [p["scale"] / p["temperature"] for p, _ in gs]
    dm = [est_quantile(_dotproduct(ev, d, False)[JAC_DIAG_MAX.name], 0.5) for d in D_K]
    return Crossings(gx, gm, crossing(gx, gm), crossing([math.sqrt(d) for d in D_K], dm),
                     _dk_predictions(ev))


def _evidence_scale(r: Crossings) -> str:
    cg, cd, gx = r.gaussian, r.dk, r.sigmas
    ev = (f"N(0, sigma^2) logits, sigma = {gx[0]:g}..{gx[-1]:g}: median < {LEVEL:g} from "
          f"sigma* = {cg['x']:.3g} (between {cg['x_lo']:.3g} and {cg['x_hi']:.3g}; "
          f"temperature 1/sigma* = {1 / cg['x']:.3g})" if cg else
          f"median never falls below {LEVEL:g} for sigma = {gx[0]:g}..{gx[-1]:g}")
    if cg and r.law:
        ev += f" (law {r.law.sigma_star:.4g}: claim {claim_number('law_scale')})"
    ev += (f"; unscaled d_k sweep: d_k* = {cd['x'] ** 2:.4g}, sqrt = {cd['x']:.3g}" if cd else
           f"; the d_k sweep never crosses {LEVEL:g}")
    if cd and r.law:
        ev += f" (law {r.law.dk_star:.4g})"
    return ev


def _numbers_scale(r: Crossings) -> dict[str, Any]:
    return {"gaussian_crossing": r.gaussian, "dk_crossing": r.dk,
            "gaussian_median": {f"{x:.6g}": e for x, e in zip(r.sigmas, r.gaussian_medians)}}


@dataclasses.dataclass(frozen=True)
class LawSweep:
    """The law's fraction beside the measured one at each d_k (claim ``law_dk``)."""
    points: dict[int, LawPoint]
    predictions: DkPredictions


def _pick_law_dk(ev: Evidence) -> LawSweep:
    pc = DkPredictions.of(ev.predictions["claims"])
    return LawSweep({d: pc.point(d, m["below"]) for d, m in _sweep_measures(ev, False).items()},
                    pc)


def _evidence_law_dk(r: LawSweep) -> str:
    inside, outside = [], []
    for d, p in r.points.items():
        if p.judged:
            inside.append(f"{p.what}: {_p4(p.measured)} vs {p.predicted:.4f} ± {_pct(p.rel)}")
        else:
            outside.append(f"{d}: {_p(p.measured)} (bounds {p.lo:.2g}..{p.hi:.2g})")
    return ("measured vs law: " + "; ".join(inside) + "; outside the law's domain (m > 1/2), "
            "not judged, d_k=" + ", ".join(outside))


@dataclasses.dataclass(frozen=True)
class Critical:
    """The fractions below the level at the predicted sigma* and d_k*, and the
    sweeps' crossings (claim ``law_scale``)."""
    at_sigma_star: Est
    at_dk_star: Est
    crossings: Crossings
    law: DkPredictions


def _pick_law_scale(ev: Evidence) -> Critical:
    pc = DkPredictions.of(ev.predictions["claims"])
    return Critical(_below(ev.point("law", scale=pc.sigma_star)[JAC_DIAG_MAX.name]),
                    _below(ev.point("law", d_k=pc.dk_point)[JAC_DIAG_MAX.name]),
                    _pick_crossings(ev), pc)


def _judge_law_scale(r: Critical) -> list[Check]:
    pc, c = r.law, r.crossings
    return (judge_critical(r.at_sigma_star, *pc.at_sigma_star, pc.sigma_star, c.gaussian,
                           "sigma*")
            + judge_critical(r.at_dk_star, *pc.at_dk_star, math.sqrt(pc.dk_star), c.dk,
                             "sqrt(d_k*)"))


def _evidence_law_scale(r: Critical) -> str:
    pc, cg, cd = r.law, r.crossings.gaussian, r.crossings.dk

    def rel_diff(c: dict[str, Any] | None, law: float) -> str:
        return f"{c['x']:.4g} ({(c['x'] / law - 1):+.1%})" if c else "none"

    return (f"sigma* = {pc.sigma_star:.4g} (law, ± {_pct(pc.sigma_star_rel)}): fraction < "
            f"{LEVEL:g} there {_p4(r.at_sigma_star)} (law {pc.at_sigma_star[0]:.4f}); the "
            f"scale sweep crosses at {rel_diff(cg, pc.sigma_star)} by interpolation; d_k* = "
            f"{pc.dk_star:.4g} (law, ± {_pct(pc.dk_star_rel)}): at d_k={pc.dk_point} "
            f"{_p4(r.at_dk_star)} (law {pc.at_dk_star[0]:.4f}); the d_k sweep crosses at "
            f"{rel_diff(dict(cd, x=cd['x'] ** 2) if cd else None, pc.dk_star)}")


@dataclasses.dataclass(frozen=True)
class Grouped:
    """Points against a law along the context axis, each in a group (the
    evidence reports the largest departure per group)."""
    group: str
    n: int
    point: LawPoint


def _departures(points: Sequence[Grouped]) -> str:
    """Per group of judged points: the n range and the largest relative
    departure from the law, with the stated accuracy there."""
    groups: dict[str, list[Grouped]] = {}
    for g in points:
        if g.point.judged:
            groups.setdefault(g.group, []).append(g)

    def departure(g: Grouped) -> float:
        p = g.point
        return abs(p.measured.value / p.predicted - 1) if p.predicted else math.inf

    parts = []
    for name, gs in groups.items():
        worst = max(gs, key=departure)
        p = worst.point
        d = p.measured.value - p.predicted
        tol = p.rel * abs(p.predicted) + p.abs
        rel = d / p.predicted if p.predicted else math.inf
        parts.append(f"{name} n={min(g.n for g in gs)}..{max(g.n for g in gs)}: largest "
                     f"departure {rel:+.1%} at n={worst.n} ({p.measured.value:.4g} vs "
                     f"{p.predicted:.4g}, stated ± {tol:.2g})")
    return "; ".join(parts) or "none"


@dataclasses.dataclass(frozen=True)
class Context:
    """The context-length axis beside the laws of large n (claims
    ``context_saturation`` and ``context_rem``)."""
    ns: list[int]
    first: Est
    last: Est
    saturation: list[Grouped]
    rem: list[Grouped]


def _pick_context(ev: Evidence) -> Context:
    pcx = ev.predictions["context"]
    rows = {(p["scaled"], p["n"]): s for p, s in ev.points("context")}
    ns = sorted({n for _, n in rows})
    sat, rem = [], []
    for scaled in (False, True):
        kind = "scaled" if scaled else "unscaled"
        for n in ns:
            s = rows[(scaled, n)]
            q = ContextPrediction.at(pcx, scaled, n)
            tag = f"{kind} n={n}"
            sat.append(Grouped("unscaled fraction", n,
                               q.law_point(tag, _below(s[JAC_DIAG_MAX.name]), "below")))
            for name, key in ((ENTROPY.name, ENTROPY.name), (MAX_PROB.name, "max_prob_mean")):
                rem.append(Grouped(f"{name}, {kind}", n, q.law_point(
                    f"{tag} mean {name}", est_mean(s[name]), key)))
    return Context(ns, _below(rows[(False, ns[0])][JAC_DIAG_MAX.name]),
                   _below(rows[(False, ns[-1])][JAC_DIAG_MAX.name]), sat, rem)


def _judge_context_saturation(r: Context) -> list[Check]:
    return [drop(r.first, r.last, 0.0,
                 f"unscaled fraction < {LEVEL:g}, n={r.ns[0]} -> {r.ns[-1]}")] + \
        judge_law([g.point for g in r.saturation])


def _evidence_context_saturation(r: Context) -> str:
    return (f"unscaled fraction < {LEVEL:g}: n={r.ns[0]} {_p4(r.first)} -> n={r.ns[-1]} "
            f"{_p4(r.last)}; against the law where it states an accuracy: "
            + _departures(r.saturation))


# --------------------------------------------------------------------------
# the registry

#: This paper's claims, in the report's order: one :class:`ClaimSpec` each.
CLAIMS: tuple[ClaimSpec[Any], ...] = (
    ClaimSpec(
        "paper", f"Without scaling, softmax(q.k) saturates as d_k grows (DotProduct, n={N})",
        f"d_k={_DK1} vs {_DK0}: median < 1e-3 x, log10-mean down by > 3, mean < 0.5 x, "
        f"each beyond {_Z} SE; over 25% of rows below 1e-6",
        ("dotproduct",), pick=_pick_paper,
        judge=lambda r: judge_saturation(r.first, r.last),
        evidence=_evidence_paper,
        numbers=lambda r: {"unscaled_jac_diag_max": {str(d): m for d, m in r.by_dk.items()}}),
    ClaimSpec(
        "fix", "Scaling by 1/sqrt(d_k) keeps the gradients flat in d_k",
        f"every d_k: median within 2x and log10-mean within 0.3 of d_k={_DK0}'s ({_Z} SE), "
        "fraction < 1e-6 below 1e-3",
        ("dotproduct",), pick=lambda ev: Sweep(_sweep_measures(ev, True)),
        judge=lambda r: judge_flat(r.first, [r.by_dk[d] for d in D_K[1:]]),
        evidence=_evidence_fix,
        numbers=lambda r: {"scaled_jac_diag_max": {str(d): m for d, m in r.by_dk.items()}}),
    ClaimSpec(
        "literal", "Large-but-close logits [100, 101, 99] keep healthy gradients",
        "exact (float64): jac_diag_max > 0.1 and equal to that of [0, 1, -1] within 1e-12",
        ("literal",), pick=_pick_literal,
        judge=lambda r: judge_literal(r.jac, r.shifted),
        evidence=_evidence_literal,
        numbers=lambda r: {JAC_DIAG_MAX.name: r.jac, "shifted": r.shifted}),
    ClaimSpec(
        "offset", f"Adding a large offset (0 to {_sci(OFFSETS[-1])}) changes nothing "
        f"(Shifted, n={N}, spread 1, float64)",
        f"every offset: each observable's mean within {EQUIV_REL:.0%} of offset 0's and its "
        f"log10-mean within {EQUIV_DECADES:g} decades (the difference +/- {_Z} (SE_a + SE_b) "
        f"inside the margin); median jac_diag_max > 1e-2 and fraction < 1e-6 below 1e-3 "
        f"({_Z} SE)",
        ("shifted",), pick=_pick_offset,
        judge=lambda r: judge_shift(r.ref, r.rest),
        evidence=_evidence_offset,
        numbers=lambda r: {"median_jac_diag_max": {str(o): m["jac"]["median"] for o, m
                                                   in zip(r.offsets, r.points)},
                           "largest_diff_se": r.worst_se}),
    ClaimSpec(
        "ce_right", "Cross-entropy, model confidently right (target argmax): "
        "the gradient vanishes when saturated",
        f"d_k={_DK1}: median 1 - p_y < 1e-6 and < 1e-3 x its d_k={_DK0} value ({_Z} SE)",
        ("dotproduct",),
        pick=lambda ev: Sweep(_sweep_measures(ev, False, CE_GRAD_TARGET.name)),
        judge=lambda r: judge_ce_right(r.first, r.last),
        evidence=_evidence_ce_right,
        numbers=lambda r: {CE_GRAD_TARGET.name: {str(d): m for d, m in r.by_dk.items()}}),
    ClaimSpec(
        "ce_wrong", "Cross-entropy, model wrong (target random): the gradient stays "
        "near 1 (norm near sqrt 2) when saturated",
        f"1 - p_y: median and mean > 0.9; median |p - e_y| within 5% of sqrt 2 ({_Z} SE)",
        ("dotproduct",), pick=_pick_ce_wrong,
        judge=lambda r: judge_ce_wrong(r.target, r.norm_median),
        evidence=_evidence_ce_wrong,
        numbers=lambda r: {CE_GRAD_TARGET.name: r.target, "ce_grad_norm_median": r.norm_median}),
    ClaimSpec(
        "scale", "Saturation is set by the logit scale: Gaussian logits cross "
        f"median jac_diag_max = {LEVEL:g} at sigma* = sqrt(d_k*) of the unscaled sweep",
        f"both sweeps cross 1e-6 (points beyond {_Z} SE on each side); sigma*/sqrt(d_k*) "
        "within 10% of 1",
        ("dotproduct", "gaussian"), pick=_pick_crossings,
        judge=lambda r: judge_scale(r.gaussian, r.dk),
        evidence=_evidence_scale, numbers=_numbers_scale),
    ClaimSpec(
        "law_dk", "The saturation law (order 1) predicts the unscaled fraction of rows "
        f"below {LEVEL:g} at each d_k (DotProduct, n={N})",
        "each d_k where the law states an accuracy (m = sigma_c/sqrt(d_k) <= 1/2): the "
        "fraction within it (0.5% for m <= 1/8, 2% for <= 1/4, 15% for <= 1/2) and inside "
        f"the exact bounds, {_Z} SE",
        ("dotproduct", "law"), laws=("claims",), pick=_pick_law_dk,
        judge=lambda r: judge_law(list(r.points.values())), evidence=_evidence_law_dk,
        numbers=lambda r: {"points": {str(d): dict(r.predictions.dk[d], measured=p.measured)
                                      for d, p in r.points.items()}}),
    ClaimSpec(
        "law_scale", f"The law predicts sigma* and d_k*: half the rows below {LEVEL:g} there, "
        "where the sweeps cross",
        "at the predicted sigma* and d_k*: the fraction below 1e-6 equals the law's (1/2) "
        f"within its stated accuracy ({_Z} SE); each predicted point lies in the grid interval "
        "where the sweep's median crosses 1e-6",
        ("dotproduct", "gaussian", "law"), laws=("claims",), pick=_pick_law_scale,
        judge=_judge_law_scale, evidence=_evidence_law_scale,
        numbers=lambda r: {"sigma_star": r.law.sigma_star, "dk_star": r.law.dk_star,
                           "at_sigma_star": r.at_sigma_star, "at_dk_star": r.at_dk_star}),
    ClaimSpec(
        "context_saturation", f"At a fixed logit scale, longer contexts saturate less: the "
        f"fraction below {LEVEL:g} falls with n (DotProduct, d_k={CONTEXT_D_K}), as the "
        "saturation law predicts",
        f"the fraction at n={CONTEXT_N[0]} above that at n={CONTEXT_N[-1]} ({_Z} SE); at each n "
        "where the law states an accuracy (m <= 1/2), within it and inside the exact bounds",
        ("context",), laws=("context",), pick=_pick_context,
        judge=_judge_context_saturation, evidence=_evidence_context_saturation,
        numbers=lambda r: {"fraction_first": r.first, "fraction_last": r.last}),
    ClaimSpec(
        "context_rem", "The random energy model predicts the mean entropy and max_prob "
        "against n, diffuse (scaled) and frozen (unscaled)",
        "mean entropy and max_prob within the REM's stated accuracy at each n where it "
        f"states one (diffuse: sigma <= sigma_c/2; frozen: sigma >= 2 sigma_c), {_Z} SE",
        ("context",), laws=("context",), pick=_pick_context,
        judge=lambda r: judge_law([g.point for g in r.rem]),
        evidence=lambda r: "against the law where it states an accuracy: "
        + _departures(r.rem),
        numbers=lambda r: {}),
)
