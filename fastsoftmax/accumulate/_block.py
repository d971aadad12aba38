"""A group of blocks of rows into the arrays of every part (the kernels' inner loop).

:func:`block_reduce` is inlined into the backends' compiled kernels: it
fills a block's moments (the leaves the :class:`~fastsoftmax.accumulate.MomentTree`
combines) and adds to a thread's running extremes, threshold counts and
sketch counts, the arrays the backends then hand to an accumulator's parts.
"""
import numpy as np
from numba.extending import register_jitable

from .._kernels.row import NOBS
from .._kernels.simd import chan_ss, chan_stats, vector_width
from .._kernels.sketch import I_BELOW_A, I_NEGINF, bucket_below, bucket_fast, scatter_one
from .._kernels.vmath import fmax, fmin
from ._moments import NCH

__all__ = ["block_reduce", "fold_value"]

_I_BELOW_A_F = float(I_BELOW_A)


@register_jitable(error_model="numpy")
def block_reduce(val, nr, brows, thr, mom, parts, sketch):
    """Reduce a group of consecutive blocks of ``brows`` rows, their per-row
    observables ``val[c, :nr]`` (channel c: value of observable c < NOBS,
    log10 of observable c - NOBS; NaN for bad rows; the last block may be
    short; ``_kernels.row.block_observables`` fills them), into each block's
    moments ``mom[j, c, 0:3]`` (block j of the group) and into a thread's
    running parts: ``parts`` = (vmin, vmax, nonf, below), the min/max/infinite
    counts per channel and the counts below each threshold ``thr``;
    ``sketch`` = (hist, carry, sk_lo, sk_hi, sk_ninf, sk_start), the sketch's
    counts (below).

    ``val`` has shape (NCH + 1, >= nr); its row NCH is scratch.  Moments are
    computed per block, in two passes (mean, then squared deviations) over the finite
    values, rows in 16 float64 lanes folded by a fixed tree
    (``_simd.chan_stats`` / ``chan_ss``): the order is the code's, the same
    bits on every CPU and whatever the grouping.  Counts are integers;
    min/max are exact in any order.  Every loop but the sketch's scatter
    vectorizes.  A group (up to ``MAX_BLOCK_ROWS`` rows) pays the fixed cost
    of each of these loops once, not once per block: at n = 1024 a block is
    64 rows.
    The sketch (see ``_sketch``): ``hist[k, i - sk_start]`` (uint8) and
    ``carry[k, i - sk_start]`` (its 256s, uint16) count bucket i of
    observable k, ``sk_lo``/``sk_hi`` the range touched, ``sk_ninf`` the -inf
    values; region-B buckets (rare) need a log and are found in the scatter.
    """
    vector_width()
    vmin, vmax, nonf, below = parts
    hist, carry, sk_lo, sk_hi, sk_ninf, sk_start = sketch
    nb = (nr + brows - 1) // brows
    for c in range(NCH):
        for j in range(nb):
            off = j * brows
            m = min(brows, nr - off)
            cnt, s, ninf, mn, mx = chan_stats(val, c, off, m)
            mean = s / cnt if cnt > 0 else 0.0
            mom[j, c, 0] = cnt
            mom[j, c, 1] = mean
            mom[j, c, 2] = chan_ss(val, c, off, m, mean)
            vmin[c] = fmin(vmin[c], mn)
            vmax[c] = fmax(vmax[c], mx)
            nonf[c] += ninf
    nt = thr.shape[0]
    for k in range(NOBS):
        for j in range(nt):
            tj = thr[j]
            cb = 0
            for r in range(nr):
                cb += 1 if val[k, r] < tj else 0
            below[k, j] += cb
        # bucket indices (branch-free, vectorized); how many fall below region
        # A (-inf, region B or NaN) and the range of the others
        below_a = 0
        bmin = np.inf
        bmax = -np.inf
        for r in range(nr):
            b = bucket_fast(val[NOBS + k, r])
            val[NCH, r] = b
            below_a += 1 if b == _I_BELOW_A_F else 0
        for r in range(nr):
            b = val[NCH, r]
            bmin = fmin(bmin, np.inf if b == _I_BELOW_A_F else b)
            bmax = fmax(bmax, -np.inf if b == _I_BELOW_A_F else b)
        if below_a == 0:
            # the common case: a bare scatter (region A, "above" and +inf)
            for r in range(nr):
                scatter_one(hist, carry, k, int(val[NCH, r]) - sk_start)
            sk_lo[k] = min(sk_lo[k], int(bmin) - sk_start)
            sk_hi[k] = max(sk_hi[k], int(bmax) - sk_start)
            continue
        lo = sk_lo[k]
        hi = sk_hi[k]
        for r in range(nr):
            lv = val[NOBS + k, r]
            if lv == lv:
                i = int(val[NCH, r])
                if i == I_BELOW_A:
                    i = bucket_below(lv)
                    if i == I_NEGINF:
                        sk_ninf[k] += 1
                        continue
                i -= sk_start
                scatter_one(hist, carry, k, i)
                lo = i if i < lo else lo
                hi = i if i > hi else hi
        sk_lo[k] = lo
        sk_hi[k] = hi


# ---------------------------------------------------------------------------
# The rules of a channel's reduction, value by value (the CUDA tile
# reduction; ``_simd.chan_stats`` applies the same rules in 16 lanes)

@register_jitable(error_model="numpy")
def fold_value(z, cnt, s, ninf, mn, mx):
    """Fold one value z of a channel into (count, sum, infinite count, min,
    max): finite values enter the moments, +-inf is counted apart, NaN (a bad
    row) only in min/max's NaN-ignoring rule, i.e. not at all."""
    if abs(z) < np.inf:
        cnt += 1.0
        s += z
    elif z == z:
        ninf += 1
    return cnt, s, ninf, fmin(mn, z), fmax(mx, z)
