"""Helpers shared by the test modules (``from helpers import ...``).

Each section serves one group of test modules.
"""
import math
import os

import fastsoftmax as fs

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def subprocess_env(**extra):
    """Environment for child interpreters: this checkout first on sys.path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, env.get("PYTHONPATH")]))
    env.update({k: str(v) for k, v in extra.items()})
    return env


# ----------------------------------------------------------------------------
# theory (tests/test_theory_*.py): Monte Carlo references for the laws

#: The thresholds t of the saturation law's checks against ``simulate``.
THR = (1e-3, 1e-6, 1e-9)


def binom_se(p, rows):
    """The standard error of a fraction p over ``rows`` rows (at least that of 1/rows)."""
    return math.sqrt(max(p * (1.0 - p), 1.0 / rows) / rows)


def sim(model, rows, seed=1, thresholds=THR, target="argmax"):
    """``simulate`` in float64 on the CPU: the rows the laws are checked against."""
    return fs.simulate(model, rows, seed=seed, thresholds=thresholds, target=target,
                       dtype="float64", backend="cpu")
