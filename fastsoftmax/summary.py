r"""``Summary`` and ``Stat``: what a run hands back.

A Summary wraps an :class:`~fastsoftmax.accumulate.Accumulator` and the run's
configuration.  ``s["jac_diag_max"]`` is a :class:`Stat` with the moments of
the value and of its log10, min/max, quantiles from the log-bucket sketch and
exact fractions below the configured thresholds.

>>> import numpy as np, fastsoftmax as fs
>>> s = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))
>>> j = s["jac_diag_max"]
>>> round(j.mean, 3), round(j.sem, 4), j.fraction_below(1e-3)
(0.214, 0.0018, 0.0)
"""
from __future__ import annotations

import json
import math
import warnings
from typing import TYPE_CHECKING, Any, Iterator, Sequence, overload

import numpy as np

from ._config import DEFAULT_THRESHOLDS, QUANTILES
from ._inputs import check_thresholds
from ._math import NOBS, OBS_NAMES
from ._sketch import bucket_of, representative
from ._util import jsonable
from .accumulate import Accumulator

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Summary", "Stat", "ApproximationWarning"]


class ApproximationWarning(UserWarning):
    """Warning: a statistic was read from the sketch, not counted exactly.

    :meth:`Stat.fraction_below` of a threshold that was not configured in
    the run (``thresholds=``) is read from the log-bucket sketch at 1%
    bucket resolution and warns with this category;
    :meth:`Stat.fraction_below_bounds` gives the guaranteed interval.

    See Also
    --------
    Stat.fraction_below, Stat.fraction_below_bounds

    Examples
    --------
    >>> import warnings
    >>> import numpy as np, fastsoftmax as fs
    >>> s = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     f = s["jac_diag_max"].fraction_below(0.2)
    >>> w[0].category is fs.ApproximationWarning
    True
    >>> s["jac_diag_max"].fraction_below(1e-3)        # configured: exact, no warning
    0.0
    """


class Stat:
    r"""Statistics of one observable over the rows of a Summary.

    ``s[name]`` of a :class:`Summary`; not constructed directly.  With
    :math:`v_1, \dots, v_N` the finite values of the observable over the rows:

    .. math::

        \bar v = \frac{1}{N} \sum_i v_i, \qquad
        s = \sqrt{\frac{\sum_i (v_i - \bar v)^2}{N - 1}}, \qquad
        \mathrm{sem} = \frac{s}{\sqrt N}

    (``mean``, ``std``, ``sem``); ``min`` and ``max`` are over all values
    (infinities included); ``log10_mean``, ``log10_std``, ``log10_sem`` are
    the same for :math:`\log_{10} v_i`, computed in the log domain, so they
    stay finite when the value underflows (``log10_mean`` is the log10 of the
    geometric mean); ``nonfinite`` and ``log10_nonfinite`` count the infinite
    values left out of the moments.  Quantiles come from a mergeable
    log-bucket sketch (DDSketch-style, relative error <= 1%) and fractions
    below the configured thresholds are exact counts.

    Parameters
    ----------
    acc : fastsoftmax.accumulate.Accumulator
        The summary's accumulated statistics (shared, never modified).
    k : int
        Index of the observable in ``fastsoftmax.OBS_NAMES``.
    name : str
        Its name, ``fastsoftmax.OBS_NAMES[k]``.

    Attributes
    ----------
    name : str
        The observable's name.

    See Also
    --------
    Summary : ``s[name]`` gives the Stat of an observable.

    Examples
    --------
    >>> import numpy as np, fastsoftmax as fs
    >>> s = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))
    >>> st = s["max_prob"]
    >>> st.name, st.count
    ('max_prob', 200)
    >>> round(st.mean, 4), round(st.sem, 4), round(st.min, 4), round(st.max, 4)
    (0.347, 0.0078, 0.1672, 0.7949)
    >>> round(st.log10_mean, 4)
    -0.4793
    """

    def __init__(self, acc: Accumulator, k: int, name: str) -> None:
        self._acc = acc
        self._k = k
        self.name = name

    def _moments(self, c):
        n, mean, ss = self._acc.mom[c]
        n = int(n)
        std = math.sqrt(ss / (n - 1)) if n > 1 else math.nan
        return n, (float(mean) if n > 0 else math.nan), std

    @property
    def count(self) -> int:
        """Number of finite values in the moments (rows with a finite value)."""
        return self._moments(self._k)[0]

    @property
    def mean(self) -> float:
        """Mean of the finite values (NaN when there are none)."""
        return self._moments(self._k)[1]

    @property
    def std(self) -> float:
        """Standard deviation of the finite values, ddof=1 (NaN for fewer than 2)."""
        return self._moments(self._k)[2]

    @property
    def sem(self) -> float:
        """Standard error of the mean, ``std / sqrt(count)`` (NaN for fewer than 2)."""
        n, _, std = self._moments(self._k)
        return std / math.sqrt(n) if n > 1 else math.nan

    @property
    def min(self) -> float:
        """Smallest value, infinities included (NaN for an empty summary)."""
        v = self._acc.vmin[self._k]
        return float(v) if self._acc.count else math.nan

    @property
    def max(self) -> float:
        """Largest value, infinities included (NaN for an empty summary)."""
        v = self._acc.vmax[self._k]
        return float(v) if self._acc.count else math.nan

    @property
    def nonfinite(self) -> int:
        """Number of infinite values, left out of the moments."""
        return int(self._acc.nonfinite[self._k])

    @property
    def log10_mean(self) -> float:
        """Mean of log10 of the value over its finite values: log10 of the geometric mean."""
        return self._moments(NOBS + self._k)[1]

    @property
    def log10_std(self) -> float:
        """Standard deviation of log10 of the value, ddof=1 (NaN for fewer than 2)."""
        return self._moments(NOBS + self._k)[2]

    @property
    def log10_sem(self) -> float:
        """Standard error of ``log10_mean`` (NaN for fewer than 2 values)."""
        n, _, std = self._moments(NOBS + self._k)
        return std / math.sqrt(n) if n > 1 else math.nan

    @property
    def log10_min(self) -> float:
        """Smallest log10 value (-inf where the value is exactly 0)."""
        return float(self._acc.vmin[NOBS + self._k]) if self._acc.count else math.nan

    @property
    def log10_max(self) -> float:
        """Largest log10 value."""
        return float(self._acc.vmax[NOBS + self._k]) if self._acc.count else math.nan

    @property
    def log10_nonfinite(self) -> int:
        """Number of infinite log10 values (value 0 or inf), left out of the log10 moments."""
        return int(self._acc.nonfinite[NOBS + self._k])

    def _sparse(self):
        return self._acc.sketch.sparse(self._k)

    @overload
    def log10_quantile(self, q: float) -> float: ...

    @overload
    def log10_quantile(self, q: Sequence[float] | np.ndarray) -> np.ndarray: ...

    def log10_quantile(self, q: float | Sequence[float] | np.ndarray) -> float | np.ndarray:
        r"""The log10 of the q-quantile of the value, at any depth.

        The q-quantile is the value of rank :math:`\lfloor q (N - 1) \rfloor`
        among the N rows (as DDSketch), read from the log-bucket sketch, which
        has no floor: the result is within 0.005 of the log10 of the exact one
        where that is at most 1000 in magnitude, and within 0.1% of it beyond,
        down to the deepest log10 float64 input can give (a median of 1e-400
        is -400.0 here and 0.0 in :meth:`quantile`); -inf only for values that
        are exactly 0.  Never outside [``log10_min``, ``log10_max``].

        Parameters
        ----------
        q : float or array_like of float
            Quantile level(s) in [0, 1].

        Returns
        -------
        float or ndarray
            log10 of the quantile(s), of the shape of ``q`` (a NumPy float for
            a scalar ``q``); NaN for an empty summary.

        Raises
        ------
        ValueError
            A ``q`` outside [0, 1] (or NaN).

        See Also
        --------
        quantile : The same quantile as a value.

        Examples
        --------
        >>> import numpy as np, fastsoftmax as fs
        >>> x = np.random.default_rng(0).normal(size=(1000, 64)) * 30
        >>> s = fs.summarize(x)
        >>> round(float(s["jac_diag_max"].log10_quantile(0.5)), 1)
        -3.7
        >>> s["jac_diag_max"].log10_quantile([0.1, 0.9]).shape
        (2,)
        """
        q = np.asarray(q, dtype=np.float64)
        if np.any(~((q >= 0) & (q <= 1))):
            raise ValueError(f"quantile q must lie in [0, 1], got {q}")
        idx, cnt = self._sparse()
        total = int(cnt.sum())
        if total == 0:
            return np.full(q.shape, math.nan)[()]
        cum = np.cumsum(cnt)
        rank = np.floor(q * (total - 1))
        pos = np.searchsorted(cum, rank, side="right")
        rep = representative(idx[pos])
        lo, hi = self.log10_min, self.log10_max
        rep = np.where(np.isnan(rep), hi, rep)             # the (unreachable) "above" bucket
        return np.clip(rep, lo, hi)[()]

    @overload
    def quantile(self, q: float) -> float: ...

    @overload
    def quantile(self, q: Sequence[float] | np.ndarray) -> np.ndarray: ...

    def quantile(self, q: float | Sequence[float] | np.ndarray) -> float | np.ndarray:
        """The q-quantile of the value, within 1% relative error.

        ``10 ** log10_quantile(q)``: the value of rank floor(q (N - 1))
        among the N rows, read from the mergeable log-bucket sketch
        (DDSketch-style), with a relative error <= 1% wherever the value is at
        least 1e-300, and never outside [``min``, ``max``].

        Parameters
        ----------
        q : float or array_like of float
            Quantile level(s) in [0, 1].

        Returns
        -------
        float or ndarray
            The quantile(s), of the shape of ``q`` (a NumPy float for a
            scalar ``q``); NaN for an empty summary.

        Raises
        ------
        ValueError
            A ``q`` outside [0, 1] (or NaN).

        See Also
        --------
        log10_quantile : log10 of the quantile, finite where the value underflows.
        median : ``quantile(0.5)``.

        Examples
        --------
        >>> import numpy as np, fastsoftmax as fs
        >>> x = np.random.default_rng(0).normal(size=(200, 8))
        >>> q = fs.summarize(x)["max_prob"].quantile([0.1, 0.5, 0.9])
        >>> exact = np.quantile(fs.observables(x)["max_prob"], [0.1, 0.5, 0.9],
        ...                     method="lower")
        >>> bool(np.all(abs(q / exact - 1) <= 0.01))
        True
        """
        with np.errstate(over="ignore"):
            v = 10.0 ** np.asarray(self.log10_quantile(q))
        return np.clip(v, self.min, self.max)[()]

    def log10_quantiles(self, qs: Sequence[float] = QUANTILES) -> np.ndarray:
        """The log10 of several quantiles at once, one pass over the sketch.

        Parameters
        ----------
        qs : sequence of float, default (0.01, 0.1, 0.5, 0.9, 0.99)
            Quantile levels in [0, 1].

        Returns
        -------
        ndarray
            ``log10_quantile(q)`` for each q, as a 1-d float64 array.

        Examples
        --------
        >>> import numpy as np, fastsoftmax as fs
        >>> s = fs.summarize(np.random.default_rng(0).normal(size=(500, 16)) * 40)
        >>> lq = s["jac_diag_max"].log10_quantiles([0.1, 0.5, 0.9])
        >>> bool(np.all(np.diff(lq) >= 0))
        True
        """
        return np.atleast_1d(self.log10_quantile(np.asarray(qs, dtype=np.float64)))

    @property
    def median(self) -> float:
        """The median, ``quantile(0.5)`` (within 1% relative error)."""
        return self.quantile(0.5)

    @property
    def log10_median(self) -> float:
        """The log10 of the median, ``log10_quantile(0.5)``: finite at any depth.

        Returns
        -------
        float
        """
        return self.log10_quantile(0.5)

    def _sketch_bounds(self, t):
        """(rows surely below t, rows possibly below t) from the sketch."""
        idx, cnt = self._sparse()
        b = bucket_of(math.log10(t))
        lo = int(cnt[idx < b].sum())
        return lo, lo + int(cnt[idx == b].sum())

    def fraction_below(self, t: float) -> float:
        """Fraction of rows whose value is below ``t``.

        The fraction #{rows: value < t} / N is an exact count for a threshold
        configured in the run (``thresholds=``, see :attr:`Summary.thresholds`),
        1.0 for t = +inf and 0.0 for t <= 0.  Any other ``t`` is read from the
        sketch at bucket resolution (values within 1% of t may fall on either
        side; :meth:`fraction_below_bounds` gives the guaranteed interval)
        and says so with an :class:`ApproximationWarning`.

        Parameters
        ----------
        t : float
            The threshold.

        Returns
        -------
        float
            The fraction of rows, in [0, 1]; NaN for an empty summary.

        Raises
        ------
        ValueError
            ``t`` is NaN.

        Warns
        -----
        ApproximationWarning
            ``t`` is not a configured threshold (nor <= 0 or +inf).

        See Also
        --------
        fraction_below_bounds : Guaranteed bounds for any threshold.

        Examples
        --------
        >>> import numpy as np, fastsoftmax as fs
        >>> x = np.random.default_rng(0).normal(size=(1000, 64)) * 30
        >>> s = fs.summarize(x, thresholds=(1e-6,))
        >>> s["jac_diag_max"].fraction_below(1e-6)
        0.301
        """
        acc = self._acc
        t = float(t)
        if t != t:
            raise ValueError("fraction_below(nan): the threshold must be a number")
        if acc.count == 0:
            return math.nan
        hit = np.flatnonzero(acc.thresholds == t)
        if hit.size:
            return float(acc.below[self._k, hit[0]] / acc.count)
        if t == math.inf:
            return 1.0
        if not t > 0:
            return 0.0
        warnings.warn(f"fraction_below({t:g}) of {self.name}: {t:g} is not a configured "
                      f"threshold {self._acc.thresholds.tolist()}; the answer comes from the "
                      "sketch at 1% bucket resolution (pass it in thresholds= to count it "
                      "exactly)", ApproximationWarning, stacklevel=2)
        lo, hi = self._sketch_bounds(t)
        return float(lo) / acc.count

    def fraction_below_bounds(self, t: float) -> tuple[float, float]:
        """Guaranteed bounds (lo, hi) of the fraction of rows below ``t``.

        Equal (the exact fraction) for a configured threshold, t <= 0 and
        t = +inf; otherwise the sketch bucket that holds ``t`` (1% wide) is
        counted out (``lo``) and then in (``hi``).  Never warns.

        Parameters
        ----------
        t : float
            The threshold.

        Returns
        -------
        tuple of float
            (lo, hi) with lo <= fraction below t <= hi; (NaN, NaN) for an
            empty summary.

        Raises
        ------
        ValueError
            ``t`` is NaN.

        See Also
        --------
        fraction_below : The exact fraction for a configured threshold.

        Examples
        --------
        >>> import numpy as np, fastsoftmax as fs
        >>> x = np.random.default_rng(0).normal(size=(1000, 64)) * 30
        >>> s = fs.summarize(x, thresholds=(1e-6,))
        >>> s["jac_diag_max"].fraction_below_bounds(1e-6)
        (0.301, 0.301)
        >>> lo, hi = s["jac_diag_max"].fraction_below_bounds(1e-5)
        >>> 0.301 <= lo <= hi <= 1
        True
        """
        acc = self._acc
        t = float(t)
        if t != t:
            raise ValueError("fraction_below_bounds(nan): the threshold must be a number")
        if acc.count == 0:
            return (math.nan, math.nan)
        hit = np.flatnonzero(acc.thresholds == t)
        if hit.size:
            f = float(acc.below[self._k, hit[0]] / acc.count)
            return (f, f)
        if t == math.inf:
            return (1.0, 1.0)
        if not t > 0:
            return (0.0, 0.0)
        lo, hi = self._sketch_bounds(t)
        return (lo / acc.count, hi / acc.count)

    MOMENT_KEYS = ("mean", "std", "sem", "min", "max", "log10_mean", "log10_std",
                   "log10_sem", "nonfinite")

    @staticmethod
    def keys(thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
             quantiles: Sequence[float] = QUANTILES) -> list[str]:
        """The keys of :meth:`to_dict`, in order (the sweep's column suffixes).

        Parameters
        ----------
        thresholds : sequence of float, default (1e-3, 1e-6, 1e-9)
            The configured thresholds: a key ``below_<t>`` each.
        quantiles : sequence of float, default (0.01, 0.1, 0.5, 0.9, 0.99)
            The quantile levels: a key ``q<q>`` each.

        Returns
        -------
        list of str
            The moment keys (``mean``, ``std``, ``sem``, ``min``, ``max``,
            ``log10_mean``, ``log10_std``, ``log10_sem``, ``nonfinite``), then
            ``q<q>`` for each quantile and ``below_<t>`` for each threshold
            (numbers formatted with ``:g``).

        Examples
        --------
        >>> import fastsoftmax as fs
        >>> fs.Stat.keys(thresholds=(1e-6,), quantiles=(0.5,))[-4:]
        ['nonfinite', 'q0.5', 'log10_q0.5', 'below_1e-06']
        """
        return (list(Stat.MOMENT_KEYS) + [f"q{q:g}" for q in quantiles]
                + [f"log10_q{q:g}" for q in quantiles]
                + [f"below_{t:g}" for t in thresholds])

    def to_dict(self, quantiles: Sequence[float] = QUANTILES) -> dict[str, float]:
        """The statistics as a flat dict (a row of a sweep's table).

        Parameters
        ----------
        quantiles : sequence of float, default (0.01, 0.1, 0.5, 0.9, 0.99)
            The quantile levels to include.

        Returns
        -------
        dict of str to float
            The moments (``nonfinite`` an int), the quantiles ``q<q>`` and
            ``log10_q<q>`` and the exact fractions below each configured
            threshold ``below_<t>``, in the order of :meth:`keys`.

        Examples
        --------
        >>> import numpy as np, fastsoftmax as fs
        >>> s = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))
        >>> d = s["jac_diag_max"].to_dict()
        >>> list(d) == fs.Stat.keys(s.thresholds)
        True
        >>> d["below_0.001"], d["nonfinite"]
        (0.0, 0)
        """
        d = {k: getattr(self, k) for k in self.MOMENT_KEYS}
        lq: Any = self.log10_quantiles(quantiles) if len(quantiles) else []
        with np.errstate(over="ignore"):
            vq = np.clip(10.0 ** np.asarray(lq), self.min, self.max)
        for q, v in zip(quantiles, vq):
            d[f"q{q:g}"] = float(v)
        for q, v in zip(quantiles, lq):
            d[f"log10_q{q:g}"] = float(v)
        for t in self._acc.thresholds:
            d[f"below_{t:g}"] = self.fraction_below(t)
        return d

    def __repr__(self) -> str:
        return (f"Stat({self.name}: mean={self.mean:.6g} ± {self.sem:.2g}, "
                f"median={self.median:.4g}, log10_mean={self.log10_mean:.6g}, "
                f"min={self.min:.4g}, max={self.max:.4g})")


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
            ``max_prob``, ``one_minus_max_prob``, ``entropy``, ``jac_diag_max``,
            ``jac_offdiag_max``, ``jac_fro``, ``ce_loss``, ``ce_grad_norm``,
            ``ce_grad_target``.

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
        >>> round(float(df.loc["max_prob", "mean"]), 4)
        0.347
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
