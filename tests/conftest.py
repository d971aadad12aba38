"""Fixtures shared by the test modules (constants and helper functions are
in ``helpers.py``)."""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from helpers import VERIFY_RUN

settings.register_profile(
    "ci", max_examples=150, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# --------------------------------------------------------------------------
# parameters

@pytest.fixture(params=[np.float32, np.float64], ids=["f32", "f64"])
def dtype(request):
    return request.param


# --------------------------------------------------------------------------
# one small `verify` run for the whole session (every test that needs a run's
# result or its --out files reads this one: the experiment runs once per test run)

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
