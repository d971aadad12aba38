"""pytest setup for the benchmarks: this folder on sys.path (the benchmarks
import ``report``, ``ceiling`` and ``peers``), and the table of every
measurement printed at the end of the session."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import report  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _print_ratios():
    yield
    if not report.RESULTS:
        return
    text = "\n".join(report.table_lines())
    print(text)
    out = os.environ.get("BENCH_REPORT")
    if out:
        with open(out, "a") as f:
            f.write(text + "\n")
