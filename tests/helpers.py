"""Constants and small functions the test modules share (``from helpers
import ...``); fixtures live in ``conftest.py``.  Each section serves one
group of test modules."""
import math
import os

import numpy as np

import fastsoftmax as fs

# --------------------------------------------------------------------------
# paths and child interpreters

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def subprocess_env(**extra):
    """Environment for child interpreters: this checkout first on sys.path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, env.get("PYTHONPATH")]))
    env.update({k: str(v) for k, v in extra.items()})
    return env


# --------------------------------------------------------------------------
# tolerances

# relative tolerances against the 60-digit reference, per dtype
RTOL = {np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12}


# --------------------------------------------------------------------------
# the session's `verify` run (conftest's verify_cli, verify_result and verify_out)

VERIFY_RUN = dict(samples=2000, seed=3, backend="cpu", context=True)
# the same run as the command line's arguments (conftest runs it this way)
VERIFY_ARGS = (["verify", "--samples", str(VERIFY_RUN["samples"]),
                "--seed", str(VERIFY_RUN["seed"]), "--backend", VERIFY_RUN["backend"]]
               + (["--context"] if VERIFY_RUN["context"] else []))


# ----------------------------------------------------------------------------
# theory (tests/test_theory_*.py): Monte Carlo references for the laws

#: The thresholds t of the saturation law's checks against ``simulate``.
THR = (1e-3, 1e-6, 1e-9)


def edge_rows(rows, n, dtype, seed, scale=6.0):
    """Gaussian logits (``scale`` wide) with every kind of row a kernel
    branches on: -inf masks, full ties, a single finite logit, a saturated
    row (n >= 4, rows >= 10)."""
    x = np.random.default_rng(seed).normal(size=(rows, n)) * scale
    x[::7, 3] = -np.inf            # masks
    x[::11, :] = 2.0               # full ties
    x[5, :] = -np.inf
    x[5, 1] = 0.0                  # a single finite logit
    x[9, :] *= 300.0               # a saturated row
    return x.astype(dtype)


def binom_se(p, rows):
    """The standard error of a fraction p over ``rows`` rows (at least that of 1/rows)."""
    return math.sqrt(max(p * (1.0 - p), 1.0 / rows) / rows)


def sim(model, rows, seed=1, thresholds=THR, target="argmax"):
    """``simulate`` in float64 on the CPU: the rows the laws are checked against."""
    return fs.simulate(model, rows, seed=seed, thresholds=thresholds, target=target,
                       dtype="float64", backend="cpu")
