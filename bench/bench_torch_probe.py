"""AttentionProbe overhead: a forward pass with the probe (the full mode and
the light mode, statistics="max_logit") against the same pass without, timed
alternately (paired rounds, the median of the rounds' ratios), on the
example's model and on a GPT-2-sized layer (d_model 768, 12 heads of 64,
causal SDPA, sequence 1024, batch 1 and 4); then a profile of the probed pass:
fastsoftmax's summaries, the logits (float64 in the full mode, the model's
dtype in the light mode: matmul, scale, masks, max), the rest (model,
torch-function mode, hooks).  It prints the CPU model and the load average.

    python -m pytest bench/bench_torch_probe.py -q -s
"""
import os
import sys
import time
from statistics import median

import pytest

torch = pytest.importorskip("torch")

import fastsoftmax.torch._aggregate as fst                   # noqa: E402
from report import record                                  # noqa: E402
from fastsoftmax.torch import AttentionProbe                 # noqa: E402
from torch.overrides import TorchFunctionMode                # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "examples"))
import attention_training as ex                              # noqa: E402

CASES = {
    # name: (model factory, input factory)
    "example model (2 layers, 2 heads, L 128, batch 32)": (
        lambda: ex.CharTransformer(96, 128, 2, 2, None),
        lambda: torch.randint(0, 96, (32, 128))),
    "GPT-2-sized layer (768, 12 heads, L 1024, batch 1)": (
        lambda: ex.Block(768, 12, None),
        lambda: torch.randn(1, 1024, 768)),
    "GPT-2-sized layer (768, 12 heads, L 1024, batch 4)": (
        lambda: ex.Block(768, 12, None),
        lambda: torch.randn(4, 1024, 768)),
}
_BUILT = {}


def built(case):
    if case not in _BUILT:
        torch.manual_seed(0)
        make_model, make_x = CASES[case]
        _BUILT.clear()
        _BUILT[case] = (make_model().eval(), make_x())
    return _BUILT[case]


def cpu_and_load():
    """The CPU model (lscpu's "Model name") and the load average."""
    import subprocess
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        model = next((ln.split(":", 1)[1].strip() for ln in out.splitlines()
                      if ln.startswith("Model name")), "unknown")
    except (OSError, subprocess.SubprocessError):
        model = "unknown"
    try:
        with open("/proc/loadavg") as f:
            load = " ".join(f.read().split()[:3])
    except OSError:
        load = "unknown"
    return model, load


def forward(model, x, probe):
    with torch.no_grad():
        if probe is None:
            return model(x)
        with probe:
            return model(x)


ROUNDS = 9


@pytest.mark.parametrize("statistics", ["full", "max_logit"])
@pytest.mark.parametrize("case", list(CASES))
def test_forward_overhead(benchmark, case, statistics):
    """The probed forward against the plain one, timed alternately: each round
    runs both (the order flipped every round, so that neither always runs
    first), and the overhead is the median over rounds of each round's ratio
    (paired: a load that comes and goes slows both of a round alike)."""
    model, x = built(case)
    probe = AttentionProbe(model, statistics=statistics)
    forward(model, x, probe)                             # warm-up (and compilation)
    forward(model, x, None)
    times: dict[str, list[float]] = {"plain": [], "probe": []}
    done = [0]

    def one_round():
        order = [("plain", None), ("probe", probe)]
        if done[0] % 2:
            order.reverse()
        done[0] += 1
        for key, p in order:
            t = time.perf_counter()
            forward(model, x, p)
            times[key].append(time.perf_counter() - t)

    benchmark.pedantic(one_round, rounds=ROUNDS, iterations=1)
    ratios = [a / b for a, b in zip(times["probe"], times["plain"])]
    with_probe, plain = median(times["probe"]), median(times["plain"])
    record(f"probe overhead ({statistics}): {case}", "fastsoftmax", with_probe, 1,
           unit="forwards/s")
    record(f"probe overhead ({statistics}): {case}", "no probe", plain, 1, unit="forwards/s")
    print(f"\n{case}, statistics={statistics!r}: {with_probe * 1e3:.0f} ms with the probe, "
          f"{plain * 1e3:.0f} ms without (medians of {ROUNDS} alternating rounds): ratio "
          f"{median(ratios):.2f} (median of the rounds' ratios; range {min(ratios):.2f} to "
          f"{max(ratios):.2f})")


class PassThrough(TorchFunctionMode):
    """A mode that only passes calls through: the cost of having one."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def test_where_the_time_goes():
    """Per case and mode: the plain forward; the same under a pass-through
    mode; the probed forward split into fastsoftmax's summaries (summarize +
    merge), the logits (the rest of the per-head loop: cast, matmul, scale,
    masks, max) and everything else (mode, hooks, the model)."""
    timers = {"summaries": 0.0, "heads": 0.0}

    def timed(key, f):
        def g(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                timers[key] += time.perf_counter() - t
        return g

    cpu, load = cpu_and_load()
    lines = ["", f"CPU: {cpu}; {os.cpu_count()} CPUs, torch threads "
             f"{torch.get_num_threads()}; load average {load}",
             "where a probed forward's time goes (the fastest of 3 runs; ms):",
             "| forward pass, no grad | statistics | without | with the probe | ratio | "
             "summaries | logits | model, mode, hooks |", "|---|---|---|---|---|---|---|---|"]
    for case in CASES:
        model, x = built(case)
        plain = _best(lambda: forward(model, x, None))

        def under_mode():
            with torch.no_grad(), PassThrough():
                model(x)
        mode = _best(under_mode)
        for statistics in ("full", "max_logit"):
            probe = AttentionProbe(model, statistics=statistics)
            forward(model, x, probe)
            orig = (fst.summarize_chunk, fst.merge, fst.Aggregator._full,
                    fst.Aggregator._light)
            fst.summarize_chunk = timed("summaries", fst.summarize_chunk)
            fst.merge = timed("summaries", fst.merge)
            fst.Aggregator._full = timed("heads", fst.Aggregator._full)
            fst.Aggregator._light = timed("heads", fst.Aggregator._light)
            try:
                runs = []
                for _ in range(3):
                    timers.update(summaries=0.0, heads=0.0)
                    t = time.perf_counter()
                    forward(model, x, probe)
                    if statistics == "max_logit":
                        probe.to_frame()             # the one synchronisation
                    runs.append((time.perf_counter() - t, timers["summaries"],
                                 timers["heads"]))
            finally:
                (fst.summarize_chunk, fst.merge, fst.Aggregator._full,
                 fst.Aggregator._light) = orig
            total, summ, heads = min(runs)
            logits = heads - summ
            rest = total - heads
            lines.append(
                f"| {case} | {statistics} | {plain * 1e3:.0f} | {total * 1e3:.0f} | "
                f"{total / plain:.2f} | {summ * 1e3:.0f} | {logits * 1e3:.0f} | "
                f"{rest * 1e3:.0f} (a pass-through mode alone: {mode * 1e3:.0f}) |")
            key = f"probed forward split (ms, {statistics}): {case}"
            if summ > 0:            # the light mode has no summaries
                record(key, "summarize + merge", summ, summ, unit="s")
            record(key, "logits", logits, logits, unit="s")
            record(key, "model, mode, hooks", rest, rest, unit="s")
    print("\n".join(lines))


def _best(f, n=3):
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def test_per_head_costs():
    """The probe's work for one head of a 1024 x 1024 causal call, alone: the
    float64 logits (cast, matmul, scale, causal mask, max) and fastsoftmax's
    summarize + merge of those 2**20 logits (best of 5)."""
    import math

    import numpy as np

    import fastsoftmax as fs
    g = torch.Generator().manual_seed(0)
    q, k = (torch.randn(1024, 64, generator=g) for _ in range(2))
    buf = torch.empty(1024, 1024, dtype=torch.float64)
    tri = torch.ones(1024, 1024, dtype=torch.bool).triu_(1)

    def logits():
        torch.matmul(q.double(), k.double().t(), out=buf)
        buf.mul_(0.125).masked_fill_(tri, -math.inf)
        return float(buf.amax())

    logits()
    x = buf.numpy()
    prev = fs.summarize(x, nan_policy="omit")
    t_log = _best(logits, 5)
    t_sum = _best(lambda: fs.summarize(x, nan_policy="omit"), 5)
    t_merge = _best(lambda: prev.merge(prev), 5)
    t_small = _best(lambda: fs.summarize(np.zeros((4, 16)), nan_policy="omit"), 5)
    print(f"\none head, 1024 x 1024 causal: float64 logits {t_log * 1e3:.1f} ms, summarize "
          f"{t_sum * 1e3:.1f} ms, merge {t_merge * 1e3:.1f} ms; a 4 x 16 summarize "
          f"{t_small * 1e3:.2f} ms (the fixed cost per call)")
    for name, v in (("float64 logits", t_log), ("summarize", t_sum), ("merge", t_merge),
                    ("summarize 4 x 16", t_small)):
        record("per head, 1024 x 1024 (s)", name, v, v, unit="s")
