"""``Summary`` and ``Stat``: what a run hands back.

A Summary wraps an :class:`~fastsoftmax.accumulate.Accumulator` and the run's
configuration.  ``s["jac_diag_max"]`` is a :class:`Stat` with the moments of
the value and of its log10, min/max, quantiles from the log-bucket sketch and
exact fractions below the configured thresholds.
"""
import json
import math

import numpy as np

from ._config import SKETCH_GAMMA, SKETCH_LO, SKETCH_NB, SKETCH_W
from ._math import NOBS, OBS_NAMES
from .accumulate import Accumulator

__all__ = ["Summary", "Stat"]


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

    def log10_quantile(self, q):
        """log10 of the q-quantile (rank floor(q (N - 1)), as DDSketch),
        within log10(1 + 1%) of the exact one; -inf below 1e-350, +inf above
        1e310."""
        q = np.asarray(q, dtype=np.float64)
        if np.any(~((q >= 0) & (q <= 1))):
            raise ValueError(f"quantile q must lie in [0, 1], got {q}")
        h = self._acc.hist[self._k]
        total = int(h.sum())
        if total == 0:
            return np.full(q.shape, math.nan)[()]
        cum = np.cumsum(h)
        rank = np.floor(q * (total - 1))
        idx = np.searchsorted(cum, rank, side="right")
        # bucket i >= 1 holds log10 values in [LO + (i-1) W, LO + i W); its
        # representative 2 gamma^i/(gamma + 1) (in value space) is within
        # ALPHA of every value in it.
        rep = SKETCH_LO + idx * SKETCH_W + math.log10(2.0 / (1.0 + SKETCH_GAMMA))
        rep = np.where(idx == 0, -np.inf, np.where(idx == SKETCH_NB - 1, np.inf, rep))
        return rep[()]

    def quantile(self, q):
        """q-quantile of the value (relative error <= 1%)."""
        with np.errstate(over="ignore"):
            return (10.0 ** np.asarray(self.log10_quantile(q)))[()]

    @property
    def median(self):
        return self.quantile(0.5)

    def fraction_below(self, t):
        """Fraction of rows whose value is < t: exact for a configured
        threshold, from the sketch (bucket resolution) otherwise."""
        acc = self._acc
        if acc.count == 0:
            return math.nan
        hit = np.flatnonzero(acc.thresholds == t)
        if hit.size:
            return float(acc.below[self._k, hit[0]] / acc.count)
        if not t > 0:
            return 0.0
        h = acc.hist[self._k]
        lt = math.log10(t)
        i = int(np.clip(math.floor((lt - SKETCH_LO) / SKETCH_W) + 1, 0, SKETCH_NB - 1))
        return float(h[:i].sum()) / acc.count

    def to_dict(self, quantiles=(0.01, 0.1, 0.5, 0.9, 0.99)):
        d = dict(mean=self.mean, std=self.std, sem=self.sem, min=self.min, max=self.max,
                 log10_mean=self.log10_mean, log10_std=self.log10_std,
                 log10_sem=self.log10_sem, nonfinite=self.nonfinite)
        for q in quantiles:
            d[f"q{q:g}"] = float(self.quantile(q))
        for t in self._acc.thresholds:
            d[f"below_{t:g}"] = self.fraction_below(t)
        return d

    def __repr__(self):
        return (f"Stat({self.name}: mean={self.mean:.6g} ± {self.sem:.2g}, "
                f"median={self.median:.4g}, log10_mean={self.log10_mean:.6g}, "
                f"min={self.min:.4g}, max={self.max:.4g})")


class Summary:
    """Streaming summary of the observables over many rows (see DESIGN)."""

    def __init__(self, acc, config=None):
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
        is modified).  Configurations that differ are kept as a list."""
        if not isinstance(other, Summary):
            raise TypeError(f"cannot merge a Summary with {type(other).__name__}")
        acc = self._acc.merge(other._acc)
        cfg = dict(self.config)
        if other.config and other.config != self.config:
            cfg = {"merged": [self.config, other.config]}
        return Summary(acc, cfg)

    def __add__(self, other):
        return self.merge(other)

    def __eq__(self, other):
        if not isinstance(other, Summary):
            return NotImplemented
        return self._acc == other._acc and self.config == other.config

    def to_dict(self):
        return {"config": _jsonable(self.config), "accumulator": self._acc.to_dict()}

    @classmethod
    def from_dict(cls, d):
        return cls(Accumulator.from_dict(d["accumulator"]), d.get("config", {}))

    def to_json(self, **kw):
        return json.dumps(self.to_dict(), allow_nan=False, **kw)

    @classmethod
    def from_json(cls, s):
        return cls.from_dict(json.loads(s))

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


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        v = float(obj)
        return v if math.isfinite(v) else repr(v)
    if isinstance(obj, (str, int, bool)) or obj is None:
        return obj
    return repr(obj)
