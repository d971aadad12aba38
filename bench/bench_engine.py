"""The engine's memory and latency: what does not grow with samples, what a
Summary weighs, what a tiny call costs.

    python -m pytest bench/bench_engine.py --benchmark-only -q -s

* peak RSS of ``simulate(Gaussian(n=2), S)`` for S = 1e8 and 1e10, each in a
  fresh process (the moments fold into a tree of at most 64 nodes and the
  sketch keeps only the buckets touched: nothing grows with S);
* the size of the Summary (in memory and pickled for Dask) of the widest
  points ``verify`` runs (500,000 samples);
* ``summarize`` of 100 rows and ``merge`` of two Summaries, warm.
"""
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fastsoftmax as fs
from report import record

RSS = textwrap.dedent("""
    import resource, sys, time
    import fastsoftmax as fs
    fs.simulate(fs.models.Gaussian(n=2), 10**6)              # compile / load the cache
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    s = fs.simulate(fs.models.Gaussian(n=2), int(float(sys.argv[1])))
    dt = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(base, peak, dt, s.samples)
""")


def _rss(samples):
    out = subprocess.run([sys.executable, "-c", RSS, str(samples)], capture_output=True,
                         text=True, check=True, env=dict(os.environ))
    base, peak, dt, n = out.stdout.split()
    return int(base) * 1024, int(peak) * 1024, float(dt), int(n)


@pytest.mark.skipif(not os.environ.get("BENCH_LONG"), reason="set BENCH_LONG=1 (minutes)")
def test_peak_rss_does_not_grow_with_samples():
    _rss(1e6)              # fill numba's cache first: compiling takes more memory than running
    small = _rss(1e8)
    big = _rss(1e10)
    print(f"\npeak RSS simulate(Gaussian(n=2)): 1e8 rows {small[1] / 2**20:.1f} MiB "
          f"({small[2]:.1f} s), 1e10 rows {big[1] / 2**20:.1f} MiB ({big[2]:.1f} s): "
          f"ratio {big[1] / small[1]:.3f}")
    assert big[3] == 10**10
    record("engine peak RSS", "1e10 / 1e8 rows", big[1] / small[1], 1.0, unit="ratio")


WIDEST = [
    ("DotProduct d_k=4096 unscaled, argmax", fs.models.DotProduct(n=64, d_k=4096, scaled=False),
     "argmax"),
    ("DotProduct d_k=4096 unscaled, sampled", fs.models.DotProduct(n=64, d_k=4096,
                                                                   scaled=False), "sampled"),
    ("Gaussian scale 256", fs.models.Gaussian(n=64, scale=256.0), "argmax"),
    ("Shifted offset 1e6 (float64)", fs.models.Shifted(n=64, offset=1e6), "argmax"),
]


@pytest.mark.parametrize("name,model,target", WIDEST, ids=[w[0] for w in WIDEST])
def test_summary_size_of_verify_points(benchmark, name, model, target):
    s = benchmark.pedantic(fs.simulate, args=(model, 500_000),
                           kwargs=dict(seed=0, target=target), rounds=1, iterations=1)
    mem, pick, js = s._acc.nbytes(), len(pickle.dumps(s)), len(s.to_json())
    print(f"\n{name}: in memory {mem / 1e3:.0f} kB, pickled {pick / 1e3:.0f} kB, "
          f"JSON {js / 1e3:.0f} kB")
    record("summary size (kB) of verify points", name, mem / 1e3, 1.0, unit="kB")


def test_summarize_100_rows(benchmark):
    x = np.random.default_rng(0).normal(size=(100, 64)).astype(np.float32)
    fs.summarize(x)
    benchmark.pedantic(fs.summarize, args=(x,), rounds=200, iterations=1, warmup_rounds=5)
    record("latency (ms)", "summarize 100 x 64", benchmark.stats.stats.min * 1e3, 1.0, unit="ms")


def test_merge_two_wide_summaries(benchmark):
    m = fs.models.DotProduct(n=64, d_k=4096, scaled=False)
    a = fs.simulate(m, 200_000, seed=1)
    b = fs.simulate(m, 200_000, seed=2)
    benchmark.pedantic(a.merge, args=(b,), rounds=100, iterations=1, warmup_rounds=3)
    record("latency (ms)", "merge (d_k=4096 unscaled, 2 x 200k)",
           benchmark.stats.stats.min * 1e3, 1.0, unit="ms")
