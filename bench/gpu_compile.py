#!/usr/bin/env python
"""Compile gate of the CUDA backend: no GPU needed.

    python bench/gpu_compile.py                  # every variant, sm_80 and sm_90
    python bench/gpu_compile.py --max-registers 32   # a register cap (spills: fails)
    python bench/gpu_compile.py --inject-compile-error   # one broken variant: fails
    python bench/gpu_compile.py --json out.json  # the table as JSON too

Every kernel variant a run can launch (``VARIANTS``: the dtypes, layouts,
threads per row, generated rows, softmax / log_softmax, the copy kernels) is
compiled with NVIDIA's NVVM (``numba.cuda.compile_ptx``) for each target
compute capability, and the PTX is assembled by ``ptxas -v`` (package
``nvidia-cuda-nvcc-cu12``).  One table: registers, spill bytes, stack frame,
shared memory, resident blocks per multiprocessor and occupancy at the
backend's ``THREADS_PER_BLOCK``, and the float64 arithmetic instructions of
float32 kernels.  Exit status 1 on a compile error, any spill, or any fast-math
instruction in the PTX (``FASTMATH_PTX``: flushed or approximate float32
arithmetic).

Argument types are not written here: a child interpreter under the CUDA
simulator runs each variant's host entry point (``fs.simulate``,
``fs.summarize``, ``fs.softmax``) with a stand-in for
``_kernels.get_kernel`` that records ``numba.typeof`` of the arguments the
launcher really passes and stops the run.  A regrouping of kernel arguments
therefore cannot leave the gate behind.

One patch: numba-cuda's device-function dispatchers ask
``get_current_device().compute_capability`` while a kernel is typed, which
needs a driver; the gate answers with the target's compute capability.  It is
applied to the numba-cuda versions in ``NUMBA_CUDA_RANGE`` only and fails
loudly when the version or the name differs.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

#: numba-cuda versions the compute-capability stand-in is checked against: [lo, hi)
NUMBA_CUDA_RANGE = ((0, 30), (0, 31))
#: target compute capabilities: A100, H100/H200
CCS = ((8, 0), (9, 0))
#: per multiprocessor (CUDA occupancy data for these targets): 32-bit
#: registers, shared memory in bytes (1 KiB of it reserved per block), threads,
#: resident blocks
SM_LIMITS = {(8, 0): dict(regs=65536, smem=167936, threads=2048, blocks=32),
             (9, 0): dict(regs=65536, smem=233472, threads=2048, blocks=32)}
# PTX instructions that fast math would bring: flushed float32 arithmetic and
# approximate transcendentals/division (libdevice's accurate float64 routines
# seed a Newton step with rcp.approx.ftz.f64, which is fine)
FASTMATH_PTX = re.compile(r"\.ftz\.f32|\b(ex2|lg2|sin|cos|tanh|rsqrt|sqrt|div|rcp)"
                          r"\.approx\.(ftz\.)?f32")
# float64 arithmetic in PTX (moves, loads, stores and conversions excluded)
_F64_OP = re.compile(r"^\s*(?:@%p\d+\s+)?(add|sub|mul|fma|div|rcp|sqrt|min|max|neg|abs|"
                     r"setp\.[a-z]+|ex2|lg2)(?:\.[a-z0-9]+)*\.f64\b", re.M)


# --------------------------------------------------------------------------
# the variants: (name, host call) -- run in the capture child (simulator)

def _rows(n, dtype, rows=3):
    return np.random.default_rng(0).normal(size=(rows, n)).astype(dtype)


def _variant_list():
    """[(name, kind of call, arguments, index of the launch to record)]: each
    a call a user makes that launches the kernel variant named."""
    v = []
    for dt in ("float32", "float64"):
        v.append((f"observe/generated/{dt}", "simulate", dict(n=64, dtype=dt), 0))
    # array rows: n picks the threads per row G (group_size: 16 logits each)
    for n in (16, 32, 64, 128, 256, 512, 1024, 2048):
        for dt in ("float32", "float64"):
            v.append((f"observe/rows/n{n}/{dt}/C", "summarize", dict(n=n, dtype=dt), 0))
            for lay in ("F", "A"):
                v.append((f"observe/rows/n{n}/{dt}/{lay}", "summarize",
                          dict(n=n, dtype=dt, layout=lay), 0))
    for n in (16, 32, 64, 128, 256, 512, 1024, 2048):
        for dt in ("float32", "float64"):
            for log in (False, True):
                f = "log_softmax" if log else "softmax"
                v.append((f"{f}/n{n}/{dt}/C", "softmax", dict(n=n, dtype=dt, log=log), 0))
                for lay in ("F", "A"):
                    v.append((f"{f}/n{n}/{dt}/{lay}", "softmax",
                              dict(n=n, dtype=dt, log=log, layout=lay), 0))
    # the copy kernel: input conversion (float16, integers) and output scatter
    v.append(("copy4/float16->float32", "softmax", dict(n=64, dtype="float16"), 0))
    v.append(("copy4/float32->float16", "softmax", dict(n=64, dtype="float16"), 2))
    v.append(("copy4/int64->float64", "softmax", dict(n=64, dtype="int64"), 0))
    v.append(("copy4/float32->float32", "softmax", dict(n=64, dtype="float32", mid=True), 0))
    v.append(("copy4/float64->float64", "softmax", dict(n=64, dtype="float64", mid=True), 0))
    return v


VARIANTS = _variant_list()


class _Captured(BaseException):
    """Raised by the launch stand-in (a BaseException: nothing on the way
    out catches it)."""


def _capture_one(call, kw, which):
    """Run one host call under the simulator with the launch stand-in; return
    (kind, key, argument types) of launch number ``which``."""
    from numba import cuda

    import fastsoftmax as fs
    from fastsoftmax.backends.cuda import _kernels
    from fastsoftmax.models import Gaussian

    seen = []
    real = _kernels.get_kernel

    class Stand:
        def __init__(self, kind, key):
            self.kind, self.key = kind, key

        def __getitem__(self, config):
            return self

        def __call__(self, *args):
            if len(seen) == which:
                types = [_typeof(a) for a in args]
                seen.append((self.kind, self.key, types))
                raise _Captured()
            seen.append(None)

    _kernels.get_kernel = lambda kind, *key: Stand(kind, key)
    try:
        dt = kw["dtype"]
        n = kw["n"]
        if call == "simulate":
            fs.simulate(Gaussian(n=n), 8, dtype=dt, backend="cuda")
        else:
            x = _rows(n, dt) if dt.startswith("float") else np.arange(3 * n).reshape(3, n)
            axis = -1
            if kw.get("mid"):
                x = np.stack([x, x])                      # (2, 3, n)
                dev = cuda.to_device(x)
                axis = 1                                  # gathered: copy first
            elif kw.get("layout") == "F":
                dev = cuda.to_device(np.ascontiguousarray(x.T))
                axis = 0                                  # rows are columns: a view
            elif kw.get("layout") == "A":
                dev = cuda.to_device(np.concatenate([x, x]))[::2]   # every other row
            else:
                dev = cuda.to_device(x)
            if call == "summarize":
                fs.summarize(dev if kw.get("layout") else x, axis=axis, backend="cuda")
            else:
                (fs.log_softmax if kw.get("log") else fs.softmax)(dev, axis=axis)
    except _Captured:
        pass
    finally:
        _kernels.get_kernel = real
    if len(seen) <= which or seen[which] is None:
        raise RuntimeError(f"{call}({kw}) made {len(seen)} launches; launch {which} "
                           "was expected")
    return seen[which]


def _typeof(a):
    """numba.typeof of a kernel argument (the simulator's device arrays
    typed as the host arrays they wrap, as a device's are typed)."""
    import numba
    from numba import types as T
    if isinstance(a, tuple):
        return T.Tuple([_typeof(b) for b in a])
    return numba.typeof(a._ary if hasattr(a, "_ary") else a)


def _type_to_json(t):
    from numba import types as T
    if isinstance(t, T.Array):
        return ["array", str(t.dtype), t.ndim, t.layout]
    if isinstance(t, T.BaseTuple):
        return ["tuple", [_type_to_json(u) for u in t]]
    return ["scalar", str(t)]


def _type_from_json(j):
    from numba import types as T
    if j[0] == "array":
        return T.Array(getattr(T, j[1]), j[2], j[3])
    if j[0] == "tuple":
        return T.Tuple([_type_from_json(u) for u in j[1]])
    return getattr(T, j[1])


def _capture_child():
    """(child, NUMBA_ENABLE_CUDASIM=1) print the captured launches as JSON."""
    from fastsoftmax.backends.cuda import _settings
    if _settings.THREADS_PER_BLOCK != 128 or _settings.VALUES_PER_THREAD != 16:
        raise RuntimeError("the gate compiles the backend's defaults (128 threads per "
                           "block, 16 logits per thread)")
    out = []
    for name, call, kw, which in VARIANTS:
        kind, key, types = _capture_one(call, kw, which)
        out.append({"name": name, "kind": kind, "key": list(key),
                    "argtypes": [_type_to_json(t) for t in types]})
    print("CAPTURED " + json.dumps(out))


def capture(names=None):
    """The launches of ``VARIANTS`` (or of the ``names`` among them):
    [{name, kind, key, argtypes}], argtypes as numba types."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--capture-child"],
                       capture_output=True, text=True, env=env, timeout=1200)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("CAPTURED ")]
    if p.returncode or not lines:
        raise RuntimeError(f"capturing the launches failed (rc {p.returncode}):\n"
                           f"{p.stdout[-3000:]}\n{p.stderr[-5000:]}")
    res = json.loads(lines[-1][len("CAPTURED "):])
    for r in res:
        r["key"] = tuple(r["key"])
        r["argtypes"] = tuple(_type_from_json(j) for j in r["argtypes"])
    if names is not None:
        res = [r for r in res if r["name"] in names]
    return res


# --------------------------------------------------------------------------
# compiling without a device

def install_cc_standin(cc):
    """Answer ``get_current_device().compute_capability`` with ``cc`` in
    numba-cuda's dispatcher module (the one patch; see the module docstring)."""
    import types as pytypes

    import numba_cuda
    ver = tuple(int(p) for p in re.findall(r"\d+", numba_cuda.__version__)[:2])
    lo, hi = NUMBA_CUDA_RANGE
    if not lo <= ver < hi:
        raise RuntimeError(
            f"numba-cuda {numba_cuda.__version__} is outside the range the compile gate's "
            f"compute-capability stand-in was checked on ({lo} <= version < {hi}): check that "
            "numba.cuda.dispatcher still asks get_current_device() while typing, then "
            "widen NUMBA_CUDA_RANGE")
    import numba.cuda.dispatcher as disp
    if not callable(getattr(disp, "get_current_device", None)):
        raise RuntimeError("numba.cuda.dispatcher.get_current_device is gone: the compile "
                           "gate's compute-capability stand-in must follow it")
    disp.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=tuple(cc))


def ptxas_path():
    spec = importlib.util.find_spec("nvidia.cuda_nvcc")
    if spec is not None and spec.submodule_search_locations:
        p = os.path.join(list(spec.submodule_search_locations)[0], "bin", "ptxas")
        if os.path.exists(p):
            return p
    p = shutil.which("ptxas")
    if p is None:
        raise RuntimeError("ptxas not found: pip install 'numba-cuda[cu12]' (it brings "
                           "nvidia-cuda-nvcc-cu12)")
    return p


def compile_ptx(kind, key, argtypes, cc):
    """PTX of one kernel variant for compute capability cc (NVVM)."""
    from numba import cuda

    from fastsoftmax.backends.cuda import _kernels
    install_cc_standin(cc)
    k = _kernels._BUILDERS[kind](*key)
    ptx, _ = cuda.compile_ptx(k.py_func, argtypes, cc=tuple(cc), **_kernels._JIT)
    return ptx


def ptxas(ptx, cc, max_registers=None):
    """ptxas -v's resource figures for one PTX module: registers, spill
    bytes (stores + loads), stack frame bytes, static shared memory bytes."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        cmd = [ptxas_path(), "-v", f"-arch=sm_{cc[0]}{cc[1]}", src, "-o",
               os.path.join(d, "k.cubin")]
        if max_registers:
            cmd[2:2] = ["--maxrregcount", str(int(max_registers))]
        p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"ptxas failed:\n{p.stderr[-3000:]}")
    info = p.stderr
    regs = int(re.search(r"Used (\d+) registers", info).group(1))
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                  info)
    sm = re.search(r"(\d+) bytes smem", info)
    return {"registers": regs, "stack": int(m.group(1)),
            "spill": int(m.group(2)) + int(m.group(3)), "smem": int(sm.group(1)) if sm else 0}


def occupancy(regs, smem, cc, tpb=128):
    """(resident blocks per multiprocessor, fraction of its threads) at tpb
    threads per block: registers are allocated per warp in units of 256."""
    lim = SM_LIMITS[tuple(cc)]
    warps = tpb // 32
    per_warp = math.ceil(regs * 32 / 256) * 256
    by_regs = lim["regs"] // (warps * per_warp)
    by_smem = lim["smem"] // (smem + 1024)
    blocks = min(by_regs, by_smem, lim["threads"] // tpb, lim["blocks"])
    return blocks, blocks * tpb / lim["threads"]


def f64_ops(ptx):
    """Float64 arithmetic instructions in the PTX (static count)."""
    return len(_F64_OP.findall(ptx))


def fastmath_ops(ptx):
    """The distinct fast-math instructions in the PTX (none: the log-domain
    math keeps IEEE float32 semantics)."""
    return sorted(set(m.group(0) for m in FASTMATH_PTX.finditer(ptx)))


def is_float32(argtypes):
    from numba import types as T
    arrs = [t for t in argtypes if isinstance(t, T.Array)]
    return bool(arrs) and str(arrs[0].dtype) in ("float32", "float16")


def backend_max_registers():
    """The register cap the backend's launches compile with
    (``_settings.MAX_REGISTERS``; None: no cap)."""
    from fastsoftmax.backends.cuda import _settings
    return _settings.MAX_REGISTERS


def compile_variant(v, cc, max_registers=None, keep_ptx=False):
    """One row of the table (a dict); ``error`` set when it did not compile.
    max_registers: None, the backend's own cap; 0, no cap."""
    if max_registers is None:
        max_registers = backend_max_registers()
    row = {"name": v["name"], "kind": v["kind"], "cc": f"{cc[0]}.{cc[1]}"}
    t0 = time.time()
    try:
        ptx = compile_ptx(v["kind"], v["key"], v["argtypes"], cc)
        row.update(ptxas(ptx, cc, max_registers))
    except Exception as e:   # noqa: BLE001 - reported in the table, fails the gate
        row["error"] = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
        return row
    row["blocks_per_sm"], row["occupancy"] = occupancy(row["registers"], row["smem"], cc)
    row["f64_ops"] = f64_ops(ptx) if is_float32(v["argtypes"]) else None
    row["fastmath_ops"] = fastmath_ops(ptx)
    row["seconds"] = round(time.time() - t0, 1)
    if keep_ptx:
        row["ptx"] = ptx
    return row


def _work(args):
    v, cc, maxreg = args
    return compile_variant(v, cc, maxreg)


def run_gate(variants, ccs=CCS, max_registers=None, jobs=1):
    tasks = [(v, cc, max_registers) for v in variants for cc in ccs]
    if jobs > 1:
        import multiprocessing as mp
        with mp.get_context("fork").Pool(jobs) as pool:
            return pool.map(_work, tasks, chunksize=1)
    return [_work(t) for t in tasks]


# --------------------------------------------------------------------------
# roofline prediction from the PTX

#: H200 SXM (NVIDIA's data sheet): HBM3e bandwidth, FP32 and FP64 (non-tensor)
#: peak, multiprocessors, boost clock; instruction rates derived from them:
#: an FMA is 2 flops, every SM issues 4 warp-instructions (128 thread-
#: instructions) a clock, and has 16 special-function lanes (MUFU: ex2, lg2,
#: rcp, rsqrt, sin, cos).
H200 = dict(name="H200 SXM", hbm_bytes_s=4.8e12, fp32_flops=67e12, fp64_flops=34e12, sms=132,
            clock_hz=1.98e9, sfu_per_sm=16, issue_per_sm=128)
_LABEL = re.compile(r"^(\$L__\w+):")
_BRANCH = re.compile(r"\bbra(?:\.uni)?\s+(\$L__\w+)")
_ELEM_LD = re.compile(r"^(?:@!?%p\d+\s+)?ld(?:\.global)?(?:\.nc)?(?:\.v[24])?\.(f32|f64|u16|b16)\b")
_ELEM_ST = re.compile(r"^(?:@!?%p\d+\s+)?st(?:\.global)?(?:\.v[24])?\.(f32|f64|u16|b16)\b")
_SKIP = re.compile(r"^(?:@!?%p\d+\s+)?(ld\.param|mov|cvta|ret|bar|//)")
_F32 = re.compile(r"^(?:@!?%p\d+\s+)?(add|sub|mul|fma|div|rcp|sqrt|min|max|neg|abs|setp\.[a-z]+|"
                  r"selp|cvt[.a-z0-9]*)(?:\.[a-z0-9]+)*\.f32\b")
_F64 = re.compile(r"^(?:@!?%p\d+\s+)?(add|sub|mul|fma|div|rcp|sqrt|min|max|neg|abs|setp\.[a-z]+|"
                  r"selp|cvt[.a-z0-9]*)(?:\.[a-z0-9]+)*\.f64\b")
_SFU = re.compile(r"^(?:@!?%p\d+\s+)?(ex2|lg2|rcp|rsqrt|sqrt|sin|cos|tanh)\.approx")


def _instructions(ptx):
    """The entry's instructions (labels as ('label', name)), comments and
    directives dropped."""
    body = ptx[ptx.index(".entry"):]
    out = []
    for ln in body.splitlines():
        t = ln.strip()
        if not t or t.startswith(("//", ".", "{", "}", ")", "(")):
            continue
        m = _LABEL.match(t)
        out.append(("label", m.group(1)) if m else ("ins", t.rstrip(";")))
    return out


def _classify(lines):
    c = {"all": 0, "f32": 0, "f64": 0, "sfu": 0}
    for t in lines:
        c["all"] += 1
        c["f32"] += bool(_F32.match(t))
        c["f64"] += bool(_F64.match(t))
        c["sfu"] += bool(_SFU.match(t))
    return c


def ptx_loops(ptx):
    """The element loops of a kernel: innermost loops (a backward branch with
    no other inside it) that load or store row elements, each with its body's
    instruction classes and its elements per iteration; and the instruction
    classes of everything else (straight-line code, run once per row at most)."""
    items = _instructions(ptx)
    ins = []
    where = {}
    for kind, t in items:
        if kind == "label":
            where[t] = len(ins)
        else:
            ins.append(t)
    back = []
    for j, t in enumerate(ins):
        m = _BRANCH.search(t)
        if m and where.get(m.group(1), len(ins)) <= j:
            back.append((where[m.group(1)], j))
    inner = [(i, j) for i, j in back
             if not any(i <= a and b <= j and (a, b) != (i, j) for a, b in back)]
    loops = []
    in_loop = set()
    for i, j in sorted(inner):
        body = ins[i:j + 1]
        lds = sum(bool(_ELEM_LD.match(t)) for t in body)
        sts = sum(bool(_ELEM_ST.match(t)) for t in body)
        if lds + sts == 0:
            continue
        loops.append({"span": (i, j), "loads": lds, "stores": sts, **_classify(body)})
        in_loop.update(range(i, j + 1))
    rest = _classify([t for k, t in enumerate(ins) if k not in in_loop])
    return loops, rest


def element_passes(loops):
    """Per-element instruction classes summed over the element loops: each
    loop's body divided by the elements it handles per iteration (its element
    loads or stores, whichever is more: unrolled loops handle several).  Every
    element loop of the kernel is counted, so this is an upper bound: it
    includes the loops a row may not run (the sampled target's inversion, the
    remainder loops of unrolled ones)."""
    tot = {"all": 0.0, "f32": 0.0, "f64": 0.0, "sfu": 0.0}
    for lp in loops:
        per = max(lp["loads"], lp["stores"])
        for k in tot:
            tot[k] += lp[k] / per
    tot["passes"] = len(loops)
    return tot


#: the predicted cases: (label, variant name, n, bytes moved through HBM per logit)
ROOFLINE_N = (64, 1024, 16384)


def _roofline_variant(kind, n, dt):
    """The compile gate's variant a run of this kind, n and dtype launches."""
    if kind == "simulate":
        return f"observe/generated/{dt}"
    g_n = min(2048, max(16, 1 << (n.bit_length() - 1)))   # the n giving the same G
    if kind == "summarize":
        return f"observe/rows/n{g_n}/{dt}/C"
    return f"softmax/n{g_n}/{dt}/C"


def _group(n, tpb=128, vpt=16, warp=32):
    """``_geometry.group_size``: at most a warp of threads per row."""
    g = 1
    while 2 * g <= min(tpb, warp) and 2 * g * vpt <= n:
        g *= 2
    return g


#: L1 a multiprocessor keeps for row data between a thread's two passes over
#: its share (the H200's 256 kB less the 4 resident blocks' shared memory)
L1_ROW_BYTES = 128 * 1024


def _summarize_reads(n, isz, tpb=128, blocks=4):
    """How often a summarized array row crosses HBM: once, unless its shares
    are read twice from memory.  A float32 share longer than
    ``_kernels.CHUNK`` is read in chunks (one pass from memory) and a shorter
    one fits in L1 between its passes; a float64 share is read twice
    (``row_state``: top two, then sums) and its second pass misses L1 when
    the resident threads' shares exceed it (n = 16,384: 4 kB a thread)."""
    g = _group(n, tpb)
    share = (n + g - 1) // g
    if isz == 4 or share * isz * tpb * blocks <= L1_ROW_BYTES:
        return 1
    return 2


def predict(ptx_of, dev=H200):
    """Rows per second predicted for each (kind, n, dtype) from the compiled
    code: executed instructions per row = (per-element instructions of the
    element passes) x n + the straight-line code x the threads of a row's
    group (an upper bound: it counts branches a row does not take); bytes per
    row from the data each kind must move through HBM.  ``ptx_of(name)`` gives
    a variant's PTX."""
    issue = dev["sms"] * dev["issue_per_sm"] * dev["clock_hz"]
    f32_rate = dev["fp32_flops"] / 2          # FMA instructions per second
    f64_rate = dev["fp64_flops"] / 2
    sfu_rate = dev["sms"] * dev["sfu_per_sm"] * dev["clock_hz"]
    rows = []
    for kind in ("summarize", "simulate", "softmax"):
        for dt in ("float32", "float64"):
            isz = 4 if dt == "float32" else 8
            for n in ROOFLINE_N:
                name = _roofline_variant(kind, n, dt)
                loops, rest = ptx_loops(ptx_of(name))
                per = element_passes(loops)
                g = 1 if kind == "simulate" else _group(n)
                ex = {k: per[k] * n + rest[k] * g for k in ("all", "f32", "f64", "sfu")}
                if kind == "summarize":
                    nbytes = n * isz * _summarize_reads(n, isz)
                elif kind == "softmax":
                    nbytes = 2 * n * isz                   # read, write
                else:
                    # generated into per-thread scratch (a full grid's exceeds
                    # L2 and a block's rows exceed L1): each element loop that
                    # reads or writes it moves the row through HBM once
                    nbytes = n * isz * sum((lp["loads"] > 0) + (lp["stores"] > 0)
                                           for lp in loops)
                t = {"memory": nbytes / dev["hbm_bytes_s"], "issue": ex["all"] / issue,
                     "fp32": ex["f32"] / f32_rate, "fp64": ex["f64"] / f64_rate,
                     "sfu": ex["sfu"] / sfu_rate}
                bound = max(t, key=t.get)
                rows.append({"kind": kind, "n": n, "dtype": dt, "variant": name,
                             "passes": per["passes"], "bytes_per_row": nbytes,
                             "instr_per_row": round(ex["all"]), "f32_per_row": round(ex["f32"]),
                             "f64_per_row": round(ex["f64"]), "sfu_per_row": round(ex["sfu"]),
                             "rows_per_s": 1.0 / t[bound], "bound": bound})
    return rows


def format_prediction(rows, dev=H200):
    head = ("operation", "n", "dtype", "passes", "bytes/row", "instr/row", "f32/row",
            "f64/row", "SFU/row", f"predicted rows/s ({dev['name']})", "bound")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append(f"| {r['kind']} | {r['n']:,} | {r['dtype']} | {r['passes']} | "
                     f"{r['bytes_per_row']:,} | {r['instr_per_row']:,} | {r['f32_per_row']:,} | "
                     f"{r['f64_per_row']:,} | {r['sfu_per_row']:,} | {r['rows_per_s']:.3g} | "
                     f"{r['bound']} |")
    return "\n".join(lines)


def roofline(cc=(9, 0)):
    """The prediction rows for compute capability cc (compiles what it needs)."""
    names = sorted({_roofline_variant(k, n, dt) for k in ("summarize", "simulate", "softmax")
                    for n in ROOFLINE_N for dt in ("float32", "float64")})
    vs = {v["name"]: v for v in capture(names)}
    cache = {}

    def ptx_of(name):
        if name not in cache:
            v = vs[name]
            cache[name] = compile_ptx(v["kind"], v["key"], v["argtypes"], cc)
        return cache[name]
    return predict(ptx_of)


def format_table(rows):
    head = ("kernel", "variant", "cc", "regs", "spill B", "stack B", "smem B", "blocks/SM",
            "occupancy", "f64 ops (f32)")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        kernel, _, variant = r["name"].partition("/")
        if "error" in r:
            lines.append(f"| {kernel} | {variant} | {r['cc']} | COMPILE ERROR: {r['error']} |")
            continue
        f64 = "-" if r["f64_ops"] is None else str(r["f64_ops"])
        lines.append(f"| {kernel} | {variant} | {r['cc']} | {r['registers']} | {r['spill']} | "
                     f"{r['stack']} | {r['smem']} | {r['blocks_per_sm']} | "
                     f"{100 * r['occupancy']:.1f}% | {f64} |")
    return "\n".join(lines)


def format_condensed(rows):
    """One line per variant without its layout (C, F, A): registers and
    blocks per multiprocessor on each target as ranges over the layouts."""
    groups = {}
    for r in rows:
        if "error" in r:
            continue
        name = re.sub(r"/(C|F|A)$", "", r["name"])
        groups.setdefault(name, {}).setdefault(r["cc"], []).append(r)
    ccs = sorted({r["cc"] for r in rows})

    def rng(vals):
        lo, hi = min(vals), max(vals)
        return str(lo) if lo == hi else f"{lo}-{hi}"
    head = (["kernel", "variant"] + [f"registers sm_{c.replace('.', '')}" for c in ccs]
            + [f"blocks/SM sm_{c.replace('.', '')}" for c in ccs] + ["spill B", "f64 ops (f32)"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, by in groups.items():
        kernel, _, variant = name.partition("/")
        allr = [r for c in by for r in by[c]]
        f64 = [r["f64_ops"] for r in allr if r["f64_ops"] is not None]
        cells = ([kernel, variant] + [rng([r["registers"] for r in by.get(c, [])]) for c in ccs]
                 + [rng([r["blocks_per_sm"] for r in by.get(c, [])]) for c in ccs]
                 + [str(max(r["spill"] for r in allr)), rng(f64) if f64 else "-"])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--capture-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--max-registers", type=int, default=None,
                    help="ptxas --maxrregcount for every variant (default: the backend's "
                         "_settings.MAX_REGISTERS, as its launches compile; 0: no cap; a "
                         "tiny cap shows the gate failing on spills)")
    ap.add_argument("--inject-compile-error", action="store_true",
                    help="add a variant whose argument types do not type (shows the gate "
                         "failing on a compile error)")
    ap.add_argument("--only", default=None, help="a regular expression on the variant names")
    ap.add_argument("--cc", default=None, help="compute capabilities, e.g. 9.0 (default "
                                               "8.0,9.0)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="compiler processes")
    ap.add_argument("--json", default=None, help="write the rows to this file")
    ap.add_argument("--condensed", action="store_true",
                    help="one line per variant, layouts as ranges (the docs' table)")
    ap.add_argument("--from-json", default=None,
                    help="print the table of an earlier --json run instead of compiling")
    ap.add_argument("--roofline", action="store_true",
                    help="print the H200 roofline prediction from the sm_90 PTX instead")
    a = ap.parse_args(argv)
    if a.capture_child:
        _capture_child()
        return 0
    if a.roofline:
        rows = roofline()
        print(format_prediction(rows))
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"prediction": rows, "device": H200}, f, indent=1)
        return 0
    fmt = format_condensed if a.condensed else format_table
    if a.from_json:
        with open(a.from_json) as f:
            print(fmt(json.load(f)["rows"]))
        return 0
    t0 = time.time()
    ccs = CCS if a.cc is None else tuple(tuple(int(p) for p in c.split("."))
                                        for c in a.cc.split(","))
    variants = capture()
    if a.only:
        variants = [v for v in variants if re.search(a.only, v["name"])]
    if a.inject_compile_error:
        bad = dict(variants[0])
        bad["name"] = bad["kind"] + "/injected-error/last-argument-missing"
        bad["argtypes"] = bad["argtypes"][:-1]
        variants.append(bad)
    rows = run_gate(variants, ccs, a.max_registers, a.jobs)
    print(fmt(rows))
    errors = [r for r in rows if "error" in r]
    spills = [r for r in rows if "error" not in r and r["spill"] > 0]
    fast = [r for r in rows if r.get("fastmath_ops")]
    wall = time.time() - t0
    print(f"\n{len(variants)} variants x {len(ccs)} targets in {wall:.0f} s: "
          f"{len(errors)} compile errors, {len(spills)} with spills, "
          f"{len(fast)} with fast-math instructions")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "wall_s": wall}, f, indent=1)
    for r in errors:
        print(f"FAIL compile error: {r['name']} cc {r['cc']}: {r['error']}", file=sys.stderr)
    for r in spills:
        print(f"FAIL spill: {r['name']} cc {r['cc']}: {r['spill']} bytes", file=sys.stderr)
    for r in fast:
        print(f"FAIL fast math: {r['name']} cc {r['cc']}: {' '.join(r['fastmath_ops'])}",
              file=sys.stderr)
    return 1 if errors or spills or fast else 0


if __name__ == "__main__":
    sys.exit(main())
