r"""``fastsoftmax verify``: the "Attention Is All You Need" question, measured.

Runs the claims of :data:`CLAIMS` as experiments and computes a verdict for
each from the measurements, with criteria stated in small pure functions
(never a verdict written in).  The claims, in the report's order, are listed
at the end of this docstring (written from :data:`CLAIMS`); the ones marked
``--context`` need ``context=True`` (``verify --context``), which adds a
context-length axis: DotProduct with d_k = ``CONTEXT_D_K``, scaled and
unscaled, n in ``CONTEXT_N``, rows per point :func:`context_rows`, judged
against the laws of large n.

The predictions (:mod:`.predict`, the laws of :mod:`fastsoftmax.theory`)
depend only on the experiments' constants (:mod:`.constants`): each is
computed once per process.

All points use one seed (common random numbers).  Standard errors: the
``sem`` of a mean; for a median, the order-statistic one (the spread of the
quantiles at 0.5 +- sqrt(0.25/N)), never below the sketch's 1% resolution; for
a fraction, the binomial sqrt(p(1-p)/N) (Wilson bounds).  A difference
between two points is judged against Z (SE_a + SE_b), valid whatever the
correlation that common random numbers introduce.

Verdicts, one rule (:func:`fastsoftmax.verify.criteria.describe`): "holds"
when the whole Z = 4 standard-error interval of every measurement lies inside
the band its claim states, "fails" when one lies wholly outside,
"inconclusive" otherwise, with the rows per point that would settle it.  A
run without ``samples`` plans them: 500,000 rows per point, and at the points
the laws' claims judge the rows their stated accuracy needs
(:attr:`Experiment.rows_per_point`).

The package, top down: this module plans and runs the experiments
(:func:`prepare`, :func:`run`); :mod:`.report` (the text report) and
:mod:`.outputs` (the files of ``--out``); :mod:`.paper` (the registry
:data:`CLAIMS`: one :class:`ClaimSpec` per claim); :mod:`.registry` (how a
claim is declared and judged), ``_judges`` (the paper's judges, private) and
:mod:`.predict` (the laws' predictions, the planned rows); the public
:mod:`fastsoftmax.verify.criteria` (the rule, the criteria -> ``Check``, and
the estimates of :mod:`.stats`); :mod:`.constants` (the grids and settings).

>>> from fastsoftmax import verify
>>> verify.prepare(samples=1000).points                 # validated, nothing run yet
68
>>> from fastsoftmax.verify import criteria
>>> criteria.above(criteria.Est.exact(0.222695), 0.1, "max_i p_i (1 - p_i)")
Check(verdict='holds', text='max_i p_i (1 - p_i) 0.223 > 0.1')
"""
from __future__ import annotations

import dataclasses
import json
import os
import textwrap
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import api, models
from .._inputs import check_samples, check_seed
from .._util import jsonable, progress_bar
from .._version import __version__
from ..registries import ENTROPY, JAC_DIAG_MAX, JAC_FRO, JAC_OFFDIAG_MAX
from ..sweeps import Plan
from . import constants
from . import predict as _predict
from . import criteria
from .constants import DEFAULT_SAMPLES
from .outputs import write_outputs
from .paper import CLAIMS, claim_number
from .registry import Claim, ClaimSpec, Evidence, judge_claims
from .report import format_report

if TYPE_CHECKING:
    import pandas as pd

    from ..summary import Summary

# (write_outputs and format_report are the implementations of run(out=...) and
# VerifyResult.report(): importable, not part of the public API; the grids are
# fastsoftmax.verify.constants.N, ...; what a claim of one's own needs is the
# public submodule fastsoftmax.verify.criteria)
__all__ = ["run", "prepare", "VerifyResult", "CLAIMS", "ClaimSpec", "Claim", "Evidence",
           "judge_claims"]

# names that left this namespace: the criteria and estimates (now in
# fastsoftmax.verify.criteria) and the paper's judges (private)
_MOVED = {name: "criteria" for name in (
    "Check", "LawPoint", "below", "above", "ratio_below", "drop", "within_factor", "close",
    "near", "same", "all_of", "judge_band", "judge_prediction", "judge_law", "crossing",
    "HOLDS", "FAILS", "INCONCLUSIVE", "Est", "est_mean", "est_log10_mean", "est_quantile",
    "est_fraction", "measures")}
_MOVED.update({name: "_judges" for name in (
    "judge_saturation", "judge_flat", "judge_literal", "judge_shift", "judge_ce_right",
    "judge_ce_wrong", "judge_scale", "judge_critical")})


def __getattr__(name: str) -> Any:
    """The names that left ``fastsoftmax.verify``: still there, with a DeprecationWarning."""
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _moved(f"{__name__}.{name}", name, home)


def _moved(old: str, name: str, home: str) -> Any:
    """``name`` of the submodule ``home``, asked for by its 0.2.0 spelling
    ``old`` (this namespace, or the 0.2.0 module ``judges``): warns once
    per place of call, naming where it went and when the old one goes."""
    import importlib
    import warnings
    if home == "criteria":
        msg = (f"{old} moved to fastsoftmax.verify.criteria.{name}; "
               "the old name is removed in 0.4.0")
    else:
        msg = (f"{old} is one of the paper's judges, private from 0.3.0; "
               "the name is removed in 0.4.0 (write a claim with fastsoftmax.verify.criteria)")
    warnings.warn(msg, DeprecationWarning, stacklevel=3)
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


def _claims_doc() -> str:
    """The claims of :data:`CLAIMS` as the numbered list of this module's docstring."""
    lines = ["The claims:", ""]
    for i, spec in enumerate(CLAIMS, 1):
        ctx = "; needs ``--context``" if "context" in spec.needs else ""
        lines.extend(textwrap.wrap(f"{i}. {spec.statement} (``{spec.key}``{ctx}).", 76,
                                   subsequent_indent=" " * (len(str(i)) + 2)))
    return "\n".join(lines) + "\n"


__doc__ = (__doc__ or "") + "\n" + _claims_doc()

# the points of the law's claims: the predicted sigma* and d_k*, simulated
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
    return max(1, min(int(samples), constants.CONTEXT_LOGITS // int(n)))


@dataclasses.dataclass
class VerifyResult:
    """What :func:`run` returns: the claims with their verdicts and the data.

    Every verdict is computed from the measurements by the judges of the
    claims of :data:`CLAIMS`; the tables and summaries are what the verdicts
    were computed from, and what ``verify --out`` writes.

    Parameters
    ----------
    claims : list of Claim
        The claims of :data:`CLAIMS` the run could judge, in that order,
        each with its evidence, criterion, checks and verdict.
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

    >>> from fastsoftmax.verify import Claim, VerifyResult
    >>> from fastsoftmax.verify.criteria import Check
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
        >>> from fastsoftmax.verify import Claim, VerifyResult
        >>> from fastsoftmax.verify.criteria import Check
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
        >>> from fastsoftmax.verify import Claim, VerifyResult
        >>> from fastsoftmax.verify.criteria import Check
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
        A run's report (the README shows a whole one; the example is not run
        here, the tests run ``verify`` once):

        >>> from fastsoftmax import verify
        >>> res = verify.run(samples=1000, progress=False)     # doctest: +SKIP
        >>> print(res.report())                    # doctest: +SKIP
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
        >>> from fastsoftmax.verify import Claim, VerifyResult
        >>> from fastsoftmax.verify.criteria import Check
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
    x = np.array(constants.LITERAL)
    p = api.softmax(x)
    jac = np.diag(p) - np.outer(p, p)
    out = {}
    variants = (("literal", x), ("shifted", x - 100.0),
                ("spread_x10", 100.0 + 10.0 * (x - 100.0)))
    for name, v in variants:
        obs = api.observables(v[None, :])
        out[name] = dict(x=v.tolist(), p=api.softmax(v).tolist(),
                         **{k: float(obs[k][0]) for k in (JAC_DIAG_MAX.name, JAC_OFFDIAG_MAX.name,
                                                          JAC_FRO.name, ENTROPY.name,
                                                          f"log10_{JAC_DIAG_MAX.name}")})
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
    samples : int, optional
        Logit vectors per point (>= 1), everywhere.  None (the default):
        500,000 per point (``DEFAULT_SAMPLES``) and, at the points the laws'
        claims judge, the rows those claims need to resolve the accuracy
        the law states there, planned from the law's prediction
        (:attr:`rows_per_point`; about 41 million rows in all).
    seed : int, default 0
        One seed for every point.
    backend : {"auto", "cpu", "cuda"}, default "auto"
        As :func:`fastsoftmax.simulate`.
    out : str or path, optional
        A directory for the outputs (created when the run writes them).
    context : bool, default False
        Add the context-length experiment (and the claims that need it).

    Attributes
    ----------
    plans : list of tuple
        (experiment name, target, :class:`fastsoftmax.sweeps.Plan`) per sweep.
    points : int
        The number of points of all plans, the two of the law included.
    rows : int
        The logit vectors of all points.
    planned : bool
        Whether the law points' rows were planned (``samples=None``).
    rows_per_point : dict of str to int
        The planned law points' rows (``"d_k=1024"``, ``"sigma*"``,
        ``"d_k*"``); empty when ``samples`` was given.

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

    def __init__(self, samples: int | None = None, seed: int = 0, backend: str = "auto",
                 out: Any = None, context: bool = False) -> None:
        self.planned = samples is None
        self.samples = DEFAULT_SAMPLES if samples is None else check_samples(samples)
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
        # the law points' rows: planned from the laws (samples=None), else samples
        self.rows_per_point: dict[str, int] = {}
        if self.planned:
            self.rows_per_point = {k: max(v, self.samples)
                                   for k, v in _predict.planned_rows().items()}
        common: dict[str, Any] = dict(samples=self.samples, seed=self.seed, backend=backend)
        self.plans: list[tuple[str, str, Plan]] = []
        for target in constants.TARGETS:
            rows = {d: self.point_rows(f"d_k={d}") if target == "argmax" else self.samples
                    for d in constants.D_K}
            if len(set(rows.values())) == 1:
                self.plans.append(("dotproduct", target, Plan(
                    models.DotProduct, {"d_k": list(constants.D_K), "scaled": [False, True]},
                    fixed={"n": constants.N}, target=target, **common)))
                continue
            # planned: the unscaled points grouped by their rows, the scaled ones at samples
            for k in sorted(set(rows.values())):
                self.plans.append(("dotproduct", target, Plan(
                    models.DotProduct, {"d_k": [d for d in constants.D_K if rows[d] == k],
                                        "scaled": [False]},
                    fixed={"n": constants.N}, target=target, **dict(common, samples=k))))
            self.plans.append(("dotproduct", target, Plan(
                models.DotProduct, {"d_k": list(constants.D_K), "scaled": [True]},
                fixed={"n": constants.N}, target=target, **common)))
        self.plans.append(("shifted", "argmax", Plan(
            models.Shifted, {"offset": list(constants.OFFSETS)},
            fixed={"n": constants.N, "spread": 1.0},
            dtype="float64", **common)))
        self.plans.append(("gaussian", "argmax", Plan(
            models.Gaussian, {"scale": list(constants.SCALES)}, fixed={"n": constants.N},
            **common)))
        self.context_plans: list[Plan] = []
        if self.context:
            for n in constants.CONTEXT_N:
                self.context_plans.append(Plan(
                    models.DotProduct, {"scaled": [False, True]},
                    fixed={"n": n, "d_k": constants.CONTEXT_D_K},
                    **dict(common, samples=context_rows(n, self.samples))))
        self.points = sum(len(p.points) for _, _, p in self.plans) + LAW_POINTS + \
            sum(len(p.points) for p in self.context_plans)
        self.rows = sum(len(p.points) * p.samples for _, _, p in self.plans) + \
            self.point_rows("sigma*") + self.point_rows("d_k*") + \
            sum(len(p.points) * p.samples for p in self.context_plans)

    def point_rows(self, point: str) -> int:
        """The rows of a law point (``"d_k=1024"``, ``"sigma*"``, ``"d_k*"``).

        Parameters
        ----------
        point : str
            The point.

        Returns
        -------
        int
            Its planned rows in a planned run, else ``samples``.

        Examples
        --------
        >>> from fastsoftmax.verify import prepare
        >>> prepare(samples=1000).point_rows("d_k=1024")
        1000
        """
        return self.rows_per_point.get(point, self.samples)

    def describe_plan(self) -> str:
        """The rows per point, as ``verify`` prints them before running.

        Returns
        -------
        str
            One line, and one per planned law point.

        Examples
        --------
        >>> from fastsoftmax.verify import prepare
        >>> print(prepare(samples=1000).describe_plan())
        verify: 1,000 logit vectors per point, 68 points (68,000 in all)
        """
        head = (f"verify: {self.samples:,} logit vectors per point, {self.points} points "
                f"({self.rows:,} in all)")
        if not self.rows_per_point:
            return head
        lines = [head + "; the laws' points planned so that each claim resolves the accuracy "
                 f"it states ({criteria.Z:g} SE at most {criteria.MARGIN:g} of the band):"]
        lines += [f"  {k:>9}: {v:,} rows" for k, v in self.rows_per_point.items()]
        return "\n".join(lines)

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
        >>> exp = prepare(samples=1000)
        >>> exp.rows                                # logit vectors it will draw
        68000
        >>> res = exp.run(progress=False)           # doctest: +SKIP
        >>> res.verdicts["ce_wrong"]                # doctest: +SKIP
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
                                              fixed={"n": constants.N},
                                              **dict(common, samples=self.point_rows("sigma*")))),
                       ("law", "argmax", Plan(models.DotProduct, {"d_k": [pc["dk_point"]]},
                                              fixed={"n": constants.N, "scaled": False},
                                              **dict(common, samples=self.point_rows("d_k*"))))])
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
                    seconds=seconds, theory_seconds=theory_seconds, n=constants.N,
                    d_k=list(constants.D_K), offsets=list(constants.OFFSETS),
                    scales=list(constants.SCALES), z=constants.Z, level=constants.LEVEL,
                    law_order=_predict.ORDER, context=self.context, planned=self.planned,
                    rows_per_point=dict(self.rows_per_point), margin=criteria.MARGIN)
        if self.context:
            meta.update(context_n=list(constants.CONTEXT_N), context_d_k=constants.CONTEXT_D_K,
                        context_rows={str(p.points[0].model.n): p.samples
                                      for p in self.context_plans},
                        context_points=sum(len(p.points) for p in self.context_plans),
                        context_seconds=context_seconds)
        claims = judge_claims(CLAIMS, Evidence(summaries, literal, predictions))
        tables["verdicts"] = pd.DataFrame([dict(key=c.key, claim=c.claim, evidence=c.evidence,
                                                verdict=c.verdict, criterion=c.criterion)
                                           for c in claims])
        result = VerifyResult(claims, literal, tables, summaries, meta, predictions)
        if self.out is not None:
            write_outputs(result, self.out)
        return result


def prepare(samples: int | None = None, seed: int = 0, backend: str = "auto",
            out: Any = None, context: bool = False) -> Experiment:
    """A validated :class:`Experiment`: every argument checked, nothing run.

    ``prepare(...).run(...)`` is :func:`run`; the CLI calls the two steps to
    report bad arguments apart from failures while running.

    Parameters
    ----------
    samples : int, optional
        Logit vectors per point, everywhere (68 points; the context-length
        points have at most this many, :func:`context_rows`).  None (the
        default): 500,000 per point and, at the laws' points, the rows their
        claims need (:class:`Experiment`), planned before running.
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


def run(samples: int | None = None, seed: int = 0, backend: str = "auto", out: Any = None,
        progress: Any = True, client: Any = None, context: bool = False) -> VerifyResult:
    """Run every experiment of ``verify`` and judge every claim.

    The claims of the module docstring, measured: 68 points of the
    DotProduct, Shifted and Gaussian models with one seed, and a verdict
    per claim of :data:`CLAIMS` computed by its judge (holds when every
    measurement's 4-SE interval lies inside the band its claim states, fails
    when one lies wholly outside, inconclusive otherwise, with the rows that
    would settle it); the law's claims against the saturation law of
    :mod:`fastsoftmax.theory` (needs SciPy), within its stated accuracy.

    Parameters
    ----------
    samples : int, optional
        Logit vectors per point, everywhere (68 points; the context-length
        points have at most this many, :func:`context_rows`).  None (the
        default): 500,000 per point and, at the laws' points, the rows their
        claims need (:class:`Experiment`), planned before running.
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
        Add the context-length experiment (and its claims; about 10 s on
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
    The claims it judges, without and with ``context=True`` (what
    :func:`prepare` checks first, nothing run):

    >>> from fastsoftmax import verify
    >>> [s.key for s in verify.CLAIMS if "context" not in s.needs]  # doctest: +NORMALIZE_WHITESPACE
    ['paper', 'fix', 'literal', 'offset', 'ce_right', 'ce_wrong', 'scale', 'law_dk',
     'law_scale']
    >>> [s.key for s in verify.CLAIMS if "context" in s.needs]
    ['context_saturation', 'context_rem']
    >>> verify.prepare(samples=1000).points, verify.prepare(samples=1000, context=True).points
    (68, 82)

    A run (not run here: the tests run ``verify`` once):

    >>> res = verify.run(samples=1000, progress=False)         # doctest: +SKIP
    >>> res.verdicts["paper"], res.verdicts["literal"]          # doctest: +SKIP
    ('holds', 'holds')
    >>> sorted(res.tables)                                      # doctest: +SKIP
    ['dotproduct', 'gaussian', 'law', 'literal', 'shifted', 'verdicts']
    """
    return prepare(samples, seed, backend, out, context).run(progress=progress, client=client)
