r"""``Summary``: what a run hands back, and how two of them merge.

A Summary wraps an :class:`~fastsoftmax.accumulate.Accumulator` and the run's
configuration (:func:`merged_config` says what a merge's configuration is);
``s[name]`` reads one observable as a :class:`~fastsoftmax.Stat`.

>>> import numpy as np, fastsoftmax as fs
>>> s = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))
>>> s.samples, round(s["entropy"].mean, 4)
(200, 1.7425)
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from .._config import DEFAULT_THRESHOLDS, QUANTILES
from .._inputs import check_thresholds
from .._kernels.row import OBS_NAMES
from .._util import jsonable
from ..accumulate import Accumulator
from ._stat import Stat

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Summary", "merged_config"]


def _leaves(config):
    """The configurations of the runs a summary was merged from."""
    if not config:
        return []
    if config.get("source") == "merged":
        return list(config.get("parts", []))
    return [config]


def _rows_overlap(a, b):
    """Do two run configurations share random rows (same seed, overlapping
    row ranges of the Monte Carlo stream)?"""
    if a.get("source") != "simulate" or b.get("source") != "simulate":
        return False
    if a.get("seed") != b.get("seed"):
        return False
    ra = a.get("rows", [0, a.get("samples", 0)])
    rb = b.get("rows", [0, b.get("samples", 0)])
    return ra[0] < rb[1] and rb[0] < ra[1]


def merged_config(a, b):
    """The configuration of the union of two summaries: the distinct leaf
    records, flat however many merges deep (one record stays itself: pieces
    of one array or probe merged back together keep their record).
    ValueError when the two drew the same random rows (their statistics are
    not independent)."""
    la, lb = _leaves(a), _leaves(b)
    for x in la:
        for y in lb:
            if _rows_overlap(x, y):
                raise ValueError(
                    f"cannot merge summaries that drew the same random rows (seed "
                    f"{x['seed']}, rows {x.get('rows')} and {y.get('rows')}): the merged "
                    "standard errors would be too small; simulate with different seeds")
    parts = []
    for p in la + lb:                 # a run's record once, however many of its pieces
        if p not in parts:
            parts.append(p)
    if len(parts) <= 1:
        return dict(parts[0]) if parts else {}
    out: dict[str, Any] = {"source": "merged", "parts": parts}
    if all("samples" in p for p in parts):
        out["samples"] = sum(int(p["samples"]) for p in parts)
    return out


class Summary:
    """Streaming, mergeable summary of the observables over many rows.

    What :func:`fastsoftmax.summarize` and :func:`fastsoftmax.simulate`
    return.  For every observable of ``fastsoftmax.OBS_NAMES`` it holds, in
    memory independent of the number of rows: the count, mean and sum of
    squared deviations of the finite values and of their log10, the min and
    max, the number of infinite values, exact counts below each configured
    threshold and a log-bucket sketch (DDSketch-style) for quantiles.
    ``s[name]`` reads them as a :class:`Stat`; ``s.samples`` is the number of
    rows included, ``s.skipped`` the rows omitted (``nan_policy="omit"``).

    ``Summary()`` (or ``Summary(thresholds=...)``) is an empty summary, the
    identity of :meth:`merge`; the other arguments are what the public
    functions pass.

    Parameters
    ----------
    acc : fastsoftmax.accumulate.Accumulator, optional
        The accumulated statistics (what a backend returns); None (the
        default) for an empty summary.
    config : dict, optional
        The run's record, kept (copied) as :attr:`config`.
    thresholds : sequence of float, default (1e-3, 1e-6, 1e-9)
        The thresholds of an empty summary (ignored when ``acc`` is given:
        an accumulator carries its own).

    Attributes
    ----------
    config : dict
        The run's record: ``source`` (``"array"``, ``"simulate"`` or
        ``"merged"``) and its settings (shape, dtype, axis, target and
        nan_policy of an array; model, parameters, samples, seed, rows,
        target, dtype, backend and thresholds of a simulation, each with the
        fastsoftmax version; ``parts`` and ``samples`` of a merge).

    Raises
    ------
    TypeError
        ``acc`` is not an Accumulator.
    ValueError
        Bad ``thresholds`` (not positive finite numbers).

    See Also
    --------
    Stat : The statistics of one observable.
    fastsoftmax.summarize, fastsoftmax.simulate : What returns a Summary.

    Examples
    --------
    >>> import numpy as np, fastsoftmax as fs
    >>> s = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))
    >>> s.samples, s.skipped, s.thresholds
    (200, 0, (0.001, 1e-06, 1e-09))
    >>> round(s["entropy"].mean, 4)
    1.7425
    >>> fs.Summary().merge(s) == s
    True
    >>> print(s)                                  # doctest: +ELLIPSIS
    Summary(samples=200, skipped=0, config={'source': 'array', ...})
      observable                 mean       sem     median  log10_mean        min        max
      max_prob                0.34695    0.0078 ...
    """

    def __init__(self, acc: Accumulator | None = None, config: dict[str, Any] | None = None, *,
                 thresholds: Sequence[float] = DEFAULT_THRESHOLDS) -> None:
        if acc is None:
            acc = Accumulator(check_thresholds(thresholds))
        elif not isinstance(acc, Accumulator):
            raise TypeError(f"acc must be an Accumulator or None, got {type(acc).__name__}")
        self._acc = acc
        self.config = dict(config or {})

    @property
    def samples(self) -> int:
        """Number of rows included (skipped rows excluded)."""
        return self._acc.count

    @property
    def skipped(self) -> int:
        """Number of rows omitted as bad (NaN, +inf or no finite logit, ``nan_policy="omit"``)."""
        return self._acc.skipped

    @property
    def thresholds(self) -> tuple[float, ...]:
        """The configured thresholds: :meth:`Stat.fraction_below` is exact for these."""
        return tuple(self._acc.thresholds.tolist())

    def keys(self) -> tuple[str, ...]:
        """The observables' names (``fastsoftmax.OBS_NAMES``), as for a dict.

        Returns
        -------
        tuple of str
            Every name of ``fastsoftmax.OBS_NAMES``, in order (one per record
            of ``fastsoftmax.registries.OBSERVABLES``).

        Examples
        --------
        >>> import fastsoftmax as fs
        >>> fs.Summary().keys() == fs.OBS_NAMES
        True
        """
        return OBS_NAMES

    def __getitem__(self, name: str) -> Stat:
        try:
            k = OBS_NAMES.index(name)
        except ValueError:
            raise KeyError(f"unknown observable {name!r}; one of {', '.join(OBS_NAMES)}") from None
        return Stat(self._acc, k, name)

    def __iter__(self) -> Iterator[str]:
        return iter(OBS_NAMES)

    def merge(self, other: Summary) -> Summary:
        r"""A new Summary of the union of both sets of rows.

        Neither argument is modified.  Counts, extremes, threshold counts and
        the sketch add exactly; the moments combine by Chan's formula: with
        counts :math:`n_a, n_b`, means :math:`m_a, m_b` and sums of squared
        deviations :math:`S_a, S_b`,

        .. math::

            n = n_a + n_b, \quad m = m_a + (m_b - m_a) \frac{n_b}{n}, \quad
            S = S_a + S_b + (m_b - m_a)^2 \frac{n_a n_b}{n}.

        The configuration lists the runs merged (flat, however many merges
        deep).  ``a + b`` is ``a.merge(b)``.

        Parameters
        ----------
        other : Summary
            The summary of other rows.

        Returns
        -------
        Summary
            The summary of both sets of rows.

        Raises
        ------
        TypeError
            ``other`` is not a Summary.
        ValueError
            Different thresholds; two Monte Carlo summaries that drew the same
            random rows (same seed, overlapping rows): their statistics are
            not independent and the merged standard errors would be too small.

        Examples
        --------
        >>> import fastsoftmax as fs
        >>> m = fs.models.Gaussian(n=8)
        >>> a = fs.simulate(m, 1000, seed=0)
        >>> b = fs.simulate(m, 1000, seed=1)
        >>> ab = a.merge(b)
        >>> ab.samples, ab.config["source"], len(ab.config["parts"])
        (2000, 'merged', 2)
        >>> a.merge(a)
        Traceback (most recent call last):
        ...
        ValueError: cannot merge summaries that drew the same random rows ...
        """
        if not isinstance(other, Summary):
            raise TypeError(f"cannot merge a Summary with {type(other).__name__}")
        cfg = merged_config(self.config, other.config)
        acc = self._acc.merge(other._acc)
        return Summary(acc, cfg)

    def __add__(self, other: Summary) -> Summary:
        return self.merge(other)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Summary):
            return NotImplemented
        return self._acc == other._acc and self.config == other.config

    def to_dict(self) -> dict[str, Any]:
        """The whole summary as plain JSON types (sketch included).

        Returns
        -------
        dict
            ``{"config": ..., "accumulator": ...}``: every number a JSON
            number, non-finite floats the strings ``"inf"``, ``"-inf"``,
            ``"nan"``, the sketch stored sparsely.  :meth:`from_dict` gives
            the Summary back, equal to this one.

        See Also
        --------
        from_dict, to_json

        Examples
        --------
        >>> import numpy as np, fastsoftmax as fs
        >>> s = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))
        >>> d = s.to_dict()
        >>> sorted(d)
        ['accumulator', 'config']
        >>> fs.Summary.from_dict(d) == s
        True
        """
        return {"config": jsonable(self.config), "accumulator": self._acc.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Summary:
        """The Summary of :meth:`to_dict`'s output.

        Parameters
        ----------
        d : dict
            What :meth:`to_dict` returned (or its JSON, parsed).

        Returns
        -------
        Summary
            Equal to the summary that wrote ``d``.

        Raises
        ------
        ValueError
            Anything else, naming what is wrong (a missing key, counts that
            do not add up, a sketch of another geometry, ...).

        See Also
        --------
        to_dict, from_json

        Examples
        --------
        >>> import fastsoftmax as fs
        >>> fs.Summary.from_dict(fs.Summary().to_dict()).samples
        0
        >>> fs.Summary.from_dict({"config": {}})
        Traceback (most recent call last):
        ...
        ValueError: malformed summary: no 'accumulator'
        """
        if not isinstance(d, dict):
            raise ValueError(f"malformed summary: expected an object, got {type(d).__name__}")
        if "accumulator" not in d:
            raise ValueError("malformed summary: no 'accumulator'")
        cfg = d.get("config", {})
        if not isinstance(cfg, dict):
            raise ValueError("malformed summary: 'config' must be an object")
        return cls(Accumulator.from_dict(d["accumulator"]), cfg)

    def to_json(self, **kw: Any) -> str:
        """The summary as strict JSON text (no NaN/Infinity tokens).

        Parameters
        ----------
        **kw
            Passed on to :func:`json.dumps` (``indent=1``, say).

        Returns
        -------
        str
            ``json.dumps(self.to_dict())``.

        See Also
        --------
        from_json, to_dict

        Examples
        --------
        >>> import numpy as np, fastsoftmax as fs
        >>> s = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))
        >>> text = s.to_json()
        >>> text[:30]
        '{"config": {"source": "array",'
        >>> fs.Summary.from_json(text) == s
        True
        """
        return json.dumps(self.to_dict(), allow_nan=False, **kw)

    @classmethod
    def from_json(cls, s: str | bytes) -> Summary:
        """The Summary of :meth:`to_json`'s text.

        Parameters
        ----------
        s : str or bytes
            JSON text written by :meth:`to_json`.

        Returns
        -------
        Summary
            Equal to the summary that wrote it.

        Raises
        ------
        ValueError
            Not JSON, or malformed (naming what is wrong).

        See Also
        --------
        to_json, from_dict

        Examples
        --------
        >>> import fastsoftmax as fs
        >>> fs.Summary.from_json(fs.Summary().to_json()).samples
        0
        >>> fs.Summary.from_json("{nope")
        Traceback (most recent call last):
        ...
        ValueError: malformed summary: not JSON ...
        """
        try:
            d = json.loads(s)
        except json.JSONDecodeError as e:
            raise ValueError(f"malformed summary: not JSON ({e})") from None
        return cls.from_dict(d)

    def to_frame(self) -> pd.DataFrame:
        """The statistics as a pandas DataFrame, one row per observable.

        Returns
        -------
        pandas.DataFrame
            Index: the observables' names; columns: the keys of
            :meth:`Stat.to_dict` (moments, ``q<q>``, ``below_<t>``).

        Raises
        ------
        ImportError
            pandas is not installed.

        Examples
        --------
        >>> import numpy as np, fastsoftmax as fs
        >>> s = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))
        >>> df = s.to_frame()
        >>> df.shape
        (9, 22)
        >>> round(float(df.loc["entropy", "mean"]), 4)
        1.7425
        """
        import pandas as pd
        return pd.DataFrame({name: self[name].to_dict() for name in OBS_NAMES}).T

    @staticmethod
    def record_columns(thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
                       quantiles: Sequence[float] = QUANTILES) -> list[str]:
        """The names of :meth:`record`'s entries, in order: the columns of every table.

        ``<observable>_<key>`` for every observable of ``fastsoftmax.OBS_NAMES`` and every key of
        :meth:`Stat.keys` (moments, quantiles ``q<q>`` and ``log10_q<q>``,
        fractions ``below_<t>``). Sweep tables, the attention probe's frames
        and ``verify``'s tables all use these names; the laws' prediction
        columns of a sweep (``<obs>_theory_...``) follow the same pattern.

        Parameters
        ----------
        thresholds : sequence of float, default (1e-3, 1e-6, 1e-9)
            The thresholds: a ``below_<t>`` column each.
        quantiles : sequence of float, default (0.01, 0.1, 0.5, 0.9, 0.99)
            The quantile levels: ``q<q>`` and ``log10_q<q>`` columns each.

        Returns
        -------
        list of str
            The column names, observable by observable.

        Examples
        --------
        >>> import fastsoftmax as fs
        >>> cols = fs.Summary.record_columns((1e-6,))
        >>> cols[:3], len(cols)
        (['max_prob_mean', 'max_prob_std', 'max_prob_sem'], 180)
        >>> "jac_diag_max_below_1e-06" in cols
        True
        """
        keys = Stat.keys(thresholds, quantiles)
        return [f"{name}_{k}" for name in OBS_NAMES for k in keys]

    def record(self, quantiles: Sequence[float] = QUANTILES) -> dict[str, float | int]:
        """The summary as one flat record: a row of a sweep table or a probe frame.

        The entries are exactly the numbers of the Summary (``Stat.to_dict``
        of every observable), so a table row and the Summary it came from
        agree bit for bit.

        Parameters
        ----------
        quantiles : sequence of float, default (0.01, 0.1, 0.5, 0.9, 0.99)
            The quantile levels to include.

        Returns
        -------
        dict of str to float or int
            Keyed by :meth:`record_columns` (of this summary's thresholds), in
            that order: the ``nonfinite`` counts as ints, every other
            statistic a float (``samples`` and ``skipped`` are the Summary's
            own attributes; tables put them in columns of their own).

        Examples
        --------
        >>> import numpy as np, fastsoftmax as fs
        >>> s = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))
        >>> rec = s.record()
        >>> list(rec) == fs.Summary.record_columns(s.thresholds)
        True
        >>> rec["jac_diag_max_nonfinite"], rec["jac_diag_max_below_0.001"]
        (0, 0.0)
        """
        rec: dict[str, float | int] = {}
        for name in OBS_NAMES:
            for k, v in self[name].to_dict(quantiles).items():
                rec[f"{name}_{k}"] = int(v) if k == "nonfinite" else float(v)
        return rec

    def __repr__(self) -> str:
        lines = [f"Summary(samples={self.samples}, skipped={self.skipped}"
                 + (f", config={self.config}" if self.config else "") + ")"]
        w = max(map(len, OBS_NAMES))
        lines.append(f"  {'observable':<{w}}  {'mean':>11} {'sem':>9} {'median':>10} "
                     f"{'log10_mean':>11} {'min':>10} {'max':>10}")
        for name in OBS_NAMES:
            s = self[name]
            lines.append(f"  {name:<{w}}  {s.mean:11.5g} {s.sem:9.2g} {s.median:10.4g} "
                         f"{s.log10_mean:11.5g} {s.min:10.4g} {s.max:10.4g}")
        return "\n".join(lines)
