"""One version's speed, for before/after comparisons across trees: summarize
and simulate beside the bench's ceilings, per row and thread, each case's
fastsoftmax call and its ceiling alternated for 7 rounds (the fraction is the
median of the paired ratios).  Run it for each tree in turn, alternating, on
the same machine:

    cd /tmp && PYTHONPATH=/path/to/old/tree python /path/to/bench/versions.py
    cd /tmp && PYTHONPATH=/path/to/new/tree python /path/to/bench/versions.py

(from outside the trees, so that PYTHONPATH decides which fastsoftmax is
imported; the ceilings are always this file's ``ceiling.py``).
"""
import os
import sys
import time

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fastsoftmax as fs  # noqa: E402
from ceiling import exp_sum, rng_alone  # noqa: E402
from fastsoftmax.models import Gaussian  # noqa: E402

ROUNDS = 7


def cases():
    nth = numba.get_num_threads()
    out = {}
    for rows, n in ((100_000, 1024), (1_000_000, 64), (10_000, 16384), (200_000, 256)):
        x = (np.random.default_rng(0).standard_normal((rows, n)) * 3).astype(np.float32)
        out[f"summarize n={n}"] = (rows, lambda x=x: fs.summarize(x), lambda x=x: exp_sum(x))
    for n, rows in ((64, 1_000_000), (1024, 100_000)):
        buf = np.zeros((nth, n), np.float32)
        out[f"simulate n={n}"] = (
            rows, lambda n=n, rows=rows: fs.simulate(Gaussian(n=n), rows, backend="cpu"),
            lambda n=n, rows=rows, buf=buf: rng_alone(rows, n, np.uint64(0), buf))
    return out


def main():
    nth = numba.get_num_threads()
    print(f"fastsoftmax {fs.__version__} from {os.path.dirname(fs.__file__)}, threads {nth}")
    for name, (rows, f, ceil) in cases().items():
        f()
        ceil()
        ts, tc = [], []
        for _ in range(ROUNDS):
            t = time.perf_counter()
            ceil()
            tc.append(time.perf_counter() - t)
            t = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t)
        per = 1e9 * nth / rows
        frac = np.median(np.array(tc) / np.array(ts))
        print(f"{name:18s} {per * min(ts):9.1f} ns per row and thread, ceiling "
              f"{per * min(tc):9.1f}, excess {per * (min(ts) - min(tc)):9.1f}; "
              f"fraction (paired median) {frac:6.1%}")


if __name__ == "__main__":
    main()
