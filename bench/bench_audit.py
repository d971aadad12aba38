"""The default audit battery per implementation: total wall time, the
implementation's own share and the reference's (exact values and figures).

    python -m pytest bench/bench_audit.py --benchmark-only -q -s

The budget: at most 30 s per implementation and kind on 2 cores, most of it
the implementation's own time.  A warm-up audit of two cases runs first (the
numba kernels load from their cache, PyTorch and JAX start).
"""
import importlib.util

import pytest

import fastsoftmax as fs
from report import record

RUNS = [("numpy-naive", "softmax", "float32"), ("scipy", "softmax", "float32"),
        ("scipy", "softmax", "float64"), ("scipy", "ce_grad", "float64"),
        ("torch", "softmax", "float32"), ("torch", "softmax", "bfloat16"),
        ("torch", "ce_grad", "float32"), ("jax", "softmax", "float32"),
        ("jax", "ce_grad", "float32")]


@pytest.mark.parametrize("impl, kind, dtype", RUNS, ids=["-".join(r) for r in RUNS])
def test_audit_battery(benchmark, impl, kind, dtype):
    lib = {"numpy-naive": "numpy"}.get(impl, impl)
    if importlib.util.find_spec(lib) is None:
        pytest.skip(f"{lib} is not installed")
    fs.audit(impl, kind=kind, dtype=dtype, cases=["gauss_s1_n64", "gauss_s1_n1024"])
    reports = []

    def run():
        reports.append(fs.audit(impl, kind=kind, dtype=dtype))
    benchmark.pedantic(run, rounds=1, iterations=1)
    rep = reports[-1]
    total = rep.seconds_implementation + rep.seconds_reference
    group = f"audit battery {kind} {dtype}"
    record(group, f"{impl} total", total, len(rep.cases), unit="cases/s")
    record(group, f"{impl} implementation", rep.seconds_implementation, len(rep.cases),
           unit="cases/s")
    record(group, f"{impl} reference", rep.seconds_reference, len(rep.cases), unit="cases/s")
    print(f"\n{impl} {kind} {dtype}: {len(rep.cases)} cases, {total:.2f} s "
          f"(implementation {rep.seconds_implementation:.2f} s, reference and figures "
          f"{rep.seconds_reference:.2f} s)")
