"""Throughput of the vectorizable elementary functions (pytest-benchmark).

Run:   python -m pytest bench/bench_vmath.py --benchmark-only -q
Wider vectors: prefix the command with
    NUMBA_CPU_FEATURES="$(python -c 'import llvmlite.binding as l; \
print(l.get_host_cpu_features().flatten())'),-prefer-256-bit"

Each case reduces 10 million values; the summary (elements/s, ratios against
the ``math.exp`` loop, ``np.exp(x - m).sum()`` and a plain ``max`` loop) is
printed at the end of the module.
"""
import math
import os
import sys

import numba
import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from fastsoftmax._kernels.vmath import fmax, vexp, vlog, vsincos  # noqa: E402

N = 10_000_000
FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
ROUNDS = 7
_RESULTS = {}


@numba.njit(fastmath=FASTMATH)
def sum_vexp(x, m):
    s = m - m
    for i in range(x.size):
        s += vexp(x[i] - m)
    return s


@numba.njit(fastmath=FASTMATH)
def sum_mathexp(x, m):
    s = m - m
    for i in range(x.size):
        s += math.exp(x[i] - m)
    return s


@numba.njit(fastmath=FASTMATH)
def sum_vlog(x):
    s = x[0] - x[0]
    for i in range(x.size):
        s += vlog(x[i])
    return s


@numba.njit(fastmath=FASTMATH)
def sum_vsincos(x):
    s = x[0] - x[0]
    for i in range(x.size):
        a, b = vsincos(x[i])
        s += a * b
    return s


@numba.njit(fastmath=FASTMATH)
def max_fmax(x):
    m = x[0]
    for i in range(x.size):
        m = fmax(m, x[i])
    return m


@numba.njit(fastmath=FASTMATH)
def max_plain(x):
    m = x[0]
    for i in range(x.size):
        m = max(m, x[i])
    return m


def numpy_exp_sum(x, m):
    return np.exp(x - m).sum()


@pytest.fixture(scope="module", params=[np.float32, np.float64],
                ids=["float32", "float64"])
def data(request):
    dt = request.param
    x = np.random.default_rng(0).standard_normal(N).astype(dt)
    return dt, x, x.max()


@pytest.fixture(scope="module", autouse=True)
def _summary(request):
    yield
    if not _RESULTS:
        return
    capman = request.config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        with capman.global_and_fixture_disabled():
            _write_summary(sys.stdout)
    else:
        _write_summary(sys.stdout)


def _write_summary(out):
    out.write("\n\nelements/s (best of %d rounds, %d elements)\n" % (ROUNDS, N))
    for dt in ("float32", "float64"):
        r = {k[1]: v for k, v in _RESULTS.items() if k[0] == dt}
        if not r:
            continue
        for name in sorted(r):
            out.write("  %-8s %-14s %9.3g\n" % (dt, name, r[name]))

        def ratio(a, b):
            if a in r and b in r:
                out.write("  %-8s %-30s %6.2fx\n"
                          % (dt, "%s / %s" % (a, b), r[a] / r[b]))
        ratio("vexp", "math.exp")
        ratio("vexp", "np.exp")
        ratio("fmax", "max")
    out.flush()


def _bench(benchmark, key, fn, *args):
    fn(*args)                                     # compile, warm caches
    res = benchmark.pedantic(fn, args=args, rounds=ROUNDS, iterations=1,
                             warmup_rounds=1)
    _RESULTS[key] = N / benchmark.stats.stats.min
    return res


def test_sum_vexp(benchmark, data):
    dt, x, m = data
    s = _bench(benchmark, (dt.__name__, "vexp"), sum_vexp, x, m)
    ref = np.exp((x - m).astype(np.float64)).sum()
    assert abs(s - ref) <= 1e-4 * ref


def test_sum_mathexp(benchmark, data):
    dt, x, m = data
    _bench(benchmark, (dt.__name__, "math.exp"), sum_mathexp, x, m)


def test_numpy_exp_sum(benchmark, data):
    dt, x, m = data
    _bench(benchmark, (dt.__name__, "np.exp"), numpy_exp_sum, x, m)


def test_sum_vlog(benchmark, data):
    dt, x, m = data
    _bench(benchmark, (dt.__name__, "vlog"), sum_vlog, np.abs(x) + dt(0.5))


def test_sum_vsincos(benchmark, data):
    dt, x, m = data
    _bench(benchmark, (dt.__name__, "vsincos"), sum_vsincos, x)


def test_max_fmax(benchmark, data):
    dt, x, m = data
    assert _bench(benchmark, (dt.__name__, "fmax"), max_fmax, x) == m


def test_max_plain(benchmark, data):
    dt, x, m = data
    assert _bench(benchmark, (dt.__name__, "max"), max_plain, x) == m
