#!/usr/bin/env python
"""One-command check of the CUDA backend on a real GPU (installs nothing).

    python bench/gpu_check.py            # from the repository root

Needs numba + numba-cuda and a GPU; uses CuPy and/or PyTorch when importable
(device arrays of other libraries, copy bandwidth), else numba arrays.

1. agreement -- CUDA vs CPU on small sizes: simulate (every model and target,
   n = 1 .. 4096, float32/float64), summarize of host arrays and of device
   arrays (CuPy / PyTorch / numba; transposed, strided, float16, integer
   layouts; labels), large-gap and subnormal rows (the no-fast-math check on
   hardware), bad rows, softmax / log_softmax of device arrays, determinism
   (repeat, grid size).
2. bandwidth -- device-to-device copy of a GIB_COPY GiB buffer; reported as
   bytes read + written per second (what a copy moves through HBM).
3. summarize -- a float32 device array of GIB_ARRAY GiB seen as n = 64, 1024,
   16384 (and n = 2) logits per row: logits/s and bytes read/s as a fraction
   of the copy bandwidth.  Target on an H200: >= 50%.
4. simulate -- 2**30 (1.07e9) Gaussian n = 64 vectors, plus n = 2, 1024,
   16384 (2**28, 2**22, 2**18 rows): generated logits/s.  Target on an H200:
   >= 1e11 at n = 64.
5. softmax vs torch -- fs.softmax and torch.softmax of the same float32
   device rows (n = 64, 1024, 16384): rows/s and their ratio.
6. tuning -- if time is left: the same two n = 64 runs with other knobs
   (threads per block, register cap, blocks per SM), for the next tuning.

First, the roofline prediction of ``bench/gpu_compile.py --roofline`` (from
the compiled PTX), printed beside each measurement.  Prints a line per step
and a summary; writes every figure to
$OUT/gpu_check.json when OUT is set.  Exit status: 0 when every agreement
check passed (performance targets are reported, not enforced), 1 otherwise,
2 when no GPU is usable.  A soft time budget (GPU_CHECK_BUDGET_S, default
270 s) skips the later, optional steps when the machine is slow.
"""
import json
import math
import os
import sys
import time
import traceback

import numpy as np

T0 = time.time()
BUDGET = float(os.environ.get("GPU_CHECK_BUDGET_S", "270"))
GIB_ARRAY = float(os.environ.get("GPU_CHECK_GIB_ARRAY", "4"))
GIB_COPY = float(os.environ.get("GPU_CHECK_GIB_COPY", "2"))
SIM_ROWS = int(os.environ.get("GPU_CHECK_SIM_ROWS", str(2 ** 30)))
# row counts of the agreement step are multiplied by this (a smoke run of the
# script's logic under NUMBA_ENABLE_CUDASIM=1 uses ~0.001)
SCALE = float(os.environ.get("GPU_CHECK_SCALE", "1"))


def rows_of(k):
    return max(8, int(k * SCALE))

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

R = {"device": None, "prediction": None, "checks": {}, "failed": [], "bandwidth": {},
     "summarize": {},
     "simulate": {}, "tuning": {}, "compile_s": {}, "errors": {}, "skipped": []}


def log(*a):
    print(f"[{time.time() - T0:6.1f}s]", *a, flush=True)


def left():
    return BUDGET - (time.time() - T0)


def write_json():
    out = os.environ.get("OUT")
    R["wall_s"] = round(time.time() - T0, 1)
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "gpu_check.json"), "w") as f:
            json.dump(R, f, indent=1, default=_jsonable)
        log("wrote", os.path.join(out, "gpu_check.json"))


def _jsonable(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, np.ndarray):
        return v.tolist()
    return str(v)


def step(name, fn, need_s=0.0):
    if left() < need_s:
        log(f"skip {name}: {left():.0f} s of budget left, needs ~{need_s:.0f}")
        R["skipped"].append(name)
        return None
    log(f"--- {name}")
    try:
        return fn()
    except Exception as e:   # noqa: BLE001 - report and go on
        R["errors"][name] = f"{type(e).__name__}: {e}"
        log(f"ERROR in {name}: {type(e).__name__}: {e}")
        traceback.print_exc()
        return None


# --------------------------------------------------------------------------
# libraries

def _try_import(name):
    try:
        return __import__(name)
    except Exception:   # noqa: BLE001
        return None


cp = _try_import("cupy")
torch = _try_import("torch")
if torch is not None and not torch.cuda.is_available():
    torch = None


# --------------------------------------------------------------------------
# agreement

def compare(cpu, gpu, rtol=1e-6):
    """Problems between two Summaries (empty list: they agree): integer parts
    exact, min/max and means to rtol, M2 loosely."""
    a, b = cpu._acc, gpu._acc
    bad = []
    if (a.count, a.skipped) != (b.count, b.skipped):
        bad.append(f"count/skipped {a.count, a.skipped} vs {b.count, b.skipped}")
    for k in ("nonfinite", "below"):
        x, y = getattr(a, k), getattr(b, k)
        if not np.array_equal(x, y):
            bad.append(f"{k}: {int(np.abs(x - y).sum())} counts differ")
    if a.sketch != b.sketch:
        bad.append("sketch counts differ")
    if not np.array_equal(a.mom[:, 0], b.mom[:, 0]):
        bad.append("finite counts differ")
    for k, x, y in (("min", a.vmin, b.vmin), ("max", a.vmax, b.vmax),
                    ("mean", a.mom[:, 1], b.mom[:, 1])):
        with np.errstate(invalid="ignore"):
            same = (x == y) | (np.abs(x - y) <= rtol * np.abs(x))
        if not same.all():
            i = int(np.flatnonzero(~same)[0])
            bad.append(f"{k}[{i}] {x[i]!r} vs {y[i]!r}")
    scale = np.maximum(a.mom[:, 0] * a.mom[:, 1] ** 2, 1e-300)
    if not np.all(np.abs(b.mom[:, 2] - a.mom[:, 2]) <= 1e-5 * np.abs(a.mom[:, 2])
                  + 1e-9 * scale):
        bad.append("M2 differs")
    return bad


def check(name, ok_or_problems, detail=None):
    problems = ok_or_problems if isinstance(ok_or_problems, list) else (
        [] if ok_or_problems else ["failed"])
    R["checks"][name] = {"ok": not problems, "problems": problems[:5], "detail": detail}
    if problems:
        R["failed"].append(name)
    log(("ok  " if not problems else "FAIL"), name, "" if not problems else problems[:3])


def agreement():
    import fastsoftmax as fs
    from fastsoftmax.backends.cuda import _launch, _settings
    from fastsoftmax.models import DotProduct, Gaussian, Shifted
    from numba import cuda

    sims = [
        ("gauss_n64_f32_argmax", Gaussian(n=64, scale=2.0), 200_000, {}),
        ("gauss_n1", Gaussian(n=1), 20_000, {}),
        ("gauss_n2_random", Gaussian(n=2, scale=3.0), 200_000, {"target": "random"}),
        ("gauss_n33_sampled", Gaussian(n=33), 50_000, {"target": "sampled"}),
        ("shifted_n7_f64_random", Shifted(n=7, offset=1e3, spread=2.0), 50_000,
         {"target": "random", "dtype": "float64"}),
        ("dot_exact_n64_int", DotProduct(n=64, d_k=512, scaled=False), 50_000,
         {"target": 3, "thresholds": (1e-3, 1e-6, 1e-9, 0.5)}),
        ("dot_explicit_n16", DotProduct(n=16, d_k=8, method="explicit"), 20_000, {}),
        ("gauss_n4096", Gaussian(n=4096, scale=4.0), 3_000, {}),
        ("gauss_n64_large_gap", Gaussian(n=64, scale=3e3), 20_000, {}),
    ]
    for name, m, rows, kw in sims:
        if left() < 60:
            R["skipped"].append("agree_sim_" + name)
            continue
        rows = rows_of(rows)
        t = time.time()
        b = fs.simulate(m, rows, seed=7, backend="cuda", **kw)
        tg = time.time() - t
        a = fs.simulate(m, rows, seed=7, backend="cpu", **kw)
        check("simulate_" + name, compare(a, b), {"gpu_s_incl_compile": round(tg, 2)})

    # determinism: repeat, and another grid size
    m = Gaussian(n=64, scale=2.0)
    s1 = fs.simulate(m, rows_of(100_000), seed=3, backend="cuda")
    s2 = fs.simulate(m, rows_of(100_000), seed=3, backend="cuda")
    old = _settings.MAX_GRID
    _settings.MAX_GRID = 7
    try:
        s3 = fs.simulate(m, rows_of(100_000), seed=3, backend="cuda")
    finally:
        _settings.MAX_GRID = old
    check("simulate_bitwise_repeat_and_grid", s1 == s2 and s1 == s3)

    rng = np.random.default_rng(0)

    def make_x(rows, n, dtype):
        x = rng.normal(size=(rows, n)) * 6
        if n > 3:
            x[::7, 3] = -np.inf
            x[5, :] = -np.inf
            x[5, 1] = 0.0
        x[::11, :] = 2.0
        return x.astype(dtype)

    for n, dt, rows in ((64, np.float32, 20_000), (5, np.float64, 20_000),
                        (1000, np.float32, 2_000), (16384, np.float64, 200)):
        rows = rows_of(rows)
        x = make_x(rows, n, dt)
        labels = rng.integers(0, n, size=rows)
        for tgt in ("argmax", "labels"):
            t = labels if tgt == "labels" else tgt
            a = fs.summarize(x, target=t, backend="cpu")
            b = fs.summarize(x, target=t, backend="cuda")
            check(f"summarize_host_n{n}_{np.dtype(dt).name}_{tgt}", compare(a, b))
            d = fs.summarize(cuda.to_device(x), target=t)
            check(f"summarize_numba_device_n{n}_{np.dtype(dt).name}_{tgt}", d == b)

    # exact log domain on hardware: large gaps, subnormal exponentials/values
    x32 = np.array([[0.0, -1e4, -1e4 - 1.0, -np.inf],
                    [0.0, -100.0, -100.0, -150.0],
                    [0.0, -87.0, -88.0, -104.0],
                    [3.0, 3.0, -np.inf, -200.0]], dtype=np.float32)
    x64 = np.array([[0.0, -720.0, -721.0, -np.inf],
                    [0.0, -745.0, -800.0, -1e300]], dtype=np.float64)
    for name, x in (("f32", x32), ("f64", x64)):
        a = fs.summarize(x, backend="cpu", thresholds=(1e-310, 1e-300, 1e-40))
        b = fs.summarize(cuda.to_device(x), thresholds=(1e-310, 1e-300, 1e-40))
        check(f"extreme_rows_{name}", compare(a, b, rtol=1e-12))
    obs = fs.observables(x64)
    check("subnormal_value_kept_cpu", 0.0 < float(obs["one_minus_max_prob"][0]) < 2.3e-308)

    # bad rows: omit agrees, raise names the same row
    x = make_x(max(3000, rows_of(3000)), 16, np.float32)
    x[1234, 3] = np.nan
    x[2000, :] = -np.inf
    a = fs.summarize(x, backend="cpu", nan_policy="omit")
    b = fs.summarize(cuda.to_device(x), nan_policy="omit")
    check("bad_rows_omit", compare(a, b))
    msgs = []
    for f in (lambda: fs.summarize(x, backend="cpu"), lambda: fs.summarize(cuda.to_device(x))):
        try:
            f()
            msgs.append("no error")
        except ValueError as e:
            msgs.append(str(e))
    check("bad_rows_raise_message", msgs[0] == msgs[1] and "1234" in msgs[0], msgs)

    # other libraries' device arrays, several layouts
    xs = make_x(4000, 48, np.float32)   # reshaped (40, 100, 48) below
    cases = []
    if cp is not None:
        g = cp.asarray(xs)
        cases += [("cupy_c", g, xs, -1), ("cupy_T_axis0", g.T, xs.T, 0),
                  ("cupy_rows_step2", g[::2], xs[::2], -1),
                  ("cupy_3d_mid", g.reshape(40, 100, 48).transpose(0, 2, 1),
                   xs.reshape(40, 100, 48).transpose(0, 2, 1), 1),
                  ("cupy_f16", g.astype(cp.float16), xs.astype(np.float16), -1),
                  ("cupy_int", (g * 3).astype(cp.int32), (xs * 3).astype(np.int32), -1)]
    if torch is not None:
        tt = torch.as_tensor(xs, device="cuda")
        cases += [("torch_c", tt, xs, -1), ("torch_T", tt.t(), xs.T, -1),
                  ("torch_cols", tt[:, 8:40], xs[:, 8:40], -1)]
    for name, dev, host, axis in cases:
        a = fs.summarize(np.asarray(host), axis=axis, backend="cpu")
        b = fs.summarize(dev, axis=axis)
        check("summarize_" + name, compare(a, b))
        for log_ in (False, True):
            ref = (fs.log_softmax if log_ else fs.softmax)(np.asarray(host), axis=axis)
            got = _launch.softmax(dev, axis, log_)
            got_h = (cp.asnumpy(got) if type(got).__module__.startswith("cupy")
                     else got.cpu().numpy() if type(got).__module__.startswith("torch")
                     else got.copy_to_host())
            r64, g64 = np.asarray(ref, np.float64), np.asarray(got_h, np.float64)
            fin = np.isfinite(r64)
            rel = float(np.max(np.abs(g64[fin] - r64[fin]) / np.maximum(np.abs(r64[fin]),
                                                                        1e-300), initial=0))
            tol = 2e-3 if "f16" in name else 1e-5
            check(f"softmax_{name}_{'log' if log_ else 'p'}",
                  bool(rel <= tol and np.array_equal(np.isnan(r64), np.isnan(g64))
                       and got_h.dtype == ref.dtype
                       and type(got).__module__.split(".")[0]
                       == type(dev).__module__.split(".")[0]),
                  {"max_rel": rel, "type": type(got).__name__, "dtype": str(got_h.dtype)})


# --------------------------------------------------------------------------
# bandwidth

def _sync():
    from numba import cuda
    cuda.synchronize()
    if cp is not None:
        cp.cuda.Device().synchronize()
    if torch is not None:
        torch.cuda.synchronize()


def bandwidth():
    nbytes = int(GIB_COPY * 2 ** 30)
    res = {}
    if cp is not None:
        a = cp.ones(nbytes // 4, dtype=cp.float32)
        b = cp.empty_like(a)
        b[...] = a
        cp.cuda.Device().synchronize()
        best = math.inf
        for _ in range(10):
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record()
            b[...] = a
            e1.record()
            e1.synchronize()
            best = min(best, cp.cuda.get_elapsed_time(e0, e1) / 1e3)
        res["cupy_copy"] = 2 * a.nbytes / best
        del a, b
        cp.get_default_memory_pool().free_all_blocks()
    from numba import cuda
    a = cuda.device_array(nbytes // 4, dtype=np.float32)
    b = cuda.device_array_like(a)
    b.copy_to_device(a)
    cuda.synchronize()
    best = math.inf
    for _ in range(10):
        t = time.perf_counter()
        b.copy_to_device(a)
        cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    res["numba_copy"] = 2 * a.nbytes / best
    del a, b
    res["copy_bytes_per_s"] = max(res.values())
    R["bandwidth"] = res
    log("copy bandwidth (read + write):",
        ", ".join(f"{k} {v / 1e12:.2f} TB/s" for k, v in res.items()))


# --------------------------------------------------------------------------
# throughput

def _best_of(fn, reps):
    best = math.inf
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def predicted(kind, n, dtype="float32"):
    """Rows/s the roofline predicts (bench/gpu_compile.py --roofline) for the
    compiled kernels on an H200, or None where it has no figure."""
    for r in R.get("prediction") or ():
        if (r["kind"], r["n"], r["dtype"]) == (kind, n, dtype):
            return r
    return None


def prediction():
    """The roofline prediction from this machine's compiler (PTX only: no
    ptxas needed; a child process, so the compile gate's compute-capability
    stand-in never touches this one), kept in R["prediction"]."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "roofline.json")
        # the real compiler, also when this run is the simulator's smoke run
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
        p = subprocess.run([sys.executable, os.path.join(REPO, "bench", "gpu_compile.py"),
                            "--roofline", "--json", out], capture_output=True, text=True,
                           timeout=max(30.0, left() - 60), env=env)
        print(p.stdout, flush=True)
        if p.returncode:
            raise RuntimeError(f"gpu_compile.py --roofline failed: {p.stderr[-2000:]}")
        with open(out) as f:
            R["prediction"] = json.load(f)["prediction"]


def _vs_prediction(kind, n, rows_per_s):
    p = predicted(kind, n)
    if p is None:
        return ""
    return (f"; predicted {p['rows_per_s']:.3g} rows/s ({p['bound']} bound), "
            f"measured/predicted {rows_per_s / p['rows_per_s']:.2f}")


def torch_softmax_timing(ns=(64, 1024, 16384)):
    """torch.softmax over the last axis of float32 rows on the same device:
    the peer of ``softmax`` (same bytes: read n, write n)."""
    if torch is None:
        R["skipped"].append("torch_softmax (torch with CUDA not importable)")
        return
    count = int(min(GIB_ARRAY, 2.0) * 2 ** 30) // 4 // 16384 * 16384
    x = torch.randn(count, device="cuda", dtype=torch.float32)
    import fastsoftmax as fs
    rec = R.setdefault("softmax_vs_torch", {})
    for n in ns:
        xr = x.reshape(count // n, n)
        torch.softmax(xr, dim=-1)
        fs.softmax(xr[:4])
        _sync()

        def run_t():
            torch.softmax(xr, dim=-1)
            _sync()

        def run_f():
            fs.softmax(xr)
            _sync()
        tt = _best_of(run_t, 3)
        tf = _best_of(run_f, 3)
        rows = count // n
        rec[f"n{n}"] = {"torch_rows_per_s": rows / tt, "fastsoftmax_rows_per_s": rows / tf,
                        "ratio_to_torch": tt / tf}
        log(f"softmax float32 n={n}: fastsoftmax {rows / tf:.3g} rows/s, torch.softmax "
            f"{rows / tt:.3g} rows/s (ratio {tt / tf:.2f})" + _vs_prediction("softmax", n,
                                                                            rows / tf))
    del x


def summarize_timing(tag="", record=None, ns=(64, 1024, 16384, 2)):
    import fastsoftmax as fs
    record = R["summarize"] if record is None else record
    count = int(GIB_ARRAY * 2 ** 30) // 4 // 16384 * 16384
    if cp is not None:
        buf = cp.random.standard_normal(count, dtype=cp.float32)
    elif torch is not None:
        buf = torch.randn(count, device="cuda", dtype=torch.float32)
    else:
        from numba import cuda
        buf = cuda.to_device(np.random.default_rng(0).standard_normal(
            count, dtype=np.float32))
    bw = R["bandwidth"].get("copy_bytes_per_s")
    for n in ns:
        if left() < 20:
            R["skipped"].append(f"summarize_n{n}{tag}")
            continue
        x = buf.reshape(count // n, n)
        t = time.perf_counter()
        fs.summarize(x[: 4 * max(1, 65536 // n)])            # compile + warm
        R["compile_s"][f"summarize_n{n}{tag}"] = round(time.perf_counter() - t, 2)
        sec = _best_of(lambda: fs.summarize(x), 3)
        lps = count / sec
        frac = (4 * count / sec) / bw if bw else None
        record[f"n{n}"] = {"seconds": sec, "logits_per_s": lps, "bytes_read_per_s": 4 * lps,
                           "fraction_of_copy_bw": frac}
        log(f"summarize{tag} float32 {count * 4 / 2**30:.1f} GiB n={n}: {sec * 1e3:.1f} ms, "
            f"{lps:.3g} logits/s, {4 * lps / 1e12:.2f} TB/s read"
            + (f" = {frac:.0%} of copy bandwidth" if frac else "")
            + _vs_prediction("summarize", n, lps / n))
    del buf
    if cp is not None:
        cp.get_default_memory_pool().free_all_blocks()


def simulate_timing(tag="", record=None, sizes=None):
    import fastsoftmax as fs
    from fastsoftmax.models import Gaussian
    record = R["simulate"] if record is None else record
    sizes = sizes or ((64, SIM_ROWS), (2, max(1, SIM_ROWS // 4)),
                      (1024, max(1, SIM_ROWS // 256)), (16384, max(1, SIM_ROWS // 4096)))
    for n, rows in sizes:
        if left() < 20:
            R["skipped"].append(f"simulate_n{n}{tag}")
            continue
        m = Gaussian(n=n)
        t = time.perf_counter()
        fs.simulate(m, 256, backend="cuda")                  # compile + warm
        R["compile_s"][f"simulate{tag}"] = round(time.perf_counter() - t, 2)
        t = time.perf_counter()
        s = fs.simulate(m, rows, seed=1, backend="cuda")
        sec = time.perf_counter() - t
        lps = rows * n / sec
        record[f"n{n}"] = {"rows": rows, "seconds": sec, "logits_per_s": lps,
                           "rows_per_s": rows / sec,
                           "mean_max_prob": s["max_prob"].mean}
        log(f"simulate{tag} Gaussian n={n}: {rows:.3g} rows in {sec:.2f} s, "
            f"{lps:.3g} logits/s" + _vs_prediction("simulate", n, rows / sec))


def tuning():
    from fastsoftmax.backends.cuda import _settings as _cuda
    base = dict(THREADS_PER_BLOCK=_cuda.THREADS_PER_BLOCK, MAX_REGISTERS=_cuda.MAX_REGISTERS,
                BLOCKS_PER_SM=_cuda.BLOCKS_PER_SM)
    variants = [dict(MAX_REGISTERS=64), dict(MAX_REGISTERS=96),
                dict(THREADS_PER_BLOCK=256), dict(BLOCKS_PER_SM=16)]
    global GIB_ARRAY
    gib = GIB_ARRAY
    GIB_ARRAY = min(GIB_ARRAY, 2.0)
    try:
        for v in variants:
            if left() < 45:
                R["skipped"].append(f"tuning {v}")
                continue
            for k, val in v.items():
                setattr(_cuda, k, val)
            tag = " [" + ",".join(f"{k}={val}" for k, val in v.items()) + "]"
            rec = R["tuning"].setdefault(tag.strip(" []"), {})
            try:
                simulate_timing(tag, rec.setdefault("simulate", {}),
                                sizes=((64, SIM_ROWS // 4),))
                summarize_timing(tag, rec.setdefault("summarize", {}), ns=(64,))
            finally:
                for k, val in base.items():
                    setattr(_cuda, k, val)
    finally:
        GIB_ARRAY = gib


# --------------------------------------------------------------------------

def main():
    from fastsoftmax.backends.cuda import _kernels, _settings
    ok, why = _kernels.probe()
    R["device"] = {"ok": ok, "reason": why}
    log("probe:", ok, why)
    if not ok:
        write_json()
        return 2
    R["device"].update(_kernels.device_info())
    R["libraries"] = {"cupy": getattr(cp, "__version__", None),
                      "torch": getattr(torch, "__version__", None)}
    import numba
    R["libraries"]["numba"] = numba.__version__
    R["knobs"] = {k: getattr(_settings, k) for k in
                  ("THREADS_PER_BLOCK", "VALUES_PER_THREAD", "BLOCKS_PER_SM", "LAUNCH_LOGITS",
                   "SCRATCH_BYTES", "SCRATCH_BLOCKS_PER_SM", "SCRATCH_FRACTION",
                   "MAX_REGISTERS")}
    step("prediction", prediction)
    step("agreement", agreement)
    write_json()
    step("bandwidth", bandwidth)
    step("summarize", summarize_timing, need_s=30)
    write_json()
    step("simulate", simulate_timing, need_s=30)
    write_json()
    step("softmax vs torch", torch_softmax_timing, need_s=30)
    write_json()
    step("tuning", tuning, need_s=60)

    bw = R["bandwidth"].get("copy_bytes_per_s")
    s64 = R["summarize"].get("n64", {})
    g64 = R["simulate"].get("n64", {})
    R["targets"] = {
        "summarize_fraction_of_copy_bw_n64": s64.get("fraction_of_copy_bw"),
        "summarize_target_met": bool(s64.get("fraction_of_copy_bw")
                                     and s64["fraction_of_copy_bw"] >= 0.5),
        "simulate_logits_per_s_n64": g64.get("logits_per_s"),
        "simulate_target_met": bool(g64.get("logits_per_s")
                                    and g64["logits_per_s"] >= 1e11),
    }
    log("=" * 60)
    log(f"agreement: {len(R['checks']) - len(R['failed'])}/{len(R['checks'])} checks passed"
        + (f"; FAILED: {R['failed']}" if R["failed"] else ""))
    if bw:
        log(f"copy bandwidth {bw / 1e12:.2f} TB/s (read + write)")
    for n, v in R["summarize"].items():
        log(f"summarize {n}: {v['logits_per_s']:.3g} logits/s, "
            f"{v['fraction_of_copy_bw'] or float('nan'):.0%} of copy bandwidth")
    for n, v in R["simulate"].items():
        log(f"simulate {n}: {v['logits_per_s']:.3g} logits/s")
    log("targets:", R["targets"])
    if R["errors"]:
        log("errors:", R["errors"])
    if R["skipped"]:
        log("skipped (time budget):", R["skipped"])
    write_json()
    return 0 if not R["failed"] and "agreement" not in R["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
