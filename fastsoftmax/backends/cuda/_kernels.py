"""Device code and kernels of the CUDA backend (see the package docstring).

The per-row math is the ``register_jitable`` code of ``_math``, ``_rng`` and
``_gen``, compiled here by ``numba.cuda`` as device code."""
import math

import numpy as np
from numba import cuda

from ..._kernels.gen import model_row
from ..._kernels.row import (NOBS, NSTATS, ST_BAD, ST_E2, ST_E3, ST_EY, ST_M1, ST_M2, ST_R, ST_V,
                             ST_XY, ST_YTOP, logobs, obs_log10, obs_value, rest_mass,
                             row_bad, row_log_softmax, row_softmax, row_state, row_stats,
                             row_stats_from, row_target, state_merge, store_stats, top_bad)
from ..._kernels.sketch import I_NEGINF, bucket_of
from ...accumulate import NCH, chan_merge
from ...accumulate._block import fold_value
from . import _settings

_JIT = _settings.JIT

SIMULATOR = cuda.to_device.__module__.startswith("numba.cuda.simulator")


# --------------------------------------------------------------------------
# probe

def probe():
    """(ok, reason): can kernels run here?  Never raises."""
    if SIMULATOR:
        return True, "CUDA simulator (NUMBA_ENABLE_CUDASIM=1): kernels run as Python threads"
    try:
        if not cuda.is_available():
            err = None
            try:
                err = cuda.cuda_error()
            except Exception:   # noqa: BLE001 - any driver trouble is a reason
                pass
            if err is None:
                return False, ("no CUDA GPU usable: the driver initialised but "
                               "NVVM (the CUDA compiler library) or a device is missing")
            return False, "no CUDA GPU usable: " + " ".join(str(err).split())
        dev = cuda.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        cc = ".".join(map(str, dev.compute_capability))
        return True, f"{name} (compute capability {cc})"
    except Exception as e:   # noqa: BLE001
        return False, f"no CUDA GPU usable: {type(e).__name__}: " + " ".join(str(e).split())


def device_info():
    """A small dict describing the current device (for benchmarks, ``info``)."""
    dev = cuda.get_current_device()
    out = {"simulator": SIMULATOR}
    for k in ("name", "compute_capability", "MULTIPROCESSOR_COUNT"):
        v = getattr(dev, k, None)
        if isinstance(v, bytes):
            v = v.decode()
        out[k.lower()] = v
    return out


# --------------------------------------------------------------------------
# device code shared by the kernels

@cuda.jit(device=True, **_JIT)
def _store_vals(sm, col, lam, bad):
    """Values and log10 of one row's observables into column col of sm."""
    for k in range(NOBS):
        lk = lam[k]
        sm[k, col] = np.nan if bad else obs_value(lk)
        sm[NOBS + k, col] = np.nan if bad else obs_log10(lk)


@cuda.jit(device=True, **_JIT)
def _put_state(sm, row, col, st):
    """A partial row state (``row_state``) into rows row.. row+5 of column col."""
    sm[row, col] = st[0]
    sm[row + 1, col] = st[1]
    sm[row + 2, col] = st[2]
    sm[row + 3, col] = st[3]
    sm[row + 4, col] = st[4]
    sm[row + 5, col] = st[5]


@cuda.jit(device=True, **_JIT)
def _group_state(sm, row, g0, G):
    """The state of a row from the partial states of its G threads (columns
    g0 .. g0+G-1 of sm, rows row..row+5), merged in lane order."""
    m1 = sm[row, g0]
    m2 = sm[row + 1, g0]
    r = sm[row + 2, g0]
    e2 = sm[row + 3, g0]
    e3 = sm[row + 4, g0]
    v = sm[row + 5, g0]
    for ln in range(1, G):
        c = g0 + ln
        m1, m2, r, e2, e3, v = state_merge(m1, m2, r, e2, e3, v, sm[row, c], sm[row + 1, c],
                                           sm[row + 2, c], sm[row + 3, c], sm[row + 4, c],
                                           sm[row + 5, c])
    return m1, m2, r, e2, e3, v


@cuda.jit(device=True, **_JIT)
def _reduce_item(sm, c, r0, r1, step, thresholds, bid, blocks, sketch):
    """Channel c over tile rows r0, r0 + step, ... < r1 (shared memory):
    returns (count, mean, M2) of the finite values; folds min/max/infinite
    counts/threshold counts into the block's slot and sketch counts into the
    global histogram (the same rules as ``accumulate.block_reduce``):
    hist[k, i - hstart] counts bucket i of observable k, hrange[k] the range
    of columns touched, hninf[k] the -inf values."""
    thr, nt = thresholds
    mom, bmin, bmax, bnonf, bbelow = blocks
    hist, hrange, hninf, hstart = sketch
    cnt = 0.0
    s = 0.0
    ninf = 0
    mn = np.inf
    mx = -np.inf
    for r in range(r0, r1, step):
        cnt, s, ninf, mn, mx = fold_value(sm[c, r], cnt, s, ninf, mn, mx)
    mean = s / cnt if cnt > 0.0 else 0.0
    ss = 0.0
    for r in range(r0, r1, step):
        z = sm[c, r]
        if abs(z) < np.inf:
            d = z - mean
            ss += d * d
    if mn < np.inf:
        cuda.atomic.min(bmin, (bid, c), mn)
    if mx > -np.inf:
        cuda.atomic.max(bmax, (bid, c), mx)
    if ninf > 0:
        cuda.atomic.add(bnonf, (bid, c), np.int64(ninf))
    if c < NOBS:
        for j in range(nt):
            tj = thr[j]
            cb = 0
            for r in range(r0, r1, step):
                if sm[c, r] < tj:
                    cb += 1
            if cb > 0:
                cuda.atomic.add(bbelow, (bid, c, j), np.int64(cb))
    else:
        k = c - NOBS
        for r in range(r0, r1, step):
            lz = sm[c, r]
            if lz == lz:
                i = bucket_of(lz)
                if i == I_NEGINF:
                    cuda.atomic.add(hninf, k, np.int64(1))
                else:
                    i -= hstart
                    cuda.atomic.add(hist, (k, i), np.int64(1))
                    cuda.atomic.min(hrange, (k, 0), np.int64(i))
                    cuda.atomic.max(hrange, (k, 1), np.int64(i))
    return cnt, mean, ss


# shared-memory rows of the observe kernel: 0..NCH-1 the tile's channel values
# (column = row in tile).  While a G > 1 tile's rows are reduced, rows
# 0..NSTATS-1 hold the per-row stats (``store_stats``' layout, column = row in
# tile) and rows _PART.._PART+5 the threads' partial row states (column =
# thread); rows _MRG.. are the row-block merge.
_PART = NSTATS
_MRG = NCH
_SMROWS = NCH + 3
assert _PART + 6 <= NCH


_KERNELS = {}


def get_kernel(kind, *key):
    """The kernel ``kind`` ("observe", "softmax", "copy4") for the compile-time
    constants ``key``, built on first use.  Every launch of the backend gets
    its kernel here (the compile gate, ``bench/gpu_compile.py``, stands in
    for it to record the arguments a launch really passes)."""
    full = (kind,) + key + (_settings.MAX_REGISTERS,)
    k = _KERNELS.get(full)
    if k is None:
        k = _KERNELS[full] = _BUILDERS[kind](*key)
    return k


def _jit_opts():
    opts = dict(_JIT)
    if _settings.MAX_REGISTERS and not SIMULATOR:
        opts["max_registers"] = int(_settings.MAX_REGISTERS)
    return opts


def _build_observe(TPB, G, GENERATED):
    """The summary kernel for TPB threads per block, G threads per row, rows
    generated by ``model_row`` (GENERATED) or read from x."""
    NG = TPB // G
    SMCOLS = TPB + 1

    @cuda.jit(**_jit_opts())
    def observe(x, model, rows, target, thresholds, scratch, blocks, sketch, bad):
        # the argument groups (see _launch._Launcher.launch)
        gen, params, seed = model
        row0, nrows, n, brows, tr = rows
        labels, ymode, yfix = target
        scr, qscr = scratch
        mom = blocks[0]
        # one padding column: the tile reduction reads columns of several
        # channels at once, and a row stride of TPB doubles would put them
        # all in the same banks
        sm = cuda.shared.array((_SMROWS, SMCOLS), np.float64)
        tid = cuda.threadIdx.x
        bid = cuda.blockIdx.x
        grid = cuda.gridDim.x
        lane = tid % G
        grp = tid // G
        slot = bid * TPB + tid
        # geometry: units of whole row-blocks, tiles of tr <= TPB rows (see
        # tile_rows)
        unit = brows if brows > tr else tr
        nunits = (nrows + unit - 1) // unit
        tiles = unit // tr
        rpr = brows if brows < tr else tr         # rows of one row-block in a tile
        nrb_t = tr // rpr                           # row-blocks per tile
        ni0 = nrb_t * NCH
        K = TPB // ni0                              # splits per (row-block, channel)
        if K < 1:
            K = 1
        ni = ni0 * K
        rc = 0.0
        rm = 0.0
        rs = 0.0
        for u in range(bid, nunits, grid):
            for tt in range(tiles):
                tbase = u * unit + tt * tr
                trows = nrows - tbase
                if trows <= 0:
                    break
                if trows > tr:
                    trows = tr
                # ---- 1. rows -> channel values in sm[:, row in tile]
                if G == 1:
                    if tid < trows:
                        r = tbase + tid
                        grow = row0 + r
                        if GENERATED:
                            xr = scr[:, slot]
                            model_row(gen, params, seed, grow, n, xr,
                                      qscr[:, slot % qscr.shape[1]])
                        else:
                            xr = x[r]
                        mode, y, uu = row_target(ymode, yfix, labels, r, seed, grow, n)
                        m1, m2, rr, e2, e3, v, y_top, xy, ey, isbad = row_stats(
                            xr, n, mode, y, uu)
                        _store_vals(sm, tid, logobs(m1, m2, rr, e2, e3, v, y_top, xy, ey),
                                    isbad)
                        if isbad:
                            cuda.atomic.add(bad, 0, 1)
                            cuda.atomic.min(bad, 1, r)
                else:
                    cnt = (n - lane + G - 1) // G if lane < n else 0
                    for kq in range(G):
                        if kq * NG >= trows:
                            break
                        rt = grp + kq * NG                  # row in tile
                        active = rt < trows
                        r = tbase + rt if active else tbase
                        xr = x[r]
                        if active:
                            _put_state(sm, _PART, tid, row_state(xr[lane::G], cnt))
                        cuda.syncthreads()
                        if active and lane == 0:
                            m1, m2, rsum, te2, te3, tv = _group_state(sm, _PART, tid, G)
                            # array rows: argmax, a fixed class or labels
                            mode, yy, uu = row_target(ymode, yfix, labels, r, seed,
                                                      row0 + r, n)
                            (m1, m2, rsum, te2, te3, tv, y_top, xy, ey,
                             isbad) = row_stats_from(xr, n, m1, m2, rsum, te2, te3, tv,
                                                     mode, yy, uu)
                            if isbad:
                                cuda.atomic.add(bad, 0, 1)
                                cuda.atomic.min(bad, 1, r)
                            store_stats(sm, rt, m1, m2, rsum, te2, te3, tv, y_top, xy, ey,
                                        isbad)
                        # the next row's partial states overwrite rows _PART..
                        cuda.syncthreads()
                    cuda.syncthreads()
                    # batched wrap-up: one tile row per thread
                    if tid < trows:
                        lam = logobs(sm[ST_M1, tid], sm[ST_M2, tid], sm[ST_R, tid],
                                     sm[ST_E2, tid], sm[ST_E3, tid], sm[ST_V, tid],
                                     sm[ST_YTOP, tid] != 0.0, sm[ST_XY, tid], sm[ST_EY, tid])
                        _store_vals(sm, tid, lam, sm[ST_BAD, tid] != 0.0)
                cuda.syncthreads()
                # ---- 2. tile reduction by (row-block, channel, split) items
                for it in range(tid, ni, TPB):
                    j = it // (NCH * K)
                    rem = it - j * (NCH * K)
                    c = rem // K
                    kk = rem - c * K
                    lo = j * rpr
                    hi = lo + rpr
                    if hi > trows:
                        hi = trows
                    ic, im, iss = _reduce_item(sm, c, lo + kk, hi, K, thresholds, bid, blocks,
                                               sketch)
                    if ni <= TPB:
                        rc, rm, rs = chan_merge(rc, rm, rs, ic, im, iss)
                    elif lo < trows:
                        # K == 1 and whole row-blocks in the tile: done
                        rb = (tbase + lo) // brows
                        mom[rb, c, 0] = ic
                        mom[rb, c, 1] = im
                        mom[rb, c, 2] = iss
                if ni <= TPB:
                    ends = (brows <= tr or ((tt + 1) * tr) % brows == 0
                            or tbase + trows >= nrows)
                    if ends:
                        if tid < ni:
                            sm[_MRG, tid] = rc
                            sm[_MRG + 1, tid] = rm
                            sm[_MRG + 2, tid] = rs
                        cuda.syncthreads()
                        if tid < ni0:
                            j = tid // NCH
                            c = tid - j * NCH
                            lo = j * rpr
                            if lo < trows:
                                a0 = 0.0
                                a1 = 0.0
                                a2 = 0.0
                                base = (j * NCH + c) * K
                                for kk in range(K):
                                    a0, a1, a2 = chan_merge(a0, a1, a2, sm[_MRG, base + kk],
                                                            sm[_MRG + 1, base + kk],
                                                            sm[_MRG + 2, base + kk])
                                rb = (tbase + lo) // brows
                                mom[rb, c, 0] = a0
                                mom[rb, c, 1] = a1
                                mom[rb, c, 2] = a2
                        rc = 0.0
                        rm = 0.0
                        rs = 0.0
                cuda.syncthreads()

    return observe


@cuda.jit(device=True, **_JIT)
def _softmax_row(xr, n, out, log):
    """One row, one thread: the CPU backend's ``softmax_rows`` body (NaN for a bad row)."""
    m1, m2, rr, e2, e3, v = row_state(xr, n)
    if row_bad(m1, rr, v):
        for i in range(n):
            out[i] = np.nan
        return
    m1f = np.float64(m1)
    a = rest_mass(m1, m2, rr)
    if log:
        row_log_softmax(xr, n, m1f, math.log1p(a), out)
    else:
        row_softmax(xr, n, m1f, 1.0 + a, out)


def _build_softmax(TPB, G, LOG):
    NG = TPB // G

    @cuda.jit(**_jit_opts())
    def softmax_kernel(x, out, n):
        sm = cuda.shared.array((9, TPB), np.float64)
        tid = cuda.threadIdx.x
        bid = cuda.blockIdx.x
        grid = cuda.gridDim.x
        lane = tid % G
        grp = tid // G
        nrows = x.shape[0]
        nrounds = (nrows + NG - 1) // NG
        cnt = (n - lane + G - 1) // G if lane < n else 0
        for q in range(bid, nrounds, grid):
            r = q * NG + grp
            active = r < nrows
            if not active:
                r = 0
            xr = x[r]
            orow = out[r]
            if G == 1:
                if active:
                    _softmax_row(xr, n, orow, LOG)
            else:
                if active:
                    _put_state(sm, 0, tid, row_state(xr[lane::G], cnt))
                cuda.syncthreads()
                if active and lane == 0:
                    m1, m2, rsum, te2, te3, tv = _group_state(sm, 0, tid, G)
                    sm[6, tid] = 1.0 if row_bad(m1, rsum, tv) else 0.0
                    a = rest_mass(m1, m2, rsum)
                    sm[7, tid] = math.log1p(a) if LOG else 1.0 + a
                    sm[8, tid] = m1
                cuda.syncthreads()
                g0 = tid - lane
                if active:
                    if sm[6, g0] != 0.0:
                        for i in range(lane, n, G):
                            orow[i] = np.nan
                    elif LOG:
                        row_log_softmax(xr[lane::G], cnt, sm[8, g0], sm[7, g0], orow[lane::G])
                    else:
                        row_softmax(xr[lane::G], cnt, sm[8, g0], sm[7, g0], orow[lane::G])
                # the next round overwrites sm rows 0..8
                cuda.syncthreads()

    return softmax_kernel


@cuda.jit(**_JIT)
def _copy4(src, dst):
    """dst[i] = src[i] for two 4-d views of one shape (any strides, casting)."""
    d0, d1, d2, d3 = dst.shape
    total = d0 * d1 * d2 * d3
    for i in range(cuda.grid(1), total, cuda.gridsize(1)):
        i3 = i % d3
        t = i // d3
        i2 = t % d2
        t = t // d2
        i1 = t % d1
        i0 = t // d1
        dst[i0, i1, i2, i3] = src[i0, i1, i2, i3]


_BUILDERS = {"observe": _build_observe, "softmax": _build_softmax, "copy4": lambda: _copy4}
