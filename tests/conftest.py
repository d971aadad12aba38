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


# --------------------------------------------------------------------------
# No silent skip: with FASTSOFTMAX_STRICT_SKIPS=1 (what .ci/run sets), a test
# skipped for a reason outside this allowlist makes the run fail, and the
# summary lists it.  Allowed: the machine has no CUDA device (or has one, for
# the tests of the no-GPU path), and NVVM/NVRTC are missing (the CUDA toolkit
# wheels are not installed by CI).

import re as _re  # noqa: E402

SKIP_ALLOWLIST = (
    r"no CUDA GPU usable", r"no CUDA device", r"needs a CUDA driver", r"needs a CUDA GPU",
    r"a GPU is usable here", r"workers have a GPU",
    r"\bNVVM\b", r"\bNVRTC\b", r"CUDA toolkit libraries not installed",
)
_UNEXPECTED_SKIPS: list[tuple[str, str]] = []


def _skip_reason(report):
    lr = report.longrepr
    return str(lr[2]) if isinstance(lr, tuple) and len(lr) == 3 else str(lr)


def pytest_runtest_logreport(report):
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = _skip_reason(report)
    if not any(_re.search(p, reason) for p in SKIP_ALLOWLIST):
        _UNEXPECTED_SKIPS.append((report.nodeid, reason))


def _strict_skips(config):
    return os.environ.get("FASTSOFTMAX_STRICT_SKIPS") == "1" and \
        not hasattr(config, "workerinput")       # the xdist controller decides


def pytest_sessionfinish(session, exitstatus):
    if _strict_skips(session.config) and _UNEXPECTED_SKIPS and exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _UNEXPECTED_SKIPS:
        return
    strict = _strict_skips(config)
    terminalreporter.section("skips outside the allowlist" + (" (these fail the run)"
                                                              if strict else ""))
    for nodeid, reason in _UNEXPECTED_SKIPS:
        terminalreporter.write_line(f"{nodeid}: {reason}")
