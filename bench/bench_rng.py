"""Normals per second of fastsoftmax._kernels.rng.fill_normals vs NumPy.

    python -m pytest bench/bench_rng.py --benchmark-only -q

fill_normals (Philox4x32-10 + Box--Muller, vectorized) inside an
``njit(parallel=True)`` prange over rows, float32 and float64, n = 64 and
n = 1024, against ``np.random.default_rng().standard_normal(dtype=float32)``
(one thread) in the same run.  A table of normals/s and ratios is printed at
the end.  Wider vectors: NUMBA_CPU_FEATURES=<host features>,-prefer-256-bit.
"""
import os

import numba
import numpy as np
import pytest
from numba import njit, prange

from fastsoftmax._kernels import rng as R

TOTAL = 2**23                 # normals per call
ROUNDS = 10
SEED = 12345

_results = {}


@njit(parallel=True)
def fill_many(out, n, seed):
    for r in prange(out.shape[0]):
        R.fill_normals(out[r], n, seed, r, R.STREAM_LOGITS)


@pytest.fixture(scope="module", autouse=True)
def report(request):
    yield
    if not _results:
        return
    numpy_rate = _results.get("numpy float32")
    capman = request.config.pluginmanager.getplugin("capturemanager")
    if capman is None:
        _print_table(numpy_rate)
    else:
        with capman.global_and_fixture_disabled():   # print through -q / capture
            _print_table(numpy_rate)


def _print_table(numpy_rate):
    write = print
    write("")
    write(f"normals/s ({numba.get_num_threads()} threads, "
          f"NUMBA_CPU_FEATURES={os.environ.get('NUMBA_CPU_FEATURES', '<default>')})")
    for name, rate in _results.items():
        ratio = f"  {rate / numpy_rate:6.1f}x numpy" if numpy_rate else ""
        write(f"  {name:<28s} {rate:10.3e}{ratio}")


def _record(benchmark, name, count):
    best = benchmark.stats.stats.min
    _results[name] = count / best
    benchmark.extra_info["normals_per_s"] = count / best


@pytest.mark.parametrize("n", [64, 1024])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_fill_normals(benchmark, dtype, n):
    out = np.empty((TOTAL // n, n), dtype)
    seed = np.uint64(SEED)
    fill_many(out, n, seed)                      # compile + warm up
    benchmark.pedantic(fill_many, args=(out, n, seed), rounds=ROUNDS, iterations=1,
                       warmup_rounds=1)
    _record(benchmark, f"fill_normals {np.dtype(dtype).name} n={n}", out.size)
    assert np.isfinite(out).all()


def test_numpy_standard_normal(benchmark):
    rng = np.random.default_rng(SEED)
    out = np.empty(TOTAL, np.float32)
    benchmark.pedantic(rng.standard_normal, kwargs=dict(dtype=np.float32, out=out),
                       rounds=3, iterations=1, warmup_rounds=1)
    _record(benchmark, "numpy float32", TOTAL)
