"""Child interpreters built with other compile settings, one per setting for
the whole test run, shared by the test modules that compare their numbers.

A child's cost is its compilation (cold) or its interpreter start, numba
import and cache loads (warm), not its work: so each setting runs one child
that does every job registered for it (``JOBS``: a test module's function
returning JSON-able data), and the first test to ask runs it, under a file
lock in pytest's base temporary directory, which xdist's workers share; the
others read its pickled answer.

Each setting compiles into its own NUMBA_CACHE_DIR under .pytest_cache, kept
between runs (a second run is warm).  numba keys a cache entry by its
function's source file and the CPU target, and the package's kernels (and
the tests' cached kernels, through ``source_key``) by all the sources the
kernels are built from and the vector-width and tile settings: a stale
entry is never read, and settings never share a directory.
"""
import contextlib
import importlib
import json
import os
import pickle
import subprocess
import sys

from helpers import REPO, subprocess_env

HASWELL = dict(NUMBA_CPU_NAME="haswell", NUMBA_CPU_FEATURES="")

#: setting -> (environment, the jobs its child runs)
SETTINGS = {
    # 256-bit: AVX2 and FMA, no AVX-512 (NUMBA_CPU_NAME alone keeps the
    # host's features), the compiler's own vector width
    "256": (dict(HASWELL), ("bits", "stream", "simd")),
    # 128-bit: the same target, the kernels' vectors and LLVM's vectorizers
    # told to prefer 128 bits (xmm code)
    "128": (dict(HASWELL, FASTSOFTMAX_VECTOR_WIDTH="128"), ("bits", "stream", "simd")),
    # the host's own build (512-bit where the host has AVX-512)
    "host": ({}, ("bits",)),
    # the tile path built in (16 short rows, one per lane), and out (the
    # default: the tests' own process unless its environment switched it on)
    "tile": (dict(FASTSOFTMAX_TILE="1"), ("tile",)),
    "row": (dict(FASTSOFTMAX_TILE="0"), ("tile",)),
    # the CUDA simulator (device functions run as Python on NumPy scalars)
    "cudasim": (dict(NUMBA_ENABLE_CUDASIM="1"), ("cudasim_vmath", "cudasim_rng")),
}

#: job -> (module of tests/, function of no arguments run in the child)
JOBS = {
    "bits": ("test_bits", "child_job"),
    "stream": ("test_stream", "child_job"),
    "tile": ("test_summarize", "tile_job"),
    "simd": ("test_simd", "child_job"),
    "cudasim_vmath": ("_cudasim", "vmath_job"),
    "cudasim_rng": ("_cudasim", "rng_job"),
}

TESTS = os.path.dirname(os.path.abspath(__file__))
CHILD = "import sys, _children; _children.main(sys.argv[1:])"


def source_key():
    """The key of the package's CPU kernels: a hash of the sources they are
    built from, with the vector-width and tile settings.  A test kernel
    compiled with ``cache=True`` refers to it from its closure, so numba's
    cache index (which hashes closure variables) changes with the package's
    sources, not only with the test file."""
    from fastsoftmax.backends import cpu
    return cpu._source_key()


def at_threads(code, cwd=None):
    """The stdout of ``code`` (Python source printing its result) at numba
    thread counts 1 and 2.  Run in this process with ``numba.set_num_threads``
    (the count the CPU backend reads to split its work, as it reads the
    count NUMBA_NUM_THREADS sets in a fresh interpreter) where numba's pool
    has two threads; else in two children with NUMBA_NUM_THREADS=1 and 2."""
    import io

    import numba

    from fastsoftmax._util import numba_threads
    if numba.config.NUMBA_NUM_THREADS < 2:
        return [subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                               text=True, cwd=cwd,
                               env=subprocess_env(NUMBA_NUM_THREADS=t)).stdout
                for t in ("1", "2")]
    outs = []
    for t in (1, 2):
        buf = io.StringIO()
        with numba_threads(t), contextlib.redirect_stdout(buf):
            exec(code, {})
        outs.append(buf.getvalue())
    return outs


def main(jobs):
    """In the child: run the jobs, print their results as one JSON line."""
    out = {}
    for job in jobs:
        mod, func = JOBS[job]
        out[job] = getattr(importlib.import_module(mod), func)()
    print("RESULT " + json.dumps(out))


def _start(setting):
    env, jobs = SETTINGS[setting]
    cache = os.path.join(REPO, ".pytest_cache", "fastsoftmax-children", setting)
    os.makedirs(cache, exist_ok=True)
    env = subprocess_env(NUMBA_CACHE_DIR=cache, **env)
    env["PYTHONPATH"] = os.pathsep.join([TESTS, env["PYTHONPATH"]])
    return subprocess.Popen([sys.executable, "-c", CHILD, *jobs], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=TESTS)


def _finish(p):
    out, err = p.communicate(timeout=1500)
    lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        return {"error": f"child failed ({p.returncode}): {err[-4000:]}"}
    return json.loads(lines[-1][len("RESULT "):])


def results(tmp_path_factory, *settings):
    """{setting: {job: result}} (or {"error": stderr's tail}), each setting's
    child run once for the whole test run; the children this call runs
    run side by side."""
    from filelock import FileLock, Timeout
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent                      # the workers of this run share it
    done = {s: root / f"child-{s}.pickle" for s in settings}
    got, waiting = {}, []
    with contextlib.ExitStack() as held:
        running = {}
        for s in settings:
            lock = FileLock(str(root / f"child-{s}.lock"))
            try:
                lock.acquire(timeout=0)
            except Timeout:
                waiting.append((s, lock))       # another worker runs it: read it below
                continue
            held.callback(lock.release)
            if done[s].exists():
                with open(done[s], "rb") as f:
                    got[s] = pickle.load(f)
            else:
                running[s] = _start(s)
        for s, p in running.items():
            got[s] = _finish(p)
            with open(done[s], "wb") as f:
                pickle.dump(got[s], f)
    for s, lock in waiting:                     # no lock held while waiting
        with lock:
            if done[s].exists():
                with open(done[s], "rb") as f:
                    got[s] = pickle.load(f)
            else:                               # its worker died before answering
                got[s] = _finish(_start(s))
                with open(done[s], "wb") as f:
                    pickle.dump(got[s], f)
    return got


def job(tmp_path_factory, setting, name):
    """One job's result in one setting's child (the test fails with the
    child's stderr if it failed)."""
    res = results(tmp_path_factory, setting)[setting]
    assert "error" not in res, res["error"]
    return res[name]
