"""CUDA backend (fastsoftmax/backends/cuda/) without a GPU.

* Under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, which must be set
  before ``numba.cuda`` is first imported, hence a child interpreter: this file
  run as a script): the CUDA Summary agrees with the CPU one on the same seed /
  array -- counts, infinite counts, threshold counts and sketch bins exactly,
  min/max and means to 1e-6 -- for every model and target, -inf masks, ties,
  n = 1, bad rows, large gaps and subnormals, device arrays of several layouts,
  and softmax of device arrays; the group merge gives every thread the bits
  of one fixed tree; a long contiguous float32 row's shares, read in
  chunks, give the bits of the chunks' states folded in order and the
  float64 reference within the chunked flush bound; float32 softmax is within 3 ulp (log_softmax 1.5) of
  float64; generated rows' scratch leaves 2 blocks per multiprocessor of an
  H200-sized device.  Threads per block are patched down to 32/64
  and the row-block size down, so a few hundred rows span many tiles,
  row-blocks, launches and segments; every tile-reduction regime runs (row-blocks
  longer than a tile, several per tile merged, several per tile written
  directly), a thread per row and groups of 2 to 16 threads per row.
* Without the simulator: ``backend="cuda"`` raises a clear RuntimeError when no
  GPU is usable and ``backend="auto"`` falls back to the CPU.
* When NVVM is installed (numba-cuda's compiler, no GPU needed): the float32
  summary kernel of long rows read in chunks, the compile gate's variant with
  the most code (``bench/gpu_compile.py``, the same argument types the
  launcher passes, captured in the simulator child), compiles for sm_90
  without spills, and its PTX has no fast-math instructions, while a
  fastmath=True build of a softmax kernel shows them.  The gate itself
  compiles every variant for sm_80 and sm_90 and fails on a spill or on any
  fast-math instruction.
* With numba's built-in ``numba.cuda`` only (numba-cuda not installed),
  ``backend="cuda"`` says what to install.

Everything skips cleanly when numba.cuda cannot be imported.
"""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CHILD_TIMEOUT = 600


def _env(**extra):
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, env.get("PYTHONPATH")]))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _run_child(mode, **env):
    p = subprocess.run([sys.executable, os.path.abspath(__file__), mode],
                       capture_output=True, text=True, timeout=CHILD_TIMEOUT, env=_env(**env))
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        raise AssertionError(f"child '{mode}' failed (rc {p.returncode}):\n"
                             f"{p.stdout[-4000:]}\n{p.stderr[-6000:]}")
    return json.loads(lines[-1][len("RESULT "):])


# ==========================================================================
# child side (runs as a script, numba.cuda imported here only)

def _patch(tpb=32, vpt=4, grid=3, block_logits=None, launch_logits=1 << 10):
    from fastsoftmax import _config
    from fastsoftmax.backends.cuda import _settings
    _settings.THREADS_PER_BLOCK = tpb
    _settings.VALUES_PER_THREAD = vpt
    _settings.MAX_GRID = grid
    _settings.LAUNCH_LOGITS = launch_logits
    _config.BLOCK_LOGITS = block_logits if block_logits else 1 << 16


def _make_x(rows, n, dtype, seed=0, scale=8.0):
    x = np.random.default_rng(seed).normal(size=(rows, n)) * scale
    if n > 1:
        x[::7, min(3, n - 1)] = -np.inf          # masks
        x[5, :] = -np.inf
        x[5, 1] = 0.0                            # a single finite logit
    x[::11, :] = 2.0                             # full ties
    return x.astype(dtype)


def _sim_pair(model, samples, **kw):
    import fastsoftmax as fs
    a = fs.simulate(model, samples, backend="cpu", **kw)
    b = fs.simulate(model, samples, backend="cuda", **kw)
    ca, cb = dict(a.config), dict(b.config)
    assert ca.pop("backend") == "cpu" and cb.pop("backend") == "cuda"
    return {"cpu": a.to_dict(), "gpu": b.to_dict(), "config_equal": ca == cb}


def _arr_pair(x, **kw):
    import fastsoftmax as fs
    from numba import cuda
    a = fs.summarize(x, backend="cpu", **kw)
    b = fs.summarize(x, backend="cuda", **kw)
    c = fs.summarize(cuda.to_device(x), **kw)          # the device-array path
    return {"cpu": a.to_dict(), "gpu": b.to_dict(), "config_equal": a.config == b.config,
            "device_equals_host": c == b}


class _CAI:
    """A foreign device array: only ``__cuda_array_interface__`` (the
    simulator's device memory is host memory)."""

    def __init__(self, a):
        self._a = a
        ai = a.__array_interface__
        self.__cuda_array_interface__ = {"shape": ai["shape"], "strides": ai["strides"],
                                         "typestr": ai["typestr"], "data": ai["data"],
                                         "version": 3}


# every thread's merged state (``_group_state``) for the rows of x, G threads a row
_WARP_MERGE_KERNEL = """
def k(x, res):
    sm = cuda.shared.array((12, 32), np.float64)
    tid = cuda.threadIdx.x
    lane = tid % G
    r = tid // G
    active = r < x.shape[0]
    cnt = (n - lane + G - 1) // G if lane < n else 0
    st = _kernels._share_state(x[r if active else 0], lane, G, cnt, active)
    mg = _kernels._group_state(sm, 0, lane, G, st[0], st[1], st[2], st[3], st[4], st[5])
    for j in range(6):
        res[tid, j] = mg[j]
"""


# the group state of long rows read once (``_share_state_1p``): a row a block
_CHUNKED_KERNEL = """
def k(x, res):
    sm = cuda.shared.array((12, 32), np.float64)
    lane = cuda.threadIdx.x
    r = cuda.blockIdx.x
    cnt = (n - lane + G - 1) // G if lane < n else 0
    st = _kernels._share_state_1p(x[r], lane, G, cnt, True)
    mg = _kernels._group_state(sm, 0, lane, G, st[0], st[1], st[2], st[3], st[4], st[5])
    for j in range(6):
        res[r, lane, j] = mg[j]
"""


def _chunk_fold(row_state, state_merge, s, C):
    """The state of a share s: one ``row_state`` up to C elements, else the
    states of its chunks of C elements folded in order, written out here
    independently of the kernels' loop."""
    s = np.asarray(s)
    if s.size <= C:
        parts = [s]
    else:
        parts = [s[i:i + C] for i in range(0, s.size, C)]
    acc = None
    for p in parts:
        st = tuple(float(v) for v in row_state(p, p.size))
        acc = st if acc is None else tuple(float(v) for v in state_merge(*acc, *st))
    return acc


def _scenarios():
    import fastsoftmax as fs
    from fastsoftmax._inputs import mc_target
    from fastsoftmax.backends import get_backend
    from fastsoftmax.backends.common import ModelJob
    from fastsoftmax.backends.cuda import _kernels, _launch
    from fastsoftmax.models import DotProduct, Gaussian, Shifted
    from numba import cuda
    S = {}

    def add(name, fn):
        S[name] = fn

    # ---- simulate: every model and target; the three tile-reduction regimes
    def sim_gauss_n5():
        # 2-row row-blocks: a tile holds 16 whole row-blocks (direct writes);
        # 200 rows = 3 launches (96, 96, 8 rows), the first two grid-striding
        # 2 blocks over 3 tiles
        _patch(grid=2, block_logits=16, launch_logits=480)
        return _sim_pair(Gaussian(n=5, scale=3.0), 200, seed=1)
    add("sim_gauss_n5", sim_gauss_n5)

    def sim_gauss_n1():
        _patch()                                   # row-blocks of 1024 rows > tile
        return _sim_pair(Gaussian(n=1), 100, seed=2, target="random")
    add("sim_gauss_n1", sim_gauss_n1)

    def sim_gauss_n33_sampled():
        # 32-row row-blocks (2 * 32 * 33 logits <= 2048), 64-thread tiles:
        # 2 row-blocks per tile (merged)
        _patch(tpb=64, block_logits=2048)
        return _sim_pair(Gaussian(n=33, scale=2.0), 120, seed=3, target="sampled")
    add("sim_gauss_n33_sampled", sim_gauss_n33_sampled)

    def sim_shifted_random_f64():
        # 8-row row-blocks, 4 a tile: 104 rows are launches of 96 and 8
        # rows, the first grid-striding 2 blocks over 3 tiles
        _patch(grid=2, block_logits=64, launch_logits=512)
        return _sim_pair(Shifted(n=5, offset=100.0, spread=1.5), 104, seed=4,
                         target="random", dtype="float64")
    add("sim_shifted_random_f64", sim_shifted_random_f64)

    def sim_dot_exact_int():
        _patch()                                   # 80 rows: 2 whole tiles and a half
        return _sim_pair(DotProduct(n=5, d_k=64, scaled=False), 80, seed=5, target=2,
                         thresholds=(1e-3, 0.05, 0.5))
    add("sim_dot_exact_int", sim_dot_exact_int)

    def sim_dot_explicit():
        _patch(block_logits=128)
        return _sim_pair(DotProduct(n=4, d_k=3, method="explicit"), 80, seed=6)
    add("sim_dot_explicit", sim_dot_explicit)

    def sim_large_gap_f32():
        # scale 1e4 float32: top-2 gaps of thousands, log10 values ~ -1e3
        _patch()
        return _sim_pair(Gaussian(n=3, scale=1e4), 60, seed=7)
    add("sim_large_gap_f32", sim_large_gap_f32)

    def run_model_row0():
        # a Dask-style piece starting at row 256 (block 128 of 2-row
        # blocks), 3 launches (64, 64, 22 rows): its moment tree's nodes line
        # up with the CPU's
        _patch(block_logits=16, launch_logits=320)
        m = Gaussian(n=5)
        thr = np.array([1e-3, 0.1])

        def job(samples, row0):
            return ModelJob(gen=m.gen_spec(), samples=samples, seed=9,
                            target=mc_target("argmax", 5), thresholds=thr,
                            dtype=np.dtype(np.float32), row0=row0)
        a = get_backend("cpu").summarize_model(job(150, 256))
        b = get_backend("cuda").summarize_model(job(150, 256))
        da, db = int(a.tree.state[0]), int(b.tree.state[0])
        out = {"nseg": [da, db],
               "seg_close": bool(da == db and np.allclose(a.tree.nodes[:da], b.tree.nodes[:db],
                                                          rtol=1e-6, atol=1e-12)
                                 and np.array_equal(a.tree.level[:da], b.tree.level[:db])
                                 and np.array_equal(a.tree.index[:da], b.tree.index[:db])),
               "ints_equal": bool(a.count == b.count and a.skipped == b.skipped
                                  and a.sketch == b.sketch
                                  and np.array_equal(a.below, b.below)
                                  and np.array_equal(a.nonfinite, b.nonfinite))}
        try:
            get_backend("cuda").summarize_model(job(10, 3))
            out["misaligned"] = "no error"
        except ValueError as e:
            out["misaligned"] = str(e)
        return out
    add("run_model_row0", run_model_row0)

    def sim_chunking_bitwise():
        # launch size and grid do not change a single bit of the CUDA result:
        # 100 rows in 8-row row-blocks, 32-row units: one launch grid-striding
        # one block over 4 units, 2 launches (64 and 36 rows) of 2 blocks, 4
        # launches of 32 rows (the last one 4 rows)
        m = Gaussian(n=5, scale=2.0)
        res = []
        for grid, ll in ((1, 1 << 20), (3, 320), (2, 160)):
            _patch(grid=grid, block_logits=64, launch_logits=ll)
            res.append(fs.simulate(m, 100, seed=11, backend="cuda"))
        return {"equal": [res[0] == r for r in res[1:]]}
    add("sim_chunking_bitwise", sim_chunking_bitwise)

    # ---- summarize arrays: G = 1 and G > 1 (n = 33: 8 threads per row at
    # 4 values a thread, 4 at 8)
    def arr(n, dt, target, rows=200, tpb=32, masked=(), grid=3, launch_logits=1 << 10, vpt=4,
            **kw):
        def f():
            _patch(tpb=tpb, vpt=vpt, grid=grid, launch_logits=launch_logits,
                   block_logits=kw.pop("block_logits", 256))
            x = _make_x(rows, n, dt)
            for r in masked:                     # rows short of _make_x's 7
                x[r, 3] = -np.inf
            t = target
            if t == "labels":
                t = np.random.default_rng(1).integers(0, n, size=rows)
            return _arr_pair(x, target=t, thresholds=(1e-3, 0.1, 0.5), **kw)
        return f
    # 8-row row-blocks, 4 a tile (direct writes): 104 rows are launches of
    # 96 and 8 rows, the first grid-striding 2 blocks over 3 tiles
    add("arr_n5_f32_argmax", arr(5, np.float32, "argmax", rows=104, grid=2,
                                 launch_logits=512, block_logits=64))
    # 64-row row-blocks over 2 tiles each (merged across tiles): 100 rows,
    # the second row-block 36 rows
    add("arr_n2_f64_int", arr(2, np.float64, 1, rows=100, block_logits=128))
    # 8 threads a row in 4-row tiles (4-row row-blocks): 16 rows are 2
    # launches of 12 and 4 rows, the first grid-striding 2 blocks over 3 units
    add("arr_n33_f32_labels", arr(33, np.float32, "labels", rows=16, grid=2,
                                  launch_logits=512))
    # 64-thread blocks, 64-row row-blocks = tiles: 66 rows are 2 launches,
    # the second a 2-row tail.  4 threads a row at 8 values a thread
    # (shares of 9 and 8): a tile is 4 rounds of 16 rows with 2 merge
    # barriers each, where 8 threads a row take 8 rounds of 4 (barriers are
    # what the simulator pays for)
    add("arr_n33_f64_argmax_tpb64", arr(33, np.float64, "argmax", rows=66, tpb=64, vpt=8,
                                        block_logits=4096))
    # 16 threads a row, 2-row tiles: 8 rows are launches of 6 and 2 rows,
    # the first grid-striding 2 blocks over 3 units
    add("arr_n70_f32_int", arr(70, np.float32, 69, rows=8, grid=2, launch_logits=512))
    # 32 threads a row, shares of 67 > CHUNK float32 elements: read in
    # chunks, a launch a row.  6 rows: ties (row 0), a single finite logit
    # (row 5) and a -inf mask (row 2); every mean agrees to 4e-8 relative.
    # (Not 8 of _make_x's rows: over them the mean of log10(entropy)
    # cancels to -0.004, where a relative 1e-6 is beyond float32 rows' sums
    # in any order.)
    add("arr_n2149_f32_labels", arr(2149, np.float32, "labels", rows=6, masked=(2,)))

    def arr_n1():
        _patch()
        x = np.random.default_rng(3).normal(size=(50, 1)).astype(np.float32)
        x[7, 0] = -np.inf                              # no finite logit: omitted
        return _arr_pair(x, nan_policy="omit")
    add("arr_n1", arr_n1)

    def arr_extreme():
        # exact log domain: gaps of 1e4 (float32) and 720 (float64: subnormal
        # values), subnormal exponentials in float32, -inf masks
        _patch()
        x32 = np.array([[0.0, -1e4, -1e4 - 1.0, -np.inf],
                        [0.0, -100.0, -100.0, -150.0],
                        [3.0, 3.0, -np.inf, -200.0],
                        [1e30, 1e30 - 1e24, -1e30, 0.0]], dtype=np.float32)
        x64 = np.array([[0.0, -720.0, -721.0, -np.inf],
                        [0.0, -745.0, -800.0, -1e300]], dtype=np.float64)
        out = {"f32": _arr_pair(x32, thresholds=(1e-300, 1e-40)),
               "f64": _arr_pair(x64, target=1, thresholds=(1e-310, 1e-300))}
        out["cpu_log10_jd"] = fs.observables(x32)["log10_jac_diag_max"].tolist()
        return out
    add("arr_extreme", arr_extreme)

    def arr_bad_rows():
        _patch()
        x = _make_x(42, 6, np.float32)
        x[13, 2] = np.nan
        x[17, :] = -np.inf
        x[40, 0] = np.inf
        out = {"omit": _arr_pair(x, nan_policy="omit")}
        msgs = []
        for f in (lambda: fs.summarize(x, backend="cpu"),
                  lambda: fs.summarize(x, backend="cuda"),
                  lambda: fs.summarize(cuda.to_device(x)),
                  lambda: fs.summarize(_CAI(x))):
            try:
                f()
                msgs.append("no error")
            except ValueError as e:
                msgs.append(str(e))
        out["raise_messages"] = msgs
        return out
    add("arr_bad_rows", arr_bad_rows)

    def arr_device_layouts():
        # strided views (no copy) and gathered copies, through api.summarize
        _patch()
        rng = np.random.default_rng(5)
        out = {}
        x3 = (rng.normal(size=(4, 9, 6)) * 3).astype(np.float32)
        x3[1, 2, 3] = -np.inf                          # a masked element
        cases = {
            "axis0_2d": (x3[0], 0),                    # rows are columns: strided view
            "axis1_3d": (x3, 1),                       # middle axis: gathered copy
            "axes_12": (x3, (1, 2)),                   # joint softmax over 54 logits
            "noncontig_rows": (x3[:, ::2, :], -1),     # strided batch
            "ints": (rng.integers(-5, 5, size=(30, 7)), -1),   # converted to float64
            "f16": (x3[0].astype(np.float16), -1),     # converted to float32
        }
        for name, (x, axis) in cases.items():
            a = fs.summarize(np.asarray(x), axis=axis, backend="cpu")
            b = fs.summarize(_CAI(np.ascontiguousarray(x)) if name != "noncontig_rows"
                             else _CAI(x), axis=axis)
            out[name] = {"cpu": a.to_dict(), "gpu": b.to_dict(),
                         "config_equal": a.config == b.config}
        return out
    add("arr_device_layouts", arr_device_layouts)

    # ---- softmax of device arrays
    def softmax_device():
        from fastsoftmax.backends.cuda._geometry import group_size
        _patch(vpt=2)
        rng = np.random.default_rng(8)
        out = {}
        x = (rng.normal(size=(8, 33)) * 5).astype(np.float32)
        x[3, ::4] = -np.inf
        x[4, :] = -np.inf                              # no finite logit: NaN row
        x[6, 2] = np.nan
        x[7, 0] = 1e4
        # the gathered (mid3d) and converted (f16) cases launch the copy
        # kernel twice each, a thread an element: 9 columns keep the special
        # rows and a group of threads a row
        x9 = x[:, :9]
        # g1: a thread a row (n < 2 * VALUES_PER_THREAD); g2, gN: a group
        cases = {"g1_n3": (x[:, :3], -1), "g2_n5": (x[:, :5], -1), "gN_n33": (x, -1),
                 "axis0": (x, 0),
                 "mid3d": (x9.reshape(2, 4, 9).astype(np.float64), 1),
                 "all": (x[:3, :4], None), "f16": (x9.astype(np.float16), -1)}
        for name, (a, axis) in cases.items():
            for log in (False, True):
                ref = (fs.log_softmax if log else fs.softmax)(a, axis=axis)
                got = _launch.softmax(cuda.to_device(np.ascontiguousarray(a)), axis, log)
                got = got.copy_to_host()
                ref64 = np.asarray(ref, np.float64)
                got64 = np.asarray(got, np.float64)
                same_nan = bool(np.array_equal(np.isnan(ref), np.isnan(got)))
                ok = np.isfinite(ref) & np.isfinite(got)
                rel = float(np.max(np.abs(got64[ok] - ref64[ok])
                                   / np.maximum(np.abs(ref64[ok]), 1e-300), initial=0.0))
                inf_same = bool(np.array_equal(np.isinf(ref), np.isinf(got)))
                n = a.size if axis is None else a.shape[axis]
                out[f"{name}_{'log' if log else 'p'}"] = {
                    "group": group_size(n), "same_nan": same_nan, "same_inf": inf_same,
                    "max_rel": rel,
                    "shape": list(got.shape), "ref_shape": list(ref.shape),
                    "dtype": str(got.dtype), "ref_dtype": str(ref.dtype)}
        return out
    add("softmax_device", softmax_device)

    def softmax_f32_wide():
        # float32 softmax in float32 arithmetic: logits spread over hundreds
        # (rounding x_i - m1 alone would cost 6e-6 at -100), subnormal and
        # zero outputs, -inf masks; ulps against float64 rounded once.  6
        # rows a case (5 of g2_n5's and 2 of gN_n64's scaled by 30 or 60,
        # differences down to -139 and -288): a difference rounded to
        # float32 would be off by tens of ulps there; g1_n3 is a thread a row
        from fastsoftmax.backends.cuda._geometry import group_size
        _patch(vpt=2)
        rng = np.random.default_rng(12)
        out = {}
        for name, n in (("g2_n5", 5), ("gN_n64", 64), ("g1_n3", 3)):
            x = (rng.normal(size=(6, n)) * rng.choice([1.0, 30.0, 60.0], size=(6, 1)))
            x[::5, 1] = -np.inf
            x = x.astype(np.float32)
            x64 = x.astype(np.float64)
            m = x64.max(axis=1, keepdims=True)
            p = np.exp(x64 - m)
            rest = p.copy()
            rest[np.arange(len(x)), np.argmax(x64, axis=1)] = 0.0
            a = rest.sum(axis=1, keepdims=True)         # the rest mass, the top left out
            for log in (False, True):
                got = _launch.softmax(cuda.to_device(x), -1, log).copy_to_host()
                ref = (x64 - m) - np.log1p(a) if log else p / (1.0 + a)
                fin = np.isfinite(ref)
                r32 = np.abs(ref.astype(np.float32))
                ulp = np.spacing(np.where(fin, r32, 1.0).astype(np.float32)).astype(np.float64)
                err = np.abs(got.astype(np.float64)[fin] - ref[fin]) / ulp[fin]
                out[f"{name}_{'log' if log else 'p'}"] = {
                    "group": group_size(n), "max_ulp": float(err.max()),
                    "subnormal_outputs": int(np.sum((r32 > 0) & (r32 < 1.1754944e-38))),
                    "same_inf": bool(np.array_equal(np.isinf(got), np.isinf(ref)))}
        return out
    add("softmax_f32_wide", softmax_f32_wide)

    def warp_merge():
        # the group merge itself: every thread of a group ends with the same
        # bits, those of the fixed tree over the threads' partial states
        from fastsoftmax._kernels.row import row_state, state_merge
        rng = np.random.default_rng(13)
        out = {}
        for dt in (np.float32, np.float64):
            x = (rng.normal(size=(4, 45)) * 6).astype(dt)
            x[1, ::3] = -np.inf
            x[2, :] = 1.5                                   # ties
            x[3, :] = -np.inf
            x[3, 7] = 0.25                                  # a single finite logit
            n = x.shape[1]
            for G in (2, 4, 8, 16, 32):
                NG = 32 // G

                # a kernel's globals are what the simulator swaps for its
                # own cuda module: the kernel is made with globals of its own
                g = {"cuda": cuda, "np": np, "_kernels": _kernels, "G": G, "n": n}
                exec(_WARP_MERGE_KERNEL, g)
                k = cuda.jit(g["k"])
                res = np.full((32, 6), np.nan)
                k[1, 32](x, res)
                same = all(np.array_equal(res[g * G:(g + 1) * G],
                                          np.repeat(res[g * G:g * G + 1], G, axis=0),
                                          equal_nan=True) for g in range(NG))
                tree = True
                for r in range(min(NG, x.shape[0])):
                    parts = [tuple(float(v) for v in row_state(x[r, ln::G],
                                                                 (n - ln + G - 1) // G))
                             for ln in range(G)]
                    while len(parts) > 1:
                        parts = [state_merge(*parts[i], *parts[i + 1])
                                 for i in range(0, len(parts), 2)]
                    tree = tree and bool(np.array_equal(np.array(parts[0], np.float64),
                                                        res[r * G], equal_nan=True))
                out[f"{np.dtype(dt).name}_G{G}"] = {"lanes_equal": bool(same),
                                                   "fixed_tree": tree,
                                                   "state": res[::G][:4].tolist()}
            out[f"{np.dtype(dt).name}_rows"] = x.astype(np.float64).tolist()
        return out
    add("warp_merge", warp_merge)

    def chunked_share():
        # a float32 thread's share read once from memory: chunks of C
        # elements, each chunk's state folded into the running one in order;
        # shares at the threshold (one row_state: the whole share's bits),
        # just over it (a last chunk of one element), 512 elements (n =
        # 16,384 over 32 threads); float64 and strided rows' shares keep one
        # row_state
        from fastsoftmax._kernels.row import row_bad, row_state, state_merge
        rng = np.random.default_rng(17)
        C = _kernels.CHUNK
        shares = []
        for cnt in (C, C + 1, 3 * C + 17, 512):
            s = rng.random(cnt) * 0.5
            s[rng.integers(0, cnt, size=cnt // 10)] = -np.inf
            shares.append(s.astype(np.float32))
        s = rng.normal(size=512) * 6                         # wide, top in a late chunk
        s[400] = 40.0
        shares.append(s.astype(np.float32))
        s = np.full(2 * C + 5, -np.inf)                      # one finite logit, last chunk
        s[-1] = 1.0
        shares.append(s.astype(np.float32))
        cases = []
        for s in shares:
            got = tuple(float(v) for v in _kernels.share_state_chunked(s, s.size))
            whole = tuple(float(v) for v in row_state(s, s.size))
            cases.append({"x": s.astype(np.float64).tolist(), "got": list(got),
                          "wide": bool(np.nanmax(s) - np.nanmin(s[s > -np.inf]) > 1.0),
                          "fold_bits": got == _chunk_fold(row_state, state_merge, s, C),
                          "whole_bits": got == whole})
        bad = []
        for pos, v in ((5, np.nan), (C + 2, np.nan), (2 * C + 7, np.inf)):
            s = np.linspace(-3.0, 3.0, 3 * C).astype(np.float32)
            s[pos] = v
            st = _kernels.share_state_chunked(s, s.size)
            bad.append(bool(row_bad(st[0], st[2], st[5])))
        out = {"C": C, "cases": cases, "bad": bad}
        # the kernel: G = 32 threads a row, shares of C + 3 or C + 4
        G = 32
        n = G * (C + 3) + 5
        for name, dt, order in (("float32", np.float32, "C"), ("float64", np.float64, "C"),
                                ("float32_F", np.float32, "F")):
            x = (rng.normal(size=(2, n)) * 6).astype(dt)
            x[0, ::5] = -np.inf
            x[1, :] = 1.5                                    # ties
            x = np.asarray(x, order=order)
            g = {"cuda": cuda, "np": np, "_kernels": _kernels, "G": G, "n": n}
            exec(_CHUNKED_KERNEL, g)
            res = np.full((2, G, 6), np.nan)
            cuda.jit(g["k"])[2, G](x, res)
            tree = []
            for r in range(2):
                cc = C if name == "float32" else n             # otherwise the whole share
                parts = [_chunk_fold(row_state, state_merge, x[r, ln::G], cc)
                         for ln in range(G)]
                while len(parts) > 1:
                    parts = [state_merge(*parts[i], *parts[i + 1])
                             for i in range(0, len(parts), 2)]
                tree.append(bool(np.array_equal(np.array(parts[0], np.float64), res[r, 0]))
                            and bool(np.all(res[r] == res[r, :1])))
            whole = [_chunk_fold(row_state, state_merge, x[0, ln::G], n) for ln in range(G)]
            while len(whole) > 1:
                whole = [state_merge(*whole[i], *whole[i + 1]) for i in range(0, len(whole), 2)]
            out[name] = {"kernel_tree": tree,
                         "row0_whole_bits": bool(np.array_equal(np.array(whole[0]), res[0, 0])),
                                      "kernel_rows": x.astype(np.float64).tolist(),
                                      "kernel_state": res[:, 0].tolist()}
        return out
    add("chunked_share", chunked_share)

    def scratch_geometry():
        # generated rows at n = 16,384 on a device of 132 multiprocessors and
        # 141 GB (an H200): the scratch leaves >= 2 blocks per multiprocessor;
        # on a 16 GB one the memory fraction caps it
        from fastsoftmax.backends.cuda import _geometry

        class Ctx:
            def __init__(self, total):
                self.total = total

            def get_memory_info(self):
                return (self.total, self.total)

        _patch(tpb=128, grid=None, launch_logits=1 << 29)
        real_sms, real_ctx = _geometry._sms, cuda.current_context
        out = {}
        try:
            _geometry._sms = lambda: 132
            for total in (141e9, 16e9):
                cuda.current_context = lambda total=total: Ctx(total)
                for dt in ("float32", "float64"):
                    L = _launch._Launcher(16384, dt, np.zeros(0), True, nrows=10 ** 6)
                    per_block = 128 * 16384 * np.dtype(dt).itemsize
                    out[f"{dt}_{total:.0e}"] = {"grid": L.grid,
                                                "scratch": 2 * L.grid * per_block}
        finally:
            _geometry._sms, cuda.current_context = real_sms, real_ctx
        return out
    add("scratch_geometry", scratch_geometry)

    def kernel_options():
        # fast math off for every kernel (the simulator records the flag)
        _patch()
        ks = [_kernels.get_kernel("observe", 32, 1, True),
              _kernels.get_kernel("observe", 32, 4, False),
              _kernels.get_kernel("softmax", 32, 4, True), _kernels.get_kernel("copy4")]
        return {"jit": dict(_kernels._JIT), "fastmath": [bool(k._fastmath) for k in ks]}
    add("kernel_options", kernel_options)
    return S


def _gate():
    sys.path.insert(0, os.path.join(REPO, "bench"))
    import gpu_compile
    return gpu_compile


def _ptx_capture():
    """(simulator) the kernels and argument types the launcher passes for
    the PTX variants, captured as the compile gate captures them: before any
    ``_patch``, at the backend's default geometry."""
    gate = _gate()
    by_name = {v[0]: v for v in gate.VARIANTS}
    out = []
    for name in PTX_VARIANTS + (PTX_CONTROL,):
        _, call, kw, which = by_name[name]
        kind, key, types = gate._capture_one(call, kw, which)
        out.append({"name": name, "kind": kind, "key": list(key),
                    "argtypes": [gate._type_to_json(t) for t in types]})
    return out


def _child_sim():
    import time
    import traceback
    from fastsoftmax.backends.cuda import _kernels
    # The simulator runs a block's threads as Python threads, and its block
    # manager polls them in a loop that keeps the GIL: a thread released at
    # a barrier (cuda.syncthreads, the shuffles' stand-in) gets the GIL only
    # when the interpreter takes it from the poller, once a switch interval
    # (5 ms by default).  At 1 ms a barrier costs a fraction as much, and
    # shorter intervals lose more to the switches themselves.  What a kernel
    # computes does not depend on how its threads interleave between
    # barriers (the bitwise checks here hold under any order, as on a device).
    sys.setswitchinterval(1e-3)
    ok, why = _kernels.probe()
    res = {"_probe": [ok, why]}
    try:
        res["_ptx_capture"] = _ptx_capture()
    except Exception as e:   # noqa: BLE001 - reported to the parent
        res["_ptx_capture"] = {"error": f"{type(e).__name__}: {e}",
                               "tb": traceback.format_exc()}
    for name, fn in _scenarios().items():
        t0 = time.time()
        try:
            r = fn()
        except Exception as e:   # noqa: BLE001 - reported to the parent
            r = {"error": f"{type(e).__name__}: {e}", "tb": traceback.format_exc()}
        r["_seconds"] = round(time.time() - t0, 2)
        res[name] = r
    return res


def _child_nogpu():
    import fastsoftmax as fs
    from fastsoftmax.backends import cuda_status
    from fastsoftmax.models import Gaussian
    ok, why = cuda_status()
    out = {"available": ok, "reason": why}
    try:
        fs.simulate(Gaussian(n=4), 10, backend="cuda")
        out["cuda"] = "no error"
    except RuntimeError as e:
        out["cuda"] = str(e)
    s = fs.simulate(Gaussian(n=4), 10, backend="auto")
    out["auto_backend"] = s.config["backend"]
    try:
        fs.summarize(np.zeros((3, 4)), backend="cuda")
        out["summarize_cuda"] = "no error"
    except RuntimeError as e:
        out["summarize_cuda"] = str(e)
    out["summarize_auto"] = fs.summarize(np.zeros((3, 4)), backend="auto").samples
    return out


# the variant compiled here: the float32 summary of array rows with 32
# threads a row, whose shares are read in chunks (the kernel with the most
# code and registers); bench/gpu_compile.py compiles every variant for sm_80
# and sm_90 with the same checks.  The control: a softmax kernel built with
# fastmath=True, which the check must catch; the smallest float32 one (a
# thread a row), whose element loop's float32 arithmetic is what fast math
# flushes (.ftz.f32), and whose build adds the least to the child's compile.
PTX_VARIANTS = ("observe/rows/n2048/float32/C",)
PTX_CONTROL = "softmax/n16/float32/C"


def _child_ptx():
    from numba import cuda
    if getattr(cuda, "implementation", "") == "Built-in":
        return {"skip": "numba-cuda is not installed (numba's deprecated built-in CUDA "
                        "target only)"}
    from numba.cuda.cudadrv import nvvm
    try:
        nvvm.NVVM()
    except Exception as e:   # noqa: BLE001
        return {"skip": f"NVVM not available: {e}"}
    gate = _gate()
    try:
        gate.ptxas_path()
    except RuntimeError as e:
        return {"skip": str(e)}
    cap = os.environ.get("FASTSOFTMAX_TEST_PTX_CAPTURE")
    if cap:
        variants = json.loads(cap)
        for v in variants:
            v["key"] = tuple(v["key"])
            v["argtypes"] = tuple(gate._type_from_json(j) for j in v["argtypes"])
    else:
        # no simulator child ran: the gate's own capture (a child of its own)
        variants = gate.capture(PTX_VARIANTS + (PTX_CONTROL,))
    control = [v for v in variants if v["name"] == PTX_CONTROL][0]
    variants = [v for v in variants if v["name"] != PTX_CONTROL]
    out = {}
    for v in variants:
        try:
            row = gate.compile_variant(v, (9, 0), keep_ptx=True)
        except Exception as e:   # noqa: BLE001
            # NVVM imports but the toolkit libraries (NVRTC) are not installed
            if type(e).__name__ == "DynamicLibNotFoundError" or "nvrtc" in str(e).lower():
                return {"skip": f"CUDA toolkit libraries not installed: {e}"}
            raise
        if "error" in row and "nvrtc" in row["error"].lower():
            return {"skip": f"CUDA toolkit libraries not installed: {row['error']}"}
        ptx = row.pop("ptx", "")
        out[v["name"]] = {"fastmath_ops": gate.fastmath_ops(ptx), "bytes": len(ptx),
                          "error": row.get("error"), "spill": row.get("spill")}
    # the check sees fast math when it is there
    from fastsoftmax.backends.cuda import _kernels
    v = control
    ptx, _ = cuda.compile_ptx(_kernels._BUILDERS[v["kind"]](*v["key"]).py_func, v["argtypes"],
                              cc=(9, 0), fastmath=True)
    out["_fastmath_control"] = gate.fastmath_ops(ptx)
    return out


def _child_plain():
    # without the simulator: the no-GPU errors first, then the PTX compile
    # (which installs the gate's compute-capability stand-in)
    return {"nogpu": _child_nogpu(), "ptx": _child_ptx()}


def _child_builtin():
    # numba's own numba.cuda (the state without numba-cuda): the import
    # redirection numba-cuda installs is dropped before numba.cuda is imported
    import numba.cuda
    import fastsoftmax as fs
    from fastsoftmax.backends import cuda_status
    from fastsoftmax.models import Gaussian
    ok, why = cuda_status()
    out = {"implementation": getattr(numba.cuda, "implementation", None),
           "simulator": os.environ.get("NUMBA_ENABLE_CUDASIM"), "available": ok,
           "reason": why}
    for key, f in (("simulate", lambda: fs.simulate(Gaussian(n=4), 10, backend="cuda")),
                   ("summarize", lambda: fs.summarize(np.zeros((3, 4)), backend="cuda"))):
        try:
            f()
            out[key] = "no error"
        except Exception as e:   # noqa: BLE001 - the type is asserted by the parent
            out[key] = f"{type(e).__name__}: {e}"
    return out


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "builtin":
        sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "NumbaCudaFinder"]
    try:
        import numba.cuda
    except Exception as e:   # noqa: BLE001
        print("RESULT " + json.dumps({"skip": f"numba.cuda cannot be imported: {e}"}))
        sys.exit(0)
    if mode not in ("nogpu", "builtin", "plain") and getattr(numba.cuda, "implementation",
                                                    "") == "Built-in":
        print("RESULT " + json.dumps({"skip": "numba-cuda is not installed (numba's "
                                              "deprecated built-in CUDA target only)"}))
        sys.exit(0)
    fn = {"sim": _child_sim, "plain": _child_plain, "builtin": _child_builtin}[mode]
    print("RESULT " + json.dumps(fn(), default=float))
    sys.exit(0)


# ==========================================================================
# parent side (pytest)

@pytest.fixture(scope="module")
def sim():
    res = _run_child("sim", NUMBA_ENABLE_CUDASIM=1)
    if "skip" in res:
        pytest.skip(res["skip"])
    return res


@pytest.fixture(scope="module")
def plain(request):
    """The child without the simulator: no-GPU errors and the PTX check,
    the latter on the launch types the simulator child captured."""
    try:
        cap = request.getfixturevalue("sim").get("_ptx_capture")
    except (pytest.skip.Exception, Exception):
        cap = None          # the simulator child's own test reports why
    if isinstance(cap, dict):
        raise AssertionError(cap.get("tb", cap.get("error")))
    return _run_child("plain", **({"FASTSOFTMAX_TEST_PTX_CAPTURE": json.dumps(cap)}
                                  if cap else {}))


def _part(res, key):
    if "skip" in res:
        pytest.skip(res["skip"])
    res = res[key]
    if "skip" in res:
        pytest.skip(res["skip"])
    return res


def _acc(d):
    from fastsoftmax.summary import Summary
    return Summary.from_dict(d)._acc


def assert_agree(cpu, gpu, rtol=1e-6):
    """Integer parts exact, min/max and means to rtol, M2 to a looser rtol."""
    a, b = _acc(cpu), _acc(gpu)
    assert (a.count, a.skipped) == (b.count, b.skipped)
    np.testing.assert_array_equal(a.nonfinite, b.nonfinite)
    np.testing.assert_array_equal(a.below, b.below)
    assert a.sketch == b.sketch
    np.testing.assert_array_equal(a.mom[:, 0], b.mom[:, 0])
    np.testing.assert_allclose(b.vmin, a.vmin, rtol=rtol, atol=0)
    np.testing.assert_allclose(b.vmax, a.vmax, rtol=rtol, atol=0)
    np.testing.assert_allclose(b.mom[:, 1], a.mom[:, 1], rtol=rtol, atol=1e-300)
    scale = np.maximum(a.mom[:, 0] * a.mom[:, 1] ** 2, 1e-300)
    assert np.all(np.abs(b.mom[:, 2] - a.mom[:, 2]) <= 1e-5 * np.abs(a.mom[:, 2])
                  + 1e-9 * scale)


SIM_PAIRS = ["sim_gauss_n5", "sim_gauss_n1", "sim_gauss_n33_sampled", "sim_shifted_random_f64",
             "sim_dot_exact_int", "sim_dot_explicit", "sim_large_gap_f32",
             "arr_n5_f32_argmax", "arr_n2_f64_int", "arr_n33_f32_labels",
             "arr_n33_f64_argmax_tpb64", "arr_n70_f32_int", "arr_n2149_f32_labels", "arr_n1"]


def _get(sim, name):
    r = sim[name]
    assert "error" not in r, r.get("tb", r["error"])
    return r


def test_probe_under_simulator(sim):
    ok, why = sim["_probe"]
    assert ok and "simulator" in why


@pytest.mark.parametrize("name", SIM_PAIRS)
def test_cuda_summary_agrees_with_cpu(sim, name):
    r = _get(sim, name)
    assert r["config_equal"]
    assert_agree(r["cpu"], r["gpu"])
    if "device_equals_host" in r:     # same kernel, same bits, whatever the source
        assert r["device_equals_host"]
    assert _acc(r["gpu"]).count > 0


def test_explicit_matches_exact_shape(sim):
    r = _get(sim, "sim_dot_explicit")
    assert _acc(r["gpu"]).count == 80


def test_run_model_piece_lines_up(sim):
    r = _get(sim, "run_model_row0")
    assert r["nseg"][0] == r["nseg"][1] == 4          # blocks [128, 203): 64 + 8 + 2 + 1
    assert r["seg_close"] and r["ints_equal"]
    assert "multiple of the block size" in r["misaligned"]


def test_cuda_result_independent_of_launches_and_grid(sim):
    assert _get(sim, "sim_chunking_bitwise")["equal"] == [True, True]


def test_large_gap_and_subnormals_exact(sim):
    r = _get(sim, "arr_extreme")
    for key in ("f32", "f64"):
        p = r[key]
        assert_agree(p["cpu"], p["gpu"], rtol=1e-9)
        assert p["device_equals_host"]
    # [0, -1e4, -1e4 - 1]: p1 (1 - p1) = e^-1e4 (1 + e^-1) to 1e-4000 relative,
    # log10 about -4342.8, not -inf
    expect = (-1e4 + math.log1p(math.exp(-1.0))) / math.log(10)
    ref = r["cpu_log10_jd"]
    assert ref[0] == pytest.approx(expect, rel=1e-12)
    b = _acc(r["f32"]["gpu"])
    from fastsoftmax._kernels.row import JAC_DIAG_MAX, NOBS
    c = NOBS + JAC_DIAG_MAX
    assert b.vmin[c] == pytest.approx(min(ref), rel=1e-12)      # row 3: gap ~1e24
    assert b.vmax[c] == pytest.approx(max(ref), rel=1e-12)
    assert b.mom[c, 1] == pytest.approx(sum(ref) / len(ref), rel=1e-12)
    # float64 gap 720: one_minus_max_prob is a subnormal double, kept (not flushed)
    from fastsoftmax._kernels.row import ONE_MINUS_MAX_PROB
    b64 = _acc(r["f64"]["gpu"])
    assert 0.0 < b64.vmin[ONE_MINUS_MAX_PROB] < 2.3e-308


def test_bad_rows(sim):
    r = _get(sim, "arr_bad_rows")
    assert_agree(r["omit"]["cpu"], r["omit"]["gpu"])
    assert _acc(r["omit"]["gpu"]).skipped == 3      # rows 13 (NaN), 17 (-inf), 40 (+inf)
    msgs = r["raise_messages"]
    assert msgs[0].startswith("row 13 of x contains NaN")
    assert msgs[1:] == [msgs[0]] * 3


@pytest.mark.parametrize("case", ["axis0_2d", "axis1_3d", "axes_12", "noncontig_rows", "ints",
                                  "f16"])
def test_device_array_layouts(sim, case):
    r = _get(sim, "arr_device_layouts")[case]
    assert r["config_equal"]
    assert_agree(r["cpu"], r["gpu"])


def test_softmax_of_device_arrays(sim):
    r = dict(_get(sim, "softmax_device"))
    r.pop("_seconds")
    assert len(r) == 14
    # both kernels ran: a thread a row, and a group of threads a row
    groups = {name: v["group"] for name, v in r.items() if name.startswith("g")}
    assert groups == {"g1_n3_p": 1, "g1_n3_log": 1, "g2_n5_p": 2, "g2_n5_log": 2,
                      "gN_n33_p": 16, "gN_n33_log": 16}
    for name, v in r.items():
        assert v["same_nan"] and v["same_inf"], name
        assert v["shape"] == v["ref_shape"], name
        assert v["max_rel"] < (1e-3 if "f16" in name else 2e-6), (name, v["max_rel"])
        assert v["dtype"] == v["ref_dtype"], name
        assert v["dtype"] == {"mid3d": "float64", "f16": "float16"}.get(name.split("_")[0],
                                                                        "float32")


def test_softmax_float32_within_ulps(sim):
    # the documented bound of the float32 device softmax (``_kernels._span32``):
    # <= 3 ulp (subnormal outputs included), log_softmax <= 1.5 ulp
    r = {k: v for k, v in _get(sim, "softmax_f32_wide").items() if not k.startswith("_")}
    assert len(r) == 6
    assert {v["group"] for v in r.values()} == {1, 2, 32}
    for name, v in r.items():
        assert v["same_inf"], name
        assert v["max_ulp"] <= (1.5 if name.endswith("log") else 3.0), (name, v["max_ulp"])
    # the data reach the subnormal range, where the factor e^-64 / S applies
    assert r["gN_n64_p"]["subnormal_outputs"] > 0


def test_warp_merge_is_a_fixed_tree(sim):
    r = _get(sim, "warp_merge")
    assert len(r) == 13
    for dt in ("float32", "float64"):
        rows = np.array(r[f"{dt}_rows"])
        rtol = 2e-6 if dt == "float32" else 1e-12
        for G in (2, 4, 8, 16, 32):
            v = r[f"{dt}_G{G}"]
            assert v["lanes_equal"] and v["fixed_tree"], (dt, G)
            for i, got in enumerate(v["state"][:rows.shape[0]]):
                ref = _state_ref(rows[i].astype(dt))
                assert tuple(got[:2]) == tuple(ref[:2]), (dt, G, i)
                np.testing.assert_allclose(got[2:5], ref[2:5], rtol=rtol, atol=1e-300)
                assert abs(got[5] - ref[5]) <= rtol * (abs(ref[5]) + ref[2]), (dt, G, i)


def test_chunked_share_state(sim):
    # a long float32 share read once: the chunks' states folded in order (the
    # bits of the same fold written out in the test), short shares the bits
    # of one row_state, and the float64 reference within the chunked flush
    # bound: float32 partials of at most C / 16 = 4 terms, (4 - 1) 2**-24,
    # plus each term's own error (the exp to 1 ulp, e^3 to 4 ulp: 4 2**-23)
    # where the logits lie within 0.5 (the differences x - m2 exact); a wide
    # share adds the rounding of x - m2 (|x - m2| 2**-24 for a term): 2e-6
    r = _get(sim, "chunked_share")
    C = r["C"]
    assert C == 64
    tight = (C // 16 - 1) * 2.0 ** -24 + 4 * 2.0 ** -23
    assert len(r["cases"]) == 6 and sum(c["wide"] for c in r["cases"]) == 1
    for c in r["cases"]:
        x = np.array(c["x"])
        rtol = 2e-6 if c["wide"] else tight
        assert c["fold_bits"], x.size
        if x.size <= C:
            assert c["whole_bits"], x.size
        got, ref = c["got"], _state_ref(x.astype(np.float32))
        assert tuple(got[:2]) == tuple(ref[:2]), x.size
        np.testing.assert_allclose(got[2:5], ref[2:5], rtol=rtol, atol=1e-300)
        assert abs(got[5] - ref[5]) <= rtol * (abs(ref[5]) + ref[2]), x.size
    # the long random shares really went through the chunks (other bits)
    assert sum(not c["whole_bits"] for c in r["cases"]) == 4
    assert r["bad"] == [True, True, True]
    # the kernel's group state of long rows: every lane the bits of the tree
    # over the lanes' folds, and the reference within the float32 target
    # (a Fortran-ordered float32 array's rows: the whole shares' tree)
    for name in ("float32", "float64", "float32_F"):
        v = r[name]
        dt = name[:7]
        assert v["kernel_tree"] == [True, True], name
        assert v["row0_whole_bits"] == (name != "float32"), name
        rtol = 2e-6 if dt == "float32" else 1e-12
        for row, got in zip(v["kernel_rows"], v["kernel_state"]):
            ref = _state_ref(np.array(row).astype(dt))
            assert tuple(got[:2]) == tuple(ref[:2]), dt
            np.testing.assert_allclose(got[2:5], ref[2:5], rtol=rtol, atol=1e-300)
            assert abs(got[5] - ref[5]) <= rtol * (abs(ref[5]) + ref[2]), dt


def test_generated_scratch_fills_an_h200(sim):
    r = _get(sim, "scratch_geometry")
    for dt in ("float32", "float64"):
        big = r[f"{dt}_1e+11"]
        assert big["grid"] >= 2 * 132, (dt, big)
        assert big["scratch"] <= 0.125 * 141e9, (dt, big)
        small = r[f"{dt}_2e+10"]
        assert small["scratch"] <= max(0.125 * 16e9, 2 ** 31), (dt, small)
        assert small["grid"] < big["grid"], (dt, small)


def test_kernels_compiled_without_fastmath(sim):
    r = _get(sim, "kernel_options")
    assert r["jit"] == {"fastmath": False}
    assert r["fastmath"] == [False] * 4


def test_simulator_runtime_budget(sim):
    # a guard against the simulated cases growing without bound, not a
    # timing: the suite runs on every core, so the simulator shares them with
    # another test file
    total = sum(v.get("_seconds", 0) for v in sim.values() if isinstance(v, dict))
    assert total < 450, total


def test_cuda_backend_without_gpu(plain):
    res = _part(plain, "nogpu")
    if res["available"]:
        pytest.skip(f"a GPU is usable here ({res['reason']})")
    assert res["cuda"].startswith("backend='cuda' is not usable: ")
    assert res["reason"] and res["reason"] in res["cuda"]
    assert res["summarize_cuda"] == res["cuda"]
    assert res["auto_backend"] == "cpu"
    assert res["summarize_auto"] == 3


@pytest.mark.parametrize("simulator", [1, 0])
def test_cuda_backend_with_numba_builtin_cuda_only(simulator):
    # numba's built-in numba.cuda alone (with or without the simulator):
    # backend="cuda" says what to install, before any work
    res = _run_child("builtin", **({"NUMBA_ENABLE_CUDASIM": 1} if simulator else {}))
    if "skip" in res:
        pytest.skip(res["skip"])
    assert res["implementation"] == "Built-in"
    assert not res["available"]
    assert "numba-cuda is not installed" in res["reason"]
    assert "pip install" in res["reason"]
    expect = f"RuntimeError: backend='cuda' is not usable: {res['reason']}"
    assert res["simulate"] == expect
    assert res["summarize"] == expect


def test_kernels_compile_for_sm90_without_fastmath(plain):
    res = dict(_part(plain, "ptx"))
    control = res.pop("_fastmath_control")
    assert control, "the fast-math check found nothing in a fastmath=True kernel"
    assert sorted(res) == sorted(PTX_VARIANTS)
    for name, v in res.items():
        assert v["error"] is None, (name, v["error"])
        assert v["spill"] == 0, name
        assert v["bytes"] > 1000, name
        assert v["fastmath_ops"] == [], (name, v["fastmath_ops"])


# ==========================================================================
# the shared row-state merge (compiled for the CPU here; the CUDA kernels merge
# their threads' partial states with it)

def _state_ref(x):
    """(m1, m2, R, E2, E3, V) of a row in float64 from its sorted values."""
    x = np.asarray(x, np.float64)
    s = np.sort(x)[::-1]
    m1 = s[0]
    m2 = s[1] if s.size > 1 else -np.inf
    if m2 == -np.inf:
        return (m1, m2, 0.0, 0.0, 0.0, 0.0)
    rest = s[1:][np.isfinite(s[1:])]
    e = np.exp(rest - m2)
    return (m1, m2, e.sum(), (e * e).sum(), (e ** 3).sum(), (e * (m2 - rest)).sum())


def _build_split_state(key):
    """The strided split and lane-order merge, compiled into numba's cache:
    ``key``, the package kernels' source key, is in its closure, so the
    cache index changes with the row math it inlines, not only with this
    file."""
    import numba

    from fastsoftmax._kernels.row import row_state, state_merge

    @numba.njit(cache=True)
    def f(x, G):
        key  # noqa: B018  (part of the cache key)
        n = x.size
        s = row_state(x[0::G], (n + G - 1) // G)
        for lane in range(1, G):
            t = row_state(x[lane::G], (n - lane + G - 1) // G)
            s = state_merge(s[0], s[1], s[2], s[3], s[4], s[5],
                            t[0], t[1], t[2], t[3], t[4], t[5])
        return s
    return f


@pytest.fixture(scope="module")
def split_state():
    import _children
    return _build_split_state(_children.source_key())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_state_merge_of_strided_parts_is_the_row_state(split_state, dtype):
    # a row split into G strided parts (as G threads read it), merged in lane
    # order: the float64 reference state of the whole row, ties, -inf masks
    # and single finite logits included
    rng = np.random.default_rng(0)
    rtol = 2e-6 if dtype == np.float32 else 1e-12
    for _ in range(150):
        n = int(rng.integers(1, 70))
        x = rng.normal(size=n) * rng.choice([1.0, 5.0, 20.0])
        if rng.random() < 0.3:
            x[rng.integers(0, n, size=max(1, n // 3))] = -np.inf
        if rng.random() < 0.2:
            x = np.round(x)
        x = x.astype(dtype)
        ref = _state_ref(x)
        for G in (1, 2, 4, 16):
            got = split_state(x, G)
            assert tuple(got[:2]) == tuple(ref[:2])
            np.testing.assert_allclose(got[2:5], ref[2:5], rtol=rtol, atol=1e-300)
            # V enters the entropy only beside g R: its error is measured
            # against R (float32 exps are each good to ~1 ulp relative to 1)
            assert abs(got[5] - ref[5]) <= rtol * (abs(ref[5]) + ref[2]), (got, ref)


def test_state_merge_keeps_bad_rows_bad(split_state):
    from fastsoftmax._kernels.row import row_bad
    x = np.arange(12.0)
    for i, v in ((5, np.nan), (0, np.nan), (11, np.inf)):
        y = x.copy()
        y[i] = v
        for G in (1, 3, 4):
            m1, m2, r, e2, e3, vv = split_state(y, G)
            assert row_bad(m1, r, vv), (i, v, G)
    y = np.full(6, -np.inf)
    y[2] = np.nan                                    # NaN among -inf only
    m1, m2, r, e2, e3, vv = split_state(y, 2)
    assert row_bad(m1, r, vv)
    m1, m2, r, e2, e3, vv = split_state(x, 4)
    assert not row_bad(m1, r, vv)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_device_row_sums_keep_the_flush_bound(dtype):
    # row_sums as the CUDA target compiles it (its Python body, which the
    # simulator runs): a long row's terms in partials of the row's dtype,
    # flushed into float64 every 16 elements.  Each float32 partial of at
    # most 16 terms in (0, 1] is good to 15 * 2**-24, each exp to 1 ulp: a
    # float32 running sum over the 32,768 terms is off by ~2.4e-6 here.
    # A float64 running sum over these terms is good to ~1e-15 at either
    # length, far inside 1e-12: the float64 row checks the sums themselves,
    # over 4,096 terms (256 flushes)
    from fastsoftmax._kernels.row import row_sums, row_top2
    rng = np.random.default_rng(3)
    n = 1 << 15 if dtype == np.float32 else 1 << 12
    x = (rng.random(n) * 0.5).astype(dtype)
    x[rng.integers(0, n, size=50)] = -np.inf
    m1, m2 = row_top2(x, n)
    got = row_sums(x, n, m2)
    ref = _state_ref(x)[2:]
    rtol = 15 * 2.0 ** -24 + 2.0 ** -23 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got[:3], ref[:3], rtol=rtol, atol=0)
    assert abs(got[3] - ref[3]) <= rtol * (abs(ref[3]) + ref[0])


def test_device_row_top2_one_pass():
    # row_top2 as the CUDA target compiles it (its Python body): the two
    # largest values with multiplicity, NaN ignored, against a sort
    from fastsoftmax._kernels.row import row_top2
    rng = np.random.default_rng(4)
    for _ in range(1500):
        n = int(rng.integers(1, 12))
        x = np.round(rng.normal(size=n) * 2)                  # many ties
        for _ in range(int(rng.integers(0, 3))):
            x[rng.integers(0, n)] = rng.choice([np.nan, np.inf, -np.inf])
        for dt in (np.float32, np.float64):
            xx = x.astype(dt)
            s = np.sort(xx[~np.isnan(xx)])[::-1]
            ref = (s[0] if s.size else -np.inf, s[1] if s.size > 1 else -np.inf)
            assert tuple(row_top2(xx, n)) == ref, xx
