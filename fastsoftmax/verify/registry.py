r"""How a claim of ``verify`` is declared and judged: :class:`ClaimSpec`, :class:`Claim`.

A claim is one declarative entry, a :class:`ClaimSpec`: its key, its
statement and criterion in words, the experiments and the laws' predictions
it needs, and three functions of the run: ``pick`` (the run's
:class:`Evidence` -> a small typed record of what the claim looks at),
``judge`` (record -> list of :class:`~fastsoftmax.verify.Check`),
``evidence`` (record -> the evidence text) and ``numbers`` (record -> the
estimates behind it, for JSON).  :meth:`ClaimSpec.judge_run` applies them
and returns a :class:`Claim`, whose verdict is :func:`all_of` its checks:
never written in.  This paper's claims are the entries of
:data:`fastsoftmax.verify.CLAIMS` (:mod:`.paper`).

>>> from fastsoftmax.verify import Evidence
>>> Evidence({"shifted": [({"offset": 0.0}, None)]}, {}, {}).has(("shifted",), ())
True
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable, Generic, Mapping, Sequence, TypeVar

from .._util import jsonable
from .criteria import INCONCLUSIVE, Check, all_of

if TYPE_CHECKING:
    from ..summary import Summary

__all__ = ["Evidence", "ClaimSpec", "Claim", "judge_claims"]

R = TypeVar("R")

#: The name under which ``needs`` asks for the literal vectors' exact results.
LITERAL_SOURCE = "literal"


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What a ``verify`` run measured, as the claims read it.

    The claims' ``pick`` functions read the points through :meth:`point`
    and :meth:`points`, the exact results of the literal vectors and the
    laws' predictions (:mod:`fastsoftmax.verify.predict`) through the
    attributes.

    Parameters
    ----------
    summaries : mapping of str to sequence of (dict, Summary)
        Per experiment (``dotproduct``, ``shifted``, ``gaussian``, ``law``,
        ``context``), the (point parameters, Summary) pairs of its points.
    literal : mapping
        The exact results of the literal vectors (``literal``, ``shifted``,
        ``spread_x10``).
    predictions : mapping
        The laws' predictions by name (``claims``, ``context``).

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> from fastsoftmax.verify import Evidence
    >>> s = fs.summarize([[0.0, 1.0, -1.0]])
    >>> ev = Evidence({"shifted": [({"offset": 0.0}, s)]}, {}, {})
    >>> ev.point("shifted", offset=0.0) is s
    True
    """
    summaries: Mapping[str, Sequence[tuple[dict[str, Any], Summary]]]
    literal: Mapping[str, Any]
    predictions: Mapping[str, Any]

    def has(self, needs: Sequence[str], laws: Sequence[str] = ()) -> bool:
        """Whether the run has the experiments ``needs`` and the predictions ``laws``.

        Parameters
        ----------
        needs : sequence of str
            Experiment names (keys of ``summaries``), or ``"literal"`` for
            the literal vectors.
        laws : sequence of str, default ()
            Keys of ``predictions``.

        Returns
        -------
        bool
            True if every one is there.

        Examples
        --------
        >>> from fastsoftmax.verify import Evidence
        >>> Evidence({}, {"literal": {}}, {}).has(["literal"], ["claims"])
        False
        """
        have = set(self.summaries) | ({LITERAL_SOURCE} if self.literal else set())
        return all(n in have for n in needs) and all(self.predictions.get(k) for k in laws)

    def points(self, experiment: str) -> list[tuple[dict[str, Any], Summary]]:
        """The (point parameters, Summary) pairs of an experiment, in its grid order.

        Parameters
        ----------
        experiment : str
            Its name (``"dotproduct"``, ...).

        Returns
        -------
        list of (dict, Summary)
            The points.

        Examples
        --------
        >>> from fastsoftmax.verify import Evidence
        >>> Evidence({"law": [({"scale": 49.2}, None)]}, {}, {}).points("law")[0][0]
        {'scale': 49.2}
        """
        return list(self.summaries[experiment])

    def point(self, experiment: str, **params: Any) -> Summary:
        """The Summary of the first point of ``experiment`` with these parameters.

        Parameters
        ----------
        experiment : str
            Its name.
        **params
            Parameter values the point must have (``d_k=64, scaled=False``).

        Returns
        -------
        Summary
            The point's Summary.

        Raises
        ------
        KeyError
            No such point.

        Examples
        --------
        >>> from fastsoftmax.verify import Evidence
        >>> Evidence({"law": []}, {}, {}).point("law", d_k=1)
        Traceback (most recent call last):
        ...
        KeyError: "no law point with {'d_k': 1}"
        """
        for p, s in self.summaries[experiment]:
            if all(p.get(k) == v for k, v in params.items()):
                return s
        raise KeyError(f"no {experiment} point with {params}")


@dataclasses.dataclass(frozen=True)
class ClaimSpec(Generic[R]):
    """One claim of ``verify``, declared: what it says, needs, and how it is judged.

    Adding a claim is one entry of :data:`fastsoftmax.verify.CLAIMS`:
    ``pick`` reads what the claim needs from the run into a record of the
    claim's own type ``R``, and ``judge``, ``evidence`` and ``numbers`` are
    functions of that record only.

    Parameters
    ----------
    key : str
        Short name (``"paper"``): the key of :attr:`VerifyResult.verdicts`.
    statement : str
        The claim, in words.
    criterion : str
        Its criterion, in words (printed under the report's table).
    needs : tuple of str
        The experiments it reads (``"dotproduct"``, ...; ``"literal"``): the
        claim is judged only in runs that have them.
    pick : callable
        ``pick(evidence) -> R``: the record the claim looks at.
    judge : callable
        ``judge(record) -> list of Check``.
    evidence : callable
        ``evidence(record) -> str``: the measurements behind the verdict,
        with their standard errors.
    numbers : callable
        ``numbers(record) -> dict``: the estimates behind the evidence (made
        JSON-able by :meth:`Claim.to_dict`).
    laws : tuple of str, default ()
        The laws' predictions it needs (keys of ``predictions``).

    See Also
    --------
    Claim : The judged claim.

    Examples
    --------
    >>> from fastsoftmax.verify import ClaimSpec, Evidence
    >>> from fastsoftmax.verify.criteria import Check
    >>> spec = ClaimSpec("one", "one row", "exactly one row", ("x",),
    ...                  pick=lambda ev: len(ev.points("x")),
    ...                  judge=lambda k: [Check("holds" if k == 1 else "fails", f"{k} == 1")],
    ...                  evidence=lambda k: f"{k} row(s)", numbers=lambda k: {"rows": k})
    >>> c = spec.judge_run(Evidence({"x": [({}, None)]}, {}, {}))
    >>> c.key, c.evidence, c.verdict
    ('one', '1 row(s)', 'holds')
    """
    key: str
    statement: str
    criterion: str
    needs: tuple[str, ...]
    pick: Callable[[Evidence], R]
    judge: Callable[[R], list[Check]]
    evidence: Callable[[R], str]
    numbers: Callable[[R], dict[str, Any]]
    laws: tuple[str, ...] = ()

    def applies(self, ev: Evidence) -> bool:
        """Whether the run has what the claim needs.

        Parameters
        ----------
        ev : Evidence
            The run.

        Returns
        -------
        bool
            ``ev.has(self.needs, self.laws)``.

        Examples
        --------
        >>> from fastsoftmax.verify import CLAIMS, Evidence
        >>> CLAIMS[0].applies(Evidence({}, {}, {}))
        False
        """
        return ev.has(self.needs, self.laws)

    def judge_run(self, ev: Evidence) -> Claim:
        """The claim judged on a run: pick, judge, write the evidence.

        Parameters
        ----------
        ev : Evidence
            The run (it must have what the claim needs: :meth:`applies`).

        Returns
        -------
        Claim
            The claim with its evidence, checks and verdict.

        Examples
        --------
        >>> from fastsoftmax.verify import CLAIMS, Evidence
        >>> import fastsoftmax as fs, numpy as np
        >>> from fastsoftmax.registries import JAC_DIAG_MAX
        >>> lit = {k: dict(p=fs.softmax(np.array(x)).tolist(),
        ...                **{JAC_DIAG_MAX.name: float(fs.observables([x])[JAC_DIAG_MAX.name][0])})
        ...        for k, x in [("literal", [100.0, 101.0, 99.0]), ("shifted", [0.0, 1.0, -1.0]),
        ...                     ("spread_x10", [1000.0, 1010.0, 990.0])]}
        >>> p = np.array(lit["literal"]["p"])
        >>> lit["literal"]["jacobian"] = (np.diag(p) - np.outer(p, p)).tolist()
        >>> spec = {s.key: s for s in CLAIMS}["literal"]
        >>> spec.judge_run(Evidence({}, lit, {})).verdict
        'holds'
        """
        rec = self.pick(ev)
        return Claim(self.key, self.statement, self.evidence(rec), self.criterion,
                     self.judge(rec), self.numbers(rec))


@dataclasses.dataclass
class Claim:
    """A claim of ``verify``, the evidence measured and its computed verdict.

    The verdict is never written in: it is :func:`all_of` the checks,
    computed from the measurements by the claim's criterion
    (:meth:`ClaimSpec.judge_run` makes one).

    Parameters
    ----------
    key : str
        Short name, the key of its :class:`ClaimSpec` (``paper``, ``fix``,
        ``literal``, ...: :data:`fastsoftmax.verify.CLAIMS`).
    claim : str
        The claim, in words.
    evidence : str
        The measurements behind the verdict, with standard errors.
    criterion : str
        The criterion, in words.
    checks : list of Check
        The conditions, judged.
    numbers : dict
        The estimates behind the evidence (JSON-able through ``to_dict``).

    See Also
    --------
    VerifyResult : Holds the claims of a run.

    Examples
    --------
    >>> from fastsoftmax.verify import Claim
    >>> from fastsoftmax.verify.criteria import Check
    >>> c = Claim("literal", "[100, 101, 99] keeps healthy gradients", "0.2227",
    ...           "> 0.1", [Check("holds", "jac_diag_max 0.222695 > 0.1")], {})
    >>> c.verdict
    'holds'
    """
    key: str
    claim: str
    evidence: str
    criterion: str
    checks: list[Check]
    numbers: dict[str, Any]

    @property
    def verdict(self) -> str:
        """The claim's verdict, :func:`all_of` its checks: holds, fails or inconclusive."""
        return all_of(self.checks)

    @property
    def rows_needed(self) -> int | None:
        """When inconclusive: the rows per point that would settle its undecided checks.

        The largest of their :attr:`Check.rows_needed`; None when the claim
        is decided or no undecided check knows its count.
        """
        if self.verdict != INCONCLUSIVE:
            return None
        need = [c.rows_needed for c in self.checks
                if c.verdict == INCONCLUSIVE and c.rows_needed is not None]
        return max(need) if need else None

    def to_dict(self) -> dict[str, Any]:
        """The claim as plain JSON types, verdict and checks included.

        Returns
        -------
        dict
            ``key``, ``claim``, ``evidence``, ``criterion``, ``verdict``,
            ``rows_needed`` (:attr:`rows_needed`), ``checks`` (dicts of verdict,
            text and rows needed) and ``numbers``.

        Examples
        --------
        >>> from fastsoftmax.verify import Claim
        >>> from fastsoftmax.verify.criteria import Check
        >>> c = Claim("k", "a claim", "evidence", "criterion", [Check("holds", "x")], {})
        >>> c.to_dict()["checks"]
        [{'verdict': 'holds', 'text': 'x', 'rows_needed': None}]
        """
        return dict(key=self.key, claim=self.claim, evidence=self.evidence,
                    criterion=self.criterion, verdict=self.verdict,
                    rows_needed=self.rows_needed,
                    checks=[dataclasses.asdict(c) for c in self.checks],
                    numbers=jsonable(self.numbers))


def judge_claims(specs: Sequence[ClaimSpec[Any]], ev: Evidence) -> list[Claim]:
    """Every claim of ``specs`` that the run can judge, judged, in order.

    A claim whose experiments or predictions the run lacks
    (:meth:`ClaimSpec.applies`: the context-length claims without
    ``context=True``) is left out.

    Parameters
    ----------
    specs : sequence of ClaimSpec
        The claims (:data:`fastsoftmax.verify.CLAIMS`).
    ev : Evidence
        The run.

    Returns
    -------
    list of Claim
        The judged claims.

    Examples
    --------
    >>> from fastsoftmax.verify import CLAIMS, Evidence, judge_claims
    >>> judge_claims(CLAIMS, Evidence({}, {}, {}))
    []
    """
    return [spec.judge_run(ev) for spec in specs if spec.applies(ev)]
