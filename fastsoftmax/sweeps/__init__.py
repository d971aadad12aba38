r"""Parameter sweeps: one :func:`fastsoftmax.simulate` per grid point, one
tidy row per point, written to disk as each point finishes.

>>> import fastsoftmax as fs
>>> df = fs.sweep(fs.models.DotProduct, {"d_k": [1, 4096], "scaled": [False, True]},
...               fixed={"n": 64}, samples=10_000, progress=False)
>>> df[["d_k", "scaled"]].values.tolist()
[[1, False], [1, True], [4096, False], [4096, True]]
>>> (df["jac_diag_max_q0.5"] < 1e-6).tolist()
[False, False, True, False]

(add ``out="sweep.parquet", resume=True`` to keep the table on disk and
continue an interrupted sweep).

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
* The figure: :func:`fastsoftmax.sweeps.plot.plot_sweep` draws the median
  and quantile bands of an observable against a grid key (needs matplotlib;
  ``fastsoftmax sweep --plot``).
* The lock: while it writes, a sweep holds an OS lock (``filelock``) on an
  empty hidden file beside ``out``, ``.<name>.lock`` (``.sweep.parquet.lock``),
  so two sweeps never write one table.  The file stays when the sweep ends,
  on purpose: a sweep that opened it a moment before it was deleted would
  lock the deleted file while a third locks a new one, and both would write
  (filelock keeps lock files for this reason).  It is free once the writer
  exits (SIGKILL included) and may be deleted whenever no sweep of that
  table runs.

``fs.sweep`` is the function :func:`sweep` of this package,
``fastsoftmax.sweeps`` (named apart from the function, so importing the
package never rebinds ``fs.sweep``).  Its parts: ``_plan`` (the validated
points and their rows) and ``_table`` (the table on disk and its lock).
pandas, pyarrow, filelock and tqdm are imported only when a sweep runs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _config
from .._util import check_progress
from ._plan import Plan, Point, config_key, point_record, resolve_factory, stat_columns
from ._table import SweepLocked, read_table, write_table
from ._theory import theory_columns, theory_record

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["sweep", "plan", "Plan", "Point", "SweepLocked", "point_record", "stat_columns",
           "config_key", "read_table", "write_table", "resolve_factory", "theory_columns",
           "theory_record"]


def plan(model_factory: Any, grid: dict, **kw: Any) -> Plan:
    """A validated :class:`Plan` of a sweep; nothing runs.

    Every check of :func:`sweep` happens here (so a tool can report bad
    arguments apart from failures while running); ``plan(...).run()`` is
    ``sweep(...)``.

    Parameters
    ----------
    model_factory : model class, str or callable
        As :func:`sweep`.
    grid : dict
        As :func:`sweep`.
    **kw
        ``fixed``, ``samples`` (required), ``seed``, ``target``, ``dtype``,
        ``thresholds``, ``out``, ``resume``, ``backend``, ``theory``: as
        :func:`sweep`.

    Returns
    -------
    Plan
        The points, columns and output file; :meth:`Plan.run` runs it.

    Raises
    ------
    TypeError, ValueError
        A bad grid, parameter, option or output file.
    FileExistsError
        ``out`` exists and ``resume`` is False.

    Examples
    --------
    >>> from fastsoftmax.sweeps import plan
    >>> p = plan("dotproduct", {"d_k": [1, 64], "scaled": [False, True]}, fixed={"n": 16},
    ...          samples=1000)
    >>> [pt.grid for pt in p.points]   # doctest: +NORMALIZE_WHITESPACE
    [{'d_k': 1, 'scaled': False}, {'d_k': 1, 'scaled': True},
     {'d_k': 64, 'scaled': False}, {'d_k': 64, 'scaled': True}]
    >>> df = p.run(progress=False)
    >>> len(df)
    4
    """
    return Plan(model_factory, grid, **kw)


def sweep(model_factory: Any, grid: dict, *, fixed: dict | None = None, samples: int,
          seed: int = 0, target: Any = "argmax", dtype: str = "float32",
          thresholds: Any = _config.DEFAULT_THRESHOLDS, out: Any = None, resume: bool = False,
          progress: Any = True, client: Any = None, backend: str = "auto",
          theory: Any = False) -> pd.DataFrame:
    r"""Simulate every point of a parameter grid; a tidy pandas DataFrame.

    Each point is one :func:`fastsoftmax.simulate` of the point's model,
    with the same ``seed`` for all (common random numbers: the same
    underlying normals at every point, so differences between points are
    much sharper than their standard errors suggest).  Everything is
    validated before the first point runs; with ``out`` the table is
    rewritten atomically after every point, so an interrupted sweep loses at
    most the point in progress, and ``resume=True`` continues it.

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
    samples : int
        Logit vectors per point (>= 1).
    seed : int, default 0
        One seed for every point (common random numbers).
    target : "argmax", "random", "sampled" or int, default "argmax"
        As :func:`fastsoftmax.simulate`.
    dtype : {"float32", "float64"}, default "float32"
        As :func:`fastsoftmax.simulate`.
    thresholds : sequence of float, default (1e-3, 1e-6, 1e-9)
        As :func:`fastsoftmax.simulate` (a ``below_<t>`` column each).
    out : str or path, optional
        A ``.csv`` or ``.parquet`` file, rewritten atomically after every
        point.  An existing file is refused unless ``resume=True``.  The
        empty lock file ``.<name>.lock`` beside it stays (see the module's
        notes).
    resume : bool, default False
        Skip the points already in ``out`` (same ``config``), keep its other
        rows; refuse a file written with other samples, seed, target, dtype,
        thresholds, another model or another fastsoftmax version.
    progress : bool or object with ``update(rows)``, default True
        A tqdm bar, none, or the caller's own bar.
    client : distributed.Client, optional
        Passed on to :func:`fastsoftmax.simulate`.
    backend : {"auto", "cpu", "cuda"}, default "auto"
        As :func:`fastsoftmax.simulate`.
    theory : bool or {0, 1}, default False
        Add the predictions of :mod:`fastsoftmax.theory` beside the
        measurements (needs SciPy): for every observable
        ``<name>_theory_below_<t>`` (P(obs < t)), ``<name>_theory_q0.5``
        (the median) and ``<name>_theory_mean`` (exact, n <= 2), plus
        ``entropy_theory_rem_mean`` and ``max_prob_theory_rem_mean`` (the
        random energy model, n > 2) and ``theory_order``; NaN wherever no
        law covers the point or the law states no accuracy there (see
        :func:`theory_record`).  ``True`` uses the saturation law at order 1
        for Gaussian and Shifted (about 1 s a point) and order 0 for
        DotProduct (its order 1 is a chi^2 mixture of quadratures: seconds
        per observable); 0 or 1 forces an order.  A table written with
        theory columns resumes only with the same setting.

    Returns
    -------
    pandas.DataFrame
        One row per grid point, in grid order: the model parameters (grid keys
        first), ``target``, ``dtype``, ``samples``, then for every observable
        ``<name>_mean``, ``_std``, ``_sem``, ``_min``, ``_max``, ``_log10_mean``,
        ``_log10_std``, ``_log10_sem``, ``_nonfinite``, ``_q0.01`` ... ``_q0.99``,
        ``_below_<t>`` for each threshold, the theory columns with ``theory``,
        and ``config`` (the point's key, JSON).

    Raises
    ------
    TypeError, ValueError
        A bad grid, parameter, option or output file (before any point runs).
    FileExistsError
        ``out`` exists and ``resume`` is False.
    SweepLocked
        Another process is writing ``out``.
    RuntimeError
        ``backend="cuda"`` without a usable GPU.

    See Also
    --------
    plan : The same checks, nothing run.
    fastsoftmax.simulate : One point.

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> df = fs.sweep(fs.models.Gaussian, {"scale": [1.0, 100.0]}, fixed={"n": 8},
    ...               samples=2000, progress=False)
    >>> bool(df["jac_diag_max_q0.5"].iloc[0] > df["jac_diag_max_q0.5"].iloc[1])
    True
    >>> df = fs.sweep(fs.models.Gaussian, {"scale": [49.0]}, fixed={"n": 64}, samples=20_000,
    ...               progress=False, theory=True)
    >>> print(df[["jac_diag_max_below_1e-06", "jac_diag_max_theory_below_1e-06"]].round(3))
       jac_diag_max_below_1e-06  jac_diag_max_theory_below_1e-06
    0                     0.497                            0.498
    """
    p = Plan(model_factory, grid, fixed=fixed, samples=samples, seed=seed, target=target,
             dtype=dtype, thresholds=thresholds, out=out, resume=resume, backend=backend,
             theory=theory)
    check_progress(progress)
    return p.run(progress=progress, client=client)

