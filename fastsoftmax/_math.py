r"""Per-row softmax math, written once for every target.

Every function here is a plain function registered with
``numba.extending.register_jitable``: the CPU drivers (``_cpu``) call it from
``numba.njit`` code and the CUDA drivers (``_cuda``) from device code, so both
targets apply the same formulas to the same numbers.

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
"""
import math

import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from ._vmath import fmax, vexp

OBS_NAMES = (
    "max_prob",
    "one_minus_max_prob",
    "entropy",
    "jac_diag_max",
    "jac_offdiag_max",
    "jac_fro",
    "ce_loss",
    "ce_grad_norm",
    "ce_grad_target",
)
NOBS = len(OBS_NAMES)
(MAX_PROB, ONE_MINUS_MAX_PROB, ENTROPY, JAC_DIAG_MAX, JAC_OFFDIAG_MAX, JAC_FRO,
 CE_LOSS, CE_GRAD_NORM, CE_GRAD_TARGET) = range(NOBS)

INV_LN10 = 1.0 / math.log(10.0)
# exponent floor: below the float64 underflow limit, so exp() of it is 0 in
# both dtypes, yet finite so that e * d stays 0 * finite for -inf masks.
EXP_FLOOR = -1000.0

# The scalar per-row wrap-up is compiled without fastmath whatever the caller's
# flags: 'reassoc' would, e.g., turn R * (log1p(a) / a) into (R * log1p(a)) / a,
# which loses every digit when a is subnormal.  Only the vectorized loops
# (row_top2, row_sums, the block reductions) run under FASTMATH.
strict = register_jitable(fastmath=False)

# row status codes
ROW_OK = 0
ROW_BAD = 1      # NaN, +inf, or no finite logit


def like(x, c):
    """c converted to the scalar type of x (a scalar or an array)."""
    return np.asarray(x).dtype.type(c)


@overload(like, inline="always")
def _like_impl(x, c):
    ty = x.dtype if isinstance(x, types.Array) else x

    def impl(x, c):
        return ty(c)

    return impl


@register_jitable
def row_top2(x, n):
    """(m1, m2): the two largest values of x[:n], with multiplicity.

    Three branch-free reductions, each of which vectorizes on its own
    (fused into one loop they do not): the max (maxNum), the max below it,
    and the number of ties at the max.  maxNum ignores NaN operands; NaN is
    caught by ``row_sums``.
    """
    ninf = like(x, -np.inf)
    m1 = ninf
    for i in range(n):
        m1 = fmax(m1, x[i])
    m2 = ninf
    for i in range(n):
        v = x[i]
        m2 = fmax(m2, v if v < m1 else ninf)
    one = like(x, 1.0)
    zero = like(x, 0.0)
    ties = zero
    for i in range(n):
        ties += one if x[i] == m1 else zero
    if ties > one:
        m2 = m1
    return m1, m2


@register_jitable
def row_sums(x, n, m2):
    """(R, E2, E3, V) of the module docstring, float64 sums.

    The exp loop is branch-free (two flat selects) so that it vectorizes; a
    NaN logit propagates into V and R.
    """
    zero = like(x, 0.0)
    floor = like(x, EXP_FLOOR)
    r = 0.0
    e2 = 0.0
    e3 = 0.0
    v = 0.0
    for i in range(n):
        d = x[i] - m2
        d = zero if d > zero else d
        d = floor if d < floor else d
        e = np.float64(vexp(d))
        r += e
        e2 += e * e
        e3 += e * e * e
        v -= e * np.float64(d)
    return r - 1.0, e2 - 1.0, e3 - 1.0, v


@register_jitable
def row_status(m1, r, v):
    if not (m1 < np.inf) or m1 == -np.inf or r != r or v != v:
        return ROW_BAD
    return ROW_OK


@strict
def log1p_ratio(a):
    """L(a) = log1p(a)/a, with L(0) = 1 (a underflowed)."""
    return math.log1p(a) / a if a > 0.0 else 1.0


@strict
def row_logobs(m1, m2, r, e2, e3, v, y_top, xy, ey, out):
    """Natural logs of the observables (module docstring) into out[:NOBS].

    m1, m2, xy are float64; ey = exp(x_y - m2) (unused when y_top).
    """
    ninf = -np.inf
    if m2 == ninf:
        # a single finite logit: p = e_top exactly
        out[MAX_PROB] = 0.0
        out[ONE_MINUS_MAX_PROB] = ninf
        out[ENTROPY] = ninf
        out[JAC_DIAG_MAX] = ninf
        out[JAC_OFFDIAG_MAX] = ninf
        out[JAC_FRO] = ninf
        if y_top:
            out[CE_LOSS] = ninf
            out[CE_GRAD_NORM] = ninf
            out[CE_GRAD_TARGET] = ninf
        else:
            out[CE_LOSS] = np.inf
            out[CE_GRAD_NORM] = 0.5 * math.log(2.0)
            out[CE_GRAD_TARGET] = 0.0
        return
    g = m1 - m2
    t = math.exp(-g)
    a = t * r
    s = 1.0 + a
    l1pa = math.log1p(a)
    logr = math.log(r)
    logq = -g + logr - l1pa
    out[MAX_PROB] = -l1pa
    out[ONE_MINUS_MAX_PROB] = logq
    out[ENTROPY] = -g + math.log(r * log1p_ratio(a) + (g * r + v) / s)
    out[JAC_DIAG_MAX] = logq - l1pa
    out[JAC_OFFDIAG_MAX] = -g - 2.0 * l1pa
    gg = (r * r + 2.0 * e2) / (s * s) + max(e2 - 2.0 * t * e3 / s, 0.0) \
        + (t * e2 / s) * (t * e2 / s)
    out[JAC_FRO] = -g - l1pa + 0.5 * math.log(gg)
    if y_top:
        out[CE_LOSS] = -g + logr + math.log(log1p_ratio(a))
        out[CE_GRAD_TARGET] = logq
        out[CE_GRAD_NORM] = -g - l1pa + 0.5 * math.log(e2 + r * r)
    else:
        rest_y = max(r - ey, 0.0)
        out[CE_LOSS] = math.log(l1pa + (m1 - xy))
        out[CE_GRAD_TARGET] = math.log1p(t * rest_y) - l1pa
        c = 1.0 + t * rest_y
        out[CE_GRAD_NORM] = 0.5 * math.log(
            1.0 + t * t * max(e2 - ey * ey, 0.0) + c * c) - l1pa


@register_jitable
def row_target_exp(x, m2, y):
    """exp(x_y - m2) in the dtype of x, as ``row_sums`` computes it."""
    d = x[y] - m2
    d = like(x, 0.0) if d > like(x, 0.0) else d
    return np.float64(vexp(d))


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


@strict
def obs_value(lam):
    """An observable's value from its natural log (the one place it's done)."""
    return math.exp(lam)


@strict
def obs_log10(lam):
    return lam * INV_LN10


@register_jitable
def row_observe(x, n, ymode, y, u, out):
    """Observables of one row: natural logs into out[:NOBS]; returns the
    row status.

    ymode 0: target = argmax; 1: target = y; 2: target sampled from
    softmax(x) with the uniform u.  A bad row (NaN, +inf, no finite logit)
    gets NaN everywhere and ROW_BAD.
    """
    m1, m2 = row_top2(x, n)
    ninf = -np.inf
    if not (m1 < np.inf) or m1 == ninf:
        out[:NOBS] = np.nan
        return ROW_BAD
    # relative to m2, or to m1 when m1 is the only finite logit (every other
    # exponent then is -inf and clamps to the floor; NaN still propagates)
    ref = m2 if m2 > ninf else m1
    r, e2, e3, v = row_sums(x, n, ref)
    if r != r or v != v:
        out[:NOBS] = np.nan
        return ROW_BAD
    m1f = np.float64(m1)
    m2f = np.float64(m2)
    y_top = True
    xy = m1f
    ey = 0.0
    if ymode != 0:
        if ymode == 2:
            s = 1.0 + math.exp(m2f - m1f) * r if m2 > ninf else 1.0
            y = row_sample_index(x, n, m1f, s, u)
        xy = np.float64(x[y])
        y_top = xy == m1f
        if not y_top and m2 > ninf:
            ey = row_target_exp(x, m2, y)
    row_logobs(m1f, m2f, r, e2, e3, v, y_top, xy, ey, out)
    return ROW_OK
