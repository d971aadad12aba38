"""Ceilings: tiny kernels that do only the unavoidable part of the work, over
the same data, compiled with the same vector width as fastsoftmax's kernels
(``_simd.vector_width``) and *with* ``reassoc`` (the ideal: LLVM picks the
summation order).  fastsoftmax is reported as a fraction of each, measured
interleaved in the same process (``interleaved``): a shared machine's noise
hits every candidate alike.

* ``exp_sum(x)``: sum of vexp over every logit (vectorized exp + sum), in the
  dtype of x.
* ``mem_sum(x)``: plain parallel sum (memory read).
* ``rng_alone(rows, n, seed, buf)``: the normals of ``rows`` rows
  (Philox4x32-10 + Box-Muller, ``_rng.fill_normals``), nothing else.

``exp_sum_default`` and ``mem_sum_default``: the same at LLVM's default
vector width for this CPU (the RNG marks its own loop with fastsoftmax's
width, so the RNG alone has one ceiling).
"""
import os
import time

import numpy as np
from numba import njit, prange

from fastsoftmax._kernels import rng as _rng
from numba.extending import register_jitable

try:
    from fastsoftmax._kernels.simd import vector_width
except ImportError:            # an older fastsoftmax (comparisons across versions)
    @register_jitable
    def vector_width():
        pass
from fastsoftmax._kernels.vmath import vexp

_FM = {"nsz", "contract", "reassoc"}


def _make(width_marked):
    """The three ceiling kernels, marked with fastsoftmax's vector width
    (``_simd.vector_width``) or at LLVM's default width for this CPU (on
    Intel AVX-512 parts 256-bit, which streams a large array from memory
    faster than 512-bit: both are measured, the faster is the ceiling)."""
    mark = vector_width if width_marked else _no_mark

    @njit(parallel=True, fastmath=_FM, error_model="numpy")
    def exp_sum(x):
        rows, n = x.shape
        out = np.zeros(rows)
        for r in prange(rows):
            mark()
            xr = x[r]
            s = xr.dtype.type(0)
            for i in range(n):
                s += vexp(xr[i])
            out[r] = s
        return out.sum()

    @njit(parallel=True, fastmath=_FM, error_model="numpy")
    def mem_sum(x):
        rows, n = x.shape
        out = np.zeros(rows)
        for r in prange(rows):
            mark()
            xr = x[r]
            s = xr.dtype.type(0)
            for i in range(n):
                s += xr[i]
            out[r] = s
        return out.sum()

    @njit(parallel=True, fastmath=_FM, error_model="numpy")
    def rng_alone(rows, n, seed, buf):
        nth = buf.shape[0]
        acc = np.zeros(nth)
        for t in prange(nth):
            mark()
            b = buf[t]
            s = b.dtype.type(0)
            for r in range(t, rows, nth):
                _rng.fill_normals(b, n, seed, r, 0)
                s += b[0]
            acc[t] = s
        return acc.sum()

    return exp_sum, mem_sum, rng_alone


@register_jitable
def _no_mark():
    pass


exp_sum, mem_sum, rng_alone = _make(True)
exp_sum_default, mem_sum_default, _ = _make(False)


def interleaved(cands, rounds=5, samples=False):
    """cands: {name: callable}; every one runs once per round, ``rounds``
    rounds after a warm-up; returns {name: best seconds}, or with
    ``samples=True`` {name: [seconds of each round]} (round i of every
    candidate ran back to back: the ratio of two candidates' round-i times
    is a paired sample, which a shared machine's slow spells hit alike)."""
    for f in cands.values():
        f()
    times = {k: [] for k in cands}
    for _ in range(rounds):
        for k, f in cands.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    if samples:
        return times
    return {k: min(v) for k, v in times.items()}


def load():
    return "%.2f %.2f %.2f" % os.getloadavg()
