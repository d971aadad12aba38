r"""Long rows in one pass: the row state chunk by chunk, merged as it goes.

Why
---
The row-at-a-time path (``row.row_stats``) reads a row twice: once for its
top two, once for the exps relative to m2.  A row longer than the L1 cache
(n = 16,384 float32 is 64 kB) leaves it between the two passes.  Here each
piece of the row is read from memory once and summed while it is in L1.

What
----
A row is cut into chunks of ``STREAM_CHUNK`` consecutive elements (the
last one shorter); each chunk's top two are found (``_simd.top2``), then
its exps are summed, and the next chunk is prefetched meanwhile.
Consecutive chunks form segments summed in the lanes relative to one
reference, the segment's m2; when a chunk would raise the reference, the
open segment's lanes are summed into a state (m1, m2, R, E2, E3, V) and
folded into the state of the segments before it by ``row.state_merge``,
which rescales the sums by exp(m2_old - m2_new), as any two disjoint parts
of a row merge (``chunked_state`` says exactly when).  Rows of
independent logits raise the reference about 2 ln(n / STREAM_CHUNK) times.

Order and bits
--------------
The chunk size is a constant of this module, so the chunks, the segments,
the order of the terms in the lanes (element i in lane i % 16, float32
partials flushed into float64 every ``row.FLUSH_TILES`` tiles, a fixed
tree) and the order of the merges are functions of the row, n and the
dtype only, never of the CPU, its cache sizes, the vector width or the
threads.  A row that is one segment (its top two in its first chunk) gets
exactly the numbers of ``row.row_sums``.

Accuracy
--------
A float32 partial still takes at most 16 terms in (0, 1] before its
float64 flush (relative error <= 15 * 2**-24 ~ 9e-7, the bound of ``row``).
Each merge multiplies float64 sums by float64 factors exp(m2_part - m2),
each within a few float64 ulps, and adds: with at most n / STREAM_CHUNK
merges the added relative error stays below (n / STREAM_CHUNK) * 1e-15,
1e-13 at n = 10^5, far inside the float32 (2e-5) and float64 (1e-12)
targets.  A term is dropped (an exact 0) below e^floor relative to its
segment's reference, which is <= the row's m2: every term the row path
keeps is kept, and the extra ones are < e^floor relative to the row's m2
term (``row``, "Negligible terms").
"""
import numpy as np

from . import simd as _simd
from .row import (FLUSH_TILES, exp_floor, hot, like, row_state, row_stats_from, state_merge,
                  store_stats, top_bad)
from .simd import G, vector_width
from .vmath import vexp_normal

#: the shortest rows the one-pass path is meant for (several chunks).  The
#: CPU backend does not dispatch to it: on AVX2 (Zen 3) it measured no
#: faster than the row path, whose exp pass already prefetches the next row
#: (docs/benchmarks.md, "Long rows in one pass"); ``bench/phases.py``
#: compares the two paths at n >= STREAM_MIN_N on any CPU.  A dispatch on
#: ``n >= STREAM_MIN_N`` keeps the order a function of n and the dtype.
STREAM_MIN_N = 4096
#: elements a chunk: 4 kB of float32, 8 kB of float64 (in L1 on any x86
#: CPU); a multiple of FLUSH_TILES * G, so the flushes fall where the
#: row-at-a-time path's do
STREAM_CHUNK = 1024

_P = _simd.stack_array_like(4, G)           # lane partials, dtype of the row
_D = _simd.stack_array(np.float64, 4, G)    # float64 lanes of the open segment
_PAD = _simd.stack_array_like(G)            # a chunk's last, partial tile


@hot
def chunked_state(x, n, chunk, ahead):
    """The state (m1, m2, R, E2, E3, V) of ``x[:n]`` in one pass, ``chunk``
    elements at a time (m1 and m2 float64, exactly the row's values).

    Consecutive chunks form segments: a segment's terms are summed in the
    lanes (element i in lane i % G, the terms and flushes of
    ``row.row_sums``) relative to one reference, its m2 (its m1 when it has
    a single finite value).  A chunk's top two (``_simd.top2``) are merged
    into the open segment's; while that leaves the reference where it is,
    the chunk's exps join the segment's lanes (its new top, if any, counts
    as 1, as the row's top does).  When the reference would rise, the open
    segment is closed: its lanes are summed by the fixed tree into a state
    and folded into the closed segments' state by ``row.state_merge`` (which
    rescales the sums); the chunk opens the next segment.  A chunk with no
    finite top or a +inf (a bad or masked part) is merged on its own
    (``row.row_state``).  Rows whose reference is set by their first chunk
    are one segment: exactly the numbers of ``row.row_sums``.

    While a chunk's exps run, the next chunk is prefetched, one line a tile
    (after the last chunk: ``ahead``, the next row, or x itself)."""
    vector_width()
    P = _P(x)
    D = _D()
    pad = _PAD(x)
    zero = like(x, 0.0)
    floor = exp_floor(x)
    xinf = like(x, -np.inf)
    for c in range(4):
        for q in range(G):
            P[c, q] = 0
            D[c, q] = 0.0
    ninf = -np.inf
    # the closed segments' state
    m1 = ninf
    m2 = ninf
    r = 0.0
    e2 = 0.0
    e3 = 0.0
    v = 0.0
    # the open segment: its top two and reference (s1 = -inf: none open)
    s1 = xinf
    s2 = xinf
    ref = xinf
    lim = xinf
    for off in range(0, n, chunk):
        k = min(chunk, n - off)
        c1, c2 = _simd.top2(x, off, k)
        t1 = c1 if c1 > s1 else s1
        lo = c1 if c1 < s1 else s1
        hi = c2 if c2 > s2 else s2
        t2 = lo if lo > hi else hi
        tref = t2 if t2 > xinf else t1
        bad = top_bad(c1)
        if bad or not (tref == ref):
            if s1 > xinf:
                m1, m2, r, e2, e3, v = state_merge(
                    m1, m2, r, e2, e3, v, np.float64(s1), np.float64(s2),
                    _simd.tree_sum(D, 0) - 1.0, _simd.tree_sum(D, 1) - 1.0,
                    _simd.tree_sum(D, 2) - 1.0, _simd.tree_sum(D, 3))
                for c in range(4):
                    for q in range(G):
                        D[c, q] = 0.0
            if bad:
                b1, b2, br, be2, be3, bv = row_state(x[off:off + k], k)
                m1, m2, r, e2, e3, v = state_merge(m1, m2, r, e2, e3, v, np.float64(b1),
                                                   np.float64(b2), br, be2, be3, bv)
                s1 = xinf
                s2 = xinf
                ref = xinf
                continue
            s1 = c1
            s2 = c2
            ref = c2 if c2 > xinf else c1
            lim = ref + floor
        else:
            s1 = t1
            s2 = t2
        # the chunk's terms relative to ref (``row._row_sums_ahead``'s loop)
        nt = k // G
        rem = k - nt * G
        ntt = nt
        if rem > 0:
            for q in range(G):
                pad[q] = -np.inf
            tail = np.uint64(off + nt * G)
            for q in range(rem):
                pad[q] = x[tail + np.uint64(q)]
            ntt = nt + 1
        nxt = off + chunk
        t = 0
        while t < ntt:
            te = min(t + FLUSH_TILES, ntt)
            for tile in range(t, te):
                src = x if tile < nt else pad
                base = np.uint64(off + tile * G if tile < nt else 0)
                if tile < nt:
                    if nxt < n:
                        _simd.prefetch(x, nxt + tile * G)
                    else:
                        _simd.prefetch(ahead, tile * G)
                for q in range(G):
                    xi = src[base + np.uint64(q)]
                    d = xi - ref
                    d = zero if d > zero else d
                    d = floor if d < floor else d
                    e = vexp_normal(d)
                    e = zero if xi < lim else e
                    ee = e * e
                    P[0, q] += e
                    P[1, q] += ee
                    P[2, q] += ee * e
                    P[3, q] -= e * d
            _simd.flush(P, D, 4)
            t = te
    if s1 > xinf:
        m1, m2, r, e2, e3, v = state_merge(
            m1, m2, r, e2, e3, v, np.float64(s1), np.float64(s2),
            _simd.tree_sum(D, 0) - 1.0, _simd.tree_sum(D, 1) - 1.0,
            _simd.tree_sum(D, 2) - 1.0, _simd.tree_sum(D, 3))
    return m1, m2, r, e2, e3, v


@hot
def stream_state(x, n, ahead):
    """``chunked_state`` in chunks of ``STREAM_CHUNK``."""
    return chunked_state(x, n, STREAM_CHUNK, ahead)


@hot
def stream_stats(x, n, ymode, y, u, ahead):
    """``row.row_stats`` of a long row, in one pass (``stream_state``): the
    same tuple (m1, m2, R, E2, E3, V, y_top, x_y, e_y, bad), the same
    bad-row rule and targets, the sums to rounding.  ``ahead``: the row
    read next (prefetched during the last chunk), or x itself."""
    m1, m2, r, e2, e3, v = stream_state(x, n, ahead)
    return row_stats_from(x, n, m1, m2, r, e2, e3, v, ymode, y, u)


@hot
def stream_stats_into(x, n, ymode, y, u, st, i, ahead):
    """``stream_stats`` of one row into column i of the block scratch st
    (``row.store_stats``); returns bad."""
    m1, m2, r, e2, e3, v, y_top, xy, ey, bad = stream_stats(x, n, ymode, y, u, ahead)
    return store_stats(st, i, m1, m2, r, e2, e3, v, y_top, xy, ey, bad)
