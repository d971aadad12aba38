"""Constants and small functions the test modules share (``from helpers
import ...``); fixtures live in ``conftest.py``."""
import os

import numpy as np

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
# the session's `verify` run (conftest's verify_result and verify_out fixtures)

VERIFY_RUN = dict(samples=2000, seed=3, backend="cpu", context=True)
