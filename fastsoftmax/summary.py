"""``Summary`` and ``Stat``: what a run hands back.

A Summary wraps an :class:`~fastsoftmax.accumulate.Accumulator` and the run's
configuration.  ``s["jac_diag_max"]`` is a :class:`Stat` with the moments of
the value and of its log10, min/max, quantiles from the log-bucket sketch and
exact fractions below the configured thresholds.
"""
import json
import math
import warnings

import numpy as np

from ._config import DEFAULT_THRESHOLDS, QUANTILES
from ._inputs import check_thresholds
from ._math import NOBS, OBS_NAMES
from ._sketch import bucket_of, representative
from ._util import jsonable
from .accumulate import Accumulator

__all__ = ["Summary", "Stat", "ApproximationWarning"]


class ApproximationWarning(UserWarning):
    """A statistic read from the sketch at bucket resolution, not counted
    exactly (``Stat.fraction_below`` of a threshold that was not configured)."""


class Stat:
    """Statistics of one observable over the rows of a Summary.

    ``mean``, ``std`` (ddof=1), ``sem`` are over the finite values; ``min`` and
    ``max`` over all values (infinities included); ``log10_mean``,
    ``log10_std``, ``log10_sem`` are the same for log10 of the value, which
    stays finite when the value underflows; ``nonfinite`` and
    ``log10_nonfinite`` count infinite values left out of the moments.
    """

    def __init__(self, acc, k, name):
        self._acc = acc
        self._k = k
        self.name = name

    def _moments(self, c):
        n, mean, ss = self._acc.mom[c]
        n = int(n)
        std = math.sqrt(ss / (n - 1)) if n > 1 else math.nan
        return n, (float(mean) if n > 0 else math.nan), std

    @property
    def count(self):
        return self._moments(self._k)[0]

    @property
    def mean(self):
        return self._moments(self._k)[1]

    @property
    def std(self):
        return self._moments(self._k)[2]

    @property
    def sem(self):
        n, _, std = self._moments(self._k)
        return std / math.sqrt(n) if n > 1 else math.nan

    @property
    def min(self):
        v = self._acc.vmin[self._k]
        return float(v) if self._acc.count else math.nan

    @property
    def max(self):
        v = self._acc.vmax[self._k]
        return float(v) if self._acc.count else math.nan

    @property
    def nonfinite(self):
        return int(self._acc.nonfinite[self._k])

    @property
    def log10_mean(self):
        return self._moments(NOBS + self._k)[1]

    @property
    def log10_std(self):
        return self._moments(NOBS + self._k)[2]

    @property
    def log10_sem(self):
        n, _, std = self._moments(NOBS + self._k)
        return std / math.sqrt(n) if n > 1 else math.nan

    @property
    def log10_min(self):
        return float(self._acc.vmin[NOBS + self._k]) if self._acc.count else math.nan

    @property
    def log10_max(self):
        return float(self._acc.vmax[NOBS + self._k]) if self._acc.count else math.nan

    @property
    def log10_nonfinite(self):
        return int(self._acc.nonfinite[NOBS + self._k])

    def _sparse(self):
        return self._acc.sketch.sparse(self._k)

    def log10_quantile(self, q):
        """log10 of the q-quantile (rank floor(q (N - 1)), as DDSketch), from
        the sketch: within 0.005 of the exact log10 for |log10| <= 1000 and
        within 0.1% of it beyond, at any depth (-inf only for values that are
        exactly 0); never outside [log10_min, log10_max]."""
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

    def quantile(self, q):
        """q-quantile of the value, within 1% wherever it is >= 1e-300 (and
        never outside [min, max])."""
        with np.errstate(over="ignore"):
            v = 10.0 ** np.asarray(self.log10_quantile(q))
        return np.clip(v, self.min, self.max)[()]

    def log10_quantiles(self, qs=QUANTILES):
        """log10_quantile of each q (one pass over the sketch)."""
        return np.atleast_1d(self.log10_quantile(np.asarray(qs, dtype=np.float64)))

    @property
    def median(self):
        return self.quantile(0.5)

    @property
    def log10_median(self):
        return self.log10_quantile(0.5)

    def _sketch_bounds(self, t):
        """(rows surely below t, rows possibly below t) from the sketch."""
        idx, cnt = self._sparse()
        b = bucket_of(math.log10(t))
        lo = int(cnt[idx < b].sum())
        return lo, lo + int(cnt[idx == b].sum())

    def fraction_below(self, t):
        """Fraction of rows whose value is < t.

        Exact for a threshold configured in the run (``Summary.thresholds``),
        1.0 for t = +inf and 0.0 for t <= 0.  Any other t is read from the
        sketch at bucket resolution (values within 1% of t may fall on either
        side; :meth:`fraction_below_bounds` gives the guaranteed interval)
        and says so with an :class:`ApproximationWarning`.  NaN raises.
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

    def fraction_below_bounds(self, t):
        """(lo, hi): guaranteed bounds of the fraction of rows below t (equal
        for a configured threshold; otherwise the sketch bucket holding t is
        counted out, then in)."""
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
    def keys(thresholds=DEFAULT_THRESHOLDS, quantiles=QUANTILES):
        """The keys of :meth:`to_dict`, in order (the sweep's column suffixes)."""
        return (list(Stat.MOMENT_KEYS) + [f"q{q:g}" for q in quantiles]
                + [f"log10_q{q:g}" for q in quantiles]
                + [f"below_{t:g}" for t in thresholds])

    def to_dict(self, quantiles=QUANTILES):
        """The moments, the quantiles ``q<q>`` and ``log10_q<q>`` and the exact
        fractions below each configured threshold ``below_<t>``, as a dict of
        floats (keys in the order of :meth:`keys`)."""
        d = {k: getattr(self, k) for k in self.MOMENT_KEYS}
        lq = self.log10_quantiles(quantiles) if len(quantiles) else []
        with np.errstate(over="ignore"):
            vq = np.clip(10.0 ** np.asarray(lq), self.min, self.max)
        for q, v in zip(quantiles, vq):
            d[f"q{q:g}"] = float(v)
        for q, v in zip(quantiles, lq):
            d[f"log10_q{q:g}"] = float(v)
        for t in self._acc.thresholds:
            d[f"below_{t:g}"] = self.fraction_below(t)
        return d

    def __repr__(self):
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
    out = {"source": "merged", "parts": parts}
    if all("samples" in p for p in parts):
        out["samples"] = sum(int(p["samples"]) for p in parts)
    return out


class Summary:
    """Streaming summary of the observables over many rows.

    ``s["jac_diag_max"]`` is a :class:`Stat`; ``s.samples`` the rows
    included, ``s.skipped`` the rows omitted, ``s.config`` the run's record.
    ``Summary()`` (or ``Summary(thresholds=...)``) is an empty summary, the
    identity of :meth:`merge`.
    """

    def __init__(self, acc=None, config=None, *, thresholds=DEFAULT_THRESHOLDS):
        if acc is None:
            acc = Accumulator(check_thresholds(thresholds))
        elif not isinstance(acc, Accumulator):
            raise TypeError(f"acc must be an Accumulator or None, got {type(acc).__name__}")
        self._acc = acc
        self.config = dict(config or {})

    @property
    def samples(self):
        """Rows included (skipped rows excluded)."""
        return self._acc.count

    @property
    def skipped(self):
        return self._acc.skipped

    @property
    def thresholds(self):
        return tuple(self._acc.thresholds.tolist())

    def keys(self):
        return OBS_NAMES

    def __getitem__(self, name):
        try:
            k = OBS_NAMES.index(name)
        except ValueError:
            raise KeyError(f"unknown observable {name!r}; one of {', '.join(OBS_NAMES)}") from None
        return Stat(self._acc, k, name)

    def __iter__(self):
        return iter(OBS_NAMES)

    def merge(self, other):
        """A new Summary of the union of both sets of rows (neither argument
        is modified).  The configuration lists the runs merged (flat).
        Refuses summaries with different thresholds, and two Monte Carlo
        summaries that drew the same random rows (same seed)."""
        if not isinstance(other, Summary):
            raise TypeError(f"cannot merge a Summary with {type(other).__name__}")
        cfg = merged_config(self.config, other.config)
        acc = self._acc.merge(other._acc)
        return Summary(acc, cfg)

    def __add__(self, other):
        return self.merge(other)

    def __eq__(self, other):
        if not isinstance(other, Summary):
            return NotImplemented
        return self._acc == other._acc and self.config == other.config

    def to_dict(self):
        return {"config": jsonable(self.config), "accumulator": self._acc.to_dict()}

    @classmethod
    def from_dict(cls, d):
        """The Summary of :meth:`to_dict`'s output; ValueError naming what is
        wrong for anything else."""
        if not isinstance(d, dict):
            raise ValueError(f"malformed summary: expected an object, got {type(d).__name__}")
        if "accumulator" not in d:
            raise ValueError("malformed summary: no 'accumulator'")
        cfg = d.get("config", {})
        if not isinstance(cfg, dict):
            raise ValueError("malformed summary: 'config' must be an object")
        return cls(Accumulator.from_dict(d["accumulator"]), cfg)

    def to_json(self, **kw):
        return json.dumps(self.to_dict(), allow_nan=False, **kw)

    @classmethod
    def from_json(cls, s):
        try:
            d = json.loads(s)
        except json.JSONDecodeError as e:
            raise ValueError(f"malformed summary: not JSON ({e})") from None
        return cls.from_dict(d)

    def to_frame(self):
        """pandas DataFrame, one row per observable."""
        import pandas as pd
        return pd.DataFrame({name: self[name].to_dict() for name in OBS_NAMES}).T

    def __repr__(self):
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
