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

The package: :mod:`.claims` (estimates, pure judge functions, the claims),
:mod:`.report` (the text report), :mod:`.outputs` (the files of ``--out``);
this module plans and runs the experiments (:func:`prepare`, :func:`run`).
"""
import dataclasses
import json
import os
import time

import numpy as np

from .. import api, models
from .._inputs import check_samples, check_seed
from .._util import jsonable, progress_bar
from .._version import __version__
from ..sweep import Plan
from .claims import *  # noqa: F401,F403  (the criteria are part of the module's API)
from .claims import (D_K, DEFAULT_SAMPLES, LEVEL, LITERAL, N, OFFSETS, SCALES, TARGETS, Z, Check,
                     Claim, Est,
                     _claims)
from .outputs import write_outputs
from .report import format_report

__all__ = ["run", "prepare", "Experiment", "VerifyResult", "Claim", "Check", "Est",
           "DEFAULT_SAMPLES", "write_outputs", "format_report"]


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
        d = dict(meta=jsonable(self.meta), claims=[c.to_dict() for c in self.claims],
                 literal=jsonable(self.literal))
        if tables:
            d["tables"] = {k: jsonable(v.to_dict("records")) for k, v in self.tables.items()}
        if summaries:
            d["summaries"] = {k: [dict(point=jsonable(p), summary=s.to_dict()) for p, s in v]
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


# --------------------------------------------------------------------------
# the experiments

def _literal():
    x = np.array(LITERAL)
    p = api.softmax(x)
    jac = np.diag(p) - np.outer(p, p)
    out = {}
    variants = (("literal", x), ("shifted", x - 100.0),
                ("spread_x10", 100.0 + 10.0 * (x - 100.0)))
    for name, v in variants:
        obs = api.observables(v[None, :])
        out[name] = dict(x=v.tolist(), p=api.softmax(v).tolist(),
                         **{k: float(obs[k][0]) for k in ("jac_diag_max", "jac_offdiag_max",
                                                          "jac_fro", "entropy",
                                                          "log10_jac_diag_max")})
    out["literal"]["jacobian"] = jac.tolist()
    return out


class Experiment:
    """A validated ``verify`` run (nothing has run yet): its plans, one per
    sweep of points.  :meth:`run` executes it."""

    def __init__(self, samples=DEFAULT_SAMPLES, seed=0, backend="auto", out=None):
        self.samples = check_samples(samples)
        self.seed = check_seed(seed)
        self.backend = api.resolve_backend(backend)      # ValueError / RuntimeError now
        if out is not None:
            out = os.fspath(out)
            if os.path.exists(out) and not os.path.isdir(out):
                raise NotADirectoryError(f"out={out!r} exists and is not a directory")
        self.out = out
        common = dict(samples=self.samples, seed=self.seed, backend=backend)
        self.plans = []
        for target in TARGETS:
            self.plans.append(("dotproduct", target, Plan(
                models.DotProduct, {"d_k": list(D_K), "scaled": [False, True]},
                fixed={"n": N}, target=target, **common)))
        self.plans.append(("shifted", "argmax", Plan(
            models.Shifted, {"offset": list(OFFSETS)}, fixed={"n": N, "spread": 1.0},
            dtype="float64", **common)))
        self.plans.append(("gaussian", "argmax", Plan(
            models.Gaussian, {"scale": list(SCALES)}, fixed={"n": N}, **common)))
        self.points = sum(len(p.points) for _, _, p in self.plans)

    def run(self, progress=True, client=None):
        """Run every experiment and judge every claim; a :class:`VerifyResult`."""
        import numba
        import pandas as pd
        bar = progress_bar(progress, self.points * self.samples, "verify")
        t0 = time.perf_counter()
        frames, summaries = {}, {}
        try:
            for name, target, plan in self.plans:
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
        tables = {k: pd.concat(v, ignore_index=True) if len(v) > 1 else v[0]
                  for k, v in frames.items()}
        literal = _literal()
        tables["literal"] = pd.DataFrame([dict(vector=k, **{c: json.dumps(v)
                                                            if isinstance(v, list) else v
                                                            for c, v in d.items()})
                                          for k, d in literal.items()])
        meta = dict(version=__version__, samples=self.samples, seed=self.seed,
                    backend=self.backend, threads=numba.get_num_threads(), points=self.points,
                    seconds=seconds, n=N, d_k=list(D_K), offsets=list(OFFSETS),
                    scales=list(SCALES), z=Z, level=LEVEL)
        claims = _claims(summaries, literal)
        tables["verdicts"] = pd.DataFrame([dict(key=c.key, claim=c.claim, evidence=c.evidence,
                                                verdict=c.verdict, criterion=c.criterion)
                                           for c in claims])
        result = VerifyResult(claims, literal, tables, summaries, meta)
        if self.out is not None:
            write_outputs(result, self.out)
        return result


def prepare(samples=DEFAULT_SAMPLES, seed=0, backend="auto", out=None):
    """A validated :class:`Experiment`: every argument checked, nothing run."""
    return Experiment(samples, seed, backend, out)


def run(samples=DEFAULT_SAMPLES, seed=0, backend="auto", out=None, progress=True, client=None):
    """Run every experiment and judge every claim; a :class:`VerifyResult`.

    Parameters
    ----------
    samples : int, default 500,000
        Logit vectors per point (66 points).
    seed : int, default 0
        One seed for every point (common random numbers).
    backend : {"auto", "cpu", "cuda"}, default "auto"
    out : str or path, optional
        A directory for the tables (CSV and Parquet), summary.json, the
        points' summaries and the plots (written when given).
    progress : bool or object with ``update(rows)``, default True
        A tqdm bar on stderr.
    client : distributed.Client, optional
        Passed on to every simulation.

    Returns
    -------
    VerifyResult

    Examples
    --------
    >>> from fastsoftmax import verify
    >>> res = verify.run(samples=2000, progress=False)
    >>> sorted(res.verdicts) == sorted(c.key for c in res.claims)
    True
    """
    return prepare(samples, seed, backend, out).run(progress=progress, client=client)
