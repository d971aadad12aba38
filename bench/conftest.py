import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

RESULTS = {}
REFS = {}


def record(group, name, seconds, work, unit="logits/s", ref=False):
    """One measurement.  ``ref=True`` marks a ceiling (or a reference run such
    as unsaturated rows): every other entry of the group is also printed as a
    fraction of it."""
    RESULTS.setdefault(group, {})[name] = (seconds, work, unit)
    if ref:
        REFS.setdefault(group, []).append(name)


def _kernel_width():
    """The width the compiled kernels really use (as ``fastsoftmax info``)."""
    from fastsoftmax.backends import cpu
    try:
        bits, detail = cpu.kernel_vector_width()
    except Exception as e:                 # never lose the table for its header
        return f"unknown ({type(e).__name__}: {e})"
    return f"{bits}-bit ({detail})"


def _lines():
    import numba

    from fastsoftmax import _config, _cpu
    lines = ["", "=" * 78,
             "throughput, fractions of the ceilings and ratios to peers (same run)",
             f"cpu {_cpu.describe()}",
             f"threads {numba.get_num_threads()}, "
             f"load {' '.join('%.2f' % v for v in os.getloadavg())}, "
             f"FASTSOFTMAX_VECTOR_WIDTH={_config.VECTOR_WIDTH}, kernels {_kernel_width()}",
             "=" * 78]
    for group, res in RESULTS.items():
        lines.append(f"[{group}]")
        ours = res.get("fastsoftmax")
        refs = REFS.get(group, [])
        for name, (sec, work, unit) in sorted(res.items(),
                                              key=lambda kv: -kv[1][1] / (kv[1][0] or 1.0)):
            rate = work / sec
            if not unit.endswith("/s"):
                lines.append(f"  {name:<30} {sec:10.3g} {unit}")
                continue
            tail = ""
            if name in refs:
                tail = "  (ceiling / reference)"
            elif refs:
                tail = "  " + ", ".join(
                    f"{rate / (res[r][1] / res[r][0]):6.1%} of {r}" for r in refs)
            elif ours and name != "fastsoftmax":
                tail = f"  fastsoftmax / this = {(ours[1] / ours[0]) / rate:8.2f}x"
            if ours and name != "fastsoftmax" and refs and name not in refs:
                tail += f"; fastsoftmax / this = {(ours[1] / ours[0]) / rate:.2f}x"
            lines.append(f"  {name:<30} {rate:10.3g} {unit}{tail}")
    return lines


@pytest.fixture(scope="session", autouse=True)
def _print_ratios():
    yield
    if not RESULTS:
        return
    text = "\n".join(_lines())
    print(text)
    out = os.environ.get("BENCH_REPORT")
    if out:
        with open(out, "a") as f:
            f.write(text + "\n")
