"""Monte Carlo engine throughput, in one run, against what a user could do
without fastsoftmax (NumPy's generator + NumPy statistics; JAX random.normal
+ jit statistics), and against the RNG alone.

    python -m pytest bench/bench_simulate.py --benchmark-only -q -s
"""
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

import fastsoftmax as fs
import peers
from ceiling import rng_alone
from report import record
from fastsoftmax.models import DotProduct, Gaussian

SAMPLES = {64: 2_000_000, 1024: 200_000}


@pytest.mark.parametrize("n", [64, 1024])
def test_generated_gaussian(benchmark, n):
    rows = SAMPLES[n]
    model = Gaussian(n=n)
    fs.simulate(model, 4096, backend="cpu")
    benchmark.pedantic(fs.simulate, args=(model, rows), kwargs=dict(backend="cpu"),
                       rounds=3, iterations=1)
    record(f"Gaussian n={n}, generated", "fastsoftmax", benchmark.stats.stats.min, rows * n)


@pytest.mark.parametrize("n", [64, 1024])
def test_rng_alone(benchmark, n):
    rows = SAMPLES[n]
    buf = np.zeros((numba.get_num_threads(), n), dtype=np.float32)
    rng_alone(16, n, np.uint64(0), buf)
    benchmark.pedantic(rng_alone, args=(rows, n, np.uint64(0), buf), rounds=3, iterations=1)
    record(f"Gaussian n={n}, generated", "RNG alone ceiling (pytest-benchmark)",
           benchmark.stats.stats.min, rows * n, ref=True)


def numpy_mc(rows, n):
    gen = np.random.default_rng(0)
    step = max(1, peers.BATCH_LOGITS // n)
    parts = []
    for r0 in range(0, rows, step):
        x = gen.standard_normal((min(step, rows - r0), n), dtype=np.float32)
        parts.append(peers.numpy_stats(x))
    return parts


def make_jax_mc():
    import jax
    stats = peers.make_jax()

    def run(rows, n):
        key = jax.random.PRNGKey(0)
        step = max(1, peers.BATCH_LOGITS // n)
        out = []
        for r0 in range(0, rows, step):
            key, sub = jax.random.split(key)
            out.append(stats(jax.random.normal(sub, (step, n), dtype="float32")))
        return out

    return run


@pytest.mark.parametrize("n", [64, 1024])
@pytest.mark.parametrize("peer", ["numpy", "jax"])
def test_peer_generate_and_summarize(benchmark, n, peer):
    rows = SAMPLES[n] // 4
    if peer == "numpy":
        f = numpy_mc
    else:
        pytest.importorskip("jax")
        f = make_jax_mc()
    f(4096, n)
    benchmark.pedantic(f, args=(rows, n), rounds=2, iterations=1)
    record(f"Gaussian n={n}, generated", f"{peer} generator + stats", benchmark.stats.stats.min,
           rows * n)


@pytest.mark.parametrize("d_k", [64, 4096])
@pytest.mark.parametrize("method", ["exact", "explicit"])
def test_dotproduct_exact_vs_explicit(benchmark, d_k, method):
    rows = 200_000 if method == "exact" else max(200, 2_000_000 // d_k)
    model = DotProduct(n=64, d_k=d_k, scaled=False, method=method)
    fs.simulate(model, 64, backend="cpu")
    benchmark.pedantic(fs.simulate, args=(model, rows), kwargs=dict(backend="cpu"),
                       rounds=2, iterations=1)
    name = "fastsoftmax" if method == "exact" else "explicit q, K"
    record(f"DotProduct n=64 d_k={d_k} (vectors)", name, benchmark.stats.stats.min, rows,
           unit="vectors/s")


RSS = textwrap.dedent("""
    import resource, sys, time, fastsoftmax as fs
    n, samples = int(sys.argv[1]), int(float(sys.argv[2]))
    t = time.perf_counter()
    s = fs.simulate(fs.models.Gaussian(n=n), samples, backend="cpu")
    dt = time.perf_counter() - t
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, dt, s.samples)
""")


def test_peak_rss_of_a_billion_samples():
    samples = os.environ.get("FS_RSS_SAMPLES", "1e9")
    out = subprocess.run([sys.executable, "-c", RSS, "2", samples], capture_output=True,
                         text=True, check=True)
    mb, dt, count = out.stdout.split()
    print(f"\npeak RSS of simulate(Gaussian(n=2), {samples} samples): {float(mb):.0f} MB, "
          f"{float(dt):.1f} s")
    assert int(count) == int(float(samples))
    record("peak RSS (MB)", f"simulate {samples} samples", float(mb), float(mb), unit="MB")
