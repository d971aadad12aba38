"""Device code and kernels of the CUDA backend (see the package docstring).

The per-row math is the ``register_jitable`` code of ``_math``, ``_rng`` and
``_gen``, compiled here by ``numba.cuda`` as device code."""
import math

import numpy as np
from numba import cuda, types
from numba.extending import overload, register_jitable

from ..._kernels.gen import model_row
from ..._kernels.row import (NOBS, ST_E2, ST_E3, ST_M1, ST_M2, ST_R, ST_V, logobs,
                             obs_log10, obs_value, rest_mass, row_bad, row_log_softmax,
                             row_softmax, row_state, row_stats, row_stats_from, row_target,
                             state_merge)
from ..._kernels.vmath import vexp
from ..._kernels.sketch import I_NEGINF, bucket_of
from ...accumulate import NCH, chan_merge
from ...registries import TARGET_ARGMAX, TARGET_LABELS
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


_FULL_MASK = 0xFFFFFFFF

if SIMULATOR:
    @cuda.jit(device=True, **_JIT)
    def _xchg(sm, row, m1, m2, r, e2, e3, v, k):
        """The state of thread ``threadIdx.x ^ k``.  The simulator has no warp
        shuffles: the states go through rows row..row+5 of the shared array
        sm (column = thread) and a barrier of the whole block, which every
        thread of the block reaches as often as a device's threads reach the
        shuffles.  Successive steps alternate between two such buffers
        (``_group_state``), so the next write never meets this read."""
        tid = cuda.threadIdx.x
        sm[row, tid] = m1
        sm[row + 1, tid] = m2
        sm[row + 2, tid] = r
        sm[row + 3, tid] = e2
        sm[row + 4, tid] = e3
        sm[row + 5, tid] = v
        cuda.syncthreads()
        o = tid ^ k
        return (sm[row, o], sm[row + 1, o], sm[row + 2, o], sm[row + 3, o], sm[row + 4, o],
                sm[row + 5, o])

    @cuda.jit(device=True, **_JIT)
    def _xchg_end(steps):
        """After an odd number of exchanges the next merge's first write
        goes to the buffer just read: a barrier first."""
        if steps % 2 == 1:
            cuda.syncthreads()
else:
    @cuda.jit(device=True, **_JIT)
    def _xchg(sm, row, m1, m2, r, e2, e3, v, k):
        """The state of lane ``laneid ^ k`` of this warp, by register
        shuffles (every lane of the warp takes part; sm, row are unused)."""
        return (cuda.shfl_xor_sync(_FULL_MASK, m1, k), cuda.shfl_xor_sync(_FULL_MASK, m2, k),
                cuda.shfl_xor_sync(_FULL_MASK, r, k), cuda.shfl_xor_sync(_FULL_MASK, e2, k),
                cuda.shfl_xor_sync(_FULL_MASK, e3, k), cuda.shfl_xor_sync(_FULL_MASK, v, k))

    @cuda.jit(device=True, **_JIT)
    def _xchg_end(steps):
        """Nothing to wait for: registers."""
        return


@cuda.jit(device=True, **_JIT)
def _group_state(sm, row, lane, G, m1, m2, r, e2, e3, v):
    """The state of a row from the partial states (``row_state``) of its G
    threads (G a power of two <= ``_geometry.WARP``: the group lies in one warp; every
    thread of the block calls this together, a thread of no row with the
    identity state -inf, -inf, 0, 0, 0, 0).

    A butterfly over lane xor 1, 2, 4, ...: at step k the two threads of a
    pair both compute ``state_merge(lower lane's state, upper lane's
    state)``, the same operation on the same numbers, so after log2(G) steps
    every thread of the group holds the same bits: the states merged by the
    fixed tree ((s0 s1)(s2 s3))((s4 s5)(s6 s7))..., whatever the timing.
    Returns the row's state in float64 (m1, m2 exact)."""
    m1 = np.float64(m1)
    m2 = np.float64(m2)
    k = 1
    steps = 0
    while k < G:
        b1, b2, br, be2, be3, bv = _xchg(sm, row + 6 * (steps % 2), m1, m2, r, e2, e3, v, k)
        up = (lane & k) != 0
        m1, m2, r, e2, e3, v = state_merge(
            b1 if up else m1, b2 if up else m2, br if up else r, be2 if up else e2,
            be3 if up else e3, bv if up else v,
            m1 if up else b1, m2 if up else b2, r if up else br, e2 if up else be2,
            e3 if up else be3, v if up else bv)
        k *= 2
        steps += 1
    _xchg_end(steps)
    return m1, m2, r, e2, e3, v


@cuda.jit(device=True, **_JIT)
def _share_state(xr, lane, G, cnt, active):
    """A thread's partial state of its row (elements lane, lane + G, ...),
    or the identity state for a thread of no row."""
    if active:
        m1, m2, r, e2, e3, v = row_state(xr[lane::G], cnt)
        return np.float64(m1), np.float64(m2), r, e2, e3, v
    return -np.inf, -np.inf, 0.0, 0.0, 0.0, 0.0


#: one pass over a long share of a float32 row: a thread of an array row's
#: group walks a share longer than CHUNK elements in chunks of CHUNK, so that
#: a chunk's second pass finds it in L1: a block's chunks (or shorter whole
#: shares) are at most CHUNK x 4 B x 128 threads = 32 kB, 4 resident blocks
#: 128 kB.  Other rows (float64, strided) read their share twice
#: (``share_state_once``).
CHUNK = 64


@register_jitable(error_model="numpy", forceinline=True)
def share_state_chunked(s, cnt):
    """The state (m1, m2 in float64, R, E2, E3, V) of ``s[:cnt]`` (a thread's
    strided share of a float32 row) from one pass over memory.

    A share of at most CHUNK elements is one ``row_state``: the bits of
    the whole share.  A longer one is cut into chunks of CHUNK elements (the
    last one shorter) in order; each chunk's state is ``row_state`` (its
    top-two pass loads the chunk, its exp pass reads it again from L1) and
    is folded into the running state by ``state_merge``, running state
    first, in chunk order: a fixed order, a function of cnt only, so the
    bits do not depend on timing.

    Accuracy.  Every term of R, E2, E3 (e, e^2, e^3 in [0, 1]) and of V
    (e (m2 - x) >= 0) is nonnegative, so relative error bounds of partial
    sums bound their sum's.  (1) Inside a chunk of k <= CHUNK elements
    ``row_sums`` flushes its float32 partials into float64 every F =
    min(16, ceil(k / 16)) <= 4 terms: a partial is good to (F - 1) 2^-24 =
    1.8e-7 (the whole share's partials of 16 terms: 15 2^-24 = 8.9e-7), and
    the float64 flushes add roundings of 2^-53.  (2) Each term is the
    float32 exp of a float32 difference x - m2 taken against the chunk's m2
    instead of the share's: the same one-ulp exp and the same rounding of
    the difference.  A term dropped under the floor (x - m2_chunk < -29) is
    below e^-29 times the chunk's m2 term, which is at most the row's: the
    bound of ``_kernels.row`` on dropped terms holds.  (3) ``state_merge``
    rescales the running and the chunk's sums by float64 exps (a few ulp)
    and adds nonnegative float64 numbers: at most ~8 2^-53 per merge, over
    K = ceil(cnt / CHUNK) chunks 8 K 2^-53 (n = 16,384, 32 threads: K = 8,
    7e-15).  In all: (F - 1) 2^-24 + the per-term error of (2) + 1e-14,
    against the float32 target of 2e-5; V's error measured against R, as
    everywhere."""
    L = CHUNK if cnt > CHUNK else cnt
    m1 = -np.inf
    m2 = -np.inf
    r = 0.0
    e2 = 0.0
    e3 = 0.0
    v = 0.0
    c0 = 0
    while c0 < cnt:
        k = min(L, cnt - c0)
        b1, b2, br, be2, be3, bv = row_state(s[c0:c0 + k], k)
        b1 = np.float64(b1)
        b2 = np.float64(b2)
        if c0 == 0:
            m1, m2, r, e2, e3, v = b1, b2, br, be2, be3, bv
        else:
            m1, m2, r, e2, e3, v = state_merge(m1, m2, r, e2, e3, v, b1, b2, br, be2, be3, bv)
        c0 += L
    return m1, m2, r, e2, e3, v


@register_jitable(error_model="numpy", forceinline=True)
def _share_state_whole(s, cnt):
    m1, m2, r, e2, e3, v = row_state(s, cnt)
    return np.float64(m1), np.float64(m2), r, e2, e3, v


@register_jitable(error_model="numpy", forceinline=True)
def _row_share_chunked(xr, lane, G, cnt):
    return share_state_chunked(xr[lane::G], cnt)


@register_jitable(error_model="numpy", forceinline=True)
def _row_share_whole(xr, lane, G, cnt):
    return _share_state_whole(xr[lane::G], cnt)


def share_state_once(xr, lane, G, cnt):
    """A thread's state of its share of row xr (elements lane, lane + G,
    ...): a contiguous float32 row's read once (``share_state_chunked``),
    any other by one ``row_state`` (this Python body is the simulator's).
    Only contiguous float32 rows: the chunk loop costs a strided float32
    row's kernel 5-7 registers (133-135: 3 blocks a multiprocessor instead
    of 4), a float64 row's 10-14."""
    if xr.dtype == np.float32 and xr.flags.c_contiguous:
        return _row_share_chunked(xr, lane, G, cnt)
    return _row_share_whole(xr, lane, G, cnt)


@overload(share_state_once, jit_options=dict(error_model="numpy", forceinline=True),
          strict=False)
def _ol_share_state_once(xr, lane, G, cnt):
    if xr.dtype == types.float32 and xr.layout == "C":
        return _row_share_chunked
    return _row_share_whole


@cuda.jit(device=True, **_JIT)
def _share_state_1p(xr, lane, G, cnt, active):
    """``_share_state`` with a contiguous float32 row's share read once from
    memory (``share_state_once``)."""
    if active:
        return share_state_once(xr, lane, G, cnt)
    return -np.inf, -np.inf, 0.0, 0.0, 0.0, 0.0


@cuda.jit(device=True, **_JIT)
def _array_target(ymode, yfix, labels, r):
    """``row_target`` for array rows, whose target is the top class, a fixed
    class or a label, never a drawn one: (mode, y, u) with mode ARGMAX or
    LABELS (``row_stats_from`` treats a fixed class as a label), so a kernel
    of array rows compiles neither the random streams nor the sampled
    target's inversion."""
    if ymode == TARGET_ARGMAX:
        return TARGET_ARGMAX, yfix, 0.5
    y = labels[r] if ymode == TARGET_LABELS else yfix
    return TARGET_LABELS, y, 0.5


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
# ST_M1..ST_V hold each row's merged state (column = row in tile) and, under
# the simulator only, rows _PART.._PART+11 stand in for the warp shuffles of
# the state merge (``_xchg``); rows _MRG.. are the row-block merge.
_PART = ST_V + 1
_MRG = NCH
_SMROWS = NCH + 3
assert _PART + 12 <= NCH


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
                        if GENERATED:
                            mode, y, uu = row_target(ymode, yfix, labels, r, seed, grow, n)
                        else:
                            mode, y, uu = _array_target(ymode, yfix, labels, r)
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
                        p1, p2, pr, pe2, pe3, pv = _share_state_1p(xr, lane, G, cnt, active)
                        # every thread of the block: the merge is warp-synchronous
                        m1, m2, rsum, te2, te3, tv = _group_state(sm, _PART, lane, G, p1, p2,
                                                                  pr, pe2, pe3, pv)
                        if active and lane == 0:
                            sm[ST_M1, rt] = m1
                            sm[ST_M2, rt] = m2
                            sm[ST_R, rt] = rsum
                            sm[ST_E2, rt] = te2
                            sm[ST_E3, rt] = te3
                            sm[ST_V, rt] = tv
                    cuda.syncthreads()
                    # batched wrap-up, one tile row per thread: the target,
                    # the bad-row rule, the observables
                    if tid < trows:
                        r = tbase + tid
                        xr = x[r]
                        mode, yy, uu = _array_target(ymode, yfix, labels, r)
                        (m1, m2, rsum, te2, te3, tv, y_top, xy, ey,
                         isbad) = row_stats_from(xr, n, sm[ST_M1, tid], sm[ST_M2, tid],
                                                 sm[ST_R, tid], sm[ST_E2, tid], sm[ST_E3, tid],
                                                 sm[ST_V, tid], mode, yy, uu)
                        if isbad:
                            cuda.atomic.add(bad, 0, 1)
                            cuda.atomic.min(bad, 1, r)
                        # logobs compiled once per branch, each without the
                        # other target's formulas: 7 registers fewer
                        if y_top:
                            _store_vals(sm, tid, logobs(m1, m2, rsum, te2, te3, tv, True, xy, ey),
                                        isbad)
                        else:
                            _store_vals(sm, tid, logobs(m1, m2, rsum, te2, te3, tv, False, xy,
                                                        ey), isbad)
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


# e^-64 (float64): the softmax factor of float32 terms below e^-64
_EXP_M64 = math.exp(-64.0)


@register_jitable(error_model="numpy", forceinline=True)
def _span32(x, cnt, m1, a, out, log):
    """``_softmax_span`` of float32 rows: float32 arithmetic per element, the
    row's numbers (S = 1 + a, log1p(a)) in float64 once.

    softmax: d = x_i - m1 is split exactly into d + err (Knuth's TwoSum: d
    the float32 difference, |err| <= ulp(d)/2, so exp(x_i - m1) =
    exp(d) (1 + err) to within err^2 / 2); e = ``vexp``(d), float32, 1 ulp
    (``_kernels.vmath``, plain arithmetic, subnormal results included);
    p_i = (e + e err) / S with 1/S rounded to float32 once.  Below d = -64 the
    exponential is taken of d + 64 (exact: d is a multiple of ulp(d) and
    |d + 64| < |d|) and e^-64 / S (a normal float32 for S < 1e10, rounded
    once) is the factor, so every operation but the last stays normal and a
    subnormal p_i is rounded once (d < -151 gives 0, as p_i < 2^-217 does).
    Error: 1 ulp (exp) + 1/2 (e + e err; the dropped err^2 / 2 <= 2^-35 and
    the rounding of e err, <= 2^-41 of e, are negligible) + 1/2 (1/S) + 1/2 (the product)
    <= 3 ulp, i.e. <= 3 * 2^-23 = 3.6e-7 relative where p_i is normal, within
    1 ulp of the correctly rounded p_i where it is subnormal; against the
    CPU's float64 exp rounded once, <= 3.5 ulp apart.  Without the split,
    rounding d would cost up to |d| 2^-24 relative: 6e-6 at d = -100, over
    the float32 target.

    log_softmax: (x_i - m1) - log1p(a) with both terms <= 0 (no
    cancellation): three roundings, <= 1.5 ulp."""
    zero = np.float32(0.0)
    m = np.float32(m1)
    if log:
        lpa = np.float32(math.log1p(a))
        for i in range(cnt):
            out[i] = (x[i] - m) - lpa
        return
    s = 1.0 + a
    inv = np.float32(1.0 / s)
    inv_low = np.float32(_EXP_M64 / s)
    nm = -m
    shift = np.float32(64.0)
    low = np.float32(-64.0)
    for i in range(cnt):
        xi = x[i]
        d = xi + nm
        bb = d - xi
        err = (xi - (d - bb)) + (nm - bb)
        # -inf (or an overflowed difference): e = 0, err NaN
        err = err if err == err else zero
        lo = d < low
        e = vexp(d + shift if lo else d)
        out[i] = (e + e * err) * (inv_low if lo else inv)


@register_jitable(error_model="numpy", forceinline=True)
def _span64(x, cnt, m1, a, out, log):
    """``_softmax_span`` of float64 rows: the CPU's own element loops."""
    if log:
        row_log_softmax(x, cnt, m1, math.log1p(a), out)
    else:
        row_softmax(x, cnt, m1, 1.0 + a, out)


def _softmax_span(x, cnt, m1, a, out, log):
    """out[i] = softmax (or, log True, log_softmax) of the cnt elements x[i]
    of a row whose top is m1 (float64) and rest mass a (``rest_mass``):
    float32 rows in float32 (``_span32``), float64 rows as on the CPU.
    (This Python body is the simulator's; -inf logits make NaN in the
    discarded TwoSum terms, silently as on a device.)"""
    with np.errstate(invalid="ignore", over="ignore"):
        if x.dtype == np.float32:
            _span32(x, cnt, m1, a, out, log)
        else:
            _span64(x, cnt, m1, a, out, log)


@overload(_softmax_span, jit_options=dict(error_model="numpy", forceinline=True),
          strict=False)
def _ol_softmax_span(x, cnt, m1, a, out, log):
    return _span32 if x.dtype == types.float32 else _span64


@cuda.jit(device=True, **_JIT)
def _softmax_row(xr, n, out, log):
    """One row, one thread: the CPU backend's ``softmax_rows`` body (NaN for a bad row)."""
    m1, m2, rr, e2, e3, v = row_state(xr, n)
    if row_bad(m1, rr, v):
        for i in range(n):
            out[i] = np.nan
        return
    _softmax_span(xr, n, np.float64(m1), rest_mass(m1, m2, rr), out, log)


def _build_softmax(TPB, G, LOG):
    NG = TPB // G

    @cuda.jit(**_jit_opts())
    def softmax_kernel(x, out, n):
        # the simulator's stand-in for the warp shuffles (unused on a device)
        sm = cuda.shared.array((12, TPB), np.float64)
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
                p1, p2, pr, pe2, pe3, pv = _share_state(xr, lane, G, cnt, active)
                # every thread of the block: the merge is warp-synchronous,
                # and leaves the row's state in each thread of its group
                m1, m2, rsum, te2, te3, tv = _group_state(sm, 0, lane, G, p1, p2, pr, pe2,
                                                          pe3, pv)
                if active:
                    if row_bad(m1, rsum, tv):
                        for i in range(lane, n, G):
                            orow[i] = np.nan
                    else:
                        _softmax_span(xr[lane::G], cnt, m1, rest_mass(m1, m2, rsum),
                                      orow[lane::G], LOG)

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
