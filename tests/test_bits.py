"""The same bits on every x86 CPU.

Each child interpreter compiles the kernels cold (its own NUMBA_CACHE_DIR) for
one CPU target -- the host's (AVX-512 on the CI machines) and
NUMBA_CPU_NAME=haswell with NUMBA_CPU_FEATURES="" (AVX2: 256-bit vectors, no
AVX-512; NUMBA_CPU_NAME alone keeps the host's features) -- and prints the
JSON of a set of Summaries: summarize float32/float64 at n = 64 and 1024 with
-inf masks, ties and a single finite logit, simulate Gaussian and DotProduct
(unscaled d_k = 4096: saturated rows).  The JSON must be identical.

The summation order is fixed by the code (16 lanes, fixed trees, no
``reassoc``), so the vector width the compiler picks cannot change it.
``NUMBA_CPU_NAME=generic`` (x86-64 without FMA) is not required to match:
'contract' fuses multiply-adds only where the target has FMA.
"""
import json
import subprocess
import sys
import textwrap

from helpers import subprocess_env

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import fastsoftmax as fs
    from fastsoftmax.models import DotProduct, Gaussian

    def make_x(rows, n, dtype):
        x = np.random.default_rng(n).normal(size=(rows, n)) * 6.0
        x[::7, 3] = -np.inf            # masks
        x[::11, :] = 2.0               # full ties
        x[5, :] = -np.inf
        x[5, 1] = 0.0                  # a single finite logit
        x[9, :] *= 300.0               # a saturated row
        return x.astype(dtype)

    out = {}
    for dt in ("float32", "float64"):
        for n, rows in ((64, 3000), (1024, 300)):
            x = make_x(rows, n, dt)
            out[f"summarize {dt} n={n}"] = fs.summarize(x).to_json()
            lab = np.random.default_rng(1).integers(0, n, size=rows)
            out[f"summarize {dt} n={n} labels"] = fs.summarize(x, target=lab).to_json()
    out["gaussian n=64"] = fs.simulate(Gaussian(n=64, scale=3.0), 20000, seed=3,
                                       backend="cpu").to_json()
    out["dotproduct d_k=4096"] = fs.simulate(DotProduct(n=64, d_k=4096, scaled=False), 20000,
                                             seed=4, target="random",
                                             backend="cpu").to_json()
    print("RESULT " + json.dumps(out))
""")


def _start(tmp_path, name, **env):
    cache = tmp_path / name
    cache.mkdir()
    return subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=subprocess_env(NUMBA_CACHE_DIR=str(cache), **env))


def _result(p):
    out, err = p.communicate(timeout=900)
    lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    assert p.returncode == 0 and lines, err[-4000:]
    return json.loads(lines[-1][len("RESULT "):])


def test_same_bits_host_and_haswell(tmp_path):
    # the two cold compilations run side by side (one core each)
    children = [_start(tmp_path, "host"),
                _start(tmp_path, "haswell", NUMBA_CPU_NAME="haswell", NUMBA_CPU_FEATURES="")]
    host, avx2 = (_result(p) for p in children)
    assert host.keys() == avx2.keys()
    diff = [k for k in host if host[k] != avx2[k]]
    assert not diff, f"different bits for: {diff}"
    # real summaries, not empty ones
    assert json.loads(host["summarize float32 n=64"])["accumulator"]["count"] == 3000
