"""The same bits on every x86 CPU with FMA, whatever its vector width.

Each child interpreter (``_children``: one a target for the whole test run,
shared with test_stream; its own NUMBA_CACHE_DIR, kept under .pytest_cache
so that a second run is warm) compiles the kernels for one CPU target and
returns the JSON of a set of Summaries (``child_job``): summarize
float32/float64 at n = 64 and 1024 with -inf masks, ties and a single finite
logit, simulate Gaussian and DotProduct (unscaled d_k = 4096: saturated rows).
The JSON must be identical across the targets, which always include two
vector widths with FMA that any AVX2 host runs:

* 256-bit: ``NUMBA_CPU_NAME=haswell`` with ``NUMBA_CPU_FEATURES=""`` (AVX2 and
  FMA, no AVX-512; NUMBA_CPU_NAME alone keeps the host's features);
* 128-bit: the same with ``FASTSOFTMAX_VECTOR_WIDTH=128`` (the kernels'
  explicit 16-lane vectors in chunks of 4 float32 / 2 float64, and LLVM's
  vectorizers told to prefer 128 bits: xmm code, as the registers printed
  show);

and, on a host with AVX-512, the host's own build (512-bit).  Each child
also counts the xmm/ymm/zmm registers in the machine code of the row pass
compiled for its target (``pytest -s`` prints them with the targets).

The summation order is fixed by the code (16 lanes, fixed trees, no
``reassoc``), so the vector width the compiler picks cannot change it.
``NUMBA_CPU_NAME=generic`` (x86-64 without FMA) is not required to match:
'contract' fuses multiply-adds only where the target has FMA.
"""
import json
import re

import numpy as np

import _children
from helpers import edge_rows
import fastsoftmax as fs
from fastsoftmax.backends import cpu
from fastsoftmax.models import DotProduct, Gaussian



def child_job():
    """In each child (``_children``): the JSON of the Summaries, and the
    vector registers its compiled kernels use."""
    out = {}
    for dt in ("float32", "float64"):
        for n, rows in ((64, 3000), (1024, 300)):
            x = edge_rows(rows, n, dt, seed=n)
            out[f"summarize {dt} n={n}"] = fs.summarize(x).to_json()
            lab = np.random.default_rng(1).integers(0, n, size=rows)
            out[f"summarize {dt} n={n} labels"] = fs.summarize(x, target=lab).to_json()
    out["gaussian n=64"] = fs.simulate(Gaussian(n=64, scale=3.0), 20000, seed=3,
                                       backend="cpu").to_json()
    out["dotproduct d_k=4096"] = fs.simulate(DotProduct(n=64, d_k=4096, scaled=False), 20000,
                                             seed=4, target="random",
                                             backend="cpu").to_json()
    # the registers of the row pass (the summarize kernel's hot loop), from
    # its machine code compiled for this child's target: numba shows no
    # machine code of a kernel loaded from its cache, so a warm child could
    # not count the kernels' own
    row = cpu.kernel_vector_width()[1]
    regs = {r: int(re.search(r"(\d+) " + r, row).group(1)) for r in ("xmm", "ymm", "zmm")}
    return {"summaries": out, "regs": regs}


def _host_has_avx512():
    import llvmlite.binding as ll
    return ll.get_host_cpu_features().get("avx512f", False)


def test_same_bits_across_vector_widths(tmp_path_factory):
    targets = {
        "256-bit (haswell: AVX2, FMA)": "256",
        "128-bit (haswell, FASTSOFTMAX_VECTOR_WIDTH=128)": "128",
    }
    if _host_has_avx512():
        targets["512-bit (the host: AVX-512)"] = "host"
    # the cold compilations run side by side
    answers = _children.results(tmp_path_factory, *targets.values())
    for name, setting in targets.items():
        assert "error" not in answers[setting], (name, answers[setting]["error"])
    got = {name: (answers[s]["bits"]["summaries"], answers[s]["bits"]["regs"])
           for name, s in targets.items()}
    print("compared: " + "; ".join(f"{name} (registers used: {regs})"
                                     for name, (_, regs) in got.items()))
    (ref_name, (ref, _)), *rest = got.items()
    for name, (res, _) in rest:
        assert res.keys() == ref.keys()
        diff = [k for k in ref if ref[k] != res[k]]
        assert not diff, f"{name} and {ref_name}: different bits for {diff}"
    # the haswell builds never use AVX-512 registers; the two widths are really two:
    # the 256-bit row pass runs mostly on ymm, the 128-bit one on xmm
    assert all(got[name][1]["zmm"] == 0 for name in targets if "haswell" in name)
    wide, narrow = (got[name][1] for name in list(targets)[:2])
    assert wide["ymm"] > wide["xmm"], wide
    assert 10 * narrow["ymm"] < narrow["xmm"], narrow
    # real summaries, not empty ones
    assert json.loads(ref["summarize float32 n=64"])["accumulator"]["count"] == 3000
