"""Issue 10's speed targets, each as a fraction of the best ceiling (exp+sum at
both vector widths; the RNG alone), interleaved in one process, best of R
rounds; with NUMBA_NUM_THREADS=1, CPU time.

    PYTHONPATH=. NUMBA_NUM_THREADS=1 python bench/proto/targets.py
"""
import os
import sys
import time

import numba
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ceiling as C  # noqa: E402
import fastsoftmax as fs  # noqa: E402
from fastsoftmax.models import DotProduct, Gaussian  # noqa: E402
nth = numba.get_num_threads()
clock = time.process_time if nth == 1 else time.perf_counter
R = int(os.environ.get("R", "5"))
def inter(c):
    for f in c.values(): f()
    b = {k: 1e9 for k in c}
    for _ in range(R):
        for k, f in c.items():
            t = clock(); f(); b[k] = min(b[k], clock() - t)
    return b
print(f"# {fs.__file__}  threads {nth}  load {os.getloadavg()[0]:.2f}")
rng = np.random.default_rng(0)
for rows, n, dt, tgt in [(100_000, 1024, "float32", 60), (2_000_000, 64, "float32", 40), (100_000, 1024, "float64", 50)]:
    x = (rng.standard_normal((rows, n)) * 3).astype(dt)
    b = inter({"e512": lambda: C.exp_sum(x), "e256": lambda: C.exp_sum_default(x), "fs": lambda: fs.summarize(x)})
    best = min(b["e512"], b["e256"])
    print(f"summarize {rows}x{n} {dt}: fs {x.size/b['fs']:.3g}/s = {best/b['fs']:.1%} of the best exp+sum ceiling "
          f"({x.size/best:.3g}/s; 512-bit {x.size/b['e512']:.3g}, default {x.size/b['e256']:.3g})  target {tgt}%")
    del x
xs = {s: (rng.standard_normal((200_000, 256)) * s).astype(np.float32) for s in (1, 30, 300)}
b = inter({s: (lambda s=s: fs.summarize(xs[s])) for s in xs})
print(f"saturated 200000x256 f32: x30 {b[1]/b[30]:.1%}, x300 {b[1]/b[300]:.1%} of x1 speed  target >= 90%")
del xs
for n, rows, tgt in [(64, 2_000_000, 50), (1024, 200_000, 75)]:
    buf = np.zeros((nth, n), np.float32)
    b = inter({"rng": lambda: C.rng_alone(rows, n, np.uint64(0), buf),
               "fs": lambda: fs.simulate(Gaussian(n=n), rows, backend="cpu")})
    best = b["rng"]
    print(f"simulate Gaussian n={n}: fs {rows*n/b['fs']:.3g}/s = {best/b['fs']:.1%} of the best RNG-alone ceiling ({rows*n/best:.3g}/s)  target {tgt}%")
ms = {d: DotProduct(n=64, d_k=d, scaled=False) for d in (64, 4096)}
b = inter({d: (lambda m=m: fs.simulate(m, 200_000, backend="cpu")) for d, m in ms.items()})
print(f"DotProduct exact n=64: d_k=4096 at {b[64]/b[4096]:.1%} of d_k=64 speed ({200000/b[64]:.3g} vs {200000/b[4096]:.3g} vectors/s)  target >= 90%")
print(f"# load {os.getloadavg()[0]:.2f}")
