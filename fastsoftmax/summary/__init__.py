r"""``Summary`` and ``Stat``: what a run hands back.

A Summary wraps an :class:`~fastsoftmax.accumulate.Accumulator` and the run's
configuration.  ``s[name]`` is a :class:`Stat` with the moments of
the value and of its log10, min/max, quantiles from the log-bucket sketch and
exact fractions below the configured thresholds.

The package keeps one concern a module: ``_stat`` (:class:`Stat`, one
observable's statistics, and :class:`ApproximationWarning`) and ``_summary``
(:class:`Summary`, its merge, its flat record and its JSON, and
:func:`merged_config`).

>>> import numpy as np, fastsoftmax as fs
>>> s = fs.summarize(np.random.default_rng(0).normal(size=(200, 8)))
>>> j = s["jac_fro"]
>>> round(j.mean, 3), round(j.sem, 4), j.fraction_below(1e-3)
(0.367, 0.0016, 0.0)
"""
from ._stat import ApproximationWarning, Stat
from ._summary import Summary, merged_config

__all__ = ["Summary", "Stat", "ApproximationWarning"]
