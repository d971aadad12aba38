"""Where the time goes: the CPU kernel's phases, cumulative, against the
exp+sum ceilings, per row, one thread (CPU time: a shared machine's
descheduling does not count), interleaved best-of.

    NUMBA_NUM_THREADS=1 N=64 ROWS=500000 python bench/proto/phases.py

Phases (each run adds one): the top-2 pass; + the exp pass (row_stats: R,
E2, E3, V in 16 lanes, prefetching the next row as the kernel does); + the wrap-up (block_logobs: the observables' logs);
+ the block reduction (block_reduce: values, moments, thresholds, sketch);
the whole summarize for reference.  GEN=1: generated Gaussian rows instead
(the ceiling is then the RNG alone).
"""
import os
import sys
import time

import numba
import numpy as np
from numba import njit, prange

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import fastsoftmax as fs  # noqa: E402
from ceiling import exp_sum, exp_sum_default, rng_alone  # noqa: E402
from fastsoftmax import _config  # noqa: E402
from fastsoftmax._config import FASTMATH  # noqa: E402
from fastsoftmax._math import (NOBS, NSTATS, block_logobs, row_stats_into,  # noqa: E402
                                         row_stats_into_ahead, row_top2)
from fastsoftmax._rng import STREAM_LOGITS, fill_normals_rows  # noqa: E402
from fastsoftmax._simd import row_view, vector_width  # noqa: E402
from fastsoftmax._sketch import new_scratch  # noqa: E402
from fastsoftmax.accumulate import NCH, block_reduce  # noqa: E402


@njit(parallel=True, fastmath=FASTMATH, error_model="numpy")
def phases(x, gen, brows, mode, buf_s, st_s, lam_s, val_s, mom, vmin, vmax, nonf, below, thr,
           counts, lo, hi, ninf, start):
    rows, n = x.shape if gen == 0 else (mom.shape[0] * brows, buf_s.shape[2])
    nth = st_s.shape[0]
    nblk = rows // brows
    for t in prange(nth):
        vector_width()
        st = st_s[t]
        buf = buf_s[t]
        for b in range(t, nblk, nth):
            r0 = b * brows
            if gen:
                fill_normals_rows(buf, brows, n, np.uint64(0), r0, STREAM_LOGITS, 0.0, 1.0)
            for i in range(brows):
                xr = row_view(x, r0 + i) if gen == 0 else row_view(buf, i)
                if mode == 0:
                    m1, m2 = row_top2(xr, n)
                    st[0, i] = m1
                    st[1, i] = m2
                elif gen == 0:
                    r = r0 + i
                    ahead = row_view(x, r + 1 if r + 1 < rows else r)
                    row_stats_into_ahead(xr, n, 0, 0, 0.5, st, i, ahead)
                else:
                    row_stats_into(xr, n, 0, 0, 0.5, st, i)
            if mode >= 2:
                block_logobs(st, brows, lam_s[t])
            if mode >= 3:
                block_reduce(lam_s[t], brows, thr, val_s[t], mom[b], vmin[t], vmax[t], nonf[t],
                             below[t], counts[t], lo[t], hi[t], ninf[t], start)


def main():
    n = int(os.environ.get("N", 64))
    gen = int(os.environ.get("GEN", 0))
    dt = np.dtype(os.environ.get("DT", "float32"))
    brows = _config.block_rows(n)
    rows = int(os.environ.get("ROWS", (1 << 24) // n))
    rows -= rows % brows
    nth = numba.get_num_threads()
    x = (np.random.default_rng(0).standard_normal((rows, n)) *
         float(os.environ.get("SC", 3))).astype(dt)
    thr = np.array(_config.DEFAULT_THRESHOLDS)
    sk = new_scratch(nth, NOBS, dt)
    a = dict(buf_s=np.zeros((nth, brows, n), dt), st_s=np.zeros((nth, NSTATS, brows)),
             lam_s=np.zeros((nth, NOBS, brows)), val_s=np.zeros((nth, NCH + 1, brows)),
             mom=np.zeros((rows // brows, NCH, 3)), vmin=np.zeros((nth, NCH)),
             vmax=np.zeros((nth, NCH)), nonf=np.zeros((nth, NCH), np.int64),
             below=np.zeros((nth, NOBS, 3), np.int64), thr=thr, counts=sk["counts"],
             lo=sk["lo"], hi=sk["hi"], ninf=sk["ninf"], start=sk["start"])
    xk = x if not gen else np.zeros((1, 1), dt)
    rbuf = np.zeros((nth, n), dt)
    c = {}
    if gen:
        c["RNG alone ceiling"] = lambda: rng_alone(rows, n, np.uint64(0), rbuf)
    else:
        c["exp+sum ceiling"] = lambda: exp_sum(x)
        c["exp+sum ceiling (default width)"] = lambda: exp_sum_default(x)
    for mode, name in enumerate(["top2", "+ exp pass", "+ wrap-up (logobs)",
                                 "+ block reduce (values, moments, thresholds, sketch)"]):
        if gen and mode == 0:
            continue
        c[name] = (lambda m=mode: phases(xk, gen, brows, m, **a))
    if not gen:
        c["summarize (all)"] = lambda: fs.summarize(x)
    else:
        c["simulate (all)"] = lambda: fs.simulate(fs.models.Gaussian(n=n), rows, backend="cpu",
                                                  dtype=dt)
    clock = time.process_time if nth == 1 else time.perf_counter
    for f in c.values():
        f()
    best = {k: float("inf") for k in c}
    for _ in range(int(os.environ.get("R", 7))):
        for k, f in c.items():
            t0 = clock()
            f()
            best[k] = min(best[k], clock() - t0)
    ceil = min(v for k, v in best.items() if "ceiling" in k)
    print(f"n={n} {dt} rows={rows} gen={gen} threads={nth} vector width "
          f"{_config.KERNEL_VECTOR_WIDTH or 'default'} load {os.getloadavg()[0]:.2f}")
    prev = 0.0
    for k, v in best.items():
        per = 1e9 * v * nth / rows
        tail = ""
        if "ceiling" not in k and "(all)" not in k:
            tail = f"  (this phase {1e9 * (v - prev) * nth / rows:7.1f} ns/row)"
            prev = v
        print(f"  {k:52s} {per:8.1f} ns/row  {ceil / v:6.1%} of the best ceiling{tail}")

if __name__ == "__main__":
    main()
