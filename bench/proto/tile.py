"""A 16 x 16 in-register transpose as an intrinsic: rows r0..r0+15, columns
c0..c0+15 of a C-contiguous 2-D array into T[(j0 + jj) * 16 + l] (lane l =
row r0 + l).  shufflevector butterflies (4 stages x 16), no gather."""
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

G = 16


def _mask(m):
    return ir.Constant(ir.VectorType(ir.IntType(32), len(m)), m)


def _butterfly(builder, vecs, nlanes):
    b = nlanes // 2
    vecs = list(vecs)
    while b >= 1:
        out = list(vecs)
        for i in range(nlanes):
            if i & b:
                continue
            j = i | b
            A, B = vecs[i], vecs[j]
            # new_i: A's lanes where (k & b) == 0, else B's lane k - b
            m1 = [k if not (k & b) else nlanes + k - b for k in range(nlanes)]
            # new_j: A's lane k + b where (k & b) == 0, else B's lane k
            m2 = [k + b if not (k & b) else nlanes + k for k in range(nlanes)]
            out[i] = builder.shuffle_vector(A, B, _mask(m1))
            out[j] = builder.shuffle_vector(A, B, _mask(m2))
        vecs = out
        b //= 2
    return vecs


@intrinsic
def transpose16(typingctx, x, r0, c0, T, j0):
    """T[(j0 + jj) * 16 + l] = x[r0 + l, c0 + jj] for l, jj < 16."""
    if not (isinstance(x, types.Array) and x.ndim == 2 and x.layout == "C"
            and isinstance(T, types.Array) and T.dtype == x.dtype and T.layout == "C"):
        return None
    sig = types.none(x, r0, c0, T, j0)

    def codegen(context, builder, sig, args):
        xa = context.make_array(sig.args[0])(context, builder, args[0])
        ta = context.make_array(sig.args[3])(context, builder, args[3])
        fty = context.get_value_type(sig.args[0].dtype)
        vty = ir.VectorType(fty, G)
        intp = context.get_value_type(types.intp)
        r0v = context.cast(builder, args[1], sig.args[1], types.intp)
        c0v = context.cast(builder, args[2], sig.args[2], types.intp)
        j0v = context.cast(builder, args[4], sig.args[4], types.intp)
        n = builder.extract_value(xa.shape, 1)
        base = xa.data
        align = fty.get_abi_alignment(context.target_data) if hasattr(fty, "get_abi_alignment") else 4
        rows = []
        for l in range(G):
            off = builder.add(builder.mul(builder.add(r0v, ir.Constant(intp, l)), n), c0v)
            p = builder.gep(base, [off], inbounds=True)
            vp = builder.bitcast(p, vty.as_pointer())
            rows.append(builder.load(vp, align=4 if fty == ir.FloatType() else 8))
        cols = _butterfly(builder, rows, G)
        for jj in range(G):
            off = builder.mul(builder.add(j0v, ir.Constant(intp, jj)), ir.Constant(intp, G))
            p = builder.gep(ta.data, [off], inbounds=True)
            vp = builder.bitcast(p, vty.as_pointer())
            builder.store(cols[jj], vp, align=4 if fty == ir.FloatType() else 8)
        return context.get_dummy_value()

    return sig, codegen


def _fsel_max(builder, a, b):
    """a > b ? a : b, elementwise (NaN b -> ... a > NaN false -> b)."""
    return builder.select(builder.fcmp_ordered(">", a, b), a, b)


@intrinsic
def transpose16_top2(typingctx, x, r0, c0, T, j0, A):
    """transpose16, and per lane l the running top two (with multiplicity) of
    the 16 new values: A[0, l] = max, A[1, l] = second (A: 2 x 16 array)."""
    if not (isinstance(x, types.Array) and x.ndim == 2 and x.layout == "C"
            and isinstance(T, types.Array) and T.dtype == x.dtype
            and isinstance(A, types.Array) and A.dtype == x.dtype):
        return None
    sig = types.none(x, r0, c0, T, j0, A)

    def codegen(context, builder, sig, args):
        xa = context.make_array(sig.args[0])(context, builder, args[0])
        ta = context.make_array(sig.args[3])(context, builder, args[3])
        aa = context.make_array(sig.args[5])(context, builder, args[5])
        fty = context.get_value_type(sig.args[0].dtype)
        al = 4 if fty == ir.FloatType() else 8
        vty = ir.VectorType(fty, G)
        intp = context.get_value_type(types.intp)
        r0v = context.cast(builder, args[1], sig.args[1], types.intp)
        c0v = context.cast(builder, args[2], sig.args[2], types.intp)
        j0v = context.cast(builder, args[4], sig.args[4], types.intp)
        n = builder.extract_value(xa.shape, 1)
        rows = []
        for l in range(G):
            off = builder.add(builder.mul(builder.add(r0v, ir.Constant(intp, l)), n), c0v)
            p = builder.bitcast(builder.gep(xa.data, [off], inbounds=True), vty.as_pointer())
            rows.append(builder.load(p, align=al))
        cols = _butterfly(builder, rows, G)
        pa1 = builder.bitcast(aa.data, vty.as_pointer())
        pa2 = builder.bitcast(builder.gep(aa.data, [ir.Constant(intp, G)], inbounds=True),
                              vty.as_pointer())
        a1 = builder.load(pa1, align=al)
        a2 = builder.load(pa2, align=al)
        for jj in range(G):
            v = cols[jj]
            off = builder.mul(builder.add(j0v, ir.Constant(intp, jj)), ir.Constant(intp, G))
            p = builder.bitcast(builder.gep(ta.data, [off], inbounds=True), vty.as_pointer())
            builder.store(v, p, align=al)
            mn = builder.select(builder.fcmp_ordered("<", v, a1), v, a1)
            a2 = _fsel_max(builder, mn, a2)
            a1 = _fsel_max(builder, v, a1)
        builder.store(a1, pa1, align=al)
        builder.store(a2, pa2, align=al)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def flush16(typingctx, A, D, c0, nc):
    """D[c, :16] += float64(A[c, :16]); A[c, :16] = 0 for c in c0..c0+nc-1 (nc literal)."""
    if not isinstance(nc, types.IntegerLiteral):
        return None
    k = nc.literal_value
    sig = types.none(A, D, c0, nc)

    def codegen(context, builder, sig, args):
        aa = context.make_array(sig.args[0])(context, builder, args[0])
        da = context.make_array(sig.args[1])(context, builder, args[1])
        fa = context.get_value_type(sig.args[0].dtype)
        fd = context.get_value_type(sig.args[1].dtype)
        va, vd = ir.VectorType(fa, G), ir.VectorType(fd, G)
        intp = context.get_value_type(types.intp)
        c0v = context.cast(builder, args[2], sig.args[2], types.intp)
        for c in range(k):
            off = builder.mul(builder.add(c0v, ir.Constant(intp, c)), ir.Constant(intp, G))
            pa = builder.bitcast(builder.gep(aa.data, [off], inbounds=True), va.as_pointer())
            pd = builder.bitcast(builder.gep(da.data, [off], inbounds=True), vd.as_pointer())
            a = builder.load(pa, align=4)
            d = builder.load(pd, align=8)
            ext = builder.fpext(a, vd) if fa != fd else a
            builder.store(builder.fadd(d, ext), pd, align=8)
            builder.store(ir.Constant(va, None), pa, align=4)
        return context.get_dummy_value()

    return sig, codegen
