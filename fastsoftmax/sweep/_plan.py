"""The plan of a sweep: every point built and validated before anything
runs, and the tidy row of a point."""
import dataclasses
import difflib
import inspect
import itertools
import json
import os

import numpy as np

from .. import _config, api
from .._inputs import check_dtype, check_samples, check_seed, check_thresholds, mc_target
from .._math import OBS_NAMES
from .._util import progress_bar
from .._version import __version__
from ..models import MODELS, _Model
from ..summary import Stat
from ._table import (OUT_FORMATS, Lock, frame, read_table, remove_stale_tmp,
                     require, write_table)

__all__ = ["Plan", "Point", "point_record", "stat_columns", "config_key", "resolve_factory"]
# the keys of a point's configuration that are shared by a whole sweep: a file
# with rows that differ in one of them cannot be resumed by this sweep
SWEEP_KEYS = ("model", "samples", "seed", "target", "dtype", "thresholds", "version")


# --------------------------------------------------------------------------
# the model factory and its parameters

def resolve_factory(model_factory):
    """(callable, display name, parameter names or None, required names)."""
    if isinstance(model_factory, str):
        key = model_factory.strip().lower()
        if key not in MODELS:
            raise ValueError(f"unknown model {model_factory!r}: one of {', '.join(sorted(MODELS))}")
        model_factory = MODELS[key]
    if isinstance(model_factory, type) and issubclass(model_factory, _Model) \
            and dataclasses.is_dataclass(model_factory):
        fields = [f for f in dataclasses.fields(model_factory) if f.init]
        names = [f.name for f in fields]
        required = [f.name for f in fields if f.default is dataclasses.MISSING
                    and f.default_factory is dataclasses.MISSING]
        return model_factory, model_factory.name, names, required
    if callable(model_factory):
        try:
            sig = inspect.signature(model_factory)
        except (TypeError, ValueError):
            return model_factory, getattr(model_factory, "__name__", "model"), None, []
        params = list(sig.parameters.values())
        if any(p.kind == p.VAR_KEYWORD for p in params):
            names = None
        else:
            names = [p.name for p in params
                     if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        required = [p.name for p in params if p.default is p.empty
                    and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        return model_factory, getattr(model_factory, "__name__", "model"), names, required
    raise TypeError("model_factory must be a model class (fastsoftmax.models.DotProduct, ...), "
                    f"a model name ({', '.join(sorted(MODELS))}) or a callable returning a "
                    f"model, got {model_factory!r}")


def _unknown_name(name, names, model_name):
    hint = difflib.get_close_matches(name, names, n=1)
    hint = f" (did you mean {hint[0]!r}?)" if hint else ""
    return ValueError(f"unknown parameter {name!r} for model {model_name}{hint}; "
                      f"its parameters are: {', '.join(names)}")


def _check_grid(grid, fixed, names, model_name):
    if not isinstance(grid, dict):
        raise TypeError(f"grid must be a dict of parameter name -> list of values, got {grid!r}")
    fixed = {} if fixed is None else fixed
    if not isinstance(fixed, dict):
        raise TypeError(f"fixed must be a dict of parameter name -> value, got {fixed!r}")
    axes = {}
    for key, values in grid.items():
        if not isinstance(key, str):
            raise TypeError(f"grid keys must be parameter names (str), got {key!r}")
        if isinstance(values, (str, bytes, dict, set, frozenset)) \
                or not hasattr(values, "__iter__"):
            raise TypeError(f"grid[{key!r}] must be a list of values, got {values!r}")
        values = np.asarray(values, dtype=object).reshape(-1).tolist() \
            if isinstance(values, np.ndarray) else list(values)
        if not values:
            raise ValueError(f"grid[{key!r}] is empty: give at least one value")
        axes[key] = [v.item() if isinstance(v, np.generic) else v for v in values]
    for key in fixed:
        if not isinstance(key, str):
            raise TypeError(f"fixed keys must be parameter names (str), got {key!r}")
        if key in axes:
            raise ValueError(f"parameter {key!r} is both in grid and in fixed")
    if names is not None:
        for key in list(axes) + list(fixed):
            if key not in names:
                raise _unknown_name(key, names, model_name)
    return axes, dict(fixed)


# --------------------------------------------------------------------------
# the plan: every point built and validated before anything runs

@dataclasses.dataclass
class Point:
    index: int
    grid: dict           # this point's grid values as given
    model: object
    key: str             # the config key (JSON)


def config_key(model, samples, seed, target, dtype, thresholds):
    """The point's configuration as canonical JSON: the ``config`` column."""
    return json.dumps(dict(model=model.name, params=_plain(model.params), samples=samples,
                           seed=seed, target=target, dtype=str(dtype),
                           thresholds=[float(t) for t in thresholds], version=__version__),
                      sort_keys=True, allow_nan=False)


def _plain(obj):
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def stat_columns(thresholds=_config.DEFAULT_THRESHOLDS):
    """Names of the statistics columns, in order (``<observable>_<stat>``)."""
    keys = Stat.keys(thresholds)
    return [f"{name}_{k}" for name in OBS_NAMES for k in keys]


def point_record(model, summary, target, dtype, param_order, grid_point=None):
    """One tidy row (dict) of a point: parameters, target, dtype, samples,
    the statistics of every observable (``Stat.to_dict``), config key.
    Grid keys that are not model parameters (a custom factory's) come from
    ``grid_point``."""
    rec = {}
    params = dict(grid_point or {})
    params.update(model.params)
    for k in param_order:
        rec[k] = _plain(params[k])      # normalised by the model (e.g. 1e3 -> 1000)
    rec["target"] = target
    rec["dtype"] = str(dtype)
    rec["samples"] = int(summary.samples)
    for name in summary.keys():
        for k, v in summary[name].to_dict().items():
            rec[f"{name}_{k}"] = int(v) if k == "nonfinite" else float(v)
    return rec


class Plan:
    """A validated sweep: its points, columns and output file.  ``run``
    executes it; building one runs nothing."""

    def __init__(self, model_factory, grid, *, fixed=None, samples, seed=0, target="argmax",
                 dtype="float32", thresholds=_config.DEFAULT_THRESHOLDS, out=None,
                 resume=False, backend="auto"):
        factory, model_name, names, required = resolve_factory(model_factory)
        axes, fixed = _check_grid(grid, fixed, names, model_name)
        missing = [r for r in required if r not in axes and r not in fixed]
        if missing:
            raise TypeError(f"model {model_name} needs parameter(s) {', '.join(missing)}: "
                            "put them in grid or fixed")
        self.samples = check_samples(samples)
        self.seed = check_seed(seed)
        self.dtype = check_dtype(dtype)
        self.thresholds = tuple(float(t) for t in check_thresholds(thresholds))
        if isinstance(target, (np.integer,)):
            target = int(target)
        self.target = target
        self.backend = backend
        api.resolve_backend(backend)            # ValueError / RuntimeError (cuda) now
        self.axes = axes
        self.fixed = fixed
        self.model_name = model_name
        self.points = []
        seen = {}
        combos = itertools.product(*axes.values()) if axes else [()]
        for i, combo in enumerate(combos):
            gp = dict(zip(axes, combo))
            try:
                model = factory(**fixed, **gp)
            except (TypeError, ValueError) as e:
                raise type(e)(f"grid point {_fmt_point(gp) or '(fixed only)'}: {e}") from None
            if not isinstance(model, _Model):
                raise TypeError(f"grid point {_fmt_point(gp) or '(fixed only)'}: the model "
                                f"factory returned {model!r}, not a fastsoftmax model")
            mc_target(target, model.n)
            key = config_key(model, self.samples, self.seed, target, self.dtype,
                             self.thresholds)
            if key in seen:
                raise ValueError(f"grid points {_fmt_point(seen[key])} and {_fmt_point(gp)} "
                                 "are the same model: remove the repeated value")
            seen[key] = gp
            self.points.append(Point(i, gp, model, key))
        self.model_name = self.points[0].model.name
        params0 = list(self.points[0].model.params)
        self.param_order = list(axes) + [k for k in params0 if k not in axes]
        self.columns = self.param_order + ["target", "dtype", "samples"] + \
            stat_columns(self.thresholds) + ["config"]
        self.out = None
        self.format = None
        self.resume = bool(resume)
        self.kept = []          # rows of the file that are not points of this sweep
        self.done = {}          # key -> record of the points already computed
        if out is not None:
            self._check_out(out)

    # ---------------------------------------------------------------- output
    def _check_out(self, out):
        path = os.path.abspath(os.fspath(out))
        ext = os.path.splitext(path)[1].lower()
        if ext not in OUT_FORMATS:
            raise ValueError(f"out={os.fspath(out)!r}: the file name must end in .csv or .parquet")
        d = os.path.dirname(path)
        if not os.path.isdir(d):
            raise FileNotFoundError(f"out={os.fspath(out)!r}: directory {d} does not exist")
        if os.path.isdir(path):
            raise IsADirectoryError(f"out={os.fspath(out)!r} is a directory")
        if os.path.exists(path) and not self.resume:
            raise FileExistsError(f"{os.fspath(out)} exists: pass resume=True (--resume) to "
                                  "continue that sweep, or choose another file")
        self.out = path
        self.format = OUT_FORMATS[ext]
        require("pandas", "fastsoftmax.sweep")
        require("filelock", "fastsoftmax.sweep")
        if OUT_FORMATS[ext] == "parquet":
            require("pyarrow", "Parquet output")
        if os.path.exists(path):
            self._load_existing()

    def _string_columns(self):
        """Columns that hold strings (so that a CSV never turns them into numbers)."""
        p = self.points[0]
        vals = dict(p.grid)
        vals.update(p.model.params)
        cols = [k for k in self.param_order if isinstance(vals.get(k), str)]
        return cols + (["target"] if isinstance(self.target, str) else []) + ["dtype", "config"]

    def _load_existing(self):
        self.done, self.kept = {}, []
        try:
            df = read_table(self.out, self._string_columns())
        except Exception as e:          # empty, truncated by hand, not a table at all
            raise ValueError(f"{self.out} cannot be read as a sweep table ({e}); "
                             "use another file") from None
        if list(df.columns) != self.columns:
            raise ValueError(f"{self.out} was written by a different sweep (its columns differ "
                             "from this sweep's): use another file")
        ours = {p.key for p in self.points}
        kept_keys = set()
        mine = {k: v for k, v in json.loads(self.points[0].key).items() if k in SWEEP_KEYS}
        for rec in df.to_dict("records"):
            key = rec["config"]
            try:
                cfg = json.loads(key)
            except (TypeError, ValueError):
                raise ValueError(f"{self.out} has a row with an unreadable config "
                                 f"column: {key!r}") from None
            if cfg.get("version") != __version__:
                raise ValueError(f"{self.out} was written by fastsoftmax "
                                 f"{cfg.get('version', 'before 0.2.0')}, this is {__version__}: "
                                 "its numbers may differ from this version's, so it cannot be "
                                 "resumed; choose another file")
            diff = [k for k in SWEEP_KEYS if cfg.get(k) != mine[k]]
            if diff:
                k = diff[0]
                raise ValueError(f"{self.out} holds results of another configuration "
                                 f"({k}={cfg.get(k)!r} there, {mine[k]!r} here): "
                                 "resume it with the same settings or choose another file")
            if key in self.done or key in kept_keys:
                raise ValueError(f"{self.out} has two rows for the same point ({key}); "
                                 "it was not written by fastsoftmax.sweep")
            rec = {c: _plain(rec[c]) for c in self.columns}
            if key in ours:
                self.done[key] = rec
            else:
                self.kept.append(rec)
                kept_keys.add(key)

    # ----------------------------------------------------------------- run
    @property
    def todo(self):
        return [p for p in self.points if p.key not in self.done]

    def run(self, *, progress=True, client=None, on_point=None):
        """Run the points not done yet; returns the DataFrame in grid order.

        progress: True (a tqdm bar over rows), False, or an object with an
        ``update(rows)`` method (and optionally ``set_postfix_str``).
        on_point(point, summary): called after each computed point.
        """
        require("pandas", "fastsoftmax.sweep")
        bar = progress_bar(progress, len(self.todo) * self.samples, f"sweep {self.model_name}")
        lock = Lock(self.out) if self.out else None
        try:
            if lock is not None:
                lock.acquire()
                remove_stale_tmp(self.out)
                if os.path.exists(self.out):      # re-read under the lock
                    if not self.resume:
                        raise FileExistsError(f"{self.out} appeared meanwhile: pass "
                                              "resume=True to continue it")
                    self._load_existing()
            done = self.done
            for p in self.todo:
                if bar is not None:
                    bar.set_postfix_str(_fmt_point(p.grid))
                s = api.simulate(p.model, self.samples, seed=self.seed, target=self.target,
                                 thresholds=self.thresholds, dtype=self.dtype,
                                 backend=self.backend, progress=False, client=client)
                rec = point_record(p.model, s, self.target, self.dtype, self.param_order,
                                   p.grid)
                rec["config"] = p.key
                done[p.key] = rec
                if self.out:
                    write_table(self.kept + list(done.values()), self.columns,
                                self.out, self.format)
                if on_point is not None:
                    on_point(p, s)
                if bar is not None:
                    bar.update(self.samples)
        finally:
            if bar is not None:
                bar.close()
            if lock is not None:
                lock.release()
        return frame([done[p.key] for p in self.points], self.columns)


def _fmt_point(gp):
    def f(v):
        if isinstance(v, str):
            return repr(v)
        return f"{v:.6g}" if isinstance(v, float) else str(v)
    return ", ".join(f"{k}={f(v)}" for k, v in gp.items())
