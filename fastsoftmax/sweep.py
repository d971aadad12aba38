r"""Parameter sweeps: one :func:`fastsoftmax.simulate` per grid point, one
tidy row per point, written to disk as each point finishes.

>>> import fastsoftmax as fs                                     # doctest: +SKIP
>>> df = fs.sweep(fs.models.DotProduct, {"d_k": [1, 64, 4096], "scaled": [False, True]},
...               fixed={"n": 64}, samples=10**6, out="sweep.parquet", resume=True)

* Every point uses the same ``seed``: *common random numbers* (the same
  underlying normals for every point), so differences between points are
  much sharper than their standard errors suggest.
* The grid is the cartesian product of its lists, first key slowest (like
  nested ``for`` loops in the order of the dict).
* Everything (model parameters at every point, samples, seed, target, dtype,
  thresholds, backend, the output file) is validated before the first point
  runs.
* ``out``: ``.csv`` or ``.parquet``.  After every point the whole table is
  written to a temporary file in the same directory and moved over ``out``
  with ``os.replace`` (atomic), so a crash or SIGKILL at any moment leaves the
  previous complete table: at most the point in progress is lost, never a
  torn or duplicated row.  The ``config`` column is the point's key (model,
  parameters, samples, seed, target, dtype, thresholds); ``resume=True``
  skips the points already there.

This module imports pandas and tqdm lazily (only when a sweep runs).
"""
import dataclasses
import difflib
import inspect
import itertools
import json
import os
import secrets

import numpy as np

from . import _config

__all__ = ["sweep", "plan", "Plan", "SweepLocked", "point_record", "stat_columns"]

OUT_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
# the keys of a point's configuration that are shared by a whole sweep: a file
# with rows that differ in one of them cannot be resumed by this sweep
SWEEP_KEYS = ("model", "samples", "seed", "target", "dtype", "thresholds")


# --------------------------------------------------------------------------
# the model factory and its parameters

def resolve_factory(model_factory):
    """(callable, display name, parameter names or None, required names)."""
    from .models import MODELS, _Model
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
                           thresholds=[float(t) for t in thresholds]),
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
    from ._math import OBS_NAMES
    keys = ["mean", "std", "sem", "min", "max", "log10_mean", "log10_std", "log10_sem",
            "nonfinite"] + [f"q{q:g}" for q in QUANTILES] + [f"below_{t:g}" for t in thresholds]
    return [f"{name}_{k}" for name in OBS_NAMES for k in keys]


QUANTILES = (0.01, 0.1, 0.5, 0.9, 0.99)


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
        for k, v in summary[name].to_dict(quantiles=QUANTILES).items():
            rec[f"{name}_{k}"] = int(v) if k == "nonfinite" else float(v)
    return rec


class Plan:
    """A validated sweep: its points, columns and output file.  ``run``
    executes it; building one runs nothing."""

    def __init__(self, model_factory, grid, *, fixed=None, samples, seed=0, target="argmax",
                 dtype="float32", thresholds=_config.DEFAULT_THRESHOLDS, out=None,
                 resume=False, backend="auto"):
        from . import api
        factory, model_name, names, required = resolve_factory(model_factory)
        axes, fixed = _check_grid(grid, fixed, names, model_name)
        missing = [r for r in required if r not in axes and r not in fixed]
        if missing:
            raise TypeError(f"model {model_name} needs parameter(s) {', '.join(missing)}: "
                            "put them in grid or fixed")
        self.samples = api._check_samples(samples)
        self.seed = api._check_seed(seed)
        self.dtype = api._check_dtype(dtype)
        self.thresholds = tuple(float(t) for t in api._check_thresholds(thresholds))
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
            api._check_model(model)
            api._mc_target(target, model.n)
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
        _require("pandas", "fastsoftmax.sweep")
        if OUT_FORMATS[ext] == "parquet":
            _require("pyarrow", "Parquet output")
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
        from .api import simulate
        _require("pandas", "fastsoftmax.sweep")
        done = self.done
        todo = self.todo
        lock = _Lock(self.out) if self.out else None
        if lock is not None:
            lock.acquire()
        bar, own = None, False
        try:
            if lock is not None:
                _remove_stale_tmp(self.out)
                if os.path.exists(self.out):      # re-read under the lock
                    if not self.resume:
                        raise FileExistsError(f"{self.out} appeared meanwhile: pass "
                                              "resume=True to continue it")
                    self._load_existing()
                done = self.done
                todo = self.todo
            bar, own = _bar(progress, len(todo) * self.samples, f"sweep {self.model_name}")
            for p in todo:
                if bar is not None and hasattr(bar, "set_postfix_str"):
                    bar.set_postfix_str(_fmt_point(p.grid), refresh=False)
                s = simulate(p.model, self.samples, seed=self.seed, target=self.target,
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
            if own and bar is not None:
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


def _bar(progress, total, desc):
    if progress is None or progress is False:
        return None, False
    if progress is True:
        try:
            from tqdm import tqdm
        except ImportError:
            raise ImportError("progress=True needs tqdm: pip install tqdm "
                              "(or pass progress=False)") from None
        return tqdm(total=total, desc=desc, unit="rows", unit_scale=True, smoothing=0.1,
                    dynamic_ncols=True), True
    if not hasattr(progress, "update"):
        raise TypeError(f"progress must be True, False or a tqdm-like object, got {progress!r}")
    return progress, False


# --------------------------------------------------------------------------
# tables on disk

def _require(module, what):
    try:
        __import__(module)
    except ImportError:
        raise ImportError(f"{what} needs {module}: pip install 'fastsoftmax[dataframe]'") \
            from None


def frame(records, columns):
    """The DataFrame of a list of records (all frames are built this way, so
    fresh and resumed sweeps give identical dtypes)."""
    _require("pandas", "fastsoftmax.sweep")
    import pandas as pd
    return pd.DataFrame.from_records(records, columns=columns)


def read_table(path, str_columns=()):
    """A sweep table from disk (``str_columns`` are read as strings from CSV)."""
    import pandas as pd
    fmt = OUT_FORMATS.get(os.path.splitext(path)[1].lower())
    if fmt == "parquet":
        return pd.read_parquet(path)
    kw = {"dtype": {c: str for c in str_columns}} if str_columns else {}
    if int(pd.__version__.split(".")[0]) < 3:
        kw["float_precision"] = "round_trip"     # pandas 3 round-trips by default
    return pd.read_csv(path, **kw)


def write_table(records, columns, path, fmt=None):
    """Write the table atomically: a temporary file in the same directory,
    flushed to disk, then ``os.replace`` over ``path``."""
    fmt = fmt or OUT_FORMATS[os.path.splitext(path)[1].lower()]
    df = frame(records, columns)
    d, base = os.path.split(os.path.abspath(path))
    # O_EXCL with mode 0o666: a fresh name, permissions from the umask (as open())
    tmp = os.path.join(d, f".{base}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            if fmt == "parquet":
                df.to_parquet(f, index=False)
            else:
                df.to_csv(f, index=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(d)


def _fsync_dir(d):
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_stale_tmp(path):
    """Temporary files left by a writer that was killed (we hold the lock)."""
    d, base = os.path.split(path)
    for name in os.listdir(d):
        if name.startswith(f".{base}.") and name.endswith(".tmp"):
            try:
                os.unlink(os.path.join(d, name))
            except OSError:
                pass


class SweepLocked(RuntimeError):
    """Another process is writing the same output file."""


class _Lock:
    """An exclusive advisory lock on ``.<name>.lock`` next to the output, so
    that two sweeps never write the same file.  The OS drops it when the
    process dies, SIGKILL included."""

    def __init__(self, path):
        d, base = os.path.split(path)
        self.path = os.path.join(d, f".{base}.lock")
        self.fd = None

    def acquire(self):
        try:
            import fcntl
        except ImportError:          # not POSIX: no lock
            return
        for _ in range(10):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                d, base = os.path.split(self.path)
                raise SweepLocked(f"another sweep is writing {os.path.join(d, base[1:-5])} "
                                   f"(lock {self.path} is held)") from None
            try:             # the holder before us may have unlinked the file meanwhile
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self.fd = fd
                return
            os.close(fd)
        raise RuntimeError(f"could not lock {self.path}")

    def release(self):
        if self.fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None


# --------------------------------------------------------------------------
# public entry points

def plan(model_factory, grid, **kw):
    """A validated :class:`Plan` (nothing runs).  Same arguments as
    :func:`sweep` less ``progress`` and ``client``."""
    return Plan(model_factory, grid, **kw)


def sweep(model_factory, grid, *, fixed=None, samples, seed=0, target="argmax",
          dtype="float32", thresholds=_config.DEFAULT_THRESHOLDS, out=None, resume=False,
          progress=True, client=None, backend="auto"):
    r"""Simulate every point of a parameter grid; a tidy pandas DataFrame.

    model_factory: a model class (``fs.models.DotProduct``), a name in
    ``fs.models.MODELS`` (``"dotproduct"``) or a callable returning a model.
    grid: dict parameter -> list of values; the points are the cartesian
    product, first key slowest.  fixed: dict parameter -> value for all points.
    samples, seed, target, dtype, thresholds, backend: as
    :func:`fastsoftmax.simulate`; every point uses the same ``seed`` (common
    random numbers).
    out: a ``.csv`` or ``.parquet`` path; the table is rewritten atomically
    after every point.  An existing file is refused unless ``resume=True``,
    which skips the points already in it (same ``config``), keeps its other
    rows, and refuses a file written with other samples/seed/target/dtype/
    thresholds or another model.
    progress: True (tqdm), False, or a tqdm-like object.
    client: a ``dask.distributed.Client``, passed on to ``simulate``.

    Returns one row per grid point, in grid order: the model parameters (grid
    keys first), ``target``, ``dtype``, ``samples``, then for every observable
    ``<name>_mean``, ``_std``, ``_sem``, ``_min``, ``_max``, ``_log10_mean``,
    ``_log10_std``, ``_log10_sem``, ``_nonfinite``, ``_q0.01`` ... ``_q0.99``,
    ``_below_<t>`` for each threshold, and ``config`` (the point's key, JSON).
    """
    p = Plan(model_factory, grid, fixed=fixed, samples=samples, seed=seed, target=target,
             dtype=dtype, thresholds=thresholds, out=out, resume=resume, backend=backend)
    if progress not in (True, False, None) and not hasattr(progress, "update"):
        raise TypeError(f"progress must be True, False or a tqdm-like object, got {progress!r}")
    return p.run(progress=progress, client=client)

