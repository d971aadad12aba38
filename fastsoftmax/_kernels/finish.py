r"""The per-row wrap-up: the observables' logs and values from a row's numbers.

The numbers (m1, m2, R, E2, E3, V, whether the target is on top, x_y, e_y)
come from the row passes of ``row``, whose module docstring gives the
log-domain method and every log formula; ``logobs`` applies them.  Every
function here is registered with ``numba.extending.register_jitable`` and
compiled strictly (no fast math: no FMA contraction, no reassociation), for
the CPU and CUDA targets alike; the CPU kernels batch it across a block's
rows (``block_observables``, three loops that vectorize).

Values
------
The values come from the same quantities, not as exp(log): with inv = 1/S,
max_prob = inv, one_minus_max_prob = a inv, entropy = log1p(a) + t inv
(g R + V), jac_diag_max = q inv, jac_offdiag_max = t inv^2, jac_fro = t inv
sqrt(G), ce_loss = log1p(a) (y on top; log1p(a) + m1 - x_y otherwise), and
so on (``obs_values``): a few roundings each, within a few ulps, where
exp(log) errs by |log| ulps (5e-14 at a log of -700).  Where t = exp(-g) or
a value falls below the normal range (g beyond ~708) a direct product would
carry a subnormal's rounding, and the row's values are exp(log) instead
(``obs_row``).  The log10 is always the log's; quantiles, read from the
log10 sketch, are those of the values (a monotone map).
"""
import math

import numpy as np
from numba.extending import register_jitable

from .. import registries as _reg
from .simd import vector_width
from .vmath import vexp, vlog

NOBS = len(_reg.OBSERVABLES)
INV_LN10 = 1.0 / math.log(10.0)
LOG_SQRT2 = 0.5 * math.log(2.0)
SQRT2 = math.sqrt(2.0)
# the smallest normal float64: a value computed directly from the row's
# quantities is used where it and t = exp(-g) are at least this
TINY = float(np.finfo(np.float64).tiny)

# compiled without fastmath whatever the caller's flags (``row``: "strict")
strict = register_jitable(fastmath=False, forceinline=True, error_model="numpy")


@strict
def vlog1p(a):
    """log1p(a), a > -1, from the vectorized log: log(u) - ((u - 1) - a) / u
    with u = 1 + a (the correction restores the bits of a lost in u; equals a
    exactly when u rounds to 1).  Strict: reassociation would cancel it."""
    u = 1.0 + a
    return vlog(u) - ((u - 1.0) - a) / u


@strict
def _base(m1, m2, r, e2, e3, v):
    """(single, g, t, a, S, R, E2, E3, V), a single finite logit (m2 = -inf)
    taken as g = 0, R = E2 = E3 = 1, V = 0 (its observables are set apart)."""
    single = not (m2 > -np.inf)
    g = 0.0 if single else m1 - m2
    r = 1.0 if single else r
    e2 = 1.0 if single else e2
    e3 = 1.0 if single else e3
    v = 0.0 if single else v
    t = vexp(-g)
    a = t * r
    return single, g, t, a, 1.0 + a, r, e2, e3, v


@strict
def _args(g, t, a, s, r, e2, e3, v, m1, xy, ey, l1pa):
    """The arguments both an observable's log and its value are made of:
    (L(a), the entropy's R L(a) + (g R + V)/S, jac_fro's G, E2 + R^2,
    log1p(a) + m1 - x_y, 1 + t^2 (E2 - e_y^2) + c^2, c = 1 + t (R - e_y),
    t (R - e_y))."""
    # L(a) = log1p(a)/a, L(0) = 1 (a underflowed)
    la = l1pa / a if a > 0.0 else 1.0
    ent = r * la + (g * r + v) / s
    dd = e2 - 2.0 * t * e3 / s
    dd = dd if dd > 0.0 else 0.0
    te = t * e2 / s
    fro = (r * r + 2.0 * e2) / (s * s) + dd + te * te
    gn2_t = e2 + r * r
    # target y elsewhere
    rest_y = r - ey
    rest_y = rest_y if rest_y > 0.0 else 0.0
    ey2 = e2 - ey * ey
    ey2 = ey2 if ey2 > 0.0 else 0.0
    trest = t * rest_y
    c = 1.0 + trest
    ce_o = l1pa + (m1 - xy)
    gn2_o = 1.0 + t * t * ey2 + c * c
    return la, ent, fro, gn2_t, ce_o, gn2_o, c, trest


@strict
def logobs(m1, m2, r, e2, e3, v, y_top, xy, ey):
    """Natural logs of the observables (module docstring), as a tuple in
    OBS_NAMES order.  Branch-free (flat selects, vectorized exp/log), so a
    loop over the rows of a block vectorizes.

    m1, m2, xy are float64; ey = exp(x_y - m2) (unused when y_top).
    m2 == -inf means a single finite logit: p = e_top exactly.
    """
    ninf = -np.inf
    single, g, t, a, s, r, e2, e3, v = _base(m1, m2, r, e2, e3, v)
    l1pa = vlog1p(a)
    la, ent, fro, gn2_t, ce_o, gn2_o, c, trest = _args(g, t, a, s, r, e2, e3, v, m1, xy, ey,
                                                       l1pa)
    logr = vlog(r)
    logq = -g + logr - l1pa
    lam_maxp = -l1pa
    lam_q = logq
    lam_ent = -g + vlog(ent)
    lam_jd = logq - l1pa
    lam_jo = -g - 2.0 * l1pa
    lam_fro = -g - l1pa + 0.5 * vlog(fro)
    # target y on top
    ce_t = -g + logr + vlog(la)
    gn_t = -g - l1pa + 0.5 * vlog(gn2_t)
    # target y elsewhere
    lam_ce = ce_t if y_top else vlog(ce_o)
    lam_gt = logq if y_top else vlog1p(trest) - l1pa
    lam_gn = gn_t if y_top else 0.5 * vlog(gn2_o) - l1pa
    if single:
        lam_maxp = 0.0
        lam_q = ninf
        lam_ent = ninf
        lam_jd = ninf
        lam_jo = ninf
        lam_fro = ninf
        lam_ce = ninf if y_top else np.inf
        lam_gt = ninf if y_top else 0.0
        lam_gn = ninf if y_top else LOG_SQRT2
    return (lam_maxp, lam_q, lam_ent, lam_jd, lam_jo, lam_fro, lam_ce, lam_gn, lam_gt)


@strict
def obs_values(m1, m2, r, e2, e3, v, y_top, xy, ey, l1pa):
    """(values, direct): the observables' values computed from the quantities
    at hand, in OBS_NAMES order, and whether they are to be used; l1pa =
    log1p(a) (minus ``logobs``' first log).

    With inv = 1/S ("Values" in the module docstring): inv, q = a inv,
    log1p(a) + t inv (g R + V), q inv, t inv^2, t inv sqrt(G), log1p(a),
    t inv sqrt(E2 + R^2), q (y on top), and for another target
    log1p(a) + m1 - x_y, sqrt(1 + t^2 (E2 - e_y^2) + c^2) inv, c inv.  A few
    roundings each, so within a few ulps of the exact value, where exp(log)
    errs by |log| ulps.  ``direct`` is False where t = exp(-g) or a value is
    below the normal range (a subnormal t carries its rounding into every
    product): those values come from their logs (``obs_value``).  A single
    finite logit gives exact constants (direct).
    """
    single, g, t, a, s, r, e2, e3, v = _base(m1, m2, r, e2, e3, v)
    # one division: every other quotient is a product with inv
    inv = 1.0 / s
    q = a * inv
    ti = t * inv
    v_maxp = inv
    v_q = q
    # t (R L(a) + (g R + V)/S) with t R L(a) = log1p(a): two positive terms
    v_ent = l1pa + ti * (g * r + v)
    v_jd = q * inv
    v_jo = ti * inv
    dd = e2 - 2.0 * ti * e3
    dd = dd if dd > 0.0 else 0.0
    te = ti * e2
    fro = (r * r + 2.0 * e2) * (inv * inv) + dd + te * te
    v_fro = ti * math.sqrt(fro)
    # target y elsewhere
    rest_y = r - ey
    rest_y = rest_y if rest_y > 0.0 else 0.0
    ey2 = e2 - ey * ey
    ey2 = ey2 if ey2 > 0.0 else 0.0
    c = 1.0 + t * rest_y
    v_ce = l1pa if y_top else l1pa + (m1 - xy)
    v_gn = (ti * math.sqrt(e2 + r * r) if y_top
            else math.sqrt(1.0 + t * t * ey2 + c * c) * inv)
    v_gt = q if y_top else c * inv
    lo = t if t < v_q else v_q
    lo = lo if lo < v_ent else v_ent
    lo = lo if lo < v_jd else v_jd
    lo = lo if lo < v_jo else v_jo
    lo = lo if lo < v_fro else v_fro
    lo = lo if lo < v_ce else v_ce
    lo = lo if lo < v_gn else v_gn
    lo = lo if lo < v_gt else v_gt
    direct = lo >= TINY
    if single:
        v_maxp = 1.0
        v_q = 0.0
        v_ent = 0.0
        v_jd = 0.0
        v_jo = 0.0
        v_fro = 0.0
        v_ce = 0.0 if y_top else np.inf
        v_gt = 0.0 if y_top else 1.0
        v_gn = 0.0 if y_top else SQRT2
        direct = True
    return (v_maxp, v_q, v_ent, v_jd, v_jo, v_fro, v_ce, v_gn, v_gt), direct


@strict
def obs_row(m1, m2, r, e2, e3, v, y_top, xy, ey):
    """(values, logs) of one row's observables: ``obs_values`` where they
    are direct, else every value from its log (``logobs``)."""
    lam = logobs(m1, m2, r, e2, e3, v, y_top, xy, ey)
    val, direct = obs_values(m1, m2, r, e2, e3, v, y_top, xy, ey, -lam[0])
    if direct:
        return val, lam
    return (obs_value(lam[0]), obs_value(lam[1]), obs_value(lam[2]), obs_value(lam[3]),
            obs_value(lam[4]), obs_value(lam[5]), obs_value(lam[6]), obs_value(lam[7]),
            obs_value(lam[8])), lam


@strict
def obs_value(lam):
    """An observable's value from its natural log (the one place it's done)."""
    return vexp(lam)


@strict
def obs_log10(lam):
    return lam * INV_LN10


@strict
def block_observables(st, nr, val):
    """The observables of the nr rows of a block (columns of st): values
    into val[k, i], log10 into val[NOBS + k, i] (NaN for bad rows), the
    per-row wrap-up batched across rows: ``obs_row``'s numbers.

    Three loops that vectorize: the logs (``logobs``), the values
    (``obs_values``, from the quantities at hand and log1p(a) = -log of
    max_prob; a flag in val[2 NOBS, i] where they are not direct), the logs
    into log10s; each stores at most ten rows (more stores than that in one
    loop and LLVM's vectorizer gives up on its aliasing checks).  When every
    target is on top (argmax), the loops are compiled with y_top = True and
    skip the other target's formulas (the same numbers).  Rows flagged (a
    gap beyond ~708, values below the normal range) then take every value
    from its log, one at a time."""
    vector_width()
    ntop = 0
    for i in range(nr):
        ntop += 1 if st[6, i] != 0.0 else 0
    if ntop == nr:
        _block_logs(st, nr, val, True)
        _block_values(st, nr, val, True)
    else:
        _block_logs(st, nr, val, False)
        _block_values(st, nr, val, False)
    nlog = 0.0
    for i in range(nr):
        nlog += val[2 * NOBS, i]
    if nlog != 0.0:
        for i in range(nr):
            if val[2 * NOBS, i] != 0.0:
                for k in range(NOBS):
                    val[k, i] = obs_value(val[NOBS + k, i])
    for k in range(NOBS):
        for i in range(nr):
            val[NOBS + k, i] = val[NOBS + k, i] * INV_LN10


@strict
def _block_logs(st, nr, val, all_top):
    """Natural logs into val[NOBS + k, i]."""
    vector_width()
    for i in range(nr):
        y_top = True if all_top else st[6, i] != 0.0
        o = logobs(st[0, i], st[1, i], st[2, i], st[3, i], st[4, i], st[5, i],
                   y_top, st[7, i], st[8, i])
        bad = st[9, i] != 0.0
        val[NOBS, i] = np.nan if bad else o[0]
        val[NOBS + 1, i] = np.nan if bad else o[1]
        val[NOBS + 2, i] = np.nan if bad else o[2]
        val[NOBS + 3, i] = np.nan if bad else o[3]
        val[NOBS + 4, i] = np.nan if bad else o[4]
        val[NOBS + 5, i] = np.nan if bad else o[5]
        val[NOBS + 6, i] = np.nan if bad else o[6]
        val[NOBS + 7, i] = np.nan if bad else o[7]
        val[NOBS + 8, i] = np.nan if bad else o[8]


@strict
def _block_values(st, nr, val, all_top):
    """Values into val[k, i] and the flag of rows not direct into
    val[2 NOBS, i] (0 for bad rows: their NaN logs give NaN values)."""
    vector_width()
    for i in range(nr):
        y_top = True if all_top else st[6, i] != 0.0
        o, direct = obs_values(st[0, i], st[1, i], st[2, i], st[3, i], st[4, i], st[5, i],
                               y_top, st[7, i], st[8, i], -val[NOBS, i])
        bad = st[9, i] != 0.0
        val[0, i] = np.nan if bad else o[0]
        val[1, i] = np.nan if bad else o[1]
        val[2, i] = np.nan if bad else o[2]
        val[3, i] = np.nan if bad else o[3]
        val[4, i] = np.nan if bad else o[4]
        val[5, i] = np.nan if bad else o[5]
        val[6, i] = np.nan if bad else o[6]
        val[7, i] = np.nan if bad else o[7]
        val[8, i] = np.nan if bad else o[8]
        val[2 * NOBS, i] = 0.0 if direct else 1.0
