"""Where the time goes: the CPU kernel's phases, cumulative, against the
ceilings, per row and thread, interleaved (median of the rounds, and the
best).

    python bench/phases.py                      # n = 64, 1024, 16384, float32
    N=256 SC=300 NUMBA_NUM_THREADS=1 python bench/phases.py

Phases (each run adds one, in a kernel shaped like ``observe_chunk``: rows in
groups of blocks).  Rows of length n <= TILE_BOUND (the tile path, 16 rows
one per lane; in summarize with FASTSOFTMAX_TILE=1): the transposition of a
tile (``tile_load``); + the top two and the four sums (``tile_sums``,
``tile_row_stats``).  Longer rows (the row-at-a-time path): the top-2 pass;
+ the exp pass (R, E2, E3, V in 16 lanes, prefetching the next row).  Rows
of length n >= STREAM_MIN_N (the one-pass path, ``_kernels.stream``): the
one pass, chunk by chunk (each chunk's top two, then its sums, merged).
Then, for all: + the wrap-up (``block_observables``: the observables' values
and logs); + the block reduction (``block_reduce``: moments, thresholds,
sketch); then the whole ``summarize`` (with the path it is set to).  Where
n <= TILE_BOUND or n >= STREAM_MIN_N the row-at-a-time path's phases run
too, interleaved (``row path``), so the two paths' ratio is a paired
measurement.  It calls
fastsoftmax's private kernels, so it moves with them: the public figures
are bench_ceiling.py's.
"""
import os
import sys

import numba
import numpy as np
from numba import njit, prange

sys.path.insert(0, os.path.dirname(__file__))
import fastsoftmax as fs  # noqa: E402
from ceiling import exp_sum, exp_sum_default, interleaved  # noqa: E402
from fastsoftmax import _config  # noqa: E402
from fastsoftmax._kernels import features as _cpu  # noqa: E402
from fastsoftmax._config import FASTMATH  # noqa: E402
from fastsoftmax._kernels.row import (NOBS, NSTATS, block_observables,  # noqa: E402
                                     row_stats_into_ahead, row_top2, store_stats, tile_load,
                                     tile_row_stats, tile_sums)
from fastsoftmax._kernels.simd import G, row_view, vector_width  # noqa: E402
from fastsoftmax._kernels.stream import STREAM_MIN_N, stream_stats_into  # noqa: E402
from fastsoftmax._kernels.sketch import new_scratch  # noqa: E402
from fastsoftmax.accumulate import NCH, block_reduce  # noqa: E402


@njit(parallel=True, fastmath=FASTMATH, error_model="numpy")
def phases(x, brows, gblk, mode, tiled, streamed, st_s, val_s, mom, vmin, vmax, nonf, below,
           thr, counts, carry, lo, hi, ninf, start, tb_s, tm_s, td_s):
    rows, n = x.shape
    nth = st_s.shape[0]
    nblk = rows // brows
    ngrp = (nblk + gblk - 1) // gblk
    # the one-pass path has one phase where the row path has two
    first = 1 if streamed else 0
    for t in prange(nth):
        vector_width()
        st = st_s[t]
        tb = tb_s[t]
        tm = tm_s[t]
        td = td_s[t]
        for g in range(t, ngrp, nth):
            b0 = g * gblk
            g0 = b0 * brows
            gn = min(gblk * brows, rows - g0)
            for i0 in range(0, gn if tiled else 0, G):
                k = min(G, gn - i0)
                tile_load(x, g0 + i0, k, n, tb)
                if mode == 0:
                    st[0, i0] = tb[0, 0]
                    continue
                tile_sums(tb, n, tm, td)
                for l in range(k):
                    res = tile_row_stats(row_view(x, g0 + i0 + l), n, tm, td, l, 0, 0, 0.5)
                    store_stats(st, i0 + l, *res)
            for i in range(0 if tiled else gn):
                r = g0 + i
                xr = row_view(x, r)
                if streamed:
                    ahead = row_view(x, r + 1 if r + 1 < rows else r)
                    stream_stats_into(xr, n, 0, 0, 0.5, st, i, ahead)
                elif mode == 0:
                    m1, m2 = row_top2(xr, n)
                    st[0, i] = m1
                    st[1, i] = m2
                else:
                    ahead = row_view(x, r + 1 if r + 1 < rows else r)
                    row_stats_into_ahead(xr, n, 0, 0, 0.5, st, i, ahead)
            if mode + first >= 2:
                block_observables(st, gn, val_s[t])
            if mode + first >= 3:
                block_reduce(val_s[t], gn, brows, thr, mom[b0:],
                             (vmin[t], vmax[t], nonf[t], below[t]),
                             (counts[t], carry[t], lo[t], hi[t], ninf[t], start))


def profile(n, rows, dt, scale, rounds):
    brows = _config.block_rows(n)
    gblk = _config.group_blocks(n)
    rows -= rows % brows
    nth = numba.get_num_threads()
    x = (np.random.default_rng(0).standard_normal((rows, n)) * scale).astype(dt)
    thr = np.array(_config.DEFAULT_THRESHOLDS)
    sk = new_scratch(nth, NOBS, dt)
    g = gblk * brows
    tn = n if n <= _config.TILE_BOUND else 1
    a = dict(st_s=np.zeros((nth, NSTATS, g)),
             tb_s=np.zeros((nth, tn, G), dt), tm_s=np.zeros((nth, 2, G), dt),
             td_s=np.zeros((nth, 4, G)),
             val_s=np.zeros((nth, NCH + 1, g)), mom=np.zeros((rows // brows, NCH, 3)),
             vmin=np.zeros((nth, NCH)), vmax=np.zeros((nth, NCH)),
             nonf=np.zeros((nth, NCH), np.int64), below=np.zeros((nth, NOBS, 3), np.int64),
             thr=thr, counts=sk["counts"], carry=sk["carry"], lo=sk["lo"], hi=sk["hi"],
             ninf=sk["ninf"], start=sk["start"])
    c = {"exp+sum ceiling": lambda: exp_sum(x),
         "exp+sum ceiling (default width)": lambda: exp_sum_default(x)}
    tiled = n <= _config.TILE_BOUND
    names = ["top-2 pass", "+ exp pass (R, E2, E3, V)", "+ wrap-up (block_observables)",
             "+ block reduction (moments, thresholds, sketch)"]
    tnames = ["tile transposition", "+ top two and sums across the lanes"] + names[2:]
    streamed = n >= STREAM_MIN_N
    snames = ["one pass (chunk by chunk: top two, then the sums)"] + names[2:]
    for mode, name in enumerate(tnames if tiled else snames if streamed else names):
        c[name] = (lambda m=mode: phases(x, brows, gblk, m, tiled, streamed, **a))
    if tiled or streamed:
        for mode, name in enumerate(names):
            c["row path: " + name] = (lambda m=mode: phases(x, brows, gblk, m, False, False,
                                                            **a))
    c["summarize (all)"] = lambda: fs.summarize(x)
    times = interleaved(c, rounds, samples=True)
    per = {k: 1e9 * np.median(v) * nth / rows for k, v in times.items()}
    best = {k: 1e9 * min(v) * nth / rows for k, v in times.items()}
    ceil = min(v for k, v in per.items() if "ceiling" in k)
    print(f"n={n} {np.dtype(dt).name} x{scale:g} rows={rows} block {brows} rows, group "
          f"{gblk} blocks, threads {nth}, load {os.getloadavg()[0]:.2f}; ns per row and thread, "
          f"median of {rounds} rounds (best)")
    prev = 0.0
    for k in c:
        tail = ""
        if k.startswith("row path: top"):
            prev = 0.0
        if "ceiling" not in k and "(all)" not in k:
            tail = f"  this phase {per[k] - prev:8.1f}"
            prev = per[k]
        print(f"  {k:66s} {per[k]:9.1f} ({best[k]:9.1f})  {ceil / per[k]:6.1%} of the ceiling{tail}")
    if tiled or streamed:
        # paired: round i of the tile (one-pass) path against round i of the row path
        full = names[-1]
        ratio = np.median(np.array(times["row path: " + full]) / np.array(times[full]))
        print(f"  {'tile' if tiled else 'one-pass'} path against row path, through the block "
              f"reduction: {ratio:.2f}x faster (median of the paired rounds)")


def main():
    print(f"cpu {_cpu.describe()}")
    dt = np.dtype(os.environ.get("DT", "float32"))
    scale = float(os.environ.get("SC", 3))
    rounds = int(os.environ.get("R", 7))
    ns = [int(os.environ["N"])] if "N" in os.environ else [64, 1024, 16384]
    for n in ns:
        profile(n, int(os.environ.get("ROWS", (1 << 27) // n)), dt, scale, rounds)


if __name__ == "__main__":
    main()
