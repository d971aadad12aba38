r"""``Stat``: the statistics of one observable over the rows of a Summary.

``s["jac_diag_max"]`` of a :class:`~fastsoftmax.Summary` is a :class:`Stat`
reading the summary's accumulator: the moments of the value and of its
log10, min/max, quantiles from the log-bucket sketch and exact fractions
below the configured thresholds; :class:`ApproximationWarning` says when a
fraction came from the sketch instead.

>>> import numpy as np, fastsoftmax as fs
>>> j = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))["jac_diag_max"]
>>> round(j.mean, 3), j.fraction_below(1e-3)
(0.214, 0.0)
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Sequence, overload

import numpy as np

from .._config import DEFAULT_THRESHOLDS, QUANTILES
from .._kernels.row import NOBS
from ..accumulate import Accumulator

__all__ = ["Stat", "ApproximationWarning"]


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
        rep = self._acc.sketch.mapping.representative(idx[pos])
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
        b = self._acc.sketch.mapping.key(math.log10(t))
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
