"""CPU drivers: ``numba.njit(parallel=True)`` loops over fixed row blocks.

Each thread owns a fixed set of blocks (block b goes to thread b % threads)
and its own scratch and integer accumulators; per-block moments are folded
in block order afterwards, so results do not depend on the thread count.

The kernels are built by ``_build`` around one captured constant: a hash of
the sources they compile (``_math``, ``_rng``, ``_vmath``, ``accumulate`` and
this file).  Numba's on-disk cache keys a closure by its captured values, so an
edit to any of those files invalidates the cache instead of silently reusing a
stale kernel (the cache otherwise only watches the file that defines the
kernel).
"""
import hashlib
import math
import os

import numba
import numpy as np
from numba import njit, prange

from ._config import FASTMATH
from ._math import (NOBS, NSTATS, block_logobs, logobs, obs_log10, obs_value,
                    row_log_softmax, row_softmax, row_stats, row_stats_into, row_target)
from .accumulate import NCH, block_reduce
from .models import GEN_ROWS, model_row


def _source_key():
    here = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for name in ("_math.py", "_rng.py", "_vmath.py", "accumulate.py", "_config.py",
                 "models.py", "_cpu.py"):
        path = os.path.join(here, name)
        if os.path.exists(path):
            with open(path, "rb") as f:
                h.update(f.read())
    return int(h.hexdigest()[:15], 16)


def _build(source_key):
    jit = dict(cache=True, nogil=True, fastmath=FASTMATH)

    @njit(parallel=True, **jit)
    def observe_chunk(x, gen, params, seed, row0, nrows, n, labels, ymode, yfix, brows,
                      thr, buf_s, q_s, st_s, lam_s, val_s, mom, vmin, vmax, nonf, below, hist,
                      nbad, firstbad):
        """Summarise ``nrows`` rows in blocks of ``brows``.

        Rows are x[r] (gen = GEN_ROWS) or drawn by ``model_row`` for global row
        row0 + r.  ymode 0: argmax target; 1: class yfix; 2: labels[r];
        3: uniform label; 4: sampled from softmax(x).
        Outputs: mom[b] per block (chunk-local b); running per-thread
        accumulators (first axis = thread); nbad/firstbad per thread (row
        index within the chunk).
        """
        source_key  # noqa: B018  (part of the cache key)
        nth = lam_s.shape[0]
        nblk = (nrows + brows - 1) // brows
        for t in prange(nth):
            lam = lam_s[t]
            st = st_s[t]
            buf = buf_s[t]
            for b in range(t, nblk, nth):
                r0 = b * brows
                nr = min(brows, nrows - r0)
                for i in range(nr):
                    r = r0 + i
                    grow = row0 + r
                    if gen == GEN_ROWS:
                        xr = x[r]
                    else:
                        model_row(gen, params, seed, grow, n, buf, q_s[t])
                        xr = buf
                    mode, y, u = row_target(ymode, yfix, labels, r, seed, grow, n)
                    if row_stats_into(xr, n, mode, y, u, st, i):
                        nbad[t] += 1
                        if firstbad[t] < 0 or r < firstbad[t]:
                            firstbad[t] = r
                block_logobs(st, nr, lam)
                block_reduce(lam, nr, thr, val_s[t], mom[b], vmin[t], vmax[t],
                             nonf[t], below[t], hist[t])

    @njit(parallel=True, **jit)
    def observe_rows(x, labels, ymode, yfix, out, status):
        """Per-row values (out[:NOBS, r]) and log10 (out[NOBS:, r])."""
        source_key  # noqa: B018
        nrows, n = x.shape
        for r in prange(nrows):
            mode, y, u = row_target(ymode, yfix, labels, r, 0, r, n)
            m1, m2, rr, e2, e3, v, y_top, xy, ey, bad = row_stats(x[r], n, mode, y, u)
            lam = logobs(m1, m2, rr, e2, e3, v, y_top, xy, ey)
            for k in range(NOBS):
                lk = np.nan if bad else lam[k]
                out[k, r] = obs_value(lk)
                out[NOBS + k, r] = obs_log10(lk)
            status[r] = 1 if bad else 0

    @njit(parallel=True, **jit)
    def softmax_rows(x, out, log, status):
        source_key  # noqa: B018
        nrows, n = x.shape
        for r in prange(nrows):
            xr = x[r]
            m1, m2, rr, e2, e3, v, y_top, xy, ey, bad = row_stats(xr, n, 0, 0, 0.5)
            if bad:
                status[r] = 1
                out[r, :] = np.nan
                continue
            # a = sum_{i != top} exp(x_i - m1) = t R (0 for a single finite logit)
            a = math.exp(m2 - m1) * rr if m2 > -np.inf else 0.0
            if log:
                row_log_softmax(xr, n, m1, math.log1p(a), out[r])
            else:
                row_softmax(xr, n, m1, 1.0 + a, out[r])

    return observe_chunk, observe_rows, softmax_rows


observe_chunk, observe_rows, softmax_rows = _build(_source_key())


def threads():
    return numba.get_num_threads()


def new_scratch(brows, nth, thresholds, dtype, buf_len=1, q_len=1):
    """Per-thread scratch and accumulators for ``observe_chunk``."""
    from ._config import SKETCH_NB
    nt = len(thresholds)
    return dict(
        buf_s=np.zeros((nth, buf_len), dtype=dtype),
        q_s=np.zeros((nth, q_len), dtype=dtype),
        st_s=np.empty((nth, NSTATS, brows)),
        lam_s=np.empty((nth, NOBS, brows)),
        val_s=np.empty((nth, NCH + 1, brows)),
        vmin=np.full((nth, NCH), np.inf),
        vmax=np.full((nth, NCH), -np.inf),
        nonf=np.zeros((nth, NCH), dtype=np.int64),
        below=np.zeros((nth, NOBS, nt), dtype=np.int64),
        hist=np.zeros((nth, NOBS, SKETCH_NB), dtype=np.int64),
        nbad=np.zeros(nth, dtype=np.int64),
        firstbad=np.full(nth, -1, dtype=np.int64),
    )
