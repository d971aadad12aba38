"""A tile of G rows, one row per SIMD lane: the short-row layout.

* ``tile_transpose``: rows r0 .. r0 + k - 1 of a C 2-D array copied into a
  (n, G) buffer, one row per lane, by register shuffles in w x w blocks of
  the register width (exact: a copy);
* ``tile_top2``: each lane's two largest values with multiplicity, the same
  update as ``simd.top2``.

Each is a plain Python function (the reference semantics) with a CPU
overload that emits LLVM vector IR from the lane helpers of ``simd``.
"""
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic, overload

from .simd import (G, _I1, _I32, _align, _as_intp, _chunk_lanes, _const, _float_array, _fmax,
                   _fmin, _get, _load, _map, _mask, _put, _slots, _store, _vtag)


def tile_transpose(x, r0, k, n, tb):
    """tb[j, l] = x[r0 + min(l, k - 1), j] for j < n, l < G: the k <= G rows
    r0 .. r0 + k - 1 of the C 2-D array x, one row per lane (the lanes past
    k repeat the last row).  Exact (a copy)."""
    for j in range(n):
        for lane in range(G):
            tb[j, lane] = x[r0 + min(lane, k - 1), j]


def _transpose_masks(w, s):
    """Stage s of a w x w transpose by shuffles: swaps bit s of the row and
    column indices (rows i and i + s, bit s of i clear)."""
    lo = [c if not c & s else w + c - s for c in range(w)]
    hi = [c + s if not c & s else w + c for c in range(w)]
    return lo, hi


def _transpose(builder, rows):
    """The w x w transpose of w vectors of w lanes (log2 w shuffle stages)."""
    w = len(rows)
    rows = list(rows)
    s = 1
    while s < w:
        lo, hi = _transpose_masks(w, s)
        out = list(rows)
        for i in range(w):
            if not i & s:
                a, b = rows[i], rows[i + s]
                out[i] = builder.shuffle_vector(a, b, _mask(lo))
                out[i + s] = builder.shuffle_vector(a, b, _mask(hi))
        rows = out
        s *= 2
    return rows


@intrinsic
def _tile_transpose_ir(typingctx, x, r0, k, n, tb):
    if not (_float_array(x, 2) and _float_array(tb, 2) and x.dtype == tb.dtype):
        return None
    T = x.dtype

    def codegen(context, builder, sig, args):
        fty = context.get_value_type(T)
        intp = context.get_value_type(types.intp)
        w = _chunk_lanes(fty)
        vty = ir.VectorType(fty, w)
        xa = context.make_array(sig.args[0])(context, builder, args[0])
        ncol = builder.extract_value(xa.shape, 1)
        r0v = _as_intp(context, builder, args[1], sig.args[1])
        kv = _as_intp(context, builder, args[2], sig.args[2])
        nv = _as_intp(context, builder, args[3], sig.args[3])
        tbp = context.make_array(sig.args[4])(context, builder, args[4]).data
        # the first element of each lane's row
        last = builder.sub(kv, intp(1))
        heads = []
        for lane in range(G):
            li = intp(lane)
            ri = builder.select(builder.icmp_signed("<", li, kv), li, last)
            heads.append(builder.gep(xa.data, [builder.mul(builder.add(r0v, ri), ncol)],
                                     inbounds=True))
        align = _align(fty)

        def block(j0, nvalid, masked):
            # columns j0 .. j0 + w - 1 (the first nvalid of them when masked)
            for b in range(G // w):
                vecs = []
                for i in range(w):
                    p = builder.bitcast(builder.gep(heads[b * w + i], [j0], inbounds=True),
                                        vty.as_pointer())
                    if masked:
                        vecs.append(_masked_load_chunk(builder, p, vty, nvalid))
                    else:
                        vecs.append(builder.load(p, align=align))
                cols = _transpose(builder, vecs)
                for i in range(w):
                    def put(i=i, b=b):
                        q = builder.gep(tbp, [builder.add(builder.mul(builder.add(j0, intp(i)),
                                                                      intp(G)), intp(b * w))],
                                        inbounds=True)
                        builder.store(cols[i], builder.bitcast(q, vty.as_pointer()),
                                      align=align)
                    if masked and i > 0:
                        with builder.if_then(builder.icmp_signed("<", intp(i), nvalid)):
                            put()
                    else:
                        put()

        nb = builder.udiv(nv, intp(w))
        with cgutils.for_range(builder, nb) as loop:
            block(builder.mul(loop.index, intp(w)), None, False)
        rem = builder.sub(nv, builder.mul(nb, intp(w)))
        with builder.if_then(builder.icmp_signed(">", rem, intp(0))):
            block(builder.mul(nb, intp(w)), rem, True)
        return context.get_dummy_value()

    return types.none(x, r0, k, n, tb), codegen


def _masked_load_chunk(builder, p, vty, nvalid):
    """The first nvalid (< the chunk's lanes) elements at p, 0 elsewhere."""
    w = vty.count
    fnty = ir.FunctionType(vty, [vty.as_pointer(), _I32, ir.VectorType(_I1, w), vty])
    fn = cgutils.get_or_insert_function(builder.module, fnty,
                                        "llvm.masked.load.%s.p0" % _vtag(vty))
    r32 = builder.trunc(nvalid, _I32)
    rv = builder.insert_element(ir.Constant(ir.VectorType(_I32, w), None), r32, _I32(0))
    rv = builder.shuffle_vector(rv, rv, _mask([0] * w))
    mask = builder.icmp_signed("<", ir.Constant(ir.VectorType(_I32, w), list(range(w))), rv)
    return builder.call(fn, [p, _I32(_align(vty.element)), mask,
                             ir.Constant(vty, [0.0] * w)])


@overload(tile_transpose, target="cpu")
def _ol_tile_transpose(x, r0, k, n, tb):
    return lambda x, r0, k, n, tb: _tile_transpose_ir(x, r0, k, n, tb)


def tile_top2(tb, n, M):
    """M[0, l], M[1, l]: the top two (with multiplicity) of tb[:n, l], the
    update of ``top2`` in each lane (no lane meets another)."""
    ninf = tb.dtype.type(-np.inf)
    a1 = np.full(G, ninf, tb.dtype)
    a2 = np.full(G, ninf, tb.dtype)
    for j in range(n):
        for lane in range(G):
            x = tb[j, lane]
            mn = x if x < a1[lane] else a1[lane]
            a2[lane] = mn if mn > a2[lane] else a2[lane]
            a1[lane] = x if x > a1[lane] else a1[lane]
    M[0, :G] = a1
    M[1, :G] = a2


@intrinsic
def _tile_top2_ir(typingctx, tb, n, M):
    if not (_float_array(tb, 2) and _float_array(M, 2) and tb.dtype == M.dtype):
        return None
    T = tb.dtype

    def codegen(context, builder, sig, args):
        fty = context.get_value_type(T)
        intp = context.get_value_type(types.intp)
        base = context.make_array(sig.args[0])(context, builder, args[0]).data
        nv = _as_intp(context, builder, args[1], sig.args[1])
        pm = context.make_array(sig.args[2])(context, builder, args[2]).data
        s1 = _slots(builder, _const(fty, float("-inf")))
        s2 = _slots(builder, _const(fty, float("-inf")))
        with cgutils.for_range(builder, nv) as loop:
            v = _load(builder, builder.gep(base, [builder.mul(loop.index, intp(G))],
                                           inbounds=True), fty)
            a1 = _get(builder, s1)
            a2 = _get(builder, s2)
            _put(builder, s2, _map(lambda x, p, q: _fmax(builder, _fmin(builder, x, p), q),
                                   v, a1, a2))
            _put(builder, s1, _map(lambda x, p: _fmax(builder, x, p), v, a1))
        _store(builder, _get(builder, s1), pm)
        _store(builder, _get(builder, s2), builder.gep(pm, [intp(G)], inbounds=True))
        return context.get_dummy_value()

    return types.none(tb, n, M), codegen


@overload(tile_top2, target="cpu")
def _ol_tile_top2(tb, n, M):
    return lambda tb, n, M: _tile_top2_ir(tb, n, M)
