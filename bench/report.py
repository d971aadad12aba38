"""The benchmarks' table: each benchmark records its measurements here
(:func:`record`), and the session prints them at its end (conftest), as
throughput, fractions of the ceilings measured in the same run and ratios
to the peers."""
import os

RESULTS = {}
REFS = {}


ROUNDS = {}
PER_ROW = {}


def record(group, name, seconds, work, unit="logits/s", ref=False, rows=None):
    """One measurement.  ``ref=True`` marks a ceiling (or a reference run such
    as unsaturated rows): every other entry of the group is also printed as a
    fraction of it.  ``seconds`` may be the list of an interleaved run's
    round times (``ceiling.interleaved(..., samples=True)``): the best is the
    figure, and the fraction of a ceiling is also given as the median of the
    paired per-round ratios.  ``rows``: the group's rows, for the time per
    row and thread and its excess over the ceiling (what a CPU whose
    exp hides the rest should be judged by)."""
    if isinstance(seconds, (list, tuple)):
        ROUNDS.setdefault(group, {})[name] = list(seconds)
        seconds = min(seconds)
    RESULTS.setdefault(group, {})[name] = (seconds, work, unit)
    if rows:
        PER_ROW[group] = rows
    if ref:
        REFS.setdefault(group, []).append(name)


def _paired(group, name, ref):
    """The median over rounds of ref's time / name's time (None without rounds)."""
    r = ROUNDS.get(group, {})
    if name not in r or ref not in r:
        return None
    a, b = r[name], r[ref]
    ratios = sorted(y / x for x, y in zip(a, b))
    m = len(ratios)
    return ratios[m // 2] if m % 2 else 0.5 * (ratios[m // 2 - 1] + ratios[m // 2])


def _kernel_width():
    """The width the compiled kernels really use (as ``fastsoftmax info``)."""
    from fastsoftmax.backends import cpu
    try:
        bits, detail = cpu.kernel_vector_width()
    except Exception as e:                 # never lose the table for its header
        return f"unknown ({type(e).__name__}: {e})"
    return f"{bits}-bit ({detail})"


def table_lines():
    import numba

    from fastsoftmax._kernels import features as _cpu
    lines = ["", "=" * 78,
             "throughput, fractions of the ceilings and ratios to peers (same run)",
             f"cpu {_cpu.describe()}",
             f"threads {numba.get_num_threads()}, "
             f"load {' '.join('%.2f' % v for v in os.getloadavg())}, "
             f"FASTSOFTMAX_VECTOR_WIDTH={_cpu.VECTOR_WIDTH}, kernels {_kernel_width()}",
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
                parts = []
                for r in refs:
                    p = _paired(group, name, r)
                    med = f" (paired median {p:.1%})" if p is not None else ""
                    parts.append(f"{rate / (res[r][1] / res[r][0]):6.1%}{med} of {r}")
                tail = "  " + ", ".join(parts)
            elif ours and name != "fastsoftmax":
                tail = f"  fastsoftmax / this = {(ours[1] / ours[0]) / rate:8.2f}x"
            if ours and name != "fastsoftmax" and refs and name not in refs:
                tail += f"; fastsoftmax / this = {(ours[1] / ours[0]) / rate:.2f}x"
            lines.append(f"  {name:<30} {rate:10.3g} {unit}{tail}")
        rows = PER_ROW.get(group)
        if rows and refs:
            nth = numba.get_num_threads()
            # the work's own ceiling (exp+sum, not the memory read), the
            # faster of its widths
            own = [r for r in refs if r.startswith("exp+sum")] or refs
            ref = min(own, key=lambda r: res[r][0])
            per = {k: 1e9 * sec * nth / rows for k, (sec, _, _) in res.items()}
            for name in res:
                if name not in refs:
                    lines.append(f"  {name}: {per[name]:.1f} ns per row and thread, "
                                 f"{per[name] - per[ref]:.1f} over {ref} ({per[ref]:.1f})")
    return lines
