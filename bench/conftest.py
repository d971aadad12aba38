import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

RESULTS = {}


def record(group, name, seconds, work, unit="logits/s"):
    RESULTS.setdefault(group, {})[name] = (seconds, work, unit)


@pytest.fixture(scope="session", autouse=True)
def _print_ratios():
    yield
    if not RESULTS:
        return
    lines = ["", "=" * 78, "throughput and ratios (fastsoftmax / peer, same run)", "=" * 78]
    for group, res in RESULTS.items():
        lines.append(f"[{group}]")
        ours = res.get("fastsoftmax")
        for name, (sec, work, unit) in sorted(res.items(), key=lambda kv: -kv[1][1] / kv[1][0]):
            rate = work / sec
            ratio = ""
            if ours and name != "fastsoftmax" and unit.endswith("/s"):
                ratio = f"  fastsoftmax / this = {(ours[1] / ours[0]) / rate:8.2f}x"
            if unit.endswith("/s"):
                lines.append(f"  {name:<26} {rate:10.3g} {unit}{ratio}")
            else:
                lines.append(f"  {name:<26} {sec:10.3g} {unit}")
    text = "\n".join(lines)
    print(text)
    out = os.environ.get("BENCH_REPORT")
    if out:
        with open(out, "a") as f:
            f.write(text + "\n")
