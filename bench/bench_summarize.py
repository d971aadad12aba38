"""summarize vs NumPy, SciPy, JAX-jit and PyTorch computing the same
statistics, in one run; prints logits/s and ratios (see report.py).

    python -m pytest bench/bench_summarize.py --benchmark-only -q -s
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fastsoftmax as fs
import peers
from report import record

SIZES = [(2_000_000, 64, "float32"), (100_000, 1024, "float32"), (10_000, 16384, "float32"),
         (100_000, 1024, "float64")]
_DATA = {}


def data(rows, n, dt):
    key = (rows, n, dt)
    if key not in _DATA:
        _DATA.clear()
        _DATA[key] = np.random.default_rng(0).standard_normal((rows, n)).astype(dt) * 3
    return _DATA[key]


def _impls():
    out = {"fastsoftmax": fs.summarize, "numpy": peers.numpy_stats, "scipy": peers.scipy_stats}
    try:
        out["jax-jit"] = peers.make_jax()
    except ImportError:
        pass
    try:
        out["pytorch"] = peers.make_torch()
    except ImportError:
        pass
    return out


IMPLS = _impls()


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}-{s[2]}")
@pytest.mark.parametrize("impl", list(IMPLS))
def test_summarize_throughput(benchmark, impl, size):
    rows, n, dt = size
    if impl == "scipy" and n * rows > 2e8:
        pass
    x = data(rows, n, dt)
    f = IMPLS[impl]
    f(x[: max(1, (1 << 22) // n)])                 # warm-up / compile
    benchmark.pedantic(f, args=(x,), rounds=3, iterations=1)
    record(f"{rows}x{n} {dt}", impl, benchmark.stats.stats.min, rows * n)


MEM = textwrap.dedent("""
    import resource, sys, numpy as np, fastsoftmax as fs
    rows, n, dt = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    fs.summarize(np.zeros((4096, n), dtype=dt))   # compile / load kernels
    x = np.ones((rows, n), dtype=dt)
    x[:, 0] = 2.0
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    fs.summarize(x)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print((after - before) / 1024)
""")


@pytest.mark.parametrize("size", SIZES[:3], ids=lambda s: f"{s[0]}x{s[1]}")
def test_peak_memory_above_input(size):
    rows, n, dt = size
    out = subprocess.run([sys.executable, "-c", MEM, str(rows), str(n), dt],
                         capture_output=True, text=True, check=True)
    mb = float(out.stdout.split()[-1])
    print(f"\npeak RSS above the input, {rows}x{n}: {mb:.1f} MB")
    record("peak memory above input (MB)", f"{rows}x{n}", mb, mb, unit="MB")


COMPILE = textwrap.dedent("""
    import time, numpy as np
    t = time.perf_counter()
    import fastsoftmax as fs
    fs.summarize(np.random.default_rng(0).normal(size=(100, 64)).astype(np.float32))
    print(time.perf_counter() - t)
""")


def test_first_call_cold_and_warm_cache(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    times = [float(subprocess.run([sys.executable, "-c", COMPILE], env=env, check=True,
                                  capture_output=True, text=True).stdout.split()[-1])
             for _ in range(2)]
    print(f"\nfirst call incl. import: cold cache {times[0]:.1f} s, warm cache {times[1]:.2f} s")
    record("first summarize call (s)", "cold cache", times[0], times[0], unit="s")
    record("first summarize call (s)", "warm cache", times[1], times[1], unit="s")
