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

The module is callable: ``fs.sweep(...)`` is :func:`fastsoftmax.sweep.sweep`
(``import fastsoftmax.sweep`` gives the module; typed code may prefer
``from fastsoftmax.sweep import sweep``).  Its parts: ``_plan`` (the
validated points and their rows) and ``_table`` (the table on disk and its
lock).  pandas, pyarrow, filelock and tqdm are imported only when a sweep
runs.
"""
from __future__ import annotations

import sys
import types
from typing import Any

from .. import _config
from .._util import check_progress
from ._plan import Plan, Point, config_key, point_record, resolve_factory, stat_columns
from ._table import SweepLocked, read_table, write_table

__all__ = ["sweep", "plan", "Plan", "Point", "SweepLocked", "point_record", "stat_columns",
           "config_key", "read_table", "write_table", "resolve_factory"]


def plan(model_factory: Any, grid: dict, **kw: Any) -> Plan:
    """A validated :class:`Plan` (nothing runs).  Same arguments as
    :func:`sweep` less ``progress`` and ``client``."""
    return Plan(model_factory, grid, **kw)


def sweep(model_factory: Any, grid: dict, *, fixed: dict | None = None, samples: int,
          seed: int = 0, target: Any = "argmax", dtype: str = "float32",
          thresholds: Any = _config.DEFAULT_THRESHOLDS, out: Any = None, resume: bool = False,
          progress: Any = True, client: Any = None, backend: str = "auto") -> Any:
    r"""Simulate every point of a parameter grid; a tidy pandas DataFrame.

    Parameters
    ----------
    model_factory : model class, str or callable
        A model class (``fs.models.DotProduct``), a name in
        ``fs.models.MODELS`` (``"dotproduct"``) or a callable returning a model.
    grid : dict
        Parameter -> list of values; the points are the cartesian product,
        first key slowest.
    fixed : dict, optional
        Parameter -> value for every point.
    samples, seed, target, dtype, thresholds, backend
        As :func:`fastsoftmax.simulate`; every point uses the same ``seed``
        (common random numbers).
    out : str or path, optional
        A ``.csv`` or ``.parquet`` file, rewritten atomically after every
        point.  An existing file is refused unless ``resume=True``.
    resume : bool, default False
        Skip the points already in ``out`` (same ``config``), keep its other
        rows; refuse a file written with other samples, seed, target, dtype,
        thresholds, another model or another fastsoftmax version.
    progress : bool or object with ``update(rows)``, default True
        A tqdm bar, none, or the caller's own bar.
    client : distributed.Client, optional
        Passed on to :func:`fastsoftmax.simulate`.

    Returns
    -------
    pandas.DataFrame
        One row per grid point, in grid order: the model parameters (grid keys
        first), ``target``, ``dtype``, ``samples``, then for every observable
        ``<name>_mean``, ``_std``, ``_sem``, ``_min``, ``_max``, ``_log10_mean``,
        ``_log10_std``, ``_log10_sem``, ``_nonfinite``, ``_q0.01`` ... ``_q0.99``,
        ``_below_<t>`` for each threshold, and ``config`` (the point's key, JSON).

    Raises
    ------
    TypeError, ValueError
        A bad grid, parameter, option or output file (before any point runs).
    FileExistsError
        ``out`` exists and ``resume`` is False.
    SweepLocked
        Another process is writing ``out``.

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> df = fs.sweep(fs.models.Gaussian, {"scale": [1.0, 100.0]}, fixed={"n": 8},
    ...               samples=2000, progress=False)
    >>> bool(df["jac_diag_max_q0.5"].iloc[0] > df["jac_diag_max_q0.5"].iloc[1])
    True
    """
    p = Plan(model_factory, grid, fixed=fixed, samples=samples, seed=seed, target=target,
             dtype=dtype, thresholds=thresholds, out=out, resume=resume, backend=backend)
    check_progress(progress)
    return p.run(progress=progress, client=client)


class _CallableModule(types.ModuleType):
    """``fs.sweep(...)`` calls :func:`sweep`; the module stays a module."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
