r"""``fastsoftmax verify``: the "Attention Is All You Need" question, measured.

Runs the claims as experiments and computes a verdict for each from the
measurements, with criteria stated in small pure functions below (never a
verdict written in):

1. the paper: without scaling, softmax of q.k saturates as d_k grows;
2. the paper's fix: scaling by 1/sqrt(d_k) keeps the statistics flat;
3. the objection: the literal vector [100, 101, 99] keeps healthy gradients;
4. the objection: a common offset (0 to 1e6) changes nothing;
5. cross-entropy, confidently right (target "argmax"): the gradient vanishes
   in the saturated regime;
6. cross-entropy, wrong (target "random"): it stays near 1 (norm near
   sqrt(2));
7. a scale sweep of Gaussian logits locates where the median Jacobian drops
   below 1e-6, and it matches the d_k sweep (unscaled logits have scale
   about sqrt(d_k)).

All points use one seed (common random numbers).  Standard errors: the
``sem`` of a mean; for a median, the order-statistic one (the spread of the
quantiles at 0.5 +- sqrt(0.25/N)), never below the sketch's 1% resolution; for
a fraction, the binomial sqrt(p(1-p)/N) (Wilson bounds).  A difference
between two points is judged against Z (SE_a + SE_b), valid whatever the
correlation that common random numbers introduce.

Verdicts: "holds" when every condition is met beyond Z = 4 standard errors,
"fails" when one is contradicted beyond 4 standard errors, "inconclusive"
otherwise (more samples would decide).
"""
import dataclasses
import json
import math
import os
import time

import numpy as np

__all__ = ["run", "VerifyResult", "Claim", "Check", "Est", "DEFAULT_SAMPLES"]

DEFAULT_SAMPLES = 500_000
N = 64
D_K = (1, 4, 16, 64, 256, 1024, 4096)
OFFSETS = (0.0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6)
SCALES = tuple(float(2.0 ** (k / 2)) for k in range(17))      # 1 .. 256
TARGETS = ("argmax", "random", "sampled")
LITERAL = (100.0, 101.0, 99.0)
Z = 4.0                 # standard errors for "significant"
LEVEL = 1e-6            # "vanishing" gradient (a threshold of every Summary)
SKETCH_REL = 0.01       # quantiles are known within 1% (DDSketch-style sketch)
HOLDS, FAILS, INCONCLUSIVE = "holds", "fails", "inconclusive"


# --------------------------------------------------------------------------
# estimates with standard errors

@dataclasses.dataclass(frozen=True)
class Est:
    """An estimate, its standard error and its Z-SE bounds [lo, hi]."""
    value: float
    se: float
    lo: float
    hi: float

    @classmethod
    def normal(cls, value, se, z=Z):
        return cls(float(value), float(se), float(value - z * se), float(value + z * se))

    @classmethod
    def exact(cls, value):
        return cls(float(value), 0.0, float(value), float(value))

    def fmt(self, spec=".3g"):
        return f"{self.value:{spec}} ± {self.se:.2g}"


def est_mean(stat, z=Z):
    return Est.normal(stat.mean, stat.sem, z)


def est_log10_mean(stat, z=Z):
    return Est.normal(stat.log10_mean, stat.log10_sem, z)


def est_quantile(stat, q=0.5, z=Z):
    """The q-quantile with an order-statistic standard error and Z-SE bounds
    (ranks q +- z sqrt(q(1-q)/N)), widened by the sketch's 1% resolution."""
    n = stat.count
    value = float(stat.quantile(q))
    s = math.sqrt(q * (1 - q) / n) if n > 0 else math.nan
    lo_q, hi_q = max(0.0, q - z * s), min(1.0, q + z * s)
    se = (float(stat.quantile(min(1.0, q + s))) - float(stat.quantile(max(0.0, q - s)))) / 2
    se = max(se, SKETCH_REL * abs(value))
    lo = float(stat.quantile(lo_q)) / (1 + SKETCH_REL)
    hi = float(stat.quantile(hi_q)) * (1 + SKETCH_REL)
    return Est(value, se, lo, hi)


def est_fraction(p, n, z=Z):
    """A fraction p of n rows: binomial SE and Wilson score bounds."""
    p = float(p)
    se = math.sqrt(max(p * (1 - p), 0.0) / n)
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return Est(p, se, max(0.0, c - h), min(1.0, c + h))


def measures(stat, level=LEVEL, z=Z):
    """The four measures of a vanishing gradient: median, mean, log10-mean
    and the fraction of rows below ``level``."""
    return dict(median=est_quantile(stat, 0.5, z), mean=est_mean(stat, z),
                log10_mean=est_log10_mean(stat, z),
                below=est_fraction(stat.fraction_below(level), stat.count, z))


# --------------------------------------------------------------------------
# criteria: pure functions of estimates and numbers -> Check

@dataclasses.dataclass(frozen=True)
class Check:
    verdict: str        # holds / fails / inconclusive
    text: str           # what was compared, with the numbers


def _v(holds, fails):
    return HOLDS if holds else (FAILS if fails else INCONCLUSIVE)


def below(a, bound, what="value"):
    """a < bound: holds if a.hi < bound, fails if a.lo >= bound."""
    return Check(_v(a.hi < bound, a.lo >= bound), f"{what} {a.value:.3g} < {bound:g}")


def above(a, bound, what="value"):
    """a > bound: holds if a.lo > bound, fails if a.hi <= bound."""
    return Check(_v(a.lo > bound, a.hi <= bound), f"{what} {a.value:.3g} > {bound:g}")


def ratio_below(a, b, factor, what="value"):
    """a < factor * b: holds if a.hi < factor * b.lo, fails if a.lo >= factor * b.hi."""
    return Check(_v(a.hi < factor * b.lo, a.lo >= factor * b.hi),
                 f"{what} ratio {_ratio(a.value, b.value)} < {factor:g}")


def drop(a, b, amount, what="value", z=Z):
    """a - b > amount, beyond z (SE_a + SE_b)."""
    d, se = a.value - b.value, a.se + b.se
    return Check(_v(d - z * se > amount, d + z * se <= amount),
                 f"{what} drop {d:.3g} ± {se:.2g} > {amount:g}")


def within_factor(a, b, factor, what="value"):
    """b / factor <= a <= b * factor ("flat"): holds if a's bounds lie inside
    b's bounds widened by ``factor``, fails if a's bounds lie outside."""
    holds = a.lo >= b.hi / factor and a.hi <= b.lo * factor
    fails = a.hi < b.lo / factor or a.lo > b.hi * factor
    return Check(_v(holds, fails), f"{what} ratio {_ratio(a.value, b.value)} within "
                                   f"[1/{factor:g}, {factor:g}]")


def close(a, b, amount, what="value", z=Z):
    """|a - b| < amount, beyond z (SE_a + SE_b)."""
    d, se = abs(a.value - b.value), a.se + b.se
    return Check(_v(d + z * se < amount, d - z * se >= amount),
                 f"{what} |diff| {d:.3g} ± {se:.2g} < {amount:g}")


def near(a, target, rel, what="value"):
    """a within a relative ``rel`` of ``target``."""
    lo, hi = target * (1 - rel), target * (1 + rel)
    return Check(_v(a.lo >= lo and a.hi <= hi, a.hi < lo or a.lo > hi),
                 f"{what} {a.value:.4g} within {rel:.0%} of {target:.4g}")


def same(a, b, what="value", z=Z):
    """No detectable difference: |a - b| <= z (SE_a + SE_b) holds, else fails."""
    d, se = abs(a.value - b.value), a.se + b.se
    ok = d <= z * se
    return Check(HOLDS if ok else FAILS, f"{what} |diff| {d:.2g} <= {z:g} x {se:.2g}")


def all_of(checks):
    """fails if any fails, holds if all hold, inconclusive otherwise."""
    checks = list(checks)
    if any(c.verdict == FAILS for c in checks):
        return FAILS
    if all(c.verdict == HOLDS for c in checks):
        return HOLDS
    return INCONCLUSIVE


def _ratio(a, b):
    return f"{a / b:.3g}" if b else "inf"


# the claims' criteria, on measures() dicts / numbers

def judge_saturation(small, large):
    """Paper: the gradient collapses from ``small`` d_k to ``large`` d_k."""
    return [ratio_below(large["median"], small["median"], 1e-3, "median"),
            drop(small["log10_mean"], large["log10_mean"], 3.0, "log10-mean"),
            ratio_below(large["mean"], small["mean"], 0.5, "mean"),
            above(large["below"], 0.25, f"fraction < {LEVEL:g}")]


def judge_flat(ref, others):
    """Fix: every d_k within a factor 2 (median), 0.3 in log10-mean of the
    reference, and almost never below the level."""
    checks = []
    for m in [ref] + list(others):
        checks.append(within_factor(m["median"], ref["median"], 2.0, "median"))
        checks.append(close(m["log10_mean"], ref["log10_mean"], 0.3, "log10-mean"))
        checks.append(below(m["below"], 1e-3, f"fraction < {LEVEL:g}"))
    return checks


def judge_literal(jac_diag_max, jac_diag_max_shifted, rel=1e-12):
    """Objection: [100, 101, 99]'s largest Jacobian entry is healthy (> 0.1,
    the maximum possible is 0.25) and equal to that of [0, 1, -1]."""
    healthy = jac_diag_max > 0.1
    equal = abs(jac_diag_max - jac_diag_max_shifted) <= rel * abs(jac_diag_max_shifted)
    return [Check(HOLDS if healthy else FAILS, f"jac_diag_max {jac_diag_max:.6g} > 0.1"),
            Check(HOLDS if equal else FAILS,
                  f"equal to [0, 1, -1]'s {jac_diag_max_shifted:.6g} within {rel:g}")]


def judge_shift(ref, others):
    """Objection: every offset's statistics equal the offset-0 ones (each
    observable's mean and log10-mean, within 4 SE) and are far from vanishing
    (median jac_diag_max > 1e-2, fewer than 1e-3 of rows below the level).

    ref/others: dicts observable -> dict(mean=Est, log10_mean=Est), and
    "jac" -> measures() of jac_diag_max."""
    checks = []
    for m in others:
        for name in m:
            if name == "jac":
                continue
            checks.append(same(m[name]["mean"], ref[name]["mean"], f"{name} mean"))
            checks.append(same(m[name]["log10_mean"], ref[name]["log10_mean"],
                               f"{name} log10-mean"))
    for m in [ref] + list(others):
        checks.append(above(m["jac"]["median"], 1e-2, "median"))
        checks.append(below(m["jac"]["below"], 1e-3, f"fraction < {LEVEL:g}"))
    return checks


def judge_ce_right(small, large):
    """CE, target argmax: 1 - p_y's median is below the level at large d_k
    and below 1e-3 x its small-d_k value."""
    return [below(large["median"], LEVEL, "median"),
            ratio_below(large["median"], small["median"], 1e-3, "median")]


def judge_ce_wrong(target_m, norm_median):
    """CE, target random: 1 - p_y stays near 1 (median and mean > 0.9) and the
    gradient norm's median is within 5% of sqrt(2)."""
    return [above(target_m["median"], 0.9, "median 1 - p_y"),
            above(target_m["mean"], 0.9, "mean 1 - p_y"),
            near(norm_median, math.sqrt(2), 0.05, "median |grad|")]


def crossing(xs, ests, level=LEVEL):
    """Where the median falls below ``level``: the last grid interval where
    it goes from >= level to < level, the point x* there (log10 of the median
    interpolated linearly in x), and whether it is located beyond the
    standard errors (some point at or before the interval is significantly
    above, and some point at or after it significantly below).
    None if the median never crosses."""
    vals = [e.value for e in ests]
    idx = [i for i in range(len(vals) - 1) if vals[i] >= level > vals[i + 1]]
    if not idx:
        return None
    i = idx[-1]
    l0, l1 = math.log10(vals[i]), math.log10(vals[i + 1]) if vals[i + 1] > 0 else -400.0
    t = (l0 - math.log10(level)) / (l0 - l1) if l0 != l1 else 0.0
    x = xs[i] + t * (xs[i + 1] - xs[i])
    sig = any(e.lo > level for e in ests[:i + 1]) and any(e.hi < level for e in ests[i + 1:])
    return dict(x=float(x), x_lo=float(xs[i]), x_hi=float(xs[i + 1]), significant=bool(sig))


def judge_scale(cross_gauss, cross_dk, tol=0.1):
    """Saturation is set by the logit scale: both sweeps cross the level
    (located beyond the SEs), and the Gaussian sigma* equals sqrt(d_k*) of
    the unscaled sweep within ``tol``."""
    checks = []
    for name, c in (("scale sweep", cross_gauss), ("d_k sweep", cross_dk)):
        if c is None:
            checks.append(Check(FAILS, f"{name} never crosses {LEVEL:g}"))
        else:
            checks.append(Check(HOLDS if c["significant"] else INCONCLUSIVE,
                                f"{name} crosses {LEVEL:g} in [{c['x_lo']:.4g}, "
                                f"{c['x_hi']:.4g}]"))
    if cross_gauss is not None and cross_dk is not None:
        r = cross_gauss["x"] / cross_dk["x"]
        checks.append(Check(HOLDS if abs(r - 1) <= tol else FAILS,
                            f"sigma*/sqrt(d_k*) = {r:.3f} within {tol:.0%} of 1"))
    return checks


# --------------------------------------------------------------------------
# result

@dataclasses.dataclass
class Claim:
    key: str
    claim: str
    evidence: str
    criterion: str
    checks: list
    numbers: dict

    @property
    def verdict(self):
        return all_of(self.checks)

    def to_dict(self):
        return dict(key=self.key, claim=self.claim, evidence=self.evidence,
                    criterion=self.criterion, verdict=self.verdict,
                    checks=[dataclasses.asdict(c) for c in self.checks],
                    numbers=_jsonable(self.numbers))


@dataclasses.dataclass
class VerifyResult:
    """What ``run`` returns: the claims with their verdicts, the tables (pandas
    DataFrames: ``dotproduct``, ``shifted``, ``gaussian``, ``literal``,
    ``verdicts``), the Summaries of every point and the run's settings."""
    claims: list
    literal: dict
    tables: dict
    summaries: dict
    meta: dict

    @property
    def verdicts(self):
        return {c.key: c.verdict for c in self.claims}

    def to_dict(self, summaries=False, tables=False):
        d = dict(meta=_jsonable(self.meta), claims=[c.to_dict() for c in self.claims],
                 literal=_jsonable(self.literal))
        if tables:
            d["tables"] = {k: _jsonable(v.to_dict("records")) for k, v in self.tables.items()}
        if summaries:
            d["summaries"] = {k: [dict(point=_jsonable(p), summary=s.to_dict()) for p, s in v]
                              for k, v in self.summaries.items()}
        return d

    def to_json(self, **kw):
        return json.dumps(self.to_dict(**kw), allow_nan=False, indent=1)

    def report(self, width=100):
        return format_report(self, width)

    def brief(self):
        """One line per claim: verdict and claim."""
        return "\n".join(f"{i}. {c.verdict.upper():<12} {c.claim}"
                         for i, c in enumerate(self.claims, 1))

    def __str__(self):
        return self.report()


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, Est):
        return _jsonable(dataclasses.asdict(obj))
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return repr(obj)           # "inf", "-inf", "nan" (as Summary.to_dict)
    return obj


# --------------------------------------------------------------------------
# the experiments

def _literal():
    import fastsoftmax as fs
    x = np.array(LITERAL)
    p = fs.softmax(x)
    jac = np.diag(p) - np.outer(p, p)
    out = {}
    variants = (("literal", x), ("shifted", x - 100.0),
                ("spread_x10", 100.0 + 10.0 * (x - 100.0)))
    for name, v in variants:
        obs = fs.observables(v[None, :])
        out[name] = dict(x=v.tolist(), p=fs.softmax(v).tolist(),
                         **{k: float(obs[k][0]) for k in ("jac_diag_max", "jac_offdiag_max",
                                                          "jac_fro", "entropy",
                                                          "log10_jac_diag_max")})
    out["literal"]["jacobian"] = jac.tolist()
    return out


def run(samples=DEFAULT_SAMPLES, seed=0, backend="auto", out=None, progress=True, client=None):
    """Run every experiment and judge every claim; a :class:`VerifyResult`.

    samples: logit vectors per point (default 500,000; 66 points); seed: one
    seed for every point (common random numbers); backend: "auto", "cpu",
    "cuda"; out: a directory for the tables (CSV and Parquet), summary.json
    and the plots (written when given); progress: a tqdm bar on stderr;
    client: a ``dask.distributed.Client`` passed on to every simulation.
    """
    from . import __version__, api, models
    from .sweep import Plan
    samples = api._check_samples(samples)
    seed = api._check_seed(seed)
    be = api.resolve_backend(backend)
    if out is not None:
        out = os.fspath(out)
        if os.path.exists(out) and not os.path.isdir(out):
            raise NotADirectoryError(f"out={out!r} exists and is not a directory")
    common = dict(samples=samples, seed=seed, backend=backend)
    plans = []
    for target in TARGETS:
        plans.append(("dotproduct", target, Plan(models.DotProduct,
                                                 {"d_k": list(D_K), "scaled": [False, True]},
                                                 fixed={"n": N}, target=target, **common)))
    plans.append(("shifted", "argmax", Plan(models.Shifted, {"offset": list(OFFSETS)},
                                            fixed={"n": N, "spread": 1.0}, dtype="float64",
                                            **common)))
    plans.append(("gaussian", "argmax", Plan(models.Gaussian, {"scale": list(SCALES)},
                                             fixed={"n": N}, **common)))
    npoints = sum(len(p.points) for _, _, p in plans)
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=npoints * samples, desc="verify", unit="rows", unit_scale=True,
                   smoothing=0.1, dynamic_ncols=True)
    t0 = time.perf_counter()
    frames, summaries = {}, {}
    try:
        for name, target, plan in plans:
            got = []
            df = plan.run(progress=bar if bar is not None else False, client=client,
                          on_point=lambda p, s, got=got: got.append((p, s)))
            frames.setdefault(name, []).append(df)
            summaries.setdefault(name, []).extend(
                (dict(p.model.params, target=target), s) for p, s in got)
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - t0
    import pandas as pd
    tables = {k: pd.concat(v, ignore_index=True) if len(v) > 1 else v[0]
              for k, v in frames.items()}
    literal = _literal()
    tables["literal"] = pd.DataFrame([dict(vector=k, **{c: json.dumps(v) if isinstance(v, list)
                                                          else v for c, v in d.items()})
                                      for k, d in literal.items()])
    from . import _cpu
    meta = dict(version=__version__, samples=samples, seed=seed, backend=be,
                threads=_cpu.threads(), points=npoints, seconds=seconds, n=N, d_k=list(D_K),
                offsets=list(OFFSETS), scales=list(SCALES), z=Z, level=LEVEL)
    claims = _claims(summaries, literal)
    tables["verdicts"] = pd.DataFrame([dict(key=c.key, claim=c.claim, evidence=c.evidence,
                                            verdict=c.verdict, criterion=c.criterion)
                                       for c in claims])
    result = VerifyResult(claims, literal, tables, summaries, meta)
    if out is not None:
        write_outputs(result, out)
    return result


def _pick(summaries, name, **want):
    for p, s in summaries[name]:
        if all(p.get(k) == v for k, v in want.items()):
            return s
    raise KeyError(f"no {name} point with {want}")


def _claims(S, lit):
    dk0, dk1 = D_K[0], D_K[-1]
    ds = lambda d_k, scaled, target="argmax": _pick(S, "dotproduct", d_k=d_k,  # noqa: E731
                                                    scaled=scaled, target=target)
    claims = []

    # 1. the paper
    m = {d: measures(ds(d, False)["jac_diag_max"]) for d in D_K}
    small, large = m[dk0], m[dk1]
    claims.append(Claim(
        "paper", f"Without scaling, softmax(q.k) saturates as d_k grows (DotProduct, n={N})",
        f"unscaled jac_diag_max, d_k={dk0} -> {dk1}: median {_e(small['median'])} -> "
        f"{_e(large['median'])}; mean {_e(small['mean'])} -> {_e(large['mean'])}; log10-mean "
        f"{_f(small['log10_mean'])} -> {_f(large['log10_mean'])}; fraction < {LEVEL:g} "
        f"{_p(small['below'])} -> {_p(large['below'])}",
        f"d_k={dk1} vs {dk0}: median < 1e-3 x, log10-mean down by > 3, mean < 0.5 x, "
        "each beyond 4 SE; over 25% of rows below 1e-6",
        judge_saturation(small, large),
        {"unscaled_jac_diag_max": {str(d): m[d] for d in D_K}}))

    # 2. the fix
    ms = {d: measures(ds(d, True)["jac_diag_max"]) for d in D_K}
    meds = [ms[d]["median"].value for d in D_K]
    lms = [ms[d]["log10_mean"].value for d in D_K]
    fr = max(ms[d]["below"].value for d in D_K)
    claims.append(Claim(
        "fix", "Scaling by 1/sqrt(d_k) keeps the gradients flat in d_k",
        f"scaled jac_diag_max over d_k={dk0}..{dk1}: median {min(meds):.3g} to {max(meds):.3g}"
        f" (d_k={dk1}: {_e(ms[dk1]['median'])}); log10-mean {min(lms):.3f} to {max(lms):.3f}; "
        f"largest fraction < {LEVEL:g}: {fr:.3g}",
        f"every d_k: median within 2x and log10-mean within 0.3 of d_k={dk0}'s (4 SE), "
        "fraction < 1e-6 below 1e-3",
        judge_flat(ms[dk0], [ms[d] for d in D_K[1:]]),
        {"scaled_jac_diag_max": {str(d): ms[d] for d in D_K}}))

    # 3. the literal vector
    L = lit["literal"]
    claims.append(Claim(
        "literal", "Large-but-close logits [100, 101, 99] keep healthy gradients",
        f"p = [{', '.join(f'{v:.6f}' for v in L['p'])}]; Jacobian diagonal p(1-p) = "
        f"[{', '.join(f'{v:.6f}' for v in np.diag(L['jacobian']))}]; jac_diag_max "
        f"{L['jac_diag_max']:.6f} (max possible 0.25), equal to [0, 1, -1]'s "
        f"{lit['shifted']['jac_diag_max']:.6f}; differences x10 [1000, 1010, 990]: "
        f"{lit['spread_x10']['jac_diag_max']:.2g}",
        "exact (float64): jac_diag_max > 0.1 and equal to that of [0, 1, -1] within 1e-12",
        judge_literal(L["jac_diag_max"], lit["shifted"]["jac_diag_max"]),
        {"jac_diag_max": L["jac_diag_max"], "shifted": lit["shifted"]["jac_diag_max"]}))

    # 4. the offsets
    from ._math import OBS_NAMES

    def shift_m(s):
        d = {o: dict(mean=est_mean(s[o]), log10_mean=est_log10_mean(s[o])) for o in OBS_NAMES}
        d["jac"] = measures(s["jac_diag_max"])
        return d

    sh = [(p["offset"], s) for p, s in S["shifted"]]
    ref = shift_m(sh[0][1])
    rest = [shift_m(s) for _, s in sh[1:]]
    worst = 0.0
    for r in rest:
        for o in OBS_NAMES:
            for k in ("mean", "log10_mean"):
                se = r[o][k].se + ref[o][k].se
                if se > 0:
                    worst = max(worst, abs(r[o][k].value - ref[o][k].value) / se)
    jm = [r["jac"]["median"].value for r in [ref] + rest]
    claims.append(Claim(
        "offset", f"Adding a large offset (0 to {_sci(OFFSETS[-1])}) changes nothing "
        f"(Shifted, n={N}, spread 1, float64)",
        f"median jac_diag_max {min(jm):.4g} to {max(jm):.4g} over offsets "
        f"(offset 0: {_e(ref['jac']['median'])}); mean {_e(ref['jac']['mean'])}; "
        f"fraction < {LEVEL:g}: {max(r['jac']['below'].value for r in [ref] + rest):.3g}; "
        f"largest difference from offset 0 over all observables' means and log10-means: "
        f"{worst:.2g} SE",
        "every offset: each observable's mean and log10-mean equal offset 0's within 4 SE; "
        "median jac_diag_max > 1e-2 and fraction < 1e-6 below 1e-3 (4 SE)",
        judge_shift(ref, rest),
        {"median_jac_diag_max": {str(o): r["jac"]["median"] for (o, _), r
                                 in zip(sh, [ref] + rest)}, "largest_diff_se": worst}))

    # 5. CE, confidently right
    ca = {d: measures(ds(d, False, "argmax")["ce_grad_target"]) for d in D_K}
    claims.append(Claim(
        "ce_right", "Cross-entropy, model confidently right (target argmax): "
        "the gradient vanishes when saturated",
        f"unscaled, 1 - p_y: median {_e(ca[dk0]['median'])} (d_k={dk0}) -> "
        f"{_e(ca[dk1]['median'])} (d_k={dk1}); mean {_e(ca[dk1]['mean'])}; "
        f"fraction < {LEVEL:g} {_p(ca[dk1]['below'])}",
        f"d_k={dk1}: median 1 - p_y < 1e-6 and < 1e-3 x its d_k={dk0} value (4 SE)",
        judge_ce_right(ca[dk0], ca[dk1]),
        {"ce_grad_target": {str(d): ca[d] for d in D_K}}))

    # 6. CE, wrong
    sr = ds(dk1, False, "random")
    cr = measures(sr["ce_grad_target"])
    nm = est_quantile(sr["ce_grad_norm"], 0.5)
    jr = est_quantile(sr["jac_diag_max"], 0.5)
    claims.append(Claim(
        "ce_wrong", "Cross-entropy, model wrong (target random): the gradient stays "
        "near 1 (norm near sqrt 2) when saturated",
        f"unscaled d_k={dk1} (median jac_diag_max {_e(jr)}): 1 - p_y median "
        f"{_f(cr['median'])}, mean {_f(cr['mean'])}; |grad| median {_f(nm)} "
        f"(sqrt 2 = 1.4142)",
        "1 - p_y: median and mean > 0.9; median |p - e_y| within 5% of sqrt 2 (4 SE)",
        judge_ce_wrong(cr, nm),
        {"ce_grad_target": cr, "ce_grad_norm_median": nm}))

    # 7. the scale sweep
    gm = [est_quantile(s["jac_diag_max"], 0.5) for _, s in S["gaussian"]]
    gx = [p["scale"] / p["temperature"] for p, _ in S["gaussian"]]
    cg = crossing(gx, gm)
    dm = [m[d]["median"] for d in D_K]
    cd = crossing([math.sqrt(d) for d in D_K], dm)
    ev = (f"N(0, sigma^2) logits, sigma = {gx[0]:g}..{gx[-1]:g}: median < {LEVEL:g} from "
          f"sigma* = {cg['x']:.3g} (between {cg['x_lo']:.3g} and {cg['x_hi']:.3g}; "
          f"temperature 1/sigma* = {1 / cg['x']:.3g})" if cg else
          f"median never falls below {LEVEL:g} for sigma = {gx[0]:g}..{gx[-1]:g}")
    ev += (f"; unscaled d_k sweep: d_k* = {cd['x'] ** 2:.4g}, sqrt = {cd['x']:.3g}" if cd else
           f"; the d_k sweep never crosses {LEVEL:g}")
    claims.append(Claim(
        "scale", "Saturation is set by the logit scale: Gaussian logits cross "
        f"median jac_diag_max = {LEVEL:g} at sigma* = sqrt(d_k*) of the unscaled sweep",
        ev,
        "both sweeps cross 1e-6 (points beyond 4 SE on each side); sigma*/sqrt(d_k*) "
        "within 10% of 1",
        judge_scale(cg, cd),
        {"gaussian_crossing": cg, "dk_crossing": cd,
         "gaussian_median": {f"{x:.6g}": e for x, e in zip(gx, gm)}}))
    return claims


def _sci(x):
    return f"{x:.0e}".replace("e+0", "e").replace("e+", "e")


def _e(est):
    return f"{est.value:.3g} ± {est.se:.1g}"


def _f(est):
    return f"{est.value:.4f} ± {est.se:.1g}"


def _p(est):
    return f"{est.value:.3f} ± {est.se:.1g}" if est.value else "0"


# --------------------------------------------------------------------------
# report

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


# --------------------------------------------------------------------------
# files

def write_outputs(res, out):
    """Tables (CSV and Parquet), summary.json and the PNG plots into ``out``."""
    from . import plot
    os.makedirs(out, exist_ok=True)
    written = []
    for name, df in res.tables.items():
        for ext in ("csv", "parquet"):
            path = os.path.join(out, f"{name}.{ext}")
            if ext == "csv":
                df.to_csv(path, index=False)
            else:
                df.to_parquet(path, index=False)
            written.append(path)
    path = os.path.join(out, "summary.json")            # what --json prints
    with open(path, "w") as f:
        f.write(res.to_json())
        f.write("\n")
    written.append(path)
    # every point's full Summary (sketches included: any quantile can be
    # recomputed later with fs.Summary.from_dict), compact and gzipped
    import gzip
    path = os.path.join(out, "summaries.json.gz")
    with gzip.open(path, "wt", compresslevel=6) as f:
        json.dump(res.to_dict(summaries=True)["summaries"], f, allow_nan=False,
                  separators=(",", ":"))
    written.append(path)
    written.extend(plot.verify_plots(res, out))
    return written
