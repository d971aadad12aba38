"""Vectorizable elementary functions for the hot loops.

Every public function here (``vexp``, ``vlog``, ``vsincos``, ``fmax``,
``fmin``) is

* callable from ``numba.njit`` code (and is then inlined by LLVM and
  vectorized: no libm call, no branch, no float->int conversion),
* callable from CUDA device code (the numba implementations use only plain
  arithmetic, flat selects and ``np.<int>(x).view(np.<float>)`` bit casts,
  which numba-cuda supports; ``fmax``/``fmin`` have a plain generic version
  next to the CPU ``llvm.maxnum`` one),
* callable as plain Python on NumPy scalars (that is how the CUDA simulator
  runs device code): the Python body runs *the same algorithm* on NumPy
  scalars,

and keeps the dtype of its argument (float32 in, float32 out, computed in
float32).  Integer arguments are treated as float64.

Design
------
Each algorithm is written once, as a kernel taking the argument and a
namedtuple of constants; the constants (float32 or float64 values, int32 or
int64 bit-field constants, polynomial coefficients) are chosen at typing time
from the argument's type (``overload`` of a Python stub) or, in Python, from
``x.dtype``.  A polynomial is a tuple of coefficients, so float32 and float64
use different degrees from one source.  No factory, no captured dispatcher:
callers compiled with ``cache=True`` load from the cache.

The kernels are compiled as separate functions *without* value-changing fast
math (CPU: only ``contract``, i.e. FMA fusion, which never hurts these
formulas; other targets: no flag), so a caller compiled with
``fastmath={'reassoc', ...}`` cannot re-associate the Cody-Waite reductions
or the round-to-integer shifter trick: LLVM keeps the per-instruction flags
when it inlines the kernel into the caller's loop.

Rounding to an integer uses the shifter trick ``(t + 1.5*2**p) - 1.5*2**p``
and the integer ``k`` is read back from the bits of ``t + 1.5*2**p``: there
is no float->int conversion anywhere, so NaN and inf inputs never produce
poison values (they propagate as NaN through the arithmetic).  Integer
intermediates are kept as wide as the float (int32 lanes for float32).

Accuracy (measured by ``tests/test_vmath.py``; ulps against a correctly
rounded reference, max over the tests' points):

* ``vexp``: 1 ulp float32 (every 61st bit pattern of the whole finite-result
  range plus every pattern in windows at the thresholds and around 0),
  1 ulp float64 (~4 million points), subnormal results included.
* ``vlog``: 1 ulp both dtypes, subnormal inputs included.
* ``vsincos``: 1 ulp both dtypes for |x| <= pi (absolute error <= eps/2 near
  the zeros at 0, +-pi/2, +-pi).

Special values
--------------
``vexp``: exp(NaN) = NaN (NaN propagates, e.g. into a sum of exps),
exp(-inf) = +0, exp(+inf) = +inf, exp(+-0) = 1 exactly, results below the
float's subnormal range flush to exactly 0, results above its maximum are
+inf.
``vlog``: log(+-0) = -inf, log(+inf) = +inf, log(NaN) = NaN, log(x < 0) = NaN.
``vsincos``: NaN or +-inf in -> (NaN, NaN); sin(-0) returns +0.  Designed and
tested for |x| <= pi.  Larger arguments still work (three-part Cody-Waite
reduction; random checks: <= 2 ulp up to |x| = 2e4 float32, 1e7 float64) but
the absolute error near zeros grows with |x|: not part of the contract.
``fmax``/``fmin``: IEEE maxNum/minNum: a NaN operand is ignored (the result is
NaN only if both are NaN); the sign of a zero result is unspecified.  Mixed
float32/float64 (or integer) arguments compute in float64 under jit.

CUDA
----
The kernels use only arithmetic, flat selects and scalar ``view`` bit casts
and compile through numba-cuda (the generic ``overload`` is picked up by the
CUDA target; ``fmax``/``fmin`` use their generic two-select version there).
A CUDA kernel compiled with ``fastmath=True`` makes NVVM flush subnormals
(``-ftz``): subnormal vexp results then become 0 and subnormal vlog inputs
-inf.
"""
from collections import namedtuple

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic, overload, register_jitable

__all__ = ["vexp", "vexp_normal", "vlog", "vsincos", "fmax", "fmin"]

# Compile options: numpy error model (no ZeroDivisionError branch in the
# log's division), no value-changing fast-math.  On the CPU the float kernels
# also get 'contract' (FMA fusion; 2.4x faster float32 vexp, never less
# accurate here).  Other targets get no fast-math flag at all: numba-cuda
# treats any fastmath setting as full fast math (approximate division).
_KERNEL_OPTS = dict(error_model="numpy", forceinline=True)
_CPU_KERNEL_OPTS = dict(fastmath={"contract"}, error_model="numpy", forceinline=True)


def _jitable(fn):
    """Like ``register_jitable``, with CPU-specific compile options.

    The Python function stays callable as is (NumPy scalars)."""
    def typer(*args, **kwargs):
        return fn

    overload(fn, target="cpu", jit_options=_CPU_KERNEL_OPTS,
             strict=False)(typer)
    overload(fn, jit_options=_KERNEL_OPTS, strict=False)(typer)
    return fn


# ---------------------------------------------------------------------------
# Bit casts: one Python body for NumPy scalars, one overload picking the
# integer width from the float width at typing time.

def _bits(x):
    """The IEEE bit pattern of a float32/float64 scalar as int32/int64."""
    return x.view(np.int32 if x.dtype == np.float32 else np.int64)


def _from_bits(i, like):
    """The float (of ``like``'s dtype) whose bit pattern is ``i`` (truncated)."""
    if like.dtype == np.float32:
        return np.int32(i).view(np.float32)
    return np.int64(i).view(np.float64)


@overload(_bits, jit_options=_KERNEL_OPTS)
def _ol_bits(x):
    if x == types.float32:
        return lambda x: np.float32(x).view(np.int32)
    if x == types.float64:
        return lambda x: np.float64(x).view(np.int64)
    return None


@overload(_from_bits, jit_options=_KERNEL_OPTS)
def _ol_from_bits(i, like):
    if like == types.float32:
        return lambda i, like: np.int32(i).view(np.float32)
    if like == types.float64:
        return lambda i, like: np.int64(i).view(np.float64)
    return None


def _iwrap(i, like):
    """``i`` as the integer type as wide as ``like``'s float type.

    numba widens int32 arithmetic to int64; wrapping the results keeps the
    float32 kernels in 32-bit integer lanes (twice as many per vector)."""
    return np.int32(i) if like.dtype == np.float32 else np.int64(i)


@overload(_iwrap, jit_options=_KERNEL_OPTS)
def _ol_iwrap(i, like):
    if like == types.float32:
        return lambda i, like: np.int32(i)
    if like == types.float64:
        return lambda i, like: np.int64(i)
    return None


@_jitable
def _horner(x, coeffs):
    """coeffs[0]*x**(n-1) + ... + coeffs[n-1] (highest degree first)."""
    p = coeffs[0]
    for i in range(1, len(coeffs)):
        p = p * x + coeffs[i]
    return p


def _hex(s):
    return float.fromhex(s)


# ---------------------------------------------------------------------------
# Constants, one namedtuple instance per dtype.

_ExpC = namedtuple(
    "_ExpC",
    "xmax xmin log2e shifter shifter_bits ln2hi ln2lo one poly bias mbits",
)
_LogC = namedtuple(
    "_LogC",
    "tiny tiny_scale tiny_bits izero zero one half two shifter shifter_bits "
    "ln2hi ln2lo ninf nan inf poly bias_adj mant_mask sqrt2_off implicit one_bits mbits",
)
_SinCosC = namedtuple(
    "_SinCosC",
    "twoopi shifter shifter_bits p1 p2 p3 one half spoly cpoly",
)


def _make_exp_consts(ft, it):
    f32 = ft is np.float32
    mbits = 23 if f32 else 52
    if f32:
        # minimax (Chebyshev) fit of (exp(r) - 1 - r)/r**2 on |r| <= ln2/2:
        # relative error of exp(r) 1.2e-8
        poly = (0.0013926926614021906481, 0.0083637738744055734988,
                0.041666550110305124444, 0.16666573381900846023, 0.5)
        # Cody-Waite: ln2hi has 9 significant bits, k*ln2hi exact |k| < 2**15
        ln2hi, ln2lo = 0.693359375, -2.12194440e-4
        xmax, xmin = 89.0, -104.0
    else:
        # relative error 2.6e-19
        poly = (2.0915442297780115217e-9, 2.5106274733573294688e-8,
                2.7557271810219799569e-7, 2.7557252833516909748e-6,
                0.000024801587327007186731, 0.00019841269876864354929,
                0.0013888888888883326674, 0.0083333333333255446996,
                0.041666666666666670074, 0.16666666666666671438, 0.5)
        # fdlibm: ln2hi has 32 significant bits, k*ln2hi exact for |k| < 2**20
        ln2hi = _hex("0x1.62e42fee00000p-1")
        ln2lo = _hex("0x1.a39ef35793c76p-33")
        xmax, xmin = 710.0, -746.0
    shifter = 1.5 * 2.0 ** mbits
    return _ExpC(
        xmax=ft(xmax), xmin=ft(xmin), log2e=ft(1.4426950408889634),
        shifter=ft(shifter), shifter_bits=_bits(ft(shifter)),
        ln2hi=ft(ln2hi), ln2lo=ft(ln2lo), one=ft(1.0),
        poly=tuple(ft(c) for c in poly),
        bias=it(127 if f32 else 1023), mbits=it(mbits),
    )


def _make_log_consts(ft, it):
    f32 = ft is np.float32
    mbits = 23 if f32 else 52
    if f32:
        # FreeBSD e_logf.c Lg4..Lg1 (|error| < 2**-34.24 on |s| < 0.1716)
        poly = (_hex("0xf89e26p-26"), _hex("0x91e9eep-25"),
                _hex("0xccce13p-25"), _hex("0xaaaaaap-24"))
        ln2hi, ln2lo = 0.693359375, -2.12194440e-4
        sqrt2_off = 0x95F64 << 3
        tiny_exp = 25
    else:
        # fdlibm e_log.c Lg7..Lg1 (|error| < 2**-58.45)
        poly = (1.479819860511658591e-01, 1.531383769920937332e-01,
                1.818357216161805012e-01, 2.222219843214978396e-01,
                2.857142874366239149e-01, 3.999999999940941908e-01,
                6.666666666666735130e-01)
        ln2hi = _hex("0x1.62e42fee00000p-1")
        ln2lo = _hex("0x1.a39ef35793c76p-33")
        sqrt2_off = 0x95F64 << 32
        tiny_exp = 54
    bias = 127 if f32 else 1023
    shifter = 1.5 * 2.0 ** mbits
    finfo = np.finfo(ft)
    return _LogC(
        tiny=ft(finfo.smallest_normal), tiny_scale=ft(2.0 ** tiny_exp),
        tiny_bits=it(tiny_exp), izero=it(0), zero=ft(0.0), one=ft(1.0), half=ft(0.5), two=ft(2.0),
        shifter=ft(shifter), shifter_bits=_bits(ft(shifter)),
        ln2hi=ft(ln2hi), ln2lo=ft(ln2lo),
        ninf=ft(-np.inf), nan=ft(np.nan), inf=ft(np.inf),
        poly=tuple(ft(c) for c in poly),
        bias_adj=it(bias), mant_mask=it((1 << mbits) - 1),
        sqrt2_off=it(sqrt2_off), implicit=it(1 << mbits),
        one_bits=it(bias << mbits), mbits=it(mbits),
    )


def _make_sincos_consts(ft, it):
    f32 = ft is np.float32
    mbits = 23 if f32 else 52
    if f32:
        # minimax fits on |r| <= pi/4 in z = r*r: sin rel. error 1.4e-8,
        # cos rel. error 1.1e-9
        spoly = (-0.00019587387068464456456, 0.0083327459363804223201,
                 -0.16666664650292082048)
        cpoly = (0.000024547437210193198834, -0.0013888300696903898947,
                 0.041666664647457377173)
        # pi/2 in three parts of 12, 12 and 24 bits (Cody-Waite; the rest is
        # 5.7e-18): q*p1, q*p2 exact for |q| < 2**12
        p1 = _hex("0x1.922p0")
        p2 = _hex("-0x1.2aep-18")
        p3 = _hex("-0x1.de973ep-31")
    else:
        # sin rel. error 1.4e-17, cos rel. error 7e-19
        spoly = (1.5917848524808261007e-10, -2.5051127944014187575e-8,
                 2.755731608381635861e-6, -0.00019841269836722417756,
                 0.0083333333333309245621, -0.16666666666666664599)
        cpoly = (-1.1382456778061305849e-11, 2.0876143827993132496e-9,
                 -2.7557317260008838164e-7, 0.000024801587298743069286,
                 -0.0013888888888887382271, 0.041666666666666665373)
        # fdlibm pio2_1, pio2_2 (33 bits each), pio2_2t
        p1 = 1.57079632673412561417e+00
        p2 = 6.07710050630396597660e-11
        p3 = 2.02226624879595063154e-21
    shifter = 1.5 * 2.0 ** mbits
    return _SinCosC(
        twoopi=ft(2.0 / np.pi), shifter=ft(shifter),
        shifter_bits=_bits(ft(shifter)),
        p1=ft(p1), p2=ft(p2), p3=ft(p3), one=ft(1.0), half=ft(0.5),
        spoly=tuple(ft(c) for c in spoly), cpoly=tuple(ft(c) for c in cpoly),
    )


_EXP32 = _make_exp_consts(np.float32, np.int32)
_EXP64 = _make_exp_consts(np.float64, np.int64)
_LOG32 = _make_log_consts(np.float32, np.int32)
_LOG64 = _make_log_consts(np.float64, np.int64)
_SC32 = _make_sincos_consts(np.float32, np.int32)
_SC64 = _make_sincos_consts(np.float64, np.int64)


# ---------------------------------------------------------------------------
# The kernels: one source for both dtypes.  Only flat two-way selects.

@_jitable
def _exp_kernel(x, c):
    # clamp; a NaN x fails both comparisons and stays NaN
    xc = c.xmax if x > c.xmax else x
    xc = c.xmin if xc < c.xmin else xc
    # k = rint(x/ln2) by the shifter trick; k is also read from the bits
    kt = xc * c.log2e + c.shifter
    kf = kt - c.shifter
    ki = _iwrap(_bits(kt) - c.shifter_bits, x)
    # Cody-Waite: x - k*ln2 (k*ln2hi and the first subtraction are exact)
    r = (xc - kf * c.ln2hi) - kf * c.ln2lo
    p = c.one + (r + (r * r) * _horner(r, c.poly))
    # scale by 2**k = 2**k1 * 2**k2: both factors normal, one final rounding
    # (the only one for subnormal results)
    k1 = _iwrap(ki >> 1, x)
    k2 = _iwrap(ki - k1, x)
    s1 = _from_bits((k1 + c.bias) << c.mbits, x)
    s2 = _from_bits((k2 + c.bias) << c.mbits, x)
    return (p * s1) * s2


@_jitable
def _exp_kernel_normal(x, c):
    # _exp_kernel without the clamps and with one scaling by 2**k: valid
    # where 2**k is a normal float (the result then is normal too)
    kt = x * c.log2e + c.shifter
    kf = kt - c.shifter
    ki = _iwrap(_bits(kt) - c.shifter_bits, x)
    r = (x - kf * c.ln2hi) - kf * c.ln2lo
    p = c.one + (r + (r * r) * _horner(r, c.poly))
    return p * _from_bits((ki + c.bias) << c.mbits, x)


@_jitable
def _log_kernel(x, c):
    # subnormal inputs: scale up to normal, remember the exponent shift
    sub = x < c.tiny
    xs = x * c.tiny_scale if sub else x
    eadj = c.tiny_bits if sub else c.izero
    ix = _bits(xs)
    # x = 2**e * m with m in [sqrt(2)/2, sqrt(2))
    e = (ix >> c.mbits) - c.bias_adj - eadj
    mant = ix & c.mant_mask
    t = (mant + c.sqrt2_off) & c.implicit        # implicit bit iff m >= sqrt2
    m = _from_bits(mant | (t ^ c.one_bits), x)
    e = e + (t >> c.mbits)
    # float(e) via the shifter (no int->float conversion)
    dk = _from_bits(c.shifter_bits + e, x) - c.shifter
    # fdlibm: log(1+f) = f - hfsq + s*(hfsq+R), s = f/(2+f)
    f = m - c.one
    s = f / (c.two + f)
    z = s * s
    R = z * _horner(z, c.poly)
    hfsq = c.half * f * f
    r = dk * c.ln2hi - ((hfsq - (s * (hfsq + R) + dk * c.ln2lo)) - f)
    # special values with flat selects
    r = c.ninf if x == c.zero else r             # +-0 -> -inf
    r = r if x < c.inf else x                    # +inf -> inf, NaN -> NaN
    r = c.nan if x < c.zero else r               # x < 0 -> NaN
    return r


@_jitable
def _sincos_kernel(x, c):
    # quadrant q = rint(2x/pi) by the shifter trick, read back from the bits
    qt = x * c.twoopi + c.shifter
    qf = qt - c.shifter
    qi = _iwrap(_bits(qt) - c.shifter_bits, x)
    r = ((x - qf * c.p1) - qf * c.p2) - qf * c.p3
    z = r * r
    s = r + (r * z) * _horner(z, c.spoly)
    hz = c.half * z
    w = c.one - hz
    co = w + (((c.one - w) - hz) + (z * z) * _horner(z, c.cpoly))
    # quadrant mapping with flat selects
    swap = (qi & 1) != 0
    sa = co if swap else s
    ca = s if swap else co
    sn = -sa if (qi & 2) != 0 else sa
    cs = -ca if ((qi + 1) & 2) != 0 else ca
    return sn, cs


# ---------------------------------------------------------------------------
# Public stubs (Python bodies for NumPy scalars) and their numba overloads.

def _as_float(x):
    if isinstance(x, (np.float32, np.float64)):
        return x
    return np.float64(x)


def vexp(x):
    """exp(x), dtype-preserving; exp(-inf) == 0, exp(NaN) is NaN."""
    x = _as_float(x)
    with np.errstate(all="ignore"):
        return _exp_kernel(x, _EXP32 if x.dtype == np.float32 else _EXP64)


def vexp_normal(x):
    """exp(x) for float32 -87.3 <= x <= 88.0 (float64 -708.3 <= x <= 709.0),
    where exp(x) and 2**round(x/ln2) are normal floats, or NaN (NaN out):
    ``vexp`` without its range clamps and with one scaling by 2**k instead of
    two (seven operations fewer in a hot loop that has clamped x already).
    The same bits as ``vexp`` there (both round once, in the final product);
    outside that range the result is undefined."""
    x = _as_float(x)
    with np.errstate(all="ignore"):
        return _exp_kernel_normal(x, _EXP32 if x.dtype == np.float32 else _EXP64)


def vlog(x):
    """log(x) for x > 0 (subnormals included), dtype-preserving.

    log(0) == -inf, log(inf) == inf, log(NaN) is NaN, log(x < 0) is NaN.
    """
    x = _as_float(x)
    with np.errstate(all="ignore"):
        return _log_kernel(x, _LOG32 if x.dtype == np.float32 else _LOG64)


def vsincos(x):
    """(sin(x), cos(x)) for |x| <= pi, dtype-preserving."""
    x = _as_float(x)
    with np.errstate(all="ignore"):
        return _sincos_kernel(x, _SC32 if x.dtype == np.float32 else _SC64)


def fmax(a, b):
    """max(a, b) with IEEE maxNum semantics (a NaN operand is ignored)."""
    return np.fmax(a, b)


def fmin(a, b):
    """min(a, b) with IEEE minNum semantics (a NaN operand is ignored)."""
    return np.fmin(a, b)


def _pick(x, c32, c64):
    """Typing-time choice of the constants for argument type ``x``."""
    if x == types.float32:
        return c32
    if isinstance(x, (types.Float, types.Integer, types.Boolean)):
        return c64
    return None


@overload(vexp, jit_options=_KERNEL_OPTS)
def _ol_vexp(x):
    K = _pick(x, _EXP32, _EXP64)
    if K is None:
        return None
    if x == types.float32 or x == types.float64:
        return lambda x: _exp_kernel(x, K)
    return lambda x: _exp_kernel(np.float64(x), K)


@overload(vexp_normal, jit_options=_KERNEL_OPTS)
def _ol_vexp_normal(x):
    K = _pick(x, _EXP32, _EXP64)
    if K is None:
        return None
    if x == types.float32 or x == types.float64:
        return lambda x: _exp_kernel_normal(x, K)
    return lambda x: _exp_kernel_normal(np.float64(x), K)


@overload(vlog, jit_options=_KERNEL_OPTS)
def _ol_vlog(x):
    K = _pick(x, _LOG32, _LOG64)
    if K is None:
        return None
    if x == types.float32 or x == types.float64:
        return lambda x: _log_kernel(x, K)
    return lambda x: _log_kernel(np.float64(x), K)


@overload(vsincos, jit_options=_KERNEL_OPTS)
def _ol_vsincos(x):
    K = _pick(x, _SC32, _SC64)
    if K is None:
        return None
    if x == types.float32 or x == types.float64:
        return lambda x: _sincos_kernel(x, K)
    return lambda x: _sincos_kernel(np.float64(x), K)


# --- fmax / fmin -----------------------------------------------------------

def _common_float(a, b):
    if not all(isinstance(t, (types.Float, types.Integer, types.Boolean))
               for t in (a, b)):
        return None
    if a == types.float32 and b == types.float32:
        return types.float32
    return types.float64


def _make_minmax_intrinsic(name):
    @intrinsic
    def _llvm_minmax(typingctx, a, b):
        if not (isinstance(a, types.Float) and a == b):
            return None
        sig = a(a, b)

        def codegen(context, builder, sig, args):
            lty = context.get_value_type(sig.return_type)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(lty, [lty, lty]),
                "llvm.%s.f%d" % (name, sig.return_type.bitwidth))
            return builder.call(fn, args)

        return sig, codegen

    return _llvm_minmax


_llvm_maxnum = _make_minmax_intrinsic("maxnum")
_llvm_minnum = _make_minmax_intrinsic("minnum")


# CPU: the llvm.maxnum / llvm.minnum intrinsics (vectorize in reductions).
@overload(fmax, target="cpu", jit_options=_CPU_KERNEL_OPTS)
def _ol_fmax_cpu(a, b):
    ty = _common_float(a, b)
    if ty is None:
        return None
    if ty == types.float32:
        return lambda a, b: _llvm_maxnum(np.float32(a), np.float32(b))
    return lambda a, b: _llvm_maxnum(np.float64(a), np.float64(b))


@overload(fmin, target="cpu", jit_options=_CPU_KERNEL_OPTS)
def _ol_fmin_cpu(a, b):
    ty = _common_float(a, b)
    if ty is None:
        return None
    if ty == types.float32:
        return lambda a, b: _llvm_minnum(np.float32(a), np.float32(b))
    return lambda a, b: _llvm_minnum(np.float64(a), np.float64(b))


# Other targets (CUDA): two flat selects with the same maxNum semantics.
@register_jitable(**_KERNEL_OPTS)
def _fmax_generic(a, b):
    r = a if a > b else b          # a NaN -> b; b NaN -> b (fixed below)
    return a if b != b else r


@register_jitable(**_KERNEL_OPTS)
def _fmin_generic(a, b):
    r = a if a < b else b
    return a if b != b else r


@overload(fmax, jit_options=_KERNEL_OPTS)
def _ol_fmax_generic(a, b):
    ty = _common_float(a, b)
    if ty is None:
        return None
    if ty == types.float32:
        return lambda a, b: _fmax_generic(np.float32(a), np.float32(b))
    return lambda a, b: _fmax_generic(np.float64(a), np.float64(b))


@overload(fmin, jit_options=_KERNEL_OPTS)
def _ol_fmin_generic(a, b):
    ty = _common_float(a, b)
    if ty is None:
        return None
    if ty == types.float32:
        return lambda a, b: _fmin_generic(np.float32(a), np.float32(b))
    return lambda a, b: _fmin_generic(np.float64(a), np.float64(b))
