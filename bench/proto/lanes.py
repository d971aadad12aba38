"""Prototype helpers: stack arrays for explicit lanes, a per-function
vector-width attribute, and an asm inspector."""
import re

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic
from numba.np import numpy_support


def make_stack(dims, npdt):
  dims = tuple(dims)
  dt = numpy_support.from_dtype(np.dtype(npdt))

  @intrinsic
  def stack_array(typingctx):
    arrty = types.Array(dt, len(dims), "C")
    sig = arrty()

    def codegen(context, builder, sig, args):
        lty = context.get_value_type(dt)
        total = int(np.prod(dims))
        aty = ir.ArrayType(lty, total)
        with builder.goto_entry_block():
            slot = builder.alloca(aty)
            slot.align = 64
        ptr = builder.bitcast(slot, lty.as_pointer())
        ary = context.make_array(arrty)(context, builder)
        isz = context.get_abi_sizeof(lty)
        strides = []
        acc = isz
        for d in reversed(dims):
            strides.append(acc)
            acc *= d
        strides = list(reversed(strides))
        intp = context.get_value_type(types.intp)
        context.populate_array(ary, data=ptr,
                               shape=[ir.Constant(intp, d) for d in dims],
                               strides=[ir.Constant(intp, s) for s in strides],
                               itemsize=ir.Constant(intp, isz), meminfo=None)
        return ary._getvalue()

    return sig, codegen
  return stack_array


def make_width_intrinsic(width):
    @intrinsic
    def vector_width(typingctx):
        sig = types.none()

        def codegen(context, builder, sig, args):
            if width:
                fn = builder.function
                set.add(fn.attributes, '"prefer-vector-width"="%d"' % width)
                set.add(fn.attributes, '"min-legal-vector-width"="%d"' % width)
            return context.get_dummy_value()

        return sig, codegen
    return vector_width


w512 = make_width_intrinsic(512)
w256 = make_width_intrinsic(0)


def regs(disp):
    """Counts of zmm / ymm / xmm register uses in a dispatcher's asm."""
    out = {}
    for sig, asm in disp.inspect_asm().items():
        out[sig] = {k: len(re.findall(r"%" + k + r"\d+", asm)) for k in ("zmm", "ymm", "xmm")}
    return out


def make_stack_like(dims):
    """Like make_stack, the dtype taken from the argument (an array or a
    float scalar): s = S(x)."""
    dims = tuple(dims)

    @intrinsic
    def stack_like(typingctx, like):
        dt = like.dtype if isinstance(like, types.Array) else like
        if not isinstance(dt, types.Number):
            return None
        arrty = types.Array(dt, len(dims), "C")
        sig = arrty(like)

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

        return sig, codegen
    return stack_like
