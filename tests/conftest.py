import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=150, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(params=[np.float32, np.float64], ids=["f32", "f64"])
def dtype(request):
    return request.param


# relative tolerances against the 60-digit reference (issue: 1e-12 / 2e-5)
RTOL = {np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12}


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def subprocess_env(**extra):
    """Environment for child interpreters: this checkout first on sys.path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, env.get("PYTHONPATH")]))
    env.update({k: str(v) for k, v in extra.items()})
    return env


# --------------------------------------------------------------------------
# one small `verify` run for the whole session (every test that needs a run's
# result or its --out files reads this one: the experiment runs once per test run)

VERIFY_RUN = dict(samples=2000, seed=3, backend="cpu", context=True)


@pytest.fixture(scope="session")
def _verify_run(tmp_path_factory):
    from fastsoftmax import verify
    out = tmp_path_factory.mktemp("verify")
    return verify.run(out=out, progress=False, **VERIFY_RUN), out


@pytest.fixture(scope="session")
def verify_result(_verify_run):
    """The VerifyResult of ``verify.run(**VERIFY_RUN, out=verify_out)`` (run once per session)."""
    return _verify_run[0]


@pytest.fixture(scope="session")
def verify_out(_verify_run):
    """The ``--out`` directory that run wrote (tables, summary.json, plots)."""
    return _verify_run[1]
