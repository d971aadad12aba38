"""Interleaved best-of timing: every candidate runs once per round, rounds
repeat; the best time of each is kept.  Fractions are computed from the
best times of the same run."""
import os
import time

# One thread: CPU time of the process (immune to being descheduled on a
# shared machine); more threads: wall time.
CLOCK = time.process_time if os.environ.get("NUMBA_NUM_THREADS") == "1" else time.perf_counter


def measure(cands, rounds=7, min_time=0.05):
    """cands: {name: (fn, work)}; fn() runs once.  Returns {name: rate}."""
    for f, _ in cands.values():
        f()
    reps = {}
    for name, (f, _) in cands.items():
        t = CLOCK(); f(); dt = CLOCK() - t
        reps[name] = max(1, int(min_time / max(dt, 1e-9)))
    best = {k: float("inf") for k in cands}
    for _ in range(rounds):
        for name, (f, _) in cands.items():
            t = CLOCK()
            for _ in range(reps[name]):
                f()
            best[name] = min(best[name], (CLOCK() - t) / reps[name])
    return {k: cands[k][1] / best[k] for k in cands}


def load():
    return "load %.2f %.2f %.2f" % os.getloadavg()


def table(rates, ref=None, unit="/s"):
    lines = []
    for k, v in rates.items():
        fr = f"  {v / rates[ref]:6.1%} of {ref}" if ref and k != ref else ""
        lines.append(f"  {k:28s} {v:10.3g}{unit}{fr}")
    return "\n".join(lines)
