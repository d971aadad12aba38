"""Counter-based random numbers: Philox4x32-10, normals, uniforms, chi-square.

Every value is a pure function of ``(seed, row, stream, index)``: there is no
state, no allocation and no Python object, so the same source is compiled by
``numba.njit``, by ``numba.cuda.jit(device=True)``, and runs as plain Python
(on NumPy scalars) under the CUDA simulator.  CPU and GPU draw the same numbers.

Addressing
----------
One Philox4x32-10 call returns four 32-bit words for

    key     = (seed & 0xffffffff, seed >> 32)               seed in [0, 2**64)
    counter = (index & 0xffffffff, stream, row & 0xffffffff, row >> 32)

``index`` is the *call* index inside the ``(row, stream)`` stream: at most
2**32 calls (2**34 normals) per stream; larger indices wrap around and repeat
earlier draws.  Streams (``STREAM_*``) keep the draws of one row independent
by purpose:

* ``STREAM_LOGITS``: the row's ``n`` standard normals (``fill_normals``).
* ``STREAM_SCALE``:  the chi-square draw (``chi2``; uses call indices 0..64).
* ``STREAM_LABEL``:  the uniform label (``uniform_int``; call index 0).
* ``STREAM_SAMPLED``: the uniform for categorical sampling (``uniform``).
* ``STREAM_QUERY``, ``STREAM_KEYS``: explicit DotProduct ``q`` (normal ``t``)
  and ``K`` (normal ``j * d_k + t``), so ``n * d_k <= 2**34`` per row.
* ``STREAM_AUX``: anything else.

Normals (Box--Muller)
---------------------
Normal ``j`` comes from call ``i = j // 4``; words ``(r0, r1)`` give normals
``4i`` and ``4i+1``, ``(r2, r3)`` give ``4i+2`` and ``4i+3``:

    u     = (r_even + 0.5) * 2**-32                 in (0, 1), never 0 or 1
    theta = (r_odd - 2**31 + 0.5) * 2*pi * 2**-32   in (-pi, pi)
    rho   = sqrt(-2 log u)
    z_even, z_odd = rho * cos(theta), rho * sin(theta)

so normal ``j`` does not depend on how many are drawn (prefix property) nor,
beyond rounding, on the float type.  In float32 ``u`` is not representable
near 1, so ``log u`` is taken as ``log(fl(u)) + (u - fl(u))`` with the
residual ``u - fl(u)`` computed exactly in integers (relative error of
``log u`` <= 2**-24 from this step): float32 draws are the float64 draws up to
float32 rounding (|z32 - z64| <= ~3e-7 * rho, measured), small radii included.

Tail truncation: ``u >= 2**-33`` bounds ``rho`` (hence ``|z|``) by
``sqrt(66 log 2) = 6.764``; the normal tail beyond that (probability 1.3e-11
per normal, i.e. ~1 normal in 7.5e10) is never drawn.  The far tail is also
coarse: ``u`` lives on a 2**-32 grid, so the largest radii are 6.764, 6.599,
6.521, ... (``P(rho > 6) = 1.5e-8`` is only ~65 grid points).  Statistics of
extremes over >~1e10 normals see this.  32 bits of angle quantize ``theta``
to 1.5e-9 rad.
"""
import math

import numpy as np
from numba.extending import register_jitable

from .simd import vector_width
from .vmath import fmax, vexp, vlog, vsincos

__all__ = [
    "STREAM_LOGITS", "STREAM_SCALE", "STREAM_LABEL", "STREAM_SAMPLED",
    "STREAM_QUERY", "STREAM_KEYS", "STREAM_AUX", "CHI2_MAX_ATTEMPTS",
    "philox4x32_10", "fill_normals", "fill_normals_affine", "fill_normals_rows",
    "normal", "uniform", "uniform_int", "chi2",
]

STREAM_LOGITS = 0
STREAM_SCALE = 1
STREAM_LABEL = 2
STREAM_SAMPLED = 3
STREAM_QUERY = 4
STREAM_KEYS = 5
STREAM_AUX = 6

#: Marsaglia--Tsang attempts before ``chi2`` gives up (see ``chi2``).
CHI2_MAX_ATTEMPTS = 64

# Everything stays uint64 with uint64 constants (numba 0.68: uint64 + int
# literal -> int64, whose >> is arithmetic); 32-bit values are masked.
_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_S21 = np.uint64(21)
_S11 = np.uint64(11)
_ONE = np.uint64(1)
_PHILOX_M0 = np.uint64(0xD2511F53)
_PHILOX_M1 = np.uint64(0xCD9E8D57)
_PHILOX_W0 = np.uint64(0x9E3779B9)
_PHILOX_W1 = np.uint64(0xBB67AE85)
_I2P31 = np.int64(2 ** 31)

# Compile options of every function here:
# * error_model="numpy": no ZeroDivisionError branch (it would stop the loop
#   in fill_normals from vectorizing);
# * forceinline=True: LLVM-level alwaysinline (a jit option of numba and numba-cuda),
#   so Philox and Box--Muller are inlined into the caller's loop and
#   vectorized there; without it LLVM keeps _box_muller as a call (measured:
#   0.1e9 instead of ~1e9 normals/s);
# * no fast-math: not needed, and a caller's fast-math flags do not reach
#   these bodies (LLVM keeps per-instruction flags when it inlines);
# * no Numba-IR inline="always": on a numba.extending overload it fails to
#   type under the numba-cuda 0.30 CUDA pipeline ("mul(omitted(...))").
_OPTS = dict(error_model="numpy", forceinline=True)

_TWOPI_2M32 = 2.0 * math.pi * 2.0 ** -32   # angle step of one 32-bit word
_2M33 = 2.0 ** -33
_2M53 = 2.0 ** -53
_ONE_MINUS_2M53 = 1.0 - 2.0 ** -53


# --------------------------------------------------------------------------
# Philox4x32-10
# --------------------------------------------------------------------------
@register_jitable(**_OPTS)
def _philox_round(c0, c1, c2, c3, k0, k1):
    p0 = _PHILOX_M0 * c0          # 32 x 32 -> 64 bits: fits in uint64
    p1 = _PHILOX_M1 * c2
    return (((p1 >> _S32) ^ c1 ^ k0), (p1 & _M32),
            ((p0 >> _S32) ^ c3 ^ k1), (p0 & _M32))


@register_jitable(**_OPTS)
def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 (Random123): counter (c0..c3), key (k0, k1) -> 4 words.

    Inputs and outputs are uint64 holding 32-bit values (inputs are masked).
    """
    c0 = np.uint64(c0) & _M32
    c1 = np.uint64(c1) & _M32
    c2 = np.uint64(c2) & _M32
    c3 = np.uint64(c3) & _M32
    k0 = np.uint64(k0) & _M32
    k1 = np.uint64(k1) & _M32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _PHILOX_W0) & _M32
    k1 = (k1 + _PHILOX_W1) & _M32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _PHILOX_W0) & _M32
    k1 = (k1 + _PHILOX_W1) & _M32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _PHILOX_W0) & _M32
    k1 = (k1 + _PHILOX_W1) & _M32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _PHILOX_W0) & _M32
    k1 = (k1 + _PHILOX_W1) & _M32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _PHILOX_W0) & _M32
    k1 = (k1 + _PHILOX_W1) & _M32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _PHILOX_W0) & _M32
    k1 = (k1 + _PHILOX_W1) & _M32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _PHILOX_W0) & _M32
    k1 = (k1 + _PHILOX_W1) & _M32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _PHILOX_W0) & _M32
    k1 = (k1 + _PHILOX_W1) & _M32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _PHILOX_W0) & _M32
    k1 = (k1 + _PHILOX_W1) & _M32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    return c0, c1, c2, c3


@register_jitable(**_OPTS)
def _draw(seed, row, stream, index):
    """The 4 words of call ``index`` of stream ``(seed, row, stream)``."""
    s = np.uint64(seed)
    r = np.uint64(row)
    return philox4x32_10(np.uint64(index) & _M32, np.uint64(stream) & _M32,
                         r & _M32, r >> _S32, s & _M32, s >> _S32)


# --------------------------------------------------------------------------
# Box--Muller on 32-bit words, in the float type T (float32 or float64)
# --------------------------------------------------------------------------
@register_jitable(**_OPTS)
def _box_muller(wr, wa, T):
    """(rho cos theta, rho sin theta) of T from radius word wr, angle word wa."""
    # u = (wr + 0.5) 2^-32 = w2 2^-33 with w2 = 2 wr + 1 odd, < 2^33.
    w2 = np.int64(wr) * np.int64(2) + np.int64(1)
    f = T(w2)                                  # rounded in float32, exact in float64
    res = w2 - np.int64(f)                     # exact integer residual (0 in float64)
    # log u = log(f 2^-33) + log1p(res / f); |res / f| <= 2^-24 and taking
    # res 2^-33 for res / f errs by <= 2^-24 (1 - u) <= 2^-24 |log u|: no division.
    lg = vlog(f * T(_2M33)) + T(res) * T(_2M33)
    rho = T(math.sqrt(fmax(T(-2.0) * lg, T(0.0))))   # T(): float32 in plain Python too
    theta = (T(np.int64(wa) - _I2P31) + T(0.5)) * T(_TWOPI_2M32)
    s, c = vsincos(theta)
    return rho * c, rho * s


@register_jitable(**_OPTS)
def _uniform53(w_hi, w_lo):
    """Float64 strictly inside (0, 1) from 53 bits of two 32-bit words."""
    x = (w_hi << _S21) | (w_lo >> _S11)        # 53 bits
    u = (np.float64(x) + 0.5) * _2M53          # (x + 1/2) 2^-53, rounded
    # Rounding (ties to even) can turn 1 - 2^-54 into 1.0: keep it inside.
    return u if u < _ONE_MINUS_2M53 else _ONE_MINUS_2M53


# --------------------------------------------------------------------------
# Public draws
# --------------------------------------------------------------------------
@register_jitable(**_OPTS)
def fill_normals(buf, n, seed, row, stream):
    """Write normals 0..n-1 of stream (seed, row, stream) into buf[:n].

    ``buf`` is a 1-D float32 or float64 array of length >= n; the values are
    computed in its dtype (float32 draws equal float64 draws up to rounding).
    Normal j is the same whatever n (prefix property).  Branch-free body: the
    loop over Philox calls vectorizes.
    """
    fill_normals_affine(buf, n, seed, row, stream, 0.0, 1.0)


@register_jitable(**_OPTS)
def fill_normals_affine(buf, n, seed, row, stream, a, b):
    """buf[j] = a + b * z_j for the normals z_j of ``fill_normals`` (a, b of
    buf's dtype): the affine map fused into the generating loop (one pass
    over buf instead of two)."""
    vector_width()
    T = buf.dtype.type
    a = T(a)
    b = T(b)
    s = np.uint64(seed)
    r = np.uint64(row)
    k0 = s & _M32
    k1 = s >> _S32
    c1 = np.uint64(stream) & _M32
    c2 = r & _M32
    c3 = r >> _S32
    nq = n // 4
    for i in range(nq):
        w0, w1, w2, w3 = philox4x32_10(np.uint64(i), c1, c2, c3, k0, k1)
        z0, z1 = _box_muller(w0, w1, T)
        z2, z3 = _box_muller(w2, w3, T)
        j = 4 * i
        buf[j] = a + b * z0
        buf[j + 1] = a + b * z1
        buf[j + 2] = a + b * z2
        buf[j + 3] = a + b * z3
    rem = n - 4 * nq
    if rem > 0:
        w0, w1, w2, w3 = philox4x32_10(np.uint64(nq), c1, c2, c3, k0, k1)
        z0, z1 = _box_muller(w0, w1, T)
        z2, z3 = _box_muller(w2, w3, T)
        j = 4 * nq
        buf[j] = a + b * z0
        if rem > 1:
            buf[j + 1] = a + b * z1
        if rem > 2:
            buf[j + 2] = a + b * z2


@register_jitable(**_OPTS)
def fill_normals_rows(buf, nr, n, seed, row0, stream, a, b):
    """``fill_normals_affine`` for rows row0 .. row0 + nr - 1 into buf[:nr, :n]
    (a C-contiguous 2-D array), n a multiple of 4: one loop over all the
    rows' Philox calls, so the vectorized loop's setup is paid once per call,
    not once per row (call j is call i = j % (n / 4) of row row0 + j // (n / 4),
    and writes buf.flat[4j:4j + 4]).  The same values as row by row."""
    vector_width()
    T = buf.dtype.type
    a = T(a)
    b = T(b)
    s = np.uint64(seed)
    k0 = s & _M32
    k1 = s >> _S32
    c1 = np.uint64(stream) & _M32
    nq = n // 4
    inv = 1.0 / nq
    r0 = np.uint64(row0)
    flat = buf.reshape(buf.shape[0] * buf.shape[1])
    for j in range(nr * nq):
        # q = j // nq without an integer division (which does not vectorize):
        # (j + 1/2) / nq is at least 1 / (2 nq) away from an integer, far
        # more than its rounding error for j < 2**40
        q = np.int64(math.floor((j + 0.5) * inv))
        i = j - q * nq
        r = r0 + np.uint64(q)
        w0, w1, w2, w3 = philox4x32_10(np.uint64(i), c1, r & _M32, r >> _S32, k0, k1)
        z0, z1 = _box_muller(w0, w1, T)
        z2, z3 = _box_muller(w2, w3, T)
        jj = 4 * j
        flat[jj] = a + b * z0
        flat[jj + 1] = a + b * z1
        flat[jj + 2] = a + b * z2
        flat[jj + 3] = a + b * z3


@register_jitable(**_OPTS)
def normal(seed, row, stream, index):
    """Standard normal number ``index`` of the stream, float64.

    Equal (up to float64 rounding) to ``buf[index]`` after a float64
    ``fill_normals(buf, n, seed, row, stream)`` with n > index.
    """
    idx = np.uint64(index)
    w0, w1, w2, w3 = _draw(seed, row, stream, idx >> np.uint64(2))
    q = idx & np.uint64(3)
    if q < np.uint64(2):
        a, b = _box_muller(w0, w1, np.float64)
    else:
        a, b = _box_muller(w2, w3, np.float64)
    if q & _ONE:
        return b
    return a


@register_jitable(**_OPTS)
def uniform(seed, row, stream, index):
    """Float64 uniform strictly inside (0, 1) from call ``index``.

    53 random bits: words r0 (high 32) and r1 (top 21); value
    (x + 1/2) / 2**53 rounded to double, capped at 1 - 2**-53.
    """
    w0, w1, w2, w3 = _draw(seed, row, stream, index)
    return _uniform53(w0, w1)


@register_jitable(**_OPTS)
def uniform_int(seed, row, stream, m):
    """Int64 uniform on [0, m), 1 <= m <= 2**31 (call index 0 of the stream).

    x = 64 random bits (words r0:r1); returns floor(x * m / 2**64) computed
    exactly with 32-bit halves (no 128-bit type needed).  Each value gets
    floor or ceil of 2**64 / m of the 2**64 inputs: relative bias
    <= m / 2**64 <= 2**-33.
    """
    w0, w1, w2, w3 = _draw(seed, row, stream, 0)
    mm = np.uint64(m)
    # floor((w0 2^32 + w1) m / 2^64) = (w0 m + ((w1 m) >> 32)) >> 32 exactly;
    # no overflow for m < 2^32.
    return np.int64((w0 * mm + ((w1 * mm) >> _S32)) >> _S32)


@register_jitable(**_OPTS)
def _gamma_mt(seed, row, stream, a):
    """Gamma(a), a >= 1, Marsaglia--Tsang; attempt t reads call index t."""
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    x = 0.0
    v = 1.0
    for t in range(CHI2_MAX_ATTEMPTS):
        w0, w1, w2, w3 = _draw(seed, row, stream, t)
        x, _ = _box_muller(w0, w1, np.float64)
        u = _uniform53(w2, w3)
        v = 1.0 + c * x
        if v > 0.0:
            v = v * v * v
            x2 = x * x
            if u < 1.0 - 0.0331 * (x2 * x2):
                return d * v
            if vlog(u) < 0.5 * x2 + d * (1.0 - v + vlog(v)):
                return d * v
    # Every attempt rejected: probability < 0.05**64 (< 1e-83) for a >= 1.
    # Fall back to the last proposal (or d = a - 1/3 if it was v <= 0).
    if v > 0.0:
        return d * v
    return d


@register_jitable(**_OPTS)
def chi2(seed, row, stream, k):
    """Chi-square with k >= 1 degrees of freedom (float64), = 2 Gamma(k/2).

    Gamma(a), a = k/2: Marsaglia--Tsang for a >= 1, attempt t (t < 64,
    ``CHI2_MAX_ATTEMPTS``) reading its normal and uniform from call index t of
    the stream, so retries are counter-addressed and the draw is a pure
    function of (seed, row, stream, k).  For a < 1 (k < 2):
    Gamma(a) = Gamma(a + 1) * U**(1/a), with U from call index 64.
    A row uses call indices 0..64 of its stream.
    """
    a = 0.5 * np.float64(k)
    if a >= 1.0:
        return 2.0 * _gamma_mt(seed, row, stream, a)
    g = _gamma_mt(seed, row, stream, a + 1.0)
    w0, w1, w2, w3 = _draw(seed, row, stream, CHI2_MAX_ATTEMPTS)
    u = _uniform53(w0, w1)
    return 2.0 * g * vexp(vlog(u) / a)
