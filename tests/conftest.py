"""Fixtures shared by the test modules (constants and helper functions are
in ``helpers.py``)."""
import contextlib
import dataclasses
import io
import os
import pathlib
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from helpers import VERIFY_ARGS

settings.register_profile(
    "ci", max_examples=150, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# --------------------------------------------------------------------------
# parameters

@pytest.fixture(params=[np.float32, np.float64], ids=["f32", "f64"])
def dtype(request):
    return request.param


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread for a module's tests (``pytestmark =
    pytest.mark.usefixtures("one_torch_thread")``): their tensors are tiny, so
    a second thread gains nothing, and on cores shared with the other test
    processes torch's waiting OpenMP workers cost CPU time."""
    import torch
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


# --------------------------------------------------------------------------
# one small `verify` run for the whole test run: the command line's
# ``fastsoftmax verify --out DIR`` in process (DIR's parents missing), once
# for all xdist workers (the first to ask runs it under a file lock and
# pickles it; the others read it).  test_verify reads its VerifyResult and
# files, test_cli its exit status and streams as well.

@dataclasses.dataclass
class VerifyRun:
    rc: int
    stdout: str
    stderr: str
    out: pathlib.Path
    result: object


def _cli_verify(out):
    """``fastsoftmax verify VERIFY_ARGS --out out`` through ``cli.main``, the
    VerifyResult it printed kept from the run."""
    from fastsoftmax import cli
    from fastsoftmax import verify as vmod
    results = []
    prepare = vmod.prepare

    def keeping(*a, **kw):
        exp = prepare(*a, **kw)
        run = exp.run

        def run_and_keep(*ra, **rkw):
            results.append(run(*ra, **rkw))
            return results[-1]
        exp.run = run_and_keep
        return exp

    stdout, stderr = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(stdout), \
            contextlib.redirect_stderr(stderr):
        mp.setattr(vmod, "prepare", keeping)
        rc = cli.main([*VERIFY_ARGS, "--out", str(out)])
    assert len(results) == 1, stderr.getvalue()
    return VerifyRun(rc, stdout.getvalue(), stderr.getvalue(), out, results[0])


@pytest.fixture(scope="session")
def verify_cli(tmp_path_factory):
    """The session's one ``fastsoftmax verify`` run (:class:`VerifyRun`)."""
    from filelock import FileLock
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent                      # the workers of this run share it
    with FileLock(str(root / "verify-run.lock")):
        done = root / "verify-run.pickle"
        if done.exists():
            with open(done, "rb") as f:
                return pickle.load(f)
        run = _cli_verify(root / "verify-run" / "new" / "v")
        with open(done, "wb") as f:
            pickle.dump(run, f)
        return run


@pytest.fixture(scope="session")
def verify_result(verify_cli):
    """The VerifyResult of ``verify.run(**VERIFY_RUN, out=verify_out)`` (run once per session)."""
    return verify_cli.result


@pytest.fixture(scope="session")
def verify_out(verify_cli):
    """The ``--out`` directory that run wrote (tables, summary.json, plots)."""
    return verify_cli.out


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
