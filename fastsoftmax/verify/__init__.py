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
   about sqrt(d_k));
8. the saturation law (:mod:`fastsoftmax.theory`, order 1) predicts the
   unscaled sweep's fraction of rows below 1e-6 at each d_k inside its
   stated domain, within its stated accuracy, and inside its exact bounds;
9. it predicts sigma* and d_k*: at the predicted points (two more
   simulations) half the rows are below 1e-6, and the predicted points lie
   where the sweeps' medians cross 1e-6.

With ``context=True`` (``verify --context``) a context-length axis is added:
DotProduct with d_k = 64, scaled and unscaled, n = 16 ... 65,536, rows per
point min(samples, 2^28 / n), judged against the laws of large n:

10. at a fixed scale, longer contexts saturate less: the fraction below
    1e-6 falls with n, as the saturation law predicts where it states an
    accuracy;
11. the random energy model predicts the mean entropy and max_prob against
    n where it states an accuracy (diffuse when scaled, frozen unscaled).

The predictions (:mod:`.predict`) depend only on the experiments'
constants: each is computed once per process.

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
:mod:`.predict` (the laws' predictions), :mod:`.report` (the text report),
:mod:`.outputs` (the files of ``--out``); this module plans and runs the
experiments (:func:`prepare`, :func:`run`).

>>> from fastsoftmax import verify
>>> verify.prepare(samples=1000).points                 # validated, nothing run yet
68
>>> verify.judge_literal(0.222695, 0.222695)[0]
Check(verdict='holds', text='jac_diag_max 0.222695 > 0.1')
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import api, models
from .._inputs import check_samples, check_seed
from .._util import jsonable, progress_bar
from .._version import __version__
from ..sweeps import Plan
from . import claims as _claims_module
from . import predict as _predict
from .claims import *  # noqa: F401,F403  (the criteria are part of the module's API)
from .claims import (CONTEXT_D_K, CONTEXT_LOGITS, CONTEXT_N, D_K, DEFAULT_SAMPLES, LEVEL,
                     LITERAL, N, OFFSETS, SCALES, TARGETS, Z, Claim, _claims)
from .outputs import write_outputs
from .report import format_report

if TYPE_CHECKING:
    import pandas as pd

    from ..summary import Summary

# this module's own names, then the estimates, criteria and constants of .claims
# (write_outputs and format_report are the implementations of run(out=...) and
# VerifyResult.report(): importable, not part of the public API)
__all__ = ["run", "prepare", "Experiment", "VerifyResult", "context_rows"] + \
    _claims_module.__all__

# the points of claims 8-9: the predicted sigma* and d_k*, simulated
LAW_POINTS = 2


def context_rows(n: int, samples: int = DEFAULT_SAMPLES) -> int:
    """Rows per point of the context-length experiment: min(samples, 2^28 / n).

    A fixed budget of ``CONTEXT_LOGITS`` logits per point, so that the whole
    axis (n = 16 ... 65,536, scaled and unscaled) costs about as much as a
    few points of the default experiments.

    Parameters
    ----------
    n : int
        Logits per row.
    samples : int, default 500_000
        The run's samples per point (the cap).

    Returns
    -------
    int
        At least 1.

    Examples
    --------
    >>> from fastsoftmax.verify import context_rows
    >>> [context_rows(n) for n in (16, 1024, 65536)]
    [500000, 262144, 4096]
    """
    return max(1, min(int(samples), CONTEXT_LOGITS // int(n)))


@dataclasses.dataclass
class VerifyResult:
    """What :func:`run` returns: the claims with their verdicts and the data.

    Every verdict is computed from the measurements by the criteria of
    :mod:`fastsoftmax.verify.claims`; the tables and summaries are what the
    verdicts were computed from, and what ``verify --out`` writes.

    Parameters
    ----------
    claims : list of Claim
        The seven claims, in order, each with its evidence, criterion,
        checks and verdict.
    literal : dict
        The exact results for [100, 101, 99] (``literal``), [0, 1, -1]
        (``shifted``) and [1000, 1010, 990] (``spread_x10``): p, the
        Jacobian observables and, for the literal vector, the Jacobian.
    tables : dict of str to pandas.DataFrame
        ``dotproduct``, ``shifted``, ``gaussian`` (one row per point, the
        columns of a sweep), ``literal`` and ``verdicts``.
    summaries : dict of str to list
        Per experiment, the (point parameters, :class:`~fastsoftmax.Summary`)
        pairs of every point.
    meta : dict
        The run's settings: version, samples, seed, backend, threads,
        points, seconds and the experiments' grids.
    predictions : dict, optional
        The laws' predictions the claims were judged against (``claims``:
        the d_k sweep, sigma*, d_k*; ``context``: the context-length axis),
        from :mod:`fastsoftmax.theory`.

    See Also
    --------
    run : Makes one.

    Examples
    --------
    :func:`run` makes one (see its examples); by hand:

    >>> from fastsoftmax.verify import Check, Claim, VerifyResult
    >>> c = Claim("literal", "[100, 101, 99] keeps healthy gradients", "jac_diag_max 0.2227",
    ...           "> 0.1", [Check("holds", "jac_diag_max 0.222695 > 0.1")], {})
    >>> res = VerifyResult([c], literal={}, tables={}, summaries={}, meta={})
    >>> res.verdicts
    {'literal': 'holds'}
    """
    claims: list[Claim]
    literal: dict[str, Any]
    tables: dict[str, pd.DataFrame]
    summaries: dict[str, list[tuple[dict[str, Any], Summary]]]
    meta: dict[str, Any]
    predictions: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def verdicts(self) -> dict[str, str]:
        """Claim key -> verdict (``"holds"``, ``"fails"`` or ``"inconclusive"``)."""
        return {c.key: c.verdict for c in self.claims}

    def to_dict(self, summaries: bool = False, tables: bool = False) -> dict[str, Any]:
        """The result as plain JSON types (what ``verify --json`` prints).

        Parameters
        ----------
        summaries : bool, default False
            Include every point's full Summary (``Summary.to_dict``, sketches
            included: large).
        tables : bool, default False
            Include the tables, as lists of records.

        Returns
        -------
        dict
            ``meta``, ``claims`` (``Claim.to_dict``), ``literal`` and
            ``predictions``, plus ``tables`` and ``summaries`` when asked for.

        Examples
        --------
        >>> from fastsoftmax.verify import Check, Claim, VerifyResult
        >>> c = Claim("literal", "[100, 101, 99] keeps healthy gradients", "jac_diag_max 0.2227",
        ...           "> 0.1", [Check("holds", "jac_diag_max 0.222695 > 0.1")], {})
        >>> res = VerifyResult([c], literal={}, tables={}, summaries={}, meta={"samples": 10})
        >>> d = res.to_dict()
        >>> sorted(d), d["claims"][0]["verdict"]
        (['claims', 'literal', 'meta', 'predictions'], 'holds')
        """
        d = dict(meta=jsonable(self.meta), claims=[c.to_dict() for c in self.claims],
                 literal=jsonable(self.literal), predictions=jsonable(self.predictions))
        if tables:
            d["tables"] = {k: jsonable(v.to_dict("records")) for k, v in self.tables.items()}
        if summaries:
            d["summaries"] = {k: [dict(point=jsonable(p), summary=s.to_dict()) for p, s in v]
                              for k, v in self.summaries.items()}
        return d

    def to_json(self, **kw: Any) -> str:
        """The result as strict JSON text, indented.

        Parameters
        ----------
        **kw
            ``summaries`` and ``tables``, as :meth:`to_dict`.

        Returns
        -------
        str
            ``json.dumps(self.to_dict(**kw), indent=1)``, no NaN/Infinity tokens.

        Examples
        --------
        >>> import json
        >>> from fastsoftmax.verify import Check, Claim, VerifyResult
        >>> c = Claim("literal", "[100, 101, 99] keeps healthy gradients", "jac_diag_max 0.2227",
        ...           "> 0.1", [Check("holds", "jac_diag_max 0.222695 > 0.1")], {})
        >>> res = VerifyResult([c], literal={}, tables={}, summaries={}, meta={"samples": 10})
        >>> json.loads(res.to_json())["meta"]
        {'samples': 10}
        """
        return json.dumps(self.to_dict(**kw), allow_nan=False, indent=1)

    def report(self, width: int = 100) -> str:
        """The text report that ``fastsoftmax verify`` prints.

        The literal vector and its Jacobian, a table of the DotProduct sweep,
        every claim with its evidence and verdict, and the criteria.

        Parameters
        ----------
        width : int, default 100
            Width of the claims table, in characters.

        Returns
        -------
        str
            The report (``str(result)`` is the same).

        Examples
        --------
        >>> from fastsoftmax import verify
        >>> res = verify.run(samples=1000, progress=False)
        >>> print(res.report())                    # doctest: +ELLIPSIS
        fastsoftmax ... verify: 1,000 logit vectors per point, 68 points, seed 0 for all ...
        <BLANKLINE>
        softmax([100, 101, 99]) = [0.244728, 0.665241, 0.090031] ...
        """
        return format_report(self, width)

    def brief(self) -> str:
        """One line per claim: its verdict and the claim (``verify --quiet``).

        Returns
        -------
        str
            ``"<i>. <VERDICT> <claim>"`` lines.

        Examples
        --------
        >>> from fastsoftmax.verify import Check, Claim, VerifyResult
        >>> c = Claim("literal", "[100, 101, 99] keeps healthy gradients", "jac_diag_max 0.2227",
        ...           "> 0.1", [Check("holds", "jac_diag_max 0.222695 > 0.1")], {})
        >>> res = VerifyResult([c], literal={}, tables={}, summaries={}, meta={"samples": 10})
        >>> print(res.brief())
        1. HOLDS        [100, 101, 99] keeps healthy gradients
        """
        return "\n".join(f"{i}. {c.verdict.upper():<12} {c.claim}"
                         for i, c in enumerate(self.claims, 1))

    def __str__(self) -> str:
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
    """A validated ``verify`` run, nothing run yet: its plans, one per sweep.

    The experiments: the DotProduct sweep over d_k (``D_K``), scaled and
    unscaled, for each target of ``TARGETS``; the Shifted sweep over
    ``OFFSETS`` (float64); the Gaussian sweep over ``SCALES``; the two points
    where the saturation law puts sigma* and d_k* (planned when the law is
    evaluated, at the start of :meth:`run`); all with n = ``N`` and one seed
    (common random numbers), 68 points in all.  With ``context=True``, the
    context-length axis too: DotProduct(n, d_k=``CONTEXT_D_K``), scaled and
    unscaled, for n in ``CONTEXT_N``, with :func:`context_rows` rows each
    (14 points more).  :meth:`run` executes them and judges the claims.

    Parameters
    ----------
    samples : int, default 500_000
        Logit vectors per point (>= 1).
    seed : int, default 0
        One seed for every point.
    backend : {"auto", "cpu", "cuda"}, default "auto"
        As :func:`fastsoftmax.simulate`.
    out : str or path, optional
        A directory for the outputs (created when the run writes them).
    context : bool, default False
        Add the context-length experiment (claims 10 and 11).

    Attributes
    ----------
    plans : list of tuple
        (experiment name, target, :class:`fastsoftmax.sweeps.Plan`) per sweep.
    points : int
        The number of points of all plans, the two of the law included.

    Raises
    ------
    TypeError, ValueError
        Bad ``samples``, ``seed``, ``backend`` or ``context``.
    RuntimeError
        ``backend="cuda"`` without a usable GPU.
    NotADirectoryError
        ``out`` exists and is not a directory.

    See Also
    --------
    prepare : Builds one.

    Examples
    --------
    >>> from fastsoftmax.verify import Experiment
    >>> e = Experiment(samples=1000)
    >>> e.points, [(name, target) for name, target, _ in e.plans]
    (68, [('dotproduct', 'argmax'), ('dotproduct', 'random'), ('dotproduct', 'sampled'), \
('shifted', 'argmax'), ('gaussian', 'argmax')])
    >>> Experiment(samples=1000, context=True).points
    82
    """

    def __init__(self, samples: int = DEFAULT_SAMPLES, seed: int = 0, backend: str = "auto",
                 out: Any = None, context: bool = False) -> None:
        self.samples = check_samples(samples)
        self.seed = check_seed(seed)
        if not isinstance(context, (bool, np.bool_)):
            raise TypeError(f"context must be True or False, got {context!r}")
        self.context = bool(context)
        self.backend = api.resolve_backend(backend)      # ValueError / RuntimeError now
        if out is not None:
            out = os.fspath(out)
            if os.path.exists(out) and not os.path.isdir(out):
                raise NotADirectoryError(f"out={out!r} exists and is not a directory")
        self.out = out
        common: dict[str, Any] = dict(samples=self.samples, seed=self.seed, backend=backend)
        self.plans: list[tuple[str, str, Plan]] = []
        for target in TARGETS:
            self.plans.append(("dotproduct", target, Plan(
                models.DotProduct, {"d_k": list(D_K), "scaled": [False, True]},
                fixed={"n": N}, target=target, **common)))
        self.plans.append(("shifted", "argmax", Plan(
            models.Shifted, {"offset": list(OFFSETS)}, fixed={"n": N, "spread": 1.0},
            dtype="float64", **common)))
        self.plans.append(("gaussian", "argmax", Plan(
            models.Gaussian, {"scale": list(SCALES)}, fixed={"n": N}, **common)))
        self.context_plans: list[Plan] = []
        if self.context:
            for n in CONTEXT_N:
                self.context_plans.append(Plan(
                    models.DotProduct, {"scaled": [False, True]},
                    fixed={"n": n, "d_k": CONTEXT_D_K},
                    **dict(common, samples=context_rows(n, self.samples))))
        self.points = sum(len(p.points) for _, _, p in self.plans) + LAW_POINTS + \
            sum(len(p.points) for p in self.context_plans)
        self.rows = sum(len(p.points) * p.samples for _, _, p in self.plans) + \
            LAW_POINTS * self.samples + sum(len(p.points) * p.samples for p in self.context_plans)

    def run(self, progress: Any = True, client: Any = None) -> VerifyResult:
        """Run every experiment and judge every claim.

        Parameters
        ----------
        progress : bool or object with ``update(rows)``, default True
            One tqdm bar over all points, or the caller's own bar.
        client : distributed.Client, optional
            Passed on to every simulation.

        Returns
        -------
        VerifyResult
            The claims, tables, summaries and settings; with ``out``, the
            files are written too.

        Examples
        --------
        >>> from fastsoftmax.verify import prepare
        >>> res = prepare(samples=1000).run(progress=False)
        >>> res.verdicts["ce_wrong"]
        'holds'
        """
        import numba
        import pandas as pd
        bar = progress_bar(progress, self.rows, "verify")
        t0 = time.perf_counter()
        frames: dict[str, list[pd.DataFrame]] = {}
        summaries: dict[str, list[tuple[dict[str, Any], Summary]]] = {}
        predictions: dict[str, Any] = {}
        context_seconds = 0.0
        common: dict[str, Any] = dict(samples=self.samples, seed=self.seed,
                                      backend=self.backend)

        def run_plans(plans):
            for name, target, plan in plans:
                got: list[tuple[Any, Summary]] = []
                df = plan.run(progress=bar if bar is not None else False, client=client,
                              on_point=lambda p, s: got.append((p, s)))
                frames.setdefault(name, []).append(df)
                summaries.setdefault(name, []).extend(
                    (dict(p.model.params, target=target), s) for p, s in got)

        try:
            run_plans(self.plans)
            # the law's sigma* and d_k* (evaluated once per process), simulated
            t1 = time.perf_counter()
            pc = _predict.claim_predictions()
            predictions["claims"] = pc
            theory_seconds = time.perf_counter() - t1
            run_plans([("law", "argmax", Plan(models.Gaussian, {"scale": [pc["sigma_star"]]},
                                              fixed={"n": N}, **common)),
                       ("law", "argmax", Plan(models.DotProduct, {"d_k": [pc["dk_point"]]},
                                              fixed={"n": N, "scaled": False}, **common))])
            if self.context:
                t1 = time.perf_counter()
                predictions["context"] = _predict.context_predictions()
                theory_seconds += time.perf_counter() - t1
                t1 = time.perf_counter()
                run_plans([("context", "argmax", p) for p in self.context_plans])
                context_seconds = time.perf_counter() - t1
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
                    seconds=seconds, theory_seconds=theory_seconds, n=N, d_k=list(D_K),
                    offsets=list(OFFSETS), scales=list(SCALES), z=Z, level=LEVEL,
                    law_order=_predict.ORDER, context=self.context)
        if self.context:
            meta.update(context_n=list(CONTEXT_N), context_d_k=CONTEXT_D_K,
                        context_rows={str(p.points[0].model.n): p.samples
                                      for p in self.context_plans},
                        context_points=sum(len(p.points) for p in self.context_plans),
                        context_seconds=context_seconds)
        claims = _claims(summaries, literal, predictions)
        tables["verdicts"] = pd.DataFrame([dict(key=c.key, claim=c.claim, evidence=c.evidence,
                                                verdict=c.verdict, criterion=c.criterion)
                                           for c in claims])
        result = VerifyResult(claims, literal, tables, summaries, meta, predictions)
        if self.out is not None:
            write_outputs(result, self.out)
        return result


def prepare(samples: int = DEFAULT_SAMPLES, seed: int = 0, backend: str = "auto",
            out: Any = None, context: bool = False) -> Experiment:
    """A validated :class:`Experiment`: every argument checked, nothing run.

    ``prepare(...).run(...)`` is :func:`run`; the CLI calls the two steps to
    report bad arguments apart from failures while running.

    Parameters
    ----------
    samples : int, default 500_000
        Logit vectors per point (68 points; the context-length points
        have at most this many, :func:`context_rows`).
    seed : int, default 0
        One seed for every point (common random numbers).
    backend : {"auto", "cpu", "cuda"}, default "auto"
        As :func:`fastsoftmax.simulate`.
    out : str or path, optional
        A directory for the outputs.
    context : bool, default False
        Add the context-length experiment (14 points).

    Returns
    -------
    Experiment
        Its :meth:`Experiment.run` runs it.

    Raises
    ------
    TypeError, ValueError
        Bad ``samples``, ``seed``, ``backend`` or ``context``.
    RuntimeError
        ``backend="cuda"`` without a usable GPU.
    NotADirectoryError
        ``out`` exists and is not a directory.

    Examples
    --------
    >>> from fastsoftmax.verify import prepare
    >>> prepare(samples=1000).points
    68
    >>> prepare(samples=0)
    Traceback (most recent call last):
    ...
    ValueError: samples must be >= 1, got 0
    """
    return Experiment(samples, seed, backend, out, context)


def run(samples: int = DEFAULT_SAMPLES, seed: int = 0, backend: str = "auto", out: Any = None,
        progress: Any = True, client: Any = None, context: bool = False) -> VerifyResult:
    """Run every experiment of ``verify`` and judge every claim.

    The claims of the module docstring, measured: 68 points of the
    DotProduct, Shifted and Gaussian models with one seed, and a verdict
    per claim computed by the criteria of :mod:`fastsoftmax.verify.claims`
    (holds beyond 4 standard errors, fails if contradicted beyond 4,
    inconclusive otherwise); claims 8 and 9 against the saturation law of
    :mod:`fastsoftmax.theory` (needs SciPy), within its stated accuracy.

    Parameters
    ----------
    samples : int, default 500_000
        Logit vectors per point (68 points; the context-length points
        have at most this many, :func:`context_rows`).
    seed : int, default 0
        One seed for every point (common random numbers).
    backend : {"auto", "cpu", "cuda"}, default "auto"
        As :func:`fastsoftmax.simulate`.
    out : str or path, optional
        A directory for the tables (CSV and Parquet), summary.json, the
        points' summaries and the plots (written when given).
    progress : bool or object with ``update(rows)``, default True
        A tqdm bar on stderr.
    client : distributed.Client, optional
        Passed on to every simulation.
    context : bool, default False
        Add the context-length experiment (claims 10 and 11; about 10 s on
        two cores at the default samples).

    Returns
    -------
    VerifyResult
        The claims with their verdicts, the tables, every point's Summary,
        the laws' predictions and the run's settings.

    Raises
    ------
    TypeError, ValueError
        Bad ``samples``, ``seed``, ``backend`` or ``context``.
    RuntimeError
        ``backend="cuda"`` without a usable GPU.
    NotADirectoryError
        ``out`` exists and is not a directory.

    See Also
    --------
    prepare : The same checks, nothing run.
    VerifyResult.report : The text report.

    Examples
    --------
    >>> from fastsoftmax import verify
    >>> res = verify.run(samples=1000, progress=False)
    >>> [c.key for c in res.claims]     # doctest: +NORMALIZE_WHITESPACE
    ['paper', 'fix', 'literal', 'offset', 'ce_right', 'ce_wrong', 'scale', 'law_dk',
     'law_scale']
    >>> res.verdicts["paper"], res.verdicts["literal"]
    ('holds', 'holds')
    >>> sorted(res.tables)
    ['dotproduct', 'gaussian', 'law', 'literal', 'shifted', 'verdicts']
    >>> res.meta["samples"], res.meta["points"], len(res.summaries["dotproduct"])
    (1000, 68, 42)
    >>> round(res.predictions["claims"]["sigma_star"], 2)
    49.23
    """
    return prepare(samples, seed, backend, out, context).run(progress=progress, client=client)
