"""CPU backend: ``numba.njit(parallel=True)`` kernels over fixed row blocks.

Each thread owns a fixed set of groups of blocks (group g goes to thread
g % threads) and its own scratch and integer accumulators; each block keeps
its own moments, folded in block order afterwards, so results depend neither
on the thread count nor on the grouping.

The kernels are built by ``_build`` around one captured constant: a hash of
the sources they compile (the row math, the generators, the accumulator and
this file).  Numba's on-disk cache keys a closure by its captured values, so an
edit to any of those files invalidates the cache instead of silently reusing a
stale kernel (the cache otherwise only watches the file that defines the
kernel).

The backend object (:class:`CPUBackend`, the contract of :mod:`.common`)
runs every operation: ``summarize_array``, ``summarize_model``, ``softmax``,
``observables`` (per-row values) and a trivial ``to_host``; it takes arrays in
host memory.  Every parallel call runs under :func:`guard`.
"""
from __future__ import annotations

import hashlib
import math
import os
import threading
from typing import Any

import numba
import numpy as np
from numba import njit, prange
from numba.extending import register_jitable

from .. import _config
from .._config import FASTMATH
from .._kernels.features import KERNEL_VECTOR_WIDTH
from .._kernels.gen import GEN_AFFINE, GEN_ROWS, model_row
from .._inputs import (TARGET_LABELS, Rows, as_float_array, bad_row_error, compute_dtype,
                       generated_row_error)
from .._kernels.row import (INV_LN10, NOBS, NSTATS, block_observables, obs_row, rest_mass,
                            row_log_softmax, row_softmax, row_stats, row_stats_into,
                            row_stats_into_ahead, row_target, store_stats, tile_load,
                            tile_row_stats, tile_sums)
from .._kernels.rng import STREAM_LOGITS, fill_normals_rows
from .._kernels.simd import G, row_view, vector_width
from .._util import numba_threads
from .._kernels.sketch import SCRATCH_MAX_COUNT, flush_scratch, new_scratch as new_sketch_scratch
from ..accumulate import NCH, Accumulator, block_reduce
from .common import OPERATIONS, ArrayJob, ModelJob, is_host_array

__all__ = ["backend", "status", "threads", "threading_layer", "guard"]

_SOURCES = ("_kernels", "_config.py", "_inputs.py", "registries.py",
            os.path.join("accumulate", "_block.py"),
            os.path.join("accumulate", "_moments.py"), os.path.join("backends", "cpu.py"))


def _source_key():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256()
    for name in _SOURCES:
        path = os.path.join(here, name)
        # a folder counts with every module in it (sorted: the key is stable)
        paths = (sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".py"))
                 if os.path.isdir(path) else [path])
        for q in paths:
            if os.path.exists(q):
                with open(q, "rb") as f:
                    h.update(f.read())
    # the vector-width knob changes the machine code, not the sources
    h.update(str(KERNEL_VECTOR_WIDTH).encode())
    h.update(str(_config.TILE_MAX_N).encode())
    return int(h.hexdigest()[:15], 16)


# generated rows up to this length are drawn a block at a time (measured:
# n = 64 +18%; n = 1024 -11%, where the per-row setup is negligible and the
# flat loop's index arithmetic is not)
FLAT_GEN_MAX_N = 256
# rows up to this length go through the tile path (16 rows, one per lane);
# generated ones are drawn a block at a time into the block buffer
TILE_MAX_N = min(_config.TILE_MAX_N, FLAT_GEN_MAX_N)


@register_jitable(forceinline=True)
def _observe_one(stats, out, status, r):
    """Row r's values and log10s into out from its ``row_stats`` tuple."""
    m1, m2, rr, e2, e3, v, y_top, xy, ey, bad = stats
    val, lam = obs_row(m1, m2, rr, e2, e3, v, y_top, xy, ey)
    for k in range(NOBS):
        out[k, r] = np.nan if bad else val[k]
        out[NOBS + k, r] = np.nan if bad else lam[k] * INV_LN10
    status[r] = 1 if bad else 0


@register_jitable(forceinline=True)
def _note_bad(bad, t, r):
    """Count a bad row r (chunk index) for thread t, keeping the first."""
    nbad, firstbad = bad
    nbad[t] += 1
    if firstbad[t] < 0 or r < firstbad[t]:
        firstbad[t] = r


def _build(source_key, tile_max_n):
    """The CPU kernels, their cache keyed by ``source_key``; rows of length
    n <= ``tile_max_n`` take the tile path.  With ``tile_max_n`` = 0 the
    kernels hold no tile path at all: ``tile_on`` is a constant of the
    closure, so numba prunes its branches before typing (the tile path's
    typing and code generation are a large part of the first compile)."""
    jit = dict(cache=True, nogil=True, fastmath=FASTMATH)
    tile_on = tile_max_n > 0

    @njit(parallel=True, **jit)
    def observe_chunk(source, target, layout, scratch, parts, sketch, bad):
        """Summarise ``nrows`` rows in blocks of ``brows``, ``gblk`` blocks
        (a group) at a time.  The arguments come in groups (tuples, built by
        ``_run``):

        * source = (x, gen, params, seed, row0, nrows, n): rows x[r]
          (gen = GEN_ROWS) or drawn by ``model_row`` for global row row0 + r;
        * target = (labels, ymode, yfix): ymode 0: argmax target; 1: class
          yfix; 2: labels[r]; 3: uniform label; 4: sampled from softmax(x);
        * layout = (brows, gblk, thr): the block and group sizes, the
          thresholds;
        * scratch = (buf_s, q_s, st_s, val_s, tb_s, tm_s, td_s), per thread
          (first axis): generated rows, the generator's scratch, a group's
          row statistics and observables, the tile path's tile;
        * parts = (mom, vmin, vmax, nonf, below): mom[b] per block (chunk-local
          b), the others running per-thread accumulators (first axis =
          thread);
        * sketch = (hist, carry, lo, hi, ninf, start): the sketch's scratch
          counts, per thread but ``start``;
        * bad = (nbad, firstbad): per thread, bad rows counted and the first
          one (row index within the chunk).

        Rows of length n <= TILE_MAX_N go 16 at a time through the tile path
        (``tile_load``, ``tile_sums``: one row per lane).  A group's rows are
        wrapped up together (``block_observables``, ``block_reduce``); each block
        keeps its moments, so the grouping and the threads change no bit.
        """
        source_key  # noqa: B018  (part of the cache key)
        x, gen, params, seed, row0, nrows, n = source
        labels, ymode, yfix = target
        brows, gblk, thr = layout
        buf_s, q_s, st_s, val_s, tb_s, tm_s, td_s = scratch
        mom, vmin, vmax, nonf, below = parts
        hist, sk_carry, sk_lo, sk_hi, sk_ninf, sk_start = sketch
        nth = st_s.shape[0]
        nblk = (nrows + brows - 1) // brows
        ngrp = (nblk + gblk - 1) // gblk
        flat = gen == GEN_AFFINE and n % 4 == 0 and n <= FLAT_GEN_MAX_N
        tiled = n <= tile_max_n
        for t in prange(nth):
            vector_width()
            st = st_s[t]
            val = val_s[t]
            buf = buf_s[t]
            qbuf = q_s[t]
            tb = tb_s[t]
            tm = tm_s[t]
            td = td_s[t]
            for g in range(t, ngrp, nth):
                b0 = g * gblk
                g0 = b0 * brows
                gn = min(gblk * brows, nrows - g0)
                for b in range(b0, min(b0 + gblk, nblk)):
                    r0 = b * brows
                    nr = min(brows, nrows - r0)
                    if tile_on and tiled:       # (tile_on: pruned when off)
                        # short rows: 16 at a time, one per lane
                        if flat:
                            fill_normals_rows(buf, nr, n, seed, row0 + r0, STREAM_LOGITS,
                                              params[0], params[1])
                        elif gen != GEN_ROWS:
                            for i in range(nr):
                                model_row(gen, params, seed, row0 + r0 + i, n,
                                          row_view(buf, i), qbuf)
                        src = x if gen == GEN_ROWS else buf
                        s0 = r0 if gen == GEN_ROWS else 0
                        for i0 in range(0, nr, G):
                            k = min(G, nr - i0)
                            tile_load(src, s0 + i0, k, n, tb)
                            tile_sums(tb, n, tm, td)
                            for l in range(k):
                                r = r0 + i0 + l
                                grow = row0 + r
                                xr = row_view(src, s0 + i0 + l)
                                mode, y, u = row_target(ymode, yfix, labels, r, seed, grow, n)
                                m1, m2, rr, e2, e3, v, y_top, xy, ey, isbad = tile_row_stats(
                                    xr, n, tm, td, l, mode, y, u)
                                store_stats(st, r - g0, m1, m2, rr, e2, e3, v, y_top, xy, ey,
                                            isbad)
                                if isbad:
                                    _note_bad(bad, t, r)
                        continue
                    if flat:
                        # short rows: the whole block's rows in one loop (the
                        # RNG loop's setup once per block, not per row)
                        fill_normals_rows(buf, nr, n, seed, row0 + r0, STREAM_LOGITS,
                                          params[0], params[1])
                    for i in range(nr):
                        r = r0 + i
                        grow = row0 + r
                        if gen == GEN_ROWS:
                            xr = row_view(x, r)
                        elif flat:
                            xr = row_view(buf, i)
                        else:
                            # longer rows: drawn one at a time, their
                            # statistics while they are in L1
                            xr = row_view(buf, 0)
                            model_row(gen, params, seed, grow, n, xr, qbuf)
                        mode, y, u = row_target(ymode, yfix, labels, r, seed, grow, n)
                        if gen == GEN_ROWS:
                            # the next row streams in during this one's exp pass
                            ahead = row_view(x, r + 1 if r + 1 < nrows else r)
                            isbad = row_stats_into_ahead(xr, n, mode, y, u, st, r - g0, ahead)
                        else:
                            isbad = row_stats_into(xr, n, mode, y, u, st, r - g0)
                        if isbad:
                            _note_bad(bad, t, r)
                block_observables(st, gn, val)
                block_reduce(val, gn, brows, thr, mom[b0:],
                             (vmin[t], vmax[t], nonf[t], below[t]),
                             (hist[t], sk_carry[t], sk_lo[t], sk_hi[t], sk_ninf[t], sk_start))

    @njit(parallel=True, **jit)
    def observe_rows(x, labels, ymode, yfix, out, status):
        """Per-row values (out[:NOBS, r]) and log10 (out[NOBS:, r]); rows of
        length n <= tile_max_n by the tile path (the numbers summarize uses)."""
        source_key  # noqa: B018
        nrows, n = x.shape
        if tile_on and n <= tile_max_n:
            for i in prange((nrows + G - 1) // G):
                vector_width()
                tb = np.empty((n, G), dtype=x.dtype)
                tm = np.empty((2, G), dtype=x.dtype)
                td = np.empty((4, G))
                r0 = i * G
                k = min(G, nrows - r0)
                tile_load(x, r0, k, n, tb)
                tile_sums(tb, n, tm, td)
                for l in range(k):
                    r = r0 + l
                    mode, y, u = row_target(ymode, yfix, labels, r, 0, r, n)
                    _observe_one(tile_row_stats(row_view(x, r), n, tm, td, l, mode, y, u),
                                 out, status, r)
            return
        for r in prange(nrows):
            vector_width()
            mode, y, u = row_target(ymode, yfix, labels, r, 0, r, n)
            _observe_one(row_stats(row_view(x, r), n, mode, y, u), out, status, r)

    @njit(parallel=True, **jit)
    def softmax_rows(x, out, log, status):
        source_key  # noqa: B018
        nrows, n = x.shape
        for r in prange(nrows):
            vector_width()
            xr = row_view(x, r)
            m1, m2, rr, e2, e3, v, y_top, xy, ey, bad = row_stats(xr, n, 0, 0, 0.5)
            if bad:
                status[r] = 1
                out[r, :] = np.nan
                continue
            a = rest_mass(m1, m2, rr)
            if log:
                row_log_softmax(xr, n, m1, math.log1p(a), out[r])
            else:
                row_softmax(xr, n, m1, 1.0 + a, out[r])

    return observe_chunk, observe_rows, softmax_rows


observe_chunk, observe_rows, softmax_rows = _build(_source_key(), TILE_MAX_N)


def threads() -> int:
    return numba.get_num_threads()


def _probe(x):
    vector_width()
    return row_stats(x, x.shape[0], 0, 0, 0.5)[2]


def kernel_vector_width() -> tuple[int, str]:
    """(bits, detail): the SIMD width fastsoftmax's kernels really use here.

    Compiles a probe made of the kernels' own row pass (``row_stats``: the
    top-2 and exp passes) with the kernels' flags, vector width knob and
    numba CPU target, and counts the vector registers in its machine code:
    512 if it uses zmm registers, 256 for ymm, 128 for xmm only.  numba
    cannot show the machine code of a cached function, so the probe compiles
    uncached (~2 s); its answer is kept beside the kernels' numba cache, keyed
    by everything that decides the machine code (the kernels' sources and
    knobs, the numba and llvmlite versions, the CPU target).
    """
    import json
    import re

    memo = _vector_width_memo()
    if memo is not None and os.path.exists(memo):
        try:
            with open(memo) as f:
                bits, detail = json.load(f)
            return int(bits), str(detail)
        except (OSError, ValueError, TypeError):
            pass                               # unreadable: measure again, rewrite it
    probe = njit(fastmath=FASTMATH, error_model="numpy")(_probe)
    probe(np.zeros(64, dtype=np.float32))
    asm = "\n".join(probe.inspect_asm().values())
    counts = {k: len(re.findall(r"%" + k + r"\d+", asm)) for k in ("zmm", "ymm", "xmm")}
    bits = 512 if counts["zmm"] else 256 if counts["ymm"] else 128
    detail = "{zmm} zmm / {ymm} ymm / {xmm} xmm register uses in the row pass".format(**counts)
    if memo is not None:
        try:                                   # written whole or not at all
            os.makedirs(os.path.dirname(memo), exist_ok=True)
            tmp = f"{memo}.{os.getpid()}.{threading.get_ident()}"
            with open(tmp, "w") as f:
                json.dump([bits, detail], f)
            os.replace(tmp, memo)
        except OSError:
            pass                               # a read-only cache: measure every time
    return bits, detail


def _vector_width_memo() -> str | None:
    """The file of :func:`kernel_vector_width`'s answer for this build and
    target, in the kernels' numba cache (None where they have none)."""
    import llvmlite
    import llvmlite.binding as ll

    cfg: Any = numba.config
    key = repr((_source_key(), numba.__version__, llvmlite.__version__, sorted(FASTMATH),
                cfg.CPU_NAME, cfg.CPU_FEATURES, ll.get_host_cpu_name(),
                ll.get_host_cpu_features().flatten()))
    digest = hashlib.sha256(key.encode()).hexdigest()[:20]
    cache = getattr(getattr(observe_chunk, "_cache", None), "_cache_path", None)
    return None if cache is None else os.path.join(cache, f"vector-width-{digest}.json")


class _Scratch(threading.local):
    """Per calling thread: the kernels' per-thread scratch, allocated once
    (the sketch's dense counts are megabytes) and kept clean between calls."""

    def __init__(self):
        self.cache = {}


_SCRATCH = _Scratch()


def scratch(brows, nth, thresholds, dtype, buf_len=1, q_len=1, grows=None, n=1):
    """Per-thread scratch and accumulators for ``observe_chunk``: reused
    from the last call with the same shapes (the accumulators reset), the
    sketch counts from the last call of the dtype (clean: every call
    flushes them)."""
    dtype = np.dtype(dtype)
    nt = len(thresholds)
    cache = _SCRATCH.cache
    skey = ("sketch", nth, dtype.str)
    if skey not in cache:
        cache[skey] = new_sketch_scratch(nth, NOBS, dtype)
    grows = brows if grows is None else grows
    buf_len_tile = n if n <= TILE_MAX_N else 1
    key = (nth, brows, grows, dtype.str, buf_len, q_len, nt, buf_len_tile)
    sc = cache.get(key)
    if sc is None:
        for k in [k for k in cache if k[0] != "sketch"]:
            del cache[k]                       # one shape at a time per thread
        sc = cache[key] = dict(
            # generated rows: a block of them per thread (short rows), or one
            buf_s=np.zeros((nth, brows if buf_len <= FLAT_GEN_MAX_N else 1, buf_len),
                           dtype=dtype),
            q_s=np.zeros((nth, q_len), dtype=dtype),
            # a group's rows (``grows``: gblk blocks) for the wrap-up
            st_s=np.empty((nth, NSTATS, grows)),
            val_s=np.empty((nth, NCH + 1, grows)),
            vmin=np.empty((nth, NCH)),
            vmax=np.empty((nth, NCH)),
            nonf=np.empty((nth, NCH), dtype=np.int64),
            below=np.empty((nth, NOBS, nt), dtype=np.int64),
            nbad=np.empty(nth, dtype=np.int64),
            firstbad=np.empty(nth, dtype=np.int64),
            # the tile path: a tile of rows transposed, its top two and sums
            tb_s=np.zeros((nth, buf_len_tile, G), dtype=dtype),
            tm_s=np.zeros((nth, 2, G), dtype=dtype),
            td_s=np.zeros((nth, 4, G)),
        )
    sc["vmin"].fill(np.inf)
    sc["vmax"].fill(-np.inf)
    for name in ("nonf", "below", "nbad"):
        sc[name].fill(0)
    sc["firstbad"].fill(-1)
    sc["sketch"] = cache[skey]
    return sc


# --------------------------------------------------------------------------
# the threading guard

# numba's workqueue threading layer aborts the process when two Python
# threads enter parallel code at once; serialise the calls in that case.
_WORKQUEUE_LOCK = threading.Lock()
_layer_checked: str | None = None


class _NullCtx:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def guard():
    """A lock to hold around parallel kernel calls when numba's threading layer
    is ``workqueue`` (which aborts the process when two Python threads run
    parallel code at once: calls are then serialised), else a no-op."""
    global _layer_checked
    if _layer_checked is None:
        from numba.np.ufunc import parallel
        parallel._launch_threads()      # idempotent; fixes the layer now
        _layer_checked = numba.threading_layer()
    return _WORKQUEUE_LOCK if _layer_checked == "workqueue" else _NullCtx()


def threading_layer() -> str:
    """The threading layer numba uses ('omp', 'tbb' or 'workqueue')."""
    guard()
    return str(_layer_checked)          # set by guard()


# --------------------------------------------------------------------------
# the driver

# rows counted into the sketch's scratch between two hand-overs: a bucket
# holds at most SCRATCH_MAX_COUNT (uint8 counts, uint16 carries), and one
# kernel call (a chunk) never counts more rows than that
_SKETCH_FLUSH_ROWS = SCRATCH_MAX_COUNT

def _run(nrows, n, cdt, thr, *, rows=None, gen=GEN_ROWS, params=None, seed=0, row0=0,
         target=None, nan_policy="raise", buf_len=1, q_len=1, chunk=None, progress=None):
    """Rows [row0, row0 + nrows) of a source through ``observe_chunk``: the
    rows of ``rows`` (a :class:`~fastsoftmax._inputs.Rows`; gen = GEN_ROWS)
    or a model's generator.  ``row0`` is a multiple of the block size, so
    the accumulator's moment tree lines up with other pieces of the run."""
    brows = _config.block_rows(n)
    if row0 % brows:
        raise ValueError("row0 must be a multiple of the block size")
    # fewer blocks than threads: one thread, in the caller's (waking the pool
    # costs more than the work, and milliseconds on a busy machine)
    nth = threads() if nrows > brows else 1
    step = chunk if chunk else _config.chunk_rows(n, nth)
    step = min(step, SCRATCH_MAX_COUNT)
    step = max(brows, step - step % brows)
    tmode = int(target.mode) if target is not None else 0
    yfix = int(target.index) if target is not None else 0
    labels = target.labels if target is not None and tmode == TARGET_LABELS else None
    # groups of blocks wrapped up at once, at least two a thread in a chunk
    gblk = max(1, min(_config.group_blocks(n), step // brows // (2 * nth)))
    sc = scratch(brows, nth, thr, cdt, buf_len, q_len, gblk * brows, n)
    sk = sc["sketch"]
    gb0 = row0 // brows
    acc = Accumulator(thr, block0=gb0)
    mom = np.zeros((step // brows, NCH, 3))
    dummy_x = np.zeros((1, 1), dtype=cdt)
    dummy_labels = np.zeros(1, dtype=np.int64)
    params = np.zeros(3) if params is None else params
    counted = 0                 # rows in the sketch scratch since it was last handed over
    # observe_chunk's argument groups (its docstring) that stay the same every chunk
    layout = (brows, gblk, thr)
    scr = tuple(sc[k] for k in ("buf_s", "q_s", "st_s", "val_s", "tb_s", "tm_s", "td_s"))
    parts = (mom, sc["vmin"], sc["vmax"], sc["nonf"], sc["below"])
    skt = (sk["counts"], sk["carry"], sk["lo"], sk["hi"], sk["ninf"], sk["start"])
    bad = (sc["nbad"], sc["firstbad"])
    try:
        with guard(), numba_threads(nth):
            for r0 in range(0, nrows, step):
                r1 = min(r0 + step, nrows)
                xc = rows.chunk(r0, r1) if rows is not None else dummy_x
                lab = labels[r0:r1] if labels is not None else dummy_labels
                sc["firstbad"][:] = -1
                nbad0 = int(sc["nbad"].sum())
                observe_chunk((xc, gen, params, np.uint64(seed), row0 + r0, r1 - r0, n),
                              (lab, tmode, yfix), layout, scr, parts, skt, bad)
                # the sketch's counts are handed over once a call, or before
                # a bucket could hold more than SCRATCH_MAX_COUNT rows
                counted += r1 - r0
                if counted + step >= _SKETCH_FLUSH_ROWS:
                    flush_scratch(sk, acc.sketch)
                    counted = 0
                if int(sc["nbad"].sum()) > nbad0 and nan_policy == "raise":
                    fb = sc["firstbad"]
                    r = r0 + int(fb[fb >= 0].min())
                    if rows is not None:
                        raise bad_row_error(rows.row(r), r, rows.batch)
                    raise generated_row_error(row0 + r)
                nb = (r1 - r0 + brows - 1) // brows
                acc.tree.push_blocks(mom, nb, gb0 + r0 // brows)
                if progress is not None:
                    progress.update(r1 - r0)
    finally:
        flush_scratch(sk, acc.sketch)          # and the scratch is clean for the next call
    acc.skipped = int(sc["nbad"].sum())
    acc.count = nrows - acc.skipped
    acc.vmin = sc["vmin"].min(axis=0)
    acc.vmax = sc["vmax"].max(axis=0)
    acc.nonfinite = sc["nonf"].sum(axis=0)
    acc.below = sc["below"].sum(axis=0)
    return acc


# --------------------------------------------------------------------------
# the entry points

class CPUBackend:
    """The CPU backend: the numba kernels on this machine's cores (the
    contract of :class:`.common.Backend`)."""
    name = "cpu"
    takes = "NumPy arrays, memmaps and array-likes in host memory"
    description = "numba-compiled kernels on every core of this machine"
    operations = frozenset(OPERATIONS)
    inner = None

    def can_take(self, x: Any) -> bool:
        return is_host_array(x)

    def array_info(self, x: Any) -> tuple[np.ndarray, tuple[int, ...], np.dtype]:
        x, _, _ = as_float_array(x)
        return x, x.shape, x.dtype

    def validate(self, job: ArrayJob | ModelJob, progress: Any) -> None:
        return None                         # every option is used here

    def summarize_array(self, x: Any, job: ArrayJob, progress: Any = None) -> Accumulator:
        rows = Rows(x, job.axes, job.cdt)
        return _run(rows.rows, rows.n, job.cdt, job.thresholds, rows=rows, target=job.target,
                    nan_policy=job.nan_policy, chunk=job.chunk, progress=progress)

    def summarize_model(self, job: ModelJob, progress: Any = None) -> Accumulator:
        g = job.gen
        return _run(job.samples, g.n, job.dtype, job.thresholds, gen=g.code,
                    params=g.param_array(), seed=job.seed, row0=job.row0, target=job.target,
                    buf_len=g.n, q_len=g.scratch_len, chunk=job.chunk, progress=progress)

    def observables(self, x: Any, job: ArrayJob) -> np.ndarray:
        """(2 NOBS, rows) float64: each observable's value, then its log10;
        NaN for bad rows (raising for the first one with nan_policy="raise")."""
        rows = Rows(x, job.axes, job.cdt)
        t = job.target
        labels = t.labels if t.mode == TARGET_LABELS else np.zeros(1, dtype=np.int64)
        vals = np.empty((2 * NOBS, rows.rows))
        status = np.zeros(rows.rows, dtype=np.int8)
        step = job.chunk or max(1, _config.CHUNK_LOGITS // rows.n)
        with guard():
            for r0 in range(0, rows.rows, step):
                r1 = min(r0 + step, rows.rows)
                lab = labels[r0:r1] if t.mode == TARGET_LABELS else labels
                observe_rows(rows.chunk(r0, r1), lab, int(t.mode), int(t.index),
                             vals[:, r0:r1], status[r0:r1])
                bad = np.flatnonzero(status[r0:r1])
                if bad.size and job.nan_policy == "raise":
                    r = r0 + int(bad[0])
                    raise bad_row_error(rows.row(r), r, rows.batch)
        return vals

    def softmax(self, x: Any, axes: tuple, log: bool) -> Any:
        """softmax (or log_softmax) of a host array along ``axes``, in the
        result dtype (computed in the compute dtype) and x's shape; NaN rows
        for bad rows (as NumPy); a 0-d array gives a scalar."""
        cdt, odt = compute_dtype(x.dtype)
        if x.size == 0:
            return np.empty(x.shape, dtype=odt)
        rows = Rows(x, axes, cdt)
        out = np.empty(x.shape, dtype=cdt)
        direct = rows.rest + axes == tuple(range(x.ndim))
        out2 = out.reshape(rows.rows, rows.n) if direct else None
        status = np.zeros(rows.rows, dtype=np.int8)
        step = max(1, _config.CHUNK_LOGITS // rows.n)
        with guard():
            for r0 in range(0, rows.rows, step):
                r1 = min(r0 + step, rows.rows)
                xc = rows.chunk(r0, r1)
                oc = out2[r0:r1] if out2 is not None else np.empty((r1 - r0, rows.n), dtype=cdt)
                softmax_rows(xc, oc, log, status[r0:r1])
                # rows with NaN/+inf or no finite logit: NaN, as numpy/scipy give
                for i in np.flatnonzero(status[r0:r1]):
                    oc[i] = _numpy_softmax(xc[i], log)
                if not direct:
                    rows.scatter(out, r0, oc)
        out = out.astype(odt, copy=False)
        return out[()] if out.ndim == 0 else out

    def to_host(self, a: Any) -> np.ndarray:
        return np.asarray(a)                # already there

    def status(self) -> tuple[bool, str]:
        return status()

    def info(self) -> dict[str, Any]:
        return {"threads": threads(), "threading layer": threading_layer()}


def _numpy_softmax(row, log):
    row = np.asarray(row, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ex = np.exp(row - np.max(row))
        p = ex / ex.sum()
        return np.log(p) if log else p


_BACKEND = CPUBackend()


def backend() -> CPUBackend:
    """The CPU backend (one object: it holds no state)."""
    return _BACKEND


def status() -> tuple[bool, str]:
    """(True, how many threads): the CPU backend runs everywhere."""
    return True, f"{threads()} threads"
