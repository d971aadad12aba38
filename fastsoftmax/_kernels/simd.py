r"""CPU SIMD primitives: explicit lanes, in an order fixed by this code.

Why
---
A float sum vectorized by LLVM needs ``reassoc``, which lets the vectorizer
pick the order (vector width, interleave count, tail loop): the same call
then gives different bits on AVX2 and AVX-512 machines.  fastsoftmax
compiles without ``reassoc``; every cross-element float reduction is written
over ``G = 16`` explicit lanes instead (element i goes to lane i % G, the
lanes are folded by a fixed pairwise tree), so the order is the code's and
the bits do not depend on the CPU (vectorization then only changes speed).

What
----
* ``stack_array_like`` / ``stack_array``: small C-contiguous arrays on the
  stack (lane accumulators; LLVM keeps them in vector registers).
* ``vector_width()``: marks the function it is called from with the vector
  width chosen by ``features.KERNEL_VECTOR_WIDTH`` (fastsoftmax's own knob,
  ``FASTSOFTMAX_VECTOR_WIDTH``): a function attribute, so numba's target
  for the user's other code is untouched.
* ``top2``: the two largest values with multiplicity, 16 lanes.
* the tile primitives (``tile_transpose``, ``tile_top2``) build on these,
  in ``tile``.
* ``flush`` / ``tree_sum``: float32 lane partials into float64 lanes, and
  the fixed-tree sum of 16 float64 lanes.
* ``chan_stats`` / ``chan_ss``: one block's count, sum, infinite count,
  min and max of a channel over rows (columns off .. off + nr - 1 of a
  scratch that may hold several blocks), and its sum of squared deviations,
  rows in 16 float64 lanes.
* ``row_view``: row r of a 2-D array without a reference count (no atomic
  operations per row).
* ``prefetch``: a cache hint for one line.

Each is a plain Python function (the reference semantics, same order) with a
CPU overload that emits LLVM vector IR over ``<16 x T>`` without fast-math
flags; the backend lowers it to 2 x ymm or 1 x zmm as the target allows,
with identical results.  ``vector_width`` also has a no-op generic overload
(other targets); the rest is CPU-only (the CUDA kernels keep their own
reduction order and agree to rounding).
"""
import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic, overload
from numba.np import numpy_support

from . import features

# The vector IR below is lowered correctly by LLVM 20 (numba >= 0.62, llvmlite
# >= 0.45); LLVM 15 (numba 0.61) miscompiles it into wrong results (measured:
# softmax off by orders of magnitude), so refuse to run there rather than
# answer wrongly.  pyproject.toml declares numba >= 0.62 for this reason.
if tuple(int(p) for p in numba.__version__.split(".")[:2]) < (0, 62):
    raise ImportError(f"fastsoftmax needs numba >= 0.62 (found {numba.__version__}): its "
                      "fixed-order SIMD kernels are miscompiled by older numba's LLVM; "
                      "pip install -U numba")

G = 16
_I32 = ir.IntType(32)
_I1 = ir.IntType(1)


# ---------------------------------------------------------------------------
# stack arrays

def _stack_codegen(dims, dt):
    arrty = types.Array(dt, len(dims), "C")

    def codegen(context, builder, sig, args):
        lty = context.get_value_type(dt)
        total = int(np.prod(dims))
        with builder.goto_entry_block():
            slot = builder.alloca(ir.ArrayType(lty, total))
            slot.align = 64
        ptr = builder.bitcast(slot, lty.as_pointer())
        ary = context.make_array(arrty)(context, builder)
        isz = context.get_abi_sizeof(lty)
        strides, acc = [], isz
        for d in reversed(dims):
            strides.append(acc)
            acc *= d
        intp = context.get_value_type(types.intp)
        context.populate_array(ary, data=ptr,
                               shape=[ir.Constant(intp, d) for d in dims],
                               strides=[ir.Constant(intp, s) for s in reversed(strides)],
                               itemsize=ir.Constant(intp, isz), meminfo=None)
        return ary._getvalue()

    return arrty, codegen


def stack_array_like(*dims):
    """``f(x)``: an uninitialised C array of shape ``dims`` on the stack, of
    the dtype of x (an array or a scalar).  Lives as long as the function
    that (after inlining) calls it."""
    dims = tuple(int(d) for d in dims)

    def py(like):
        return np.zeros(dims, dtype=np.asarray(like).dtype)

    @intrinsic
    def _ir(typingctx, like):
        dt = like.dtype if isinstance(like, types.Array) else like
        if not isinstance(dt, types.Number):
            return None
        arrty, codegen = _stack_codegen(dims, dt)
        return arrty(like), codegen

    @overload(py, target="cpu")
    def _ol(like):
        return lambda like: _ir(like)

    return py


def stack_array(dtype, *dims):
    """``f()``: like ``stack_array_like`` with a fixed dtype."""
    dims = tuple(int(d) for d in dims)
    npdt = np.dtype(dtype)
    dt = numpy_support.from_dtype(npdt)

    def py():
        return np.zeros(dims, dtype=npdt)

    @intrinsic
    def _ir(typingctx):
        arrty, codegen = _stack_codegen(dims, dt)
        return arrty(), codegen

    @overload(py, target="cpu")
    def _ol():
        return lambda: _ir()

    return py


# ---------------------------------------------------------------------------
# the vector-width knob, as a function attribute

def vector_width():
    """Mark the calling function (CPU: an LLVM function attribute) with
    fastsoftmax's vector width; no-op elsewhere."""


@intrinsic
def _vector_width_ir(typingctx):
    def codegen(context, builder, sig, args):
        w = features.KERNEL_VECTOR_WIDTH
        if w:
            attrs = builder.function.attributes
            # llvmlite's AttributeSet knows no string attributes: add raw
            set.add(attrs, '"prefer-vector-width"="%d"' % w)
            if w >= 512:
                set.add(attrs, '"min-legal-vector-width"="%d"' % w)
        return context.get_dummy_value()

    return types.none(), codegen


# inline="always": numba inlines the overload into the caller's IR, so the
# intrinsic is lowered in (and marks) the calling function itself, not a
# wrapper of its own
@overload(vector_width, target="cpu", inline="always")
def _ol_vector_width_cpu():
    return lambda: _vector_width_ir()


@overload(vector_width)
def _ol_vector_width():
    return lambda: None


# ---------------------------------------------------------------------------
# IR helpers.  A G-lane value is a list of chunk vectors of the register
# width the knob allows (512-bit: 16 float32 / 8 float64 per chunk; 128-bit:
# 4 / 2; else 256-bit), so that "256" and "128" really mean code of that width.  Lane l of the value is
# lane l % cw of chunk l // cw; every fold pairs lane l with lane l + k/2
# (chunks first, then halves within a chunk): the same order at any width.

def _chunk_lanes(elem):
    w = features.KERNEL_VECTOR_WIDTH
    bits = 512 if w >= 512 else (128 if w == 128 else 256)
    eb = 32 if elem in (ir.FloatType(), ir.IntType(32)) else 64
    return min(G, bits // eb)


def _mask(vals):
    return ir.Constant(ir.VectorType(_I32, len(vals)), list(vals))


def _half(builder, v, lo):
    n = v.type.count
    k = n // 2
    return builder.shuffle_vector(v, v, _mask(range(0, k) if lo else range(k, n)))


def _fmax(b, x, y):
    # x > y ? x : y: a NaN x loses, a NaN y wins only against NaN x
    return b.select(b.fcmp_ordered(">", x, y), x, y)


def _fmin(b, x, y):
    return b.select(b.fcmp_ordered("<", x, y), x, y)


def _map(f, *vs):
    """Chunkwise f over G-lane values (lists of chunks)."""
    return [f(*cs) for cs in zip(*vs)]


def _const(elem, value):
    cw = _chunk_lanes(elem)
    return [ir.Constant(ir.VectorType(elem, cw), [value] * cw) for _ in range(G // cw)]


def _splat(builder, val):
    cw = _chunk_lanes(val.type)
    v = builder.insert_element(ir.Constant(ir.VectorType(val.type, cw), None), val, _I32(0))
    v = builder.shuffle_vector(v, v, _mask([0] * cw))
    return [v] * (G // cw)


def _vtag(vty):
    return "v%d%s" % (vty.count, "f32" if vty.element == ir.FloatType() else "f64")


def _align(elem):
    return 4 if elem in (ir.FloatType(), ir.IntType(32)) else 8


def _load(builder, ptr, elem):
    """The G elements at ptr (a pointer to elem)."""
    cw = _chunk_lanes(elem)
    vty = ir.VectorType(elem, cw)
    return [builder.load(builder.bitcast(builder.gep(ptr, [ir.Constant(ir.IntType(64), k * cw)],
                                                     inbounds=True), vty.as_pointer()),
                         align=_align(elem))
            for k in range(G // cw)]


def _store(builder, val, ptr):
    elem = val[0].type.element
    cw = val[0].type.count
    for k, c in enumerate(val):
        q = builder.gep(ptr, [ir.Constant(ir.IntType(64), k * cw)], inbounds=True)
        builder.store(c, builder.bitcast(q, c.type.as_pointer()), align=_align(elem))


def _load_head(builder, ptr, elem, rem, fill):
    """Elements 0 .. rem - 1 at ptr (masked loads: nothing past them is
    read), ``fill`` in the other lanes."""
    cw = _chunk_lanes(elem)
    vty = ir.VectorType(elem, cw)
    fnty = ir.FunctionType(vty, [vty.as_pointer(), _I32, ir.VectorType(_I1, cw), vty])
    fn = cgutils.get_or_insert_function(builder.module, fnty,
                                        "llvm.masked.load.%s.p0" % _vtag(vty))
    r32 = builder.trunc(rem, _I32)
    rv = builder.insert_element(ir.Constant(ir.VectorType(_I32, cw), None), r32, _I32(0))
    rv = builder.shuffle_vector(rv, rv, _mask([0] * cw))
    out = []
    for k in range(G // cw):
        lanes = ir.Constant(ir.VectorType(_I32, cw), list(range(k * cw, (k + 1) * cw)))
        mask = builder.icmp_signed("<", lanes, rv)
        q = builder.gep(ptr, [ir.Constant(ir.IntType(64), k * cw)], inbounds=True)
        out.append(builder.call(fn, [builder.bitcast(q, vty.as_pointer()), _I32(_align(elem)),
                                     mask, ir.Constant(vty, [fill] * cw)]))
    return out


def _tree(builder, val, op):
    """op-fold of the G lanes: lane l with lane l + k/2, k = G, G/2, ..."""
    val = list(val)
    while len(val) > 1:
        h = len(val) // 2
        val = [op(val[k], val[k + h]) for k in range(h)]
    v = val[0]
    while v.type.count > 1:
        v = op(_half(builder, v, True), _half(builder, v, False))
    return builder.extract_element(v, _I32(0))


def _slots(builder, val):
    return [cgutils.alloca_once_value(builder, c) for c in val]


def _get(builder, slots):
    return [builder.load(s) for s in slots]


def _put(builder, slots, val):
    for s, c in zip(slots, val):
        builder.store(c, s)


def _fma(builder, a, b, c):
    """a * b + c rounded once (llvm.fma: exact on every target, emulated
    where there is no FMA unit)."""
    fn = cgutils.get_or_insert_function(builder.module,
                                        ir.FunctionType(a.type, [a.type] * 3),
                                        "llvm.fma.%s" % _vtag(a.type))
    return builder.call(fn, [a, b, c])


def _fabs(builder, v):
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(v.type, [v.type]),
                                        "llvm.fabs.%s" % _vtag(v.type))
    return builder.call(fn, [v])


def _elem_ptr(context, builder, arrty, arr, off):
    a = context.make_array(arrty)(context, builder, arr)
    return builder.gep(a.data, [off], inbounds=True)


def _as_intp(context, builder, val, ty):
    return context.cast(builder, val, ty, types.intp)


def _float_array(a, ndim=None):
    return (isinstance(a, types.Array) and isinstance(a.dtype, types.Float)
            and a.layout == "C" and (ndim is None or a.ndim == ndim))


# ---------------------------------------------------------------------------
# top two with multiplicity

def top2(a, off, n):
    """(m1, m2): the largest value of ``a.flat[off:off + n]`` and the largest
    of the others (m2 == m1 for a tie at the top).

    Element i goes to lane i % 16; lane pairs merge as (max, max(min of the
    tops, max of the seconds)), a tree over the lanes.  Exact in any order.
    A NaN is ignored by m1 and makes m2 = m1 (NaN rows are detected by the
    caller's exp pass, where the NaN propagates).  All -inf gives -inf.
    """
    v = np.asarray(a).reshape(-1)[off:off + n]
    ninf = v.dtype.type(-np.inf)
    a1 = np.full(G, ninf, v.dtype)
    a2 = np.full(G, ninf, v.dtype)
    for i, x in enumerate(v):
        k = i % G
        mn = x if x < a1[k] else a1[k]
        a2[k] = mn if mn > a2[k] else a2[k]
        a1[k] = x if x > a1[k] else a1[k]
    k = G
    while k > 1:
        k //= 2
        p1, p2, q1, q2 = a1[:k].copy(), a2[:k].copy(), a1[k:2 * k], a2[k:2 * k]
        lo = np.where(p1 < q1, p1, q1)
        hi = np.where(p2 > q2, p2, q2)
        a1[:k] = np.where(p1 > q1, p1, q1)
        a2[:k] = np.where(lo > hi, lo, hi)
    return a1[0], a2[0]


@intrinsic
def _top2_ir(typingctx, a, off, n):
    if not _float_array(a):
        return None
    T = a.dtype

    def codegen(context, builder, sig, args):
        fty = context.get_value_type(T)
        intp = context.get_value_type(types.intp)
        offv = _as_intp(context, builder, args[1], sig.args[1])
        nv = _as_intp(context, builder, args[2], sig.args[2])
        base = _elem_ptr(context, builder, sig.args[0], args[0], offv)
        s1 = _slots(builder, _const(fty, float("-inf")))
        s2 = _slots(builder, _const(fty, float("-inf")))

        def update(v):
            a1 = _get(builder, s1)
            a2 = _get(builder, s2)
            _put(builder, s2, _map(lambda x, p, q: _fmax(builder, _fmin(builder, x, p), q),
                                   v, a1, a2))
            _put(builder, s1, _map(lambda x, p: _fmax(builder, x, p), v, a1))

        nt = builder.udiv(nv, intp(G))
        with cgutils.for_range(builder, nt) as loop:
            update(_load(builder, builder.gep(base, [builder.mul(loop.index, intp(G))],
                                              inbounds=True), fty))
        rem = builder.sub(nv, builder.mul(nt, intp(G)))
        with builder.if_then(builder.icmp_signed(">", rem, intp(0))):
            p = builder.gep(base, [builder.mul(nt, intp(G))], inbounds=True)
            update(_load_head(builder, p, fty, rem, float("-inf")))
        # the pairwise merge tree, on (top, second) pairs
        pairs = list(zip(_get(builder, s1), _get(builder, s2)))

        def merge(x, y):
            (p1, p2), (q1, q2) = x, y
            return (_fmax(builder, p1, q1),
                    _fmax(builder, _fmin(builder, p1, q1), _fmax(builder, p2, q2)))

        while len(pairs) > 1:
            h = len(pairs) // 2
            pairs = [merge(pairs[k], pairs[k + h]) for k in range(h)]
        a1, a2 = pairs[0]
        while a1.type.count > 1:
            (a1, a2) = merge((_half(builder, a1, True), _half(builder, a2, True)),
                             (_half(builder, a1, False), _half(builder, a2, False)))
        return context.make_tuple(builder, sig.return_type,
                                  [builder.extract_element(a1, _I32(0)),
                                   builder.extract_element(a2, _I32(0))])

    return types.UniTuple(T, 2)(a, off, n), codegen


@overload(top2, target="cpu")
def _ol_top2(a, off, n):
    return lambda a, off, n: _top2_ir(a, off, n)




# ---------------------------------------------------------------------------
# lane partial sums

def flush(P, D, nch):
    """D[c, :16] += float64(P[c, :16]); P[c, :16] = 0, for c < nch (a literal)."""
    for c in range(nch):
        D[c, :G] += P[c, :G].astype(np.float64)
        P[c, :G] = 0


@intrinsic
def _flush_ir(typingctx, P, D, nch):
    if not (isinstance(nch, types.IntegerLiteral) and _float_array(P, 2)
            and _float_array(D, 2) and D.dtype == types.float64):
        return None
    k = nch.literal_value

    def codegen(context, builder, sig, args):
        fa = context.get_value_type(sig.args[0].dtype)
        fd = ir.DoubleType()
        intp = context.get_value_type(types.intp)
        pa = context.make_array(sig.args[0])(context, builder, args[0]).data
        pd = context.make_array(sig.args[1])(context, builder, args[1]).data
        for c in range(k):
            qa = builder.gep(pa, [intp(c * G)], inbounds=True)
            qd = builder.gep(pd, [intp(c * G)], inbounds=True)
            a = _load(builder, qa, fa)
            if fa != fd:
                # widen chunk by chunk into the float64 layout
                flat = []
                for x in a:
                    n = x.type.count
                    cwd = _chunk_lanes(fd)
                    for j in range(0, n, cwd):
                        part = builder.shuffle_vector(x, x, _mask(range(j, j + cwd)))
                        flat.append(builder.fpext(part, ir.VectorType(fd, cwd)))
                a = flat
            _store(builder, _map(builder.fadd, _load(builder, qd, fd), a), qd)
            _store(builder, _const(fa, 0.0), qa)
        return context.get_dummy_value()

    return types.none(P, D, nch), codegen


@overload(flush, target="cpu")
def _ol_flush(P, D, nch):
    return lambda P, D, nch: _flush_ir(P, D, nch)


def tree_sum(D, c):
    """D[c, 0] + ... + D[c, 15] by the fixed tree: lane l + lane l + 8, then
    l + 4, l + 2, l + 1 (the vector code's order)."""
    v = np.array(D[c, :G], dtype=np.float64)
    k = G
    while k > 1:
        k //= 2
        v[:k] = v[:k] + v[k:2 * k]
    return v[0]


@intrinsic
def _tree_sum_ir(typingctx, D, c):
    if not (_float_array(D, 2) and D.dtype == types.float64):
        return None

    def codegen(context, builder, sig, args):
        intp = context.get_value_type(types.intp)
        cv = _as_intp(context, builder, args[1], sig.args[1])
        pd = context.make_array(sig.args[0])(context, builder, args[0]).data
        v = _load(builder, builder.gep(pd, [builder.mul(cv, intp(G))], inbounds=True),
                  ir.DoubleType())
        return _tree(builder, v, builder.fadd)

    return types.float64(D, c), codegen


@overload(tree_sum, target="cpu")
def _ol_tree_sum(D, c):
    return lambda D, c: _tree_sum_ir(D, c)


# ---------------------------------------------------------------------------
# block moments over rows: row r in lane r % 16, fixed tree; exact counts

def _lanes_sum(vals):
    lanes = np.zeros(G)
    for r, z in enumerate(vals):
        lanes[r % G] += z
    k = G
    while k > 1:
        k //= 2
        lanes[:k] = lanes[:k] + lanes[k:2 * k]
    return lanes[0]


def chan_stats(val, c, off, nr):
    """(number of finite values, their sum, number of +-inf, min, max) of
    val[c, off:off + nr] (float64); NaN is skipped, min/max include
    infinities."""
    v = np.asarray(val[c, off:off + nr], dtype=np.float64)
    fin = np.abs(v) < np.inf
    s = _lanes_sum(np.where(fin, v, 0.0))
    ok = v[~np.isnan(v)]
    return (int(fin.sum()), s, int(np.isinf(v).sum()),
            ok.min() if ok.size else np.inf, ok.max() if ok.size else -np.inf)


def chan_ss(val, c, off, nr, mean):
    """Sum of (z - mean)**2 over the finite z in val[c, off:off + nr], fixed
    order, each term added by one fused multiply-add (s = fma(d, d, s))."""
    v = np.asarray(val[c, off:off + nr], dtype=np.float64)
    d = np.where(np.abs(v) < np.inf, v - mean, 0.0)
    lanes = np.zeros(G)
    for r in range(nr):
        lanes[r % G] = _py_fma(d[r], d[r], lanes[r % G])
    k = G
    while k > 1:
        k //= 2
        lanes[:k] = lanes[:k] + lanes[k:2 * k]
    return lanes[0]


def _py_fma(a, b, c):
    """a * b + c with one rounding (exact rational arithmetic)."""
    from fractions import Fraction
    a, b, c = float(a), float(b), float(c)
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
        return a * b + c
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def _chan_loop(context, builder, sig, args, body, init):
    """Loop over 16-row tiles of val[c, off:off + nr] (C 2-D float64), the
    tail by masked loads padded with NaN (skipped by every body);
    body(v, state)."""
    a = context.make_array(sig.args[0])(context, builder, args[0])
    intp = context.get_value_type(types.intp)
    cv = _as_intp(context, builder, args[1], sig.args[1])
    ov = _as_intp(context, builder, args[2], sig.args[2])
    nr = _as_intp(context, builder, args[3], sig.args[3])
    row = builder.mul(cv, builder.extract_value(a.shape, 1))
    base = builder.gep(a.data, [builder.add(row, ov)], inbounds=True)
    slots = [_slots(builder, s) for s in init]

    def step(v):
        for sl, x in zip(slots, body(v, [_get(builder, sl) for sl in slots])):
            _put(builder, sl, x)

    nt = builder.udiv(nr, intp(G))
    with cgutils.for_range(builder, nt) as loop:
        step(_load(builder, builder.gep(base, [builder.mul(loop.index, intp(G))],
                                        inbounds=True), ir.DoubleType()))
    rem = builder.sub(nr, builder.mul(nt, intp(G)))
    with builder.if_then(builder.icmp_signed(">", rem, intp(0))):
        p = builder.gep(base, [builder.mul(nt, intp(G))], inbounds=True)
        step(_load_head(builder, p, ir.DoubleType(), rem, float("nan")))
    return [_get(builder, sl) for sl in slots]


def _is_finite(builder, v):
    return builder.fcmp_ordered("<", _fabs(builder, v),
                                ir.Constant(v.type, [float("inf")] * v.type.count))


def _is_inf(builder, v):
    return builder.fcmp_ordered("==", _fabs(builder, v),
                                ir.Constant(v.type, [float("inf")] * v.type.count))


def _chan_ok(val):
    return _float_array(val, 2) and val.dtype == types.float64


@intrinsic
def _chan_stats_ir(typingctx, val, c, off, nr):
    if not _chan_ok(val):
        return None
    rt = types.Tuple((types.int64, types.float64, types.int64, types.float64, types.float64))

    def codegen(context, builder, sig, args):
        f64, i64 = ir.DoubleType(), ir.IntType(64)

        def body(v, st):
            cnt, s, ni, mn, mx = st
            fin = _map(lambda x: _is_finite(builder, x), v)
            inf = _map(lambda x: _is_inf(builder, x), v)
            return [_map(lambda c_, f: builder.sub(c_, builder.sext(f, c_.type)), cnt, fin),
                    _map(lambda s_, f, x: builder.fadd(
                        s_, builder.select(f, x, ir.Constant(x.type, [0.0] * x.type.count))),
                        s, fin, v),
                    _map(lambda c_, f: builder.sub(c_, builder.sext(f, c_.type)), ni, inf),
                    _map(lambda x, m: _fmin(builder, x, m), v, mn),
                    _map(lambda x, m: _fmax(builder, x, m), v, mx)]

        init = [_const(i64, 0), _const(f64, 0.0), _const(i64, 0), _const(f64, float("inf")),
                _const(f64, float("-inf"))]
        cnt, s, ni, mn, mx = _chan_loop(context, builder, sig, args, body, init)
        out = [_tree(builder, cnt, builder.add), _tree(builder, s, builder.fadd),
               _tree(builder, ni, builder.add),
               _tree(builder, mn, lambda x, y: _fmin(builder, x, y)),
               _tree(builder, mx, lambda x, y: _fmax(builder, x, y))]
        return context.make_tuple(builder, sig.return_type, out)

    return rt(val, c, off, nr), codegen


@intrinsic
def _chan_ss_ir(typingctx, val, c, off, nr, mean):
    if not (_chan_ok(val) and mean == types.float64):
        return None

    def codegen(context, builder, sig, args):
        f64 = ir.DoubleType()
        mv = _splat(builder, args[4])

        def body(v, st):
            def sq(s_, x, m):
                # s + d*d as one explicit fma of d = (x - m, or 0): the caller's
                # 'contract' would otherwise fuse the multiply-add through
                # the select only where the target has masked FMAs (AVX-512),
                # and the bits would depend on the CPU
                d = builder.select(_is_finite(builder, x), builder.fsub(x, m),
                                   ir.Constant(x.type, [0.0] * x.type.count))
                return _fma(builder, d, d, s_)
            return [_map(sq, st[0], v, mv)]

        (s,) = _chan_loop(context, builder, sig, args[:4], body, [_const(f64, 0.0)])
        return _tree(builder, s, builder.fadd)

    return types.float64(val, c, off, nr, mean), codegen


@overload(chan_stats, target="cpu")
def _ol_chan_stats(val, c, off, nr):
    return lambda val, c, off, nr: _chan_stats_ir(val, c, off, nr)


@overload(chan_ss, target="cpu")
def _ol_chan_ss(val, c, off, nr, mean):
    return lambda val, c, off, nr, mean: _chan_ss_ir(val, c, off, nr, np.float64(mean))


# ---------------------------------------------------------------------------
# prefetch

def prefetch(a, off):
    """Hint: a.flat[off] will be read soon (no-op outside the CPU target)."""


@intrinsic
def _prefetch_ir(typingctx, a, off):
    if not isinstance(a, types.Array):
        return None

    def codegen(context, builder, sig, args):
        p = _elem_ptr(context, builder, sig.args[0], args[0],
                      _as_intp(context, builder, args[1], sig.args[1]))
        i8p = ir.IntType(8).as_pointer()
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, _I32, _I32, _I32]),
            "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(p, i8p), _I32(0), _I32(3), _I32(1)])
        return context.get_dummy_value()

    return types.none(a, off), codegen


@overload(prefetch, target="cpu")
def _ol_prefetch(a, off):
    return lambda a, off: _prefetch_ir(a, off)


# ---------------------------------------------------------------------------
# borrowed row views

def row_view(x, r):
    """x[r] of a C-contiguous 2-D array, as a view that holds no reference
    (CPU: no meminfo, so no atomic reference counting per row; valid while x
    is alive, i.e. inside the kernel that received x)."""
    return x[r]


@intrinsic
def _row_view_ir(typingctx, x, r):
    if not (isinstance(x, types.Array) and x.ndim == 2 and x.layout == "C"):
        return None
    rowty = types.Array(x.dtype, 1, "C")

    def codegen(context, builder, sig, args):
        a = context.make_array(sig.args[0])(context, builder, args[0])
        rv = _as_intp(context, builder, args[1], sig.args[1])
        n = builder.extract_value(a.shape, 1)
        data = builder.gep(a.data, [builder.mul(rv, n)], inbounds=True)
        out = context.make_array(rowty)(context, builder)
        context.populate_array(out, data=data, shape=[n],
                               strides=[builder.extract_value(a.strides, 1)],
                               itemsize=a.itemsize, meminfo=None)
        return out._getvalue()

    return rowty(x, r), codegen


@overload(row_view, target="cpu")
def _ol_row_view(x, r):
    return lambda x, r: _row_view_ir(x, r)
