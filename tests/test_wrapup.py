"""The per-row wrap-up near and below float64's normal range, against mpmath.

Values are computed from the quantities at hand (1/S, a/S, t/S^2, ...)
where that is exact to a few ulps, and from their logs where t = exp(-g) or
a value leaves the normal range (gaps beyond ~708, results subnormal or
zero).  Rows built to sit on both sides of that switch (gaps 690 ... 1e4,
ties, S up to 3e3 on the one-pass path of long rows, targets on top, second
and last) go through ``fs.observables`` and ``fs.summarize`` and are
compared with the reference of ``tests/reference.py`` at 30 digits (18
above the 1e-12 asserted); the block wrap-up (``block_observables``,
what summarize reduces) gives the bits of the per-row one (``obs_row``),
and both match an mpmath evaluation of the formulas from row statistics no
small row reaches (R up to 1e12).
"""
import math

import mpmath
import numpy as np
import pytest
from numba import njit

import _children
import fastsoftmax as fs
from reference import log10_mp, observables_mp_targets
from fastsoftmax._kernels.row import INV_LN10, NOBS, NSTATS, block_observables, obs_row
from fastsoftmax._kernels.stream import STREAM_CHUNK as CHUNK, STREAM_MIN_N

TINY = float(np.finfo(np.float64).tiny)
SUB = 2.0 ** -1074              # the spacing of subnormal float64s
GAPS = [0.0, 1e-3, 0.5, 20.0, 300.0, 690.0, 700.0, 705.0, 707.0, 708.0, 708.3, 708.5,
        709.0, 711.0, 720.0, 740.0, 744.0, 745.5, 746.0, 750.0, 800.0, 1500.0, 1e4]
# relative error of a normal value: the documented 1e-12 for float64 input,
# and the direct forms' few ulps where the row's sums are exact (n <= 3)
RTOL = 1e-12
RTOL_DIRECT = 2e-15


def gap_rows():
    """(name, row) pairs: top 0, second -g, the rest below it."""
    rng = np.random.default_rng(5)
    out = []
    for g in GAPS:
        for n in (2, 3, 64):
            x = np.empty(n)
            x[0] = 0.0
            x[1] = -g
            x[2:] = -g - rng.uniform(0.0, 30.0, n - 2)
            out.append((f"gap {g} n={n}", x))
        x = np.full(64, -g)                       # 63 ties at m2: R = 63
        x[0] = 0.0
        out.append((f"gap {g} ties", x))
    return out


#: long enough for the one-pass path (n >= STREAM_MIN_N = 4096: several
#: chunks of 1,024 merged) and for S in the thousands, where 1/S, p_top and
#: 1 - p_top are far from the small rows' values
BIG_N = 5_000
#: the reference's digits: 18 beyond the 1e-12 asserted
DPS = 30


def big_rows():
    """S huge: thousands of terms near the top."""
    assert BIG_N >= STREAM_MIN_N and BIG_N > 4 * CHUNK
    x = np.zeros(BIG_N)
    x[0] = 0.5
    y = np.zeros(BIG_N)                           # all tied: p = 1/n
    z = np.random.default_rng(2).normal(size=BIG_N) * 1e-3
    return [("S=3e3", x), ("all tied", y), ("near ties", z)]


def _check_value(got, ref, what, rtol):
    r = float(ref)
    if math.isinf(r) or r == 0.0 and got == 0.0:
        assert got == r, what
    elif r >= TINY:
        assert abs(got - r) <= rtol * r, (what, got, r, abs(got - r) / r)
    else:
        # below the normal range: within the spacing of subnormals
        assert abs(got - r) <= RTOL * r + SUB, (what, got, r)


def _check_log10(got, ref, what):
    # relative, with an absolute floor of RTOL/ln(10) (the conditioning of
    # log10 near a value of 1), as every reference test
    if math.isinf(ref):
        assert got == ref, what
    else:
        assert abs(got - ref) <= RTOL * max(abs(ref), 1 / math.log(10)), (what, got, ref)


@pytest.mark.parametrize("rows", [gap_rows(), big_rows()], ids=["gaps", "S huge"])
def test_observables_match_mpmath_near_and_below_the_normal_range(rows):
    for name, x in rows:
        n = x.size
        top = int(np.argmax(x))
        ys = [None, 1, n - 1] if n > 2 else [None, 1]
        refs = observables_mp_targets([float(v) for v in x], ys, DPS)
        m1, m2 = np.sort(x)[-2:][::-1]
        normal = math.exp(m2 - m1) >= TINY      # t; and, per target, every value
        for y in ys:
            got = fs.observables(x[None, :], target="argmax" if y is None else y)
            for k, ref in refs[y].items():
                what = (name, y, k)
                # direct forms: a few ulps where the row's sums are exact
                direct = (n <= 3 and y in (None, top) and normal
                          and min(float(v) for v in refs[y].values()) >= TINY)
                _check_value(float(got[k][0]), ref, what, RTOL_DIRECT if direct else RTOL)
                _check_log10(float(got["log10_" + k][0]), log10_mp(ref), what)


def test_summaries_take_the_per_row_numbers():
    """summarize's block wrap-up gives the bits of the per-row observables:
    min, max and the threshold counts of rows on both sides of the switch."""
    rows = [x for _, x in gap_rows() if x.size == 64]
    x = np.stack(rows)
    thr = (1e-300, 1e-310, 1e-320)
    s = fs.summarize(x, thresholds=thr)
    lab = np.arange(len(x)) % 3
    s_lab = fs.summarize(x, target=lab, thresholds=thr)
    for summ, target in ((s, "argmax"), (s_lab, lab)):
        obs = fs.observables(x, target=target)
        for k in fs.OBS_NAMES:
            v = obs[k]
            assert summ[k].min == v.min() and summ[k].max == v.max(), k
            assert summ[k].log10_min == obs["log10_" + k].min(), k
            for t in thr:
                assert summ[k].fraction_below(t) == np.count_nonzero(v < t) / v.size, (k, t)


# --------------------------------------------------------------------------
# the wrap-up alone, from row statistics

def _build(key):
    """The wrap-ups as the kernels compile them, cached: ``key``, the package
    kernels' source key, is in their closure, so numba's cache index changes
    with the sources they inline."""
    @njit(cache=True)
    def block(st, nr):
        key  # noqa: B018  (part of the cache key)
        val = np.empty((2 * NOBS + 1, nr))
        block_observables(st, nr, val)
        return val

    @njit(cache=True)
    def one(st, i):
        key  # noqa: B018
        val, lam = obs_row(st[0, i], st[1, i], st[2, i], st[3, i], st[4, i], st[5, i],
                           st[6, i] != 0.0, st[7, i], st[8, i])
        out = np.empty(2 * NOBS)
        for k in range(NOBS):
            out[k] = val[k]
            out[NOBS + k] = lam[k] * INV_LN10
        return out

    return block, one


_block, _one = _build(_children.source_key())


def _stats():
    """Row statistics (columns): gaps on both sides of the switch, R from 1
    to 1e12 (S up to 1e12), consistent E2, E3, V (k equal terms e below m2's
    term: R = 1 + k e, E2 = 1 + k e^2, ...), targets on top or at m2."""
    cols = []
    for g in (0.0, 0.3, 30.0, 700.0, 707.9, 708.5, 720.0, 745.0, 760.0):
        for k, d in ((0, 0.0), (5, 2.0), (1e6, 1.0), (1e12, 0.1)):
            e = math.exp(-d)
            r, e2, e3, v = 1 + k * e, 1 + k * e * e, 1 + k * e ** 3, k * e * d
            for ytop in (1.0, 0.0):
                # a target at m2 (x_y = m2, e_y = 1) when not on top
                cols.append([0.0, -g, r, e2, e3, v, ytop, -g if ytop == 0.0 else 0.0,
                             1.0 if ytop == 0.0 else 0.0, 0.0])
    return np.array(cols).T.copy()


def _mp_values(c):
    """The observables' values by the formulas of ``_kernels/row.py``'s
    docstring, in DPS-digit arithmetic from the float64 statistics c."""
    with mpmath.workdps(DPS):
        m1, m2, r, e2, e3, v, ytop, xy, ey = (mpmath.mpf(float(z)) for z in c[:9])
        g = m1 - m2
        t = mpmath.exp(-g)
        a = t * r
        s = 1 + a
        q = a / s
        la = mpmath.log1p(a) / a if a > 0 else mpmath.mpf(1)
        ent = t * (r * la + (g * r + v) / s)
        gg = (r * r + 2 * e2) / s ** 2 + (e2 - 2 * t * e3 / s) + t * t * e2 * e2 / s ** 2
        out = [1 / s, q, ent, q / s, t / s ** 2, t / s * mpmath.sqrt(gg)]
        if ytop:
            out += [mpmath.log1p(a), t / s * mpmath.sqrt(e2 + r * r), q]
        else:
            c1 = 1 + t * (r - ey)
            out += [mpmath.log1p(a) + m1 - xy,
                    mpmath.sqrt(1 + t * t * (e2 - ey * ey) + c1 * c1) / s, c1 / s]
        return out


def test_block_wrap_up_is_the_per_row_one_and_matches_mpmath():
    st = _stats()
    nr = st.shape[1]
    assert st.shape[0] == NSTATS
    val = _block(st, nr)
    for i in range(nr):
        one = _one(st, i)
        assert np.array_equal(val[:2 * NOBS, i], one), i
        refs = _mp_values(st[:, i])
        direct = (math.exp(st[1, i] - st[0, i]) >= TINY
                  and min(float(v) for v in refs) >= TINY)
        for k, ref in enumerate(refs):
            what = (i, fs.OBS_NAMES[k], st[:, i].tolist())
            _check_value(float(val[k, i]), ref, what, RTOL_DIRECT if direct else RTOL)
            _check_log10(float(val[NOBS + k, i]), log10_mp(ref), what)
