"""The plan of a sweep: every point built and validated before anything
runs, and the tidy row of a point."""
from __future__ import annotations

import dataclasses
import difflib
import inspect
import itertools
import json
import os
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from .. import _config, api
from .._inputs import check_dtype, check_samples, check_seed, check_thresholds, mc_target
from .._util import progress_bar
from .._version import __version__
from ..models import MODELS, _Model
from ..summary import Summary
from ._table import (OUT_FORMATS, Lock, frame, read_table, remove_stale_tmp,
                     require, write_table)
from ._theory import check_theory, theory_columns, theory_order, theory_record

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Plan", "Point", "point_record", "stat_columns", "config_key", "resolve_factory"]
# the keys of a point's configuration that are shared by a whole sweep: a file
# with rows that differ in one of them cannot be resumed by this sweep
SWEEP_KEYS = ("model", "samples", "seed", "target", "dtype", "thresholds", "version")


# --------------------------------------------------------------------------
# the model factory and its parameters

def resolve_factory(model_factory: Any
                    ) -> tuple[Callable[..., Any], str, list[str] | None, list[str]]:
    """The callable behind a sweep's ``model_factory`` and its parameters.

    A model class's parameters are its dataclass fields; another callable's
    are read from its signature, so grid keys are checked (with a
    suggestion for a misspelt one) before any point runs.

    Parameters
    ----------
    model_factory : model class, str or callable
        A model class (``fastsoftmax.models.DotProduct``), a name of
        ``fastsoftmax.models.MODELS`` (case-insensitive) or any callable
        returning a model.

    Returns
    -------
    factory : callable
        What builds a point's model from its parameters.
    name : str
        The model's name (a callable's ``__name__``).
    names : list of str or None
        The parameters it accepts (None: any, for a ``**kwargs`` callable or
        one without a signature).
    required : list of str
        The parameters without a default.

    Raises
    ------
    ValueError
        An unknown model name.
    TypeError
        Not a model class, a name or a callable.

    Examples
    --------
    >>> from fastsoftmax.sweeps import resolve_factory
    >>> factory, name, names, required = resolve_factory("dotproduct")
    >>> name, names, required
    ('dotproduct', ['n', 'd_k', 'scaled', 'method', 'temperature'], ['n', 'd_k'])
    """
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
    close = difflib.get_close_matches(name, names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
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
    """One point of a sweep: its grid values, its model and its key.

    Built and validated by :class:`Plan`, one per combination of the grid's
    values; a point is computed at most once per output file (its ``key``).

    Parameters
    ----------
    index : int
        Position in the grid (first key slowest).
    grid : dict
        This point's grid values as given (parameter -> value).
    model : fastsoftmax.models.Gaussian, Shifted or DotProduct
        The point's model (grid values and ``fixed`` applied).
    key : str
        The point's configuration as canonical JSON (:func:`config_key`,
        the ``config`` column).

    Examples
    --------
    >>> from fastsoftmax.sweeps import plan
    >>> p = plan("gaussian", {"scale": [1.0, 10.0]}, fixed={"n": 8}, samples=1000)
    >>> p.points[1].index, p.points[1].grid, p.points[1].model
    (1, {'scale': 10.0}, Gaussian(n=8, scale=10.0, mean=0.0, temperature=1.0))
    """
    index: int
    grid: dict           # this point's grid values as given
    model: _Model
    key: str             # the config key (JSON)


def config_key(model: _Model, samples: int, seed: int, target: Any, dtype: Any,
               thresholds: Sequence[float]) -> str:
    """The point's configuration as canonical JSON: the ``config`` column.

    Two points are the same computation exactly when their keys are equal;
    ``resume`` skips the points whose key is already in the file.

    Parameters
    ----------
    model : fastsoftmax.models.Gaussian, Shifted or DotProduct
        The point's model (its name and ``params`` are recorded).
    samples : int
        Logit vectors per point.
    seed : int
        The sweep's seed.
    target : str or int
        The target as given (``"argmax"``, ``"random"``, ``"sampled"`` or a
        class index).
    dtype : str or numpy.dtype
        The logits' dtype.
    thresholds : sequence of float
        The configured thresholds.

    Returns
    -------
    str
        JSON with sorted keys: model, params, samples, seed, target, dtype,
        thresholds and the fastsoftmax version.

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> from fastsoftmax.sweeps import config_key
    >>> config_key(fs.models.Gaussian(n=8), 1000, 0, "argmax", "float32", (1e-3,))
    ... # doctest: +ELLIPSIS
    '{"dtype": "float32", "model": "gaussian", "params": {"mean": 0.0, "n": 8, ...'
    """
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


def stat_columns(thresholds: Sequence[float] = _config.DEFAULT_THRESHOLDS) -> list[str]:
    """Names of a sweep table's statistics columns, in order.

    ``<observable>_<key>`` for every observable of ``fastsoftmax.OBS_NAMES``
    and every key of :meth:`fastsoftmax.Stat.keys` (moments, quantiles
    ``q<q>``, fractions ``below_<t>``).

    Parameters
    ----------
    thresholds : sequence of float, default (1e-3, 1e-6, 1e-9)
        The sweep's thresholds (a ``below_<t>`` column each).

    Returns
    -------
    list of str
        The column names, observable by observable.

    Examples
    --------
    >>> from fastsoftmax.sweeps import stat_columns
    >>> cols = stat_columns((1e-6,))
    >>> cols[:3], len(cols)
    (['max_prob_mean', 'max_prob_std', 'max_prob_sem'], 180)
    >>> "jac_diag_max_below_1e-06" in cols
    True
    """
    return Summary.record_columns(thresholds)


def point_record(model: _Model, summary: Summary, target: Any, dtype: Any,
                 param_order: Sequence[str],
                 grid_point: dict[str, Any] | None = None) -> dict[str, Any]:
    """One tidy row of a sweep table: a point's parameters and statistics.

    The row holds exactly the numbers of the point's Summary
    (:meth:`fastsoftmax.Stat.to_dict` of every observable), so a table row
    and ``fs.simulate`` of the point agree bit for bit.

    Parameters
    ----------
    model : fastsoftmax.models.Gaussian, Shifted or DotProduct
        The point's model: its ``params`` give the parameter columns (as the
        model normalised them, e.g. ``d_k=1e3`` -> 1000).
    summary : Summary
        The point's result.
    target : str or int
        The target as given (the ``target`` column).
    dtype : str or numpy.dtype
        The logits' dtype (the ``dtype`` column, as a string).
    param_order : sequence of str
        The parameter columns, in order (grid keys first).
    grid_point : dict, optional
        The point's grid values: keys that are not model parameters (a
        custom factory's) are taken from here.

    Returns
    -------
    dict
        The parameters in ``param_order``, ``target``, ``dtype``,
        ``samples``, then ``<observable>_<key>`` for every statistic
        (:func:`stat_columns`); :meth:`Plan.run` adds the ``config`` column.

    Raises
    ------
    KeyError
        A name of ``param_order`` that is neither a model parameter nor in
        ``grid_point``.

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> from fastsoftmax.sweeps import point_record
    >>> m = fs.models.Gaussian(n=8)
    >>> rec = point_record(m, fs.simulate(m, 1000), "argmax", "float32", ["n", "scale"])
    >>> list(rec)[:6]
    ['n', 'scale', 'target', 'dtype', 'samples', 'max_prob_mean']
    >>> rec["samples"], rec["jac_diag_max_nonfinite"]
    (1000, 0)
    """
    rec = {}
    params = dict(grid_point or {})
    params.update(model.params)
    for k in param_order:
        rec[k] = _plain(params[k])      # normalised by the model (e.g. 1e3 -> 1000)
    rec["target"] = target
    rec["dtype"] = str(dtype)
    rec["samples"] = int(summary.samples)
    rec.update(summary.record())
    return rec


class Plan:
    """A validated sweep: its points, columns and output file.

    Building a Plan checks everything :func:`~fastsoftmax.sweeps.sweep`
    checks (every point's model, samples, seed, target, dtype, thresholds,
    backend, the output file and, with ``resume``, its rows) and runs
    nothing; :meth:`run` computes the points not done yet.
    ``sweep(...)`` is ``Plan(...).run(...)``.

    Parameters
    ----------
    model_factory : model class, str or callable
        As :func:`~fastsoftmax.sweeps.sweep`.
    grid : dict
        Parameter -> list of values; the points are the cartesian product,
        first key slowest.
    fixed : dict, optional
        Parameter -> value for every point.
    samples : int
        Logit vectors per point (>= 1).
    seed : int, default 0
        One seed for every point (common random numbers).
    target : "argmax", "random", "sampled" or int, default "argmax"
        As :func:`fastsoftmax.simulate`.
    dtype : {"float32", "float64"}, default "float32"
        As :func:`fastsoftmax.simulate`.
    thresholds : sequence of float, default (1e-3, 1e-6, 1e-9)
        As :func:`fastsoftmax.simulate`.
    out : str or path, optional
        A ``.csv`` or ``.parquet`` file, rewritten atomically after every
        point.
    resume : bool, default False
        Continue the sweep in ``out``: skip its points, keep its other rows.
    backend : {"auto", "cpu", "cuda"}, default "auto"
        As :func:`fastsoftmax.simulate`.
    theory : bool or {0, 1}, default False
        Add the laws' prediction columns (``<obs>_theory_...``, see
        :func:`~fastsoftmax.sweeps.sweep`); 0 or 1 forces the order of the
        saturation law.

    Attributes
    ----------
    points : list of Point
        Every point, in grid order.
    todo : list of Point
        The points not computed yet (not in ``out``).
    columns : list of str
        The table's columns: parameters, ``target``, ``dtype``, ``samples``,
        :func:`stat_columns`, the theory columns (with ``theory``),
        ``config``.
    out : str or None
        The absolute path of the output file.

    Raises
    ------
    TypeError, ValueError
        A bad grid, parameter, option or output file, naming what is wrong.
    FileNotFoundError, IsADirectoryError, FileExistsError
        ``out`` in a missing directory, a directory, or existing without
        ``resume``.
    RuntimeError
        ``backend="cuda"`` without a usable GPU.

    Examples
    --------
    >>> from fastsoftmax.sweeps import Plan
    >>> p = Plan("gaussian", {"scale": [1.0, 10.0]}, fixed={"n": 8}, samples=1000)
    >>> len(p.points), p.columns[:5]
    (2, ['scale', 'n', 'mean', 'temperature', 'target'])
    >>> Plan("gaussian", {"scael": [1.0]}, fixed={"n": 8}, samples=1000)
    Traceback (most recent call last):
    ...
    ValueError: unknown parameter 'scael' for model gaussian (did you mean 'scale'?); ...
    """

    def __init__(self, model_factory: Any, grid: dict[str, Any], *,
                 fixed: dict[str, Any] | None = None, samples: int, seed: int = 0,
                 target: Any = "argmax", dtype: Any = "float32",
                 thresholds: Sequence[float] = _config.DEFAULT_THRESHOLDS, out: Any = None,
                 resume: bool = False, backend: str = "auto", theory: Any = False) -> None:
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
        self.theory = check_theory(theory)      # ValueError / ImportError (SciPy) now
        if isinstance(target, (np.integer,)):
            target = int(target)
        self.target = target
        self.backend = backend
        api.resolve_backend(backend)            # ValueError / RuntimeError (cuda) now
        self.axes = axes
        self.fixed = fixed
        self.model_name = model_name
        self.points: list[Point] = []
        seen: dict[str, dict[str, Any]] = {}
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
        self._by_key = {p.key: p for p in self.points}
        params0 = list(self.points[0].model.params)
        self.param_order = list(axes) + [k for k in params0 if k not in axes]
        self.columns = self.param_order + ["target", "dtype", "samples"] + \
            stat_columns(self.thresholds) + \
            (theory_columns(self.thresholds) if self.theory is not False else []) + ["config"]
        self.out: str | None = None
        self.format: str | None = None
        self.resume = bool(resume)
        self.kept: list[dict[str, Any]] = []    # rows of the file that are not points of this sweep
        self.done: dict[str, dict[str, Any]] = {}   # key -> record of the points already computed
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
            raise FileExistsError(f"{os.fspath(out)} exists: pass resume=True to "
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

    def _load_existing(self) -> None:
        assert self.out is not None             # set by _check_out
        self.done, self.kept = {}, []
        try:
            df = read_table(self.out, self._string_columns())
        except Exception as e:          # empty, truncated by hand, not a table at all
            raise ValueError(f"{self.out} cannot be read as a sweep table ({e}); "
                             "use another file") from None
        if list(df.columns) != self.columns:
            had = "theory_order" in df.columns
            if had != (self.theory is not False):
                raise ValueError(f"{self.out} was written {'with' if had else 'without'} "
                                 f"theory=True: resume it {'with' if had else 'without'} "
                                 "theory, or use another file")
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
                if self.theory is not False:
                    want = theory_order(self.theory, self._by_key[key].model)
                    if rec["theory_order"] != want:
                        raise ValueError(f"{self.out} has theory columns of order "
                                         f"{rec['theory_order']} where this sweep computes "
                                         f"order {want}: use the same theory setting")
                self.done[key] = rec
            else:
                self.kept.append(rec)
                kept_keys.add(key)

    # ----------------------------------------------------------------- run
    @property
    def todo(self) -> list[Point]:
        """The points not computed yet (all of them unless resuming), in grid order."""
        return [p for p in self.points if p.key not in self.done]

    def run(self, *, progress: Any = True, client: Any = None,
            on_point: Callable[[Point, Summary], Any] | None = None) -> pd.DataFrame:
        """Run the points not done yet; the whole table in grid order.

        With ``out``, the table is rewritten atomically after every point,
        under an exclusive lock on ``.<name>.lock`` next to it (the file is
        re-read under the lock when resuming).

        Parameters
        ----------
        progress : bool or object with ``update(rows)``, default True
            A tqdm bar over rows, none, or the caller's own bar (which may
            also have ``set_postfix_str``).
        client : distributed.Client, optional
            Passed on to :func:`fastsoftmax.simulate`.
        on_point : callable, optional
            ``on_point(point, summary)`` is called after each computed point.

        Returns
        -------
        pandas.DataFrame
            One row per point, in grid order, with :attr:`columns`.

        Raises
        ------
        SweepLocked
            Another process is writing ``out``.
        FileExistsError
            ``out`` appeared since the plan was made and ``resume`` is False.
        ImportError
            pandas (or filelock, pyarrow for ``out``) is not installed.

        Examples
        --------
        >>> from fastsoftmax.sweeps import Plan
        >>> p = Plan("gaussian", {"scale": [1.0, 10.0]}, fixed={"n": 8}, samples=1000)
        >>> df = p.run(progress=False)
        >>> df["scale"].tolist(), df["samples"].tolist()
        ([1.0, 10.0], [1000, 1000])
        """
        require("pandas", "fastsoftmax.sweep")
        bar = progress_bar(progress, len(self.todo) * self.samples, f"sweep {self.model_name}")
        lock = Lock(self.out) if self.out else None
        try:
            if lock is not None:
                lock.acquire()
                remove_stale_tmp(lock.target)
                if os.path.exists(lock.target):   # re-read under the lock
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
                if self.theory is not False:
                    rec.update(theory_record(p.model, self.target, self.thresholds,
                                             theory_order(self.theory, p.model)))
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
