r"""Per-row softmax math, written once for every target.

Every function here is a plain function registered with
``numba.extending.register_jitable``: the CPU backend (``backends.cpu``) calls
it from ``numba.njit`` code and the CUDA backend (``backends.cuda``) from device
code, so both targets apply the same formulas to the same numbers.

The log-domain method
---------------------
For a row x of length n with top two values m1 >= m2 (with multiplicity: a
tie gives m1 == m2) write the gap g = m1 - m2 >= 0, t = exp(-g) and

    e_i  = exp(min(x_i - m2, 0))           (the top element counts as 1)
    R    = sum_i e_i - 1                   ("the rest": every element but the
                                            top one, relative to m2; R >= 1)
    E2   = sum_i e_i^2 - 1,  E3 = sum_i e_i^3 - 1
    V    = sum_i e_i (m2 - x_i) >= 0
    a    = t R = sum_{i != top} exp(x_i - m1),   S = 1 + a.

Every exponent is <= 0 and the m2 term is exactly 1, so R, E2, E3 >= 1 never
underflow, whatever the gap.  With p1 = 1/S and q = 1 - p1 = a/S (never
computed as a difference), the natural logs of the observables are

    max_prob            -log1p(a)
    one_minus_max_prob  -g + log R - log1p(a)
    entropy             -g + log(R L(a) + (g R + V)/S),   L(a) = log1p(a)/a
    jac_diag_max        log p1 + log q          (max_i p_i(1-p_i) = p1(1-p1)
                                                because p_i <= p1 and
                                                p_i <= 1 - p1 for i != top)
    jac_offdiag_max     -g - 2 log1p(a)        (p1 p2, p2 = t/S)
    jac_fro             -g - log1p(a) + log(G)/2 with
                        G = (R^2 + 2 E2)/S^2 + (E2 - 2 t E3/S) + t^2 E2^2/S^2
                        (||J||_F^2 = p1^2 (q^2 + 2 u2) + sum_{j != top}
                        p_j^2 (1 - 2 p_j) + u2^2, u2 = sum_{j != top} p_j^2,
                        every term >= 0)
    ce_loss             y on top:   log a + log L(a)
                        otherwise:  log(log1p(a) + m1 - x_y)
    ce_grad_target      y on top:   log q
                        otherwise:  log1p(t (R - e_y)) - log1p(a)
    ce_grad_norm        y on top:   -g - log1p(a) + log(E2 + R^2)/2
                        otherwise:  log(1 + t^2 (E2 - e_y^2)
                                        + (1 + t (R - e_y))^2)/2 - log1p(a)

"y on top" means x_y == m1; for a tie every formula gives the same number
whichever of the tied indices y is, so no argmax index is ever needed.
n = 1 (or a single finite logit) is handled exactly: every Jacobian
observable is 0 (log = -inf).

The values (``finish``): computed from the same quantities, not as
exp(log), where that is exact to a few ulps.

Negligible terms and subnormals
-------------------------------
A term with x_i - m2 below the floor (-29 in float32, -236 in float64) is
taken as exactly 0 (as a -inf mask is).  Above the floor e_i^3 is still a
normal float, so the exp pass never produces a subnormal (x86 runs
subnormal arithmetic ~100x slower: saturated rows ran 5x slower).  The
dropped terms are < e^-29 = 2.5e-13 (float32) / e^-236 = 3.6e-103 (float64)
relative to the m2 term, which is 1: R, E2, E3 change by less than n times
that, relatively; V (which only enters the entropy, beside R L(a) >= log 2)
by less than n * 29 e^-29 = n * 7.4e-12 absolutely.  Both are far below the
float32 (2e-5) and float64 (1e-12) accuracy targets for any realistic n.

Summation order
---------------
Every order below is fixed by the code (compiled without ``reassoc``) and is
a function of n and the dtype only, never of the CPU, the vector width, the
threads or the chunking: the bits are the same everywhere.

* Short rows on the CPU's tile path (``_config.TILE_MAX_N``: n <= 256 where
  it is switched on, ``FASTSOFTMAX_TILE=1``; off by default): a tile of G = 16
  consecutive rows is transposed (``tile_load``) so that row l of the tile
  is lane l; the top two and the four sums are vertical operations
  (``tile_sums``), no lane ever meets another.  Each row's terms are added
  in the row's order, e_0 first, into a partial of the row's dtype that is
  flushed into a float64 sum every FLUSH_TILES = 16 elements:
  S = fl64(...(fl64(P_0) + fl64(P_1)) + ...), P_b the float32 (or float64)
  serial sum of elements 16 b .. 16 b + 15.  The other rows of the tile and
  the lane a row lands in change nothing.  ``observables`` uses the same
  path, so its per-row numbers are the ones ``summarize`` reduces.
* Every other row on the CPU: every sum is over 16 explicit lanes (element i in
  lane i % 16; float32 lane partials are flushed into float64 lanes every
  16 tiles of 16, the lanes are summed by a fixed tree: ``_simd``).
* Other targets (CUDA) use the per-element loops below (``row_top2``,
  ``row_sums``: a row's terms in order, in partials of as many terms as the
  CPU's lanes take, at most 16); they agree to rounding.

In both CPU orders a float32 partial takes at most 16 terms in (0, 1]
before its flush: relative error <= 15 * 2**-24 ~ 9e-7 per partial, far
inside the float32 accuracy target (2e-5).
"""
import math

import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from . import simd as _simd
from . import tile as _tile
from .. import registries as _reg
from ..registries import TARGET_ARGMAX, TARGET_LABELS, TARGET_RANDOM, TARGET_SAMPLED
from .rng import STREAM_LABEL, STREAM_SAMPLED, uniform, uniform_int
from .simd import G, vector_width
from .vmath import fmax, vexp_normal
# the wrap-up (logs and values of the observables from a row's numbers)
from .finish import (INV_LN10, block_observables, logobs, obs_log10, obs_row,  # noqa: F401
                     obs_value)

# the observables' names and indices, from their records (registries)
OBS_NAMES = tuple(o.name for o in _reg.OBSERVABLES)
NOBS = len(OBS_NAMES)
MAX_PROB = _reg.MAX_PROB.index
ONE_MINUS_MAX_PROB = _reg.ONE_MINUS_MAX_PROB.index
ENTROPY = _reg.ENTROPY.index
JAC_DIAG_MAX = _reg.JAC_DIAG_MAX.index
JAC_OFFDIAG_MAX = _reg.JAC_OFFDIAG_MAX.index
JAC_FRO = _reg.JAC_FRO.index
CE_LOSS = _reg.CE_LOSS.index
CE_GRAD_NORM = _reg.CE_GRAD_NORM.index
CE_GRAD_TARGET = _reg.CE_GRAD_TARGET.index

# exponent floors (module docstring): x_i - m2 below them counts as an exact
# 0; at them e^3 is still a normal float (float32: e^-87 > 1.18e-38;
# float64: e^-708 > 2.2e-308) and exp() needs no range clamp.
EXP_FLOOR32 = -29.0
EXP_FLOOR64 = -236.0
# float32 lane partials are flushed into float64 every FLUSH_TILES tiles of G
FLUSH_TILES = 16

# The scalar per-row wrap-up is compiled without fastmath whatever the caller's
# flags: no FMA contraction (and, were the flags ever widened, no 'reassoc',
# which would e.g. turn R * (log1p(a) / a) into (R * log1p(a)) / a and lose
# every digit when a is subnormal).  Only the vectorized loops (row_top2,
# row_sums, the block reductions) run under FASTMATH.
strict = register_jitable(fastmath=False, forceinline=True, error_model="numpy")

# the vectorized row loops and their drivers: inlined into the caller and
# compiled with the caller's FASTMATH (nsz, contract: their order is fixed by
# the code, see "Summation order")
hot = register_jitable(forceinline=True, error_model="numpy")


def like(x, c):
    """c converted to the scalar type of x (a scalar or an array)."""
    return np.asarray(x).dtype.type(c)


@overload(like)
def _like_impl(x, c):
    ty = x.dtype if isinstance(x, types.Array) else x

    def impl(x, c):
        return ty(c)

    return impl


def exp_floor(x):
    """The exponent floor for the dtype of x (an array or a scalar)."""
    return like(x, EXP_FLOOR32 if np.asarray(x).dtype == np.float32 else EXP_FLOOR64)


@overload(exp_floor)
def _exp_floor_impl(x):
    ty = x.dtype if isinstance(x, types.Array) else x
    f = EXP_FLOOR32 if ty == types.float32 else EXP_FLOOR64

    def impl(x):
        return ty(f)

    return impl


def _targets(generic, cpu, **opts):
    """Register ``generic`` (its Python body: CUDA, the simulator) and, for
    the CPU target, the implementation ``cpu`` under the name ``generic``."""
    overload(generic, target="cpu", jit_options=opts, strict=False)(lambda *a: cpu)
    overload(generic, jit_options=opts, strict=False)(lambda *a: generic)
    return generic


def row_top2(x, n):
    """(m1, m2): the two largest values of x[:n], with multiplicity.

    CPU: ``_simd.top2`` (16 lanes, one pass).  Elsewhere (CUDA): one pass
    of flat selects, x_i > m1 moving m1 down to m2 and anything else
    raising m2 (maxNum), so a tie at the top gives m2 = m1.  Both ignore NaN
    (it fails every comparison, and maxNum drops it); NaN is caught by
    ``row_sums``.
    """
    ninf = like(x, -np.inf)
    m1 = ninf
    m2 = ninf
    for i in range(n):
        v = x[i]
        hi = v > m1
        m2 = m1 if hi else fmax(m2, v)
        m1 = v if hi else m1
    return m1, m2


def _row_top2_cpu(x, n):
    vector_width()
    return _simd.top2(x, 0, n)


_targets(row_top2, register_jitable(forceinline=True, error_model="numpy")(_row_top2_cpu),
         forceinline=True, error_model="numpy")


def row_sums(x, n, m2):
    """(R, E2, E3, V) of the module docstring, float64 results.

    Per element: d = min(x_i - m2, 0) clamped at the floor, e = exp(d), and
    e = 0 exactly where x_i < m2 + floor (the floor and -inf masks).  A NaN
    logit propagates into R and V.  CPU: 16 explicit lanes (``_simd``),
    float32 input summed in float32 lane partials flushed into float64 lanes
    every ``FLUSH_TILES`` tiles (relative error <= 15 * 2**-24 ~ 9e-7 worst
    case, ~1e-7 typically).  Elsewhere (CUDA) the elements in order, in
    partials of the dtype of x flushed into float64 every F = min(16,
    ceil(n / 16)) elements: a partial takes as many terms as the CPU's
    lane partials do for the same n (one for n <= 16, 16 from n = 241 on),
    so the same bound, with no float64 arithmetic per float32 element of a
    long row.
    """
    zero = like(x, 0.0)
    floor = exp_floor(x)
    lim = m2 + floor
    r = 0.0
    e2 = 0.0
    e3 = 0.0
    v = 0.0
    step = min(FLUSH_TILES, (n + G - 1) // G)
    i0 = 0
    while i0 < n:
        i1 = min(i0 + step, n)
        pr = zero
        p2 = zero
        p3 = zero
        pv = zero
        for i in range(i0, i1):
            xi = x[i]
            d = xi - m2
            d = zero if d > zero else d
            d = floor if d < floor else d
            e = vexp_normal(d)
            e = zero if xi < lim else e
            ee = e * e
            pr += e
            p2 += ee
            p3 += ee * e
            pv -= e * d
        r += np.float64(pr)
        e2 += np.float64(p2)
        e3 += np.float64(p3)
        v += np.float64(pv)
        i0 = i1
    return r - 1.0, e2 - 1.0, e3 - 1.0, v


_ROW_P = _simd.stack_array_like(4, G)        # lane partials, dtype of the row
_ROW_D = _simd.stack_array(np.float64, 4, G)  # float64 lanes
_ROW_PAD = _simd.stack_array_like(G)         # the last, partial tile


@hot
def _row_sums_cpu(x, n, m2):
    return _row_sums_ahead(x, n, m2, x, False)


@hot
def _row_sums_ahead(x, n, m2, ahead, pf):
    """``row_sums`` on the CPU: element i in lane i % G of the lane partials
    P (the dtype of x), tile after tile; every FLUSH_TILES tiles P is added
    into the float64 lanes D; D's lanes are summed by the fixed tree.  The
    last, partial tile is read from a copy padded with -inf (exact zeros).

    The loop over the lanes has a large body (the exp), so LLVM vectorizes it
    instead of unrolling it and keeps P in vector registers; it is written
    here, not in a helper, so that it is vectorized with this function's
    vector width and P stays a register (a helper would be vectorized on its
    own, before inlining, with P in memory).  The zeroing tests x itself
    against lim = m2 + floor, not the clamped d: with the same predicate LLVM
    would fold the clamp into the select and exponentiate the unclamped d
    (subnormal results).

    pf: prefetch one line of ``ahead`` (the next row, of the same length) per
    tile, so that the next row's first pass finds it in L1: the memory
    stream overlaps this row's exps (a burst of prefetches up front stalls)."""
    vector_width()
    P = _ROW_P(x)
    D = _ROW_D()
    pad = _ROW_PAD(x)
    zero = like(x, 0.0)
    floor = exp_floor(x)
    lim = m2 + floor
    for c in range(4):
        for k in range(G):
            P[c, k] = 0
            D[c, k] = 0.0
    nt = n // G
    rem = n - nt * G
    ntt = nt
    if rem > 0:
        for k in range(G):
            pad[k] = -np.inf
        tail = np.uint64(nt * G)
        for k in range(rem):
            pad[k] = x[tail + np.uint64(k)]
        ntt = nt + 1
    t = 0
    while t < ntt:
        t1 = min(t + FLUSH_TILES, ntt)
        for tile in range(t, t1):
            src = x if tile < nt else pad
            base = np.uint64(tile * G if tile < nt else 0)
            if pf and tile < nt:
                _simd.prefetch(ahead, tile * G)
            for k in range(G):
                xi = src[base + np.uint64(k)]
                d = xi - m2
                d = zero if d > zero else d
                d = floor if d < floor else d
                e = vexp_normal(d)
                e = zero if xi < lim else e
                e2 = e * e
                P[0, k] += e
                P[1, k] += e2
                P[2, k] += e2 * e
                P[3, k] -= e * d
        _simd.flush(P, D, 4)
        t = t1
    return (_simd.tree_sum(D, 0) - 1.0, _simd.tree_sum(D, 1) - 1.0,
            _simd.tree_sum(D, 2) - 1.0, _simd.tree_sum(D, 3))


_targets(row_sums, _row_sums_cpu, forceinline=True, error_model="numpy")


# ---------------------------------------------------------------------------
# short rows: a tile of G rows, one row per lane (module docstring, "Short rows")

@hot
def tile_load(x, r0, k, n, tb):
    """tb[j, l] = x[r0 + l, j] for the k <= G rows r0 .. r0 + k - 1 of the
    C 2-D array x (j < n); lanes l >= k repeat row r0 + k - 1 (computed,
    never read).  ``tile.tile_transpose``: shuffles, a copy."""
    _tile.tile_transpose(x, r0, k, n, tb)


_TILE_P = _simd.stack_array_like(4, G)
_TILE_REF = _simd.stack_array_like(2, G)


@hot
def tile_sums(tb, n, M, D):
    """The top two (M[0, l], M[1, l]) and the float64 sums D[0:4, l] = (R + 1,
    E2 + 1, E3 + 1, V) of the row in lane l of tb[:n, :G]: every operation
    is vertical (lane l only ever meets lane l), the row's elements in order.

    Top two: the update of ``_simd.top2`` (exact in any order).  Sums: the
    terms of ``row_sums``, added in the row's order into lane partials of
    the dtype of tb, flushed into the float64 lanes D every FLUSH_TILES
    elements (at most 16 float32 additions a partial, the bound of the
    row-at-a-time path).  A row whose m1 is +-inf or NaN gets meaningless
    sums (``row_stats_from`` marks it bad); a single finite logit is
    summed relative to m1, as ``row_stats`` does."""
    vector_width()
    P = _TILE_P(tb)
    Q = _TILE_REF(tb)
    zero = like(tb, 0.0)
    ninf = like(tb, -np.inf)
    floor = exp_floor(tb)
    _tile.tile_top2(tb, n, M)
    for l in range(G):
        m1 = M[0, l]
        m2 = M[1, l]
        ref = m2 if m2 > ninf else m1
        Q[0, l] = ref
        Q[1, l] = ref + floor
    for c in range(4):
        for l in range(G):
            P[c, l] = 0
            D[c, l] = 0.0
    j0 = 0
    while j0 < n:
        j1 = min(j0 + FLUSH_TILES, n)
        for j in range(j0, j1):
            for l in range(G):
                xi = tb[j, l]
                d = xi - Q[0, l]
                d = zero if d > zero else d
                d = floor if d < floor else d
                e = vexp_normal(d)
                e = zero if xi < Q[1, l] else e
                e2 = e * e
                P[0, l] += e
                P[1, l] += e2
                P[2, l] += e2 * e
                P[3, l] -= e * d
        _simd.flush(P, D, 4)
        j0 = j1


@hot
def tile_row_stats(x, n, M, D, l, ymode, y, u):
    """``row_stats`` of row x, summed in lane l of a tile (``tile_sums``)."""
    m1 = M[0, l]
    m2 = M[1, l]
    if not (m1 < np.inf) or m1 == -np.inf:
        return row_stats_from(x, n, m1, m2, 1.0, 1.0, 1.0, 0.0, ymode, y, u)
    return row_stats_from(x, n, m1, m2, D[0, l] - 1.0, D[1, l] - 1.0, D[2, l] - 1.0,
                          D[3, l], ymode, y, u)


@hot
def row_target_exp(x, m2, y):
    """exp(x_y - m2) in the dtype of x, as ``row_sums`` computes it (0 below
    the floor)."""
    zero = like(x, 0.0)
    floor = exp_floor(x)
    xy = x[y]
    d = xy - m2
    d = zero if d > zero else d
    d = floor if d < floor else d
    e = vexp_normal(d)
    return np.float64(zero if xy < m2 + floor else e)


@strict
def row_sample_index(x, n, m1, s, u):
    """y ~ Categorical(softmax(x)) by inversion: smallest y with
    sum_{i<=y} exp(x_i - m1) > u S.  u in (0, 1)."""
    target = u * s
    c = 0.0
    for i in range(n):
        c += math.exp(np.float64(x[i]) - m1)
        if c > target:
            return i
    # u S above the rounded total: the last index with nonzero probability
    for i in range(n - 1, -1, -1):
        if x[i] > -np.inf:
            return i
    return n - 1


@strict
def row_log_softmax(x, n, m1, l1pa, out):
    """out[i] = (x_i - m1) - log1p(a): the max term separated, exact at the
    max (log p_top = -log1p(a), not 0)."""
    for i in range(n):
        out[i] = (np.float64(x[i]) - m1) - l1pa


@strict
def row_softmax(x, n, m1, s, out):
    inv = 1.0 / s
    for i in range(n):
        d = np.float64(x[i]) - m1
        out[i] = math.exp(d) * inv


@hot
def row_target(tmode, yfix, labels, r, seed, grow, n):
    """(tmode, y, u) for ``row_stats`` from a driver's target mode (a
    ``TargetMode``): the class y of a fixed, labelled or uniformly drawn
    target, or the uniform u of a sampled one, the random ones drawn for
    global row ``grow`` from their own streams."""
    if tmode == TARGET_LABELS:
        return tmode, labels[r], 0.5
    if tmode == TARGET_RANDOM:
        return tmode, uniform_int(seed, grow, STREAM_LABEL, n), 0.5
    if tmode == TARGET_SAMPLED:
        return tmode, yfix, uniform(seed, grow, STREAM_SAMPLED, 0)
    return tmode, yfix, 0.5


@hot
def row_stats(x, n, ymode, y, u):
    """One pass over a row (three reductions and the exp loop): the numbers
    ``logobs`` needs, as (m1, m2, R, E2, E3, V, y_top, x_y, e_y, bad).

    ymode (a ``TargetMode``): ARGMAX, the target is the top class; SAMPLED,
    it is drawn from softmax(x) with the uniform u; any other, it is y.  A
    bad row (NaN, +inf, no finite logit) has bad = True and harmless numbers.
    """
    m1, m2 = row_top2(x, n)
    if top_bad(m1):
        return row_stats_from(x, n, m1, m2, 1.0, 1.0, 1.0, 0.0, ymode, y, u)
    # relative to m2, or to m1 when m1 is the only finite logit (every other
    # exponent then is -inf and clamps to the floor; NaN still propagates)
    ref = m2 if m2 > -np.inf else m1
    r, e2, e3, v = row_sums(x, n, ref)
    return row_stats_from(x, n, m1, m2, r, e2, e3, v, ymode, y, u)


@hot
def row_stats_ahead(x, n, ymode, y, u, ahead):
    """``row_stats`` (CPU only) that prefetches the row ``ahead`` (the next
    one, of the same length) while its exp pass runs."""
    m1, m2 = row_top2(x, n)
    if top_bad(m1):
        return row_stats_from(x, n, m1, m2, 1.0, 1.0, 1.0, 0.0, ymode, y, u)
    ref = m2 if m2 > -np.inf else m1
    r, e2, e3, v = _row_sums_ahead(x, n, ref, ahead, True)
    return row_stats_from(x, n, m1, m2, r, e2, e3, v, ymode, y, u)


@hot
def row_stats_from(x, n, m1, m2, r, e2, e3, v, ymode, y, u):
    """The rest of ``row_stats`` once the reductions are known (a driver that
    splits a row over several threads merges them first): the bad-row test
    and the target."""
    ninf = -np.inf
    if row_bad(m1, r, v):
        return 0.0, ninf, 1.0, 1.0, 1.0, 0.0, True, 0.0, 0.0, True
    m1f = np.float64(m1)
    m2f = np.float64(m2)
    y_top = True
    xy = m1f
    ey = 0.0
    if ymode != TARGET_ARGMAX:
        if ymode == TARGET_SAMPLED:
            s = 1.0 + rest_mass(m1f, m2f, r)
            y = row_sample_index(x, n, m1f, s, u)
        xy = np.float64(x[y])
        y_top = xy == m1f
        if not y_top and m2f > ninf:
            ey = row_target_exp(x, like(x, m2f), y)
    return m1f, m2f, r, e2, e3, v, y_top, xy, ey, False


NSTATS = 10


@hot
def row_stats_into(x, n, ymode, y, u, st, i):
    """``row_stats`` of one row into column i of the block scratch st."""
    m1, m2, r, e2, e3, v, y_top, xy, ey, bad = row_stats(x, n, ymode, y, u)
    return store_stats(st, i, m1, m2, r, e2, e3, v, y_top, xy, ey, bad)


@hot
def row_stats_into_ahead(x, n, ymode, y, u, st, i, ahead):
    """``row_stats_into`` with ``row_stats_ahead`` (CPU only)."""
    m1, m2, r, e2, e3, v, y_top, xy, ey, bad = row_stats_ahead(x, n, ymode, y, u, ahead)
    return store_stats(st, i, m1, m2, r, e2, e3, v, y_top, xy, ey, bad)


@hot
def store_stats(st, i, m1, m2, r, e2, e3, v, y_top, xy, ey, bad):
    """The layout of a block's row statistics (NSTATS rows, one column per
    row), read back by ``block_observables``.  Returns bad."""
    st[0, i] = m1
    st[1, i] = m2
    st[2, i] = r
    st[3, i] = e2
    st[4, i] = e3
    st[5, i] = v
    st[6, i] = 1.0 if y_top else 0.0
    st[7, i] = xy
    st[8, i] = ey
    st[9, i] = 1.0 if bad else 0.0
    return bad


# ---------------------------------------------------------------------------
# The per-row state, its merge, the bad-row rule and the rest mass: one
# definition for every target (the CUDA threads of a row merge their partial
# states with ``state_merge``).

#: the rows of a block's row statistics (``store_stats``'s layout), by name
(ST_M1, ST_M2, ST_R, ST_E2, ST_E3, ST_V, ST_YTOP, ST_XY, ST_EY, ST_BAD) = range(NSTATS)


@strict
def top_bad(m1):
    """A row whose largest value is +inf, NaN-only or -inf (no finite logit)
    is bad, whatever its sums."""
    return not (m1 < np.inf) or m1 == -np.inf


@strict
def row_bad(m1, r, v):
    """The bad-row rule: ``top_bad(m1)``, or a NaN logit (which reaches R and
    V through ``row_sums``)."""
    return top_bad(m1) or r != r or v != v


@strict
def rest_mass(m1, m2, r):
    """a = exp(m2 - m1) R = sum over the non-top elements of exp(x_i - m1)
    (0 for a single finite logit, m2 = -inf); S = 1 + a."""
    return math.exp(np.float64(m2) - np.float64(m1)) * r if m2 > -np.inf else 0.0


@hot
def row_state(x, n):
    """The partial state (m1, m2, R, E2, E3, V) of ``x[:n]`` (a row or any
    subset of one, e.g. a thread's strided share): its top two and its sums
    relative to its own m2 (or m1 when m2 is -inf: R = E2 = E3 = V = 0).
    Merged over subsets by ``state_merge``."""
    m1, m2 = row_top2(x, n)
    if top_bad(m1):
        # +inf stays in m1; a part of -inf and NaN only (m1 = -inf) keeps its
        # NaN in R and V, the identity otherwise
        z = 0.0
        if not (m1 < np.inf):
            return m1, m2, z, z, z, z
        for i in range(n):
            z = np.nan if x[i] != x[i] else z
        return m1, m2, z, z, z, z
    ref = m2 if m2 > -np.inf else m1
    r, e2, e3, v = row_sums(x, n, ref)
    return m1, m2, r, e2, e3, v


@strict
def state_merge(a1, a2, ar, ae2, ae3, av, b1, b2, br, be2, be3, bv):
    """The state of the union of two disjoint parts of a row from theirs
    (associative; commutative up to rounding).

    A state is (m1, m2, R, E2, E3, V): the top two with multiplicity and, over
    every element but the top one, R = sum e_i, E2 = sum e_i^2,
    E3 = sum e_i^3, V = sum e_i (m2 - x_i) with e_i = exp(x_i - m2).  The
    union's top two are the top two of {a1, a2, b1, b2}; the part holding the
    union's top keeps its non-top elements, rescaled by s = exp(m2_part - m2)
    (E2 by s^2, E3 by s^3, V by s (V_part + (m2 - m2_part) R_part)); the other
    part's top joins them as one more element.  A part with no finite logit
    (m1 = -inf, sums 0) is the identity.  NaN in either part's R or V stays
    (``row_bad``); +inf stays in m1.
    """
    ninf = -np.inf
    if b1 > a1:     # the part holding the union's top first (ties: a)
        a1, a2, ar, ae2, ae3, av, b1, b2, br, be2, be3, bv = (
            b1, b2, br, be2, be3, bv, a1, a2, ar, ae2, ae3, av)
    m1 = a1
    m2 = b1 if b1 > a2 else a2
    nan = ar != ar or av != av or br != br or bv != bv
    if not (m2 > ninf) or not (m1 < np.inf):
        # at most one finite logit in the union, or a +inf top (bad)
        z = np.nan if nan else 0.0
        return m1, m2, z, z, z, z
    sa = math.exp(a2 - m2) if a2 > ninf else 0.0
    sb = math.exp(b2 - m2) if b2 > ninf else 0.0
    eb = math.exp(b1 - m2) if b1 > ninf else 0.0
    # a part whose factor is 0 adds nothing: its distance to m2, which can
    # overflow (float64: 1e308 - -1e308 = inf), must not turn 0 * inf into NaN
    da = m2 - a2 if sa > 0.0 else 0.0
    db = m2 - b2 if sb > 0.0 else 0.0
    dt = m2 - b1 if eb > 0.0 else 0.0
    r = sa * ar + (sb * br + eb)
    e2 = sa * sa * ae2 + (sb * sb * be2 + eb * eb)
    e3 = sa * sa * sa * ae3 + (sb * sb * sb * be3 + eb * eb * eb)
    v = sa * (av + da * ar) + (sb * (bv + db * br) + eb * dt)
    if nan:
        r = np.nan
        v = np.nan
    return m1, m2, r, e2, e3, v
