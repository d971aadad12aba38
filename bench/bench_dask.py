"""Dask scaling and overhead of ``fs.simulate(..., client=)``.

    python bench/bench_dask.py                      # 1e8 Gaussian n = 64 vectors
    python bench/bench_dask.py --samples 2e7 --rounds 3

Runs ``simulate(Gaussian(n=64), samples)`` (float32, target="argmax") on a
loopback LocalCluster of 1 and of 2 single-threaded worker processes, and
locally with ``numba.set_num_threads`` 1 and 2, everything warmed up first
(kernels compiled or loaded from numba's cache in every process).  The
configurations are interleaved round by round so that a change in the load
of a shared machine hits them alike; the best time of the rounds is kept.

Prints the time of each, the speed-up of 2 workers over 1 (target >= 1.7x on
2 cores) and the Dask overhead against a local run with as many threads
(target <= 15%), with the load average before and after, and checks that all
four Summaries are identical.  Wall times on a shared machine move with its
load; the CPU seconds spent (client and workers) are printed too, as an
overhead measure that does not.
"""
import argparse
import os
import time

import numba
import numpy as np

import fastsoftmax as fs


def _cpu_seconds():
    return time.process_time()          # all threads of this process


def _load():
    return "load %.2f %.2f %.2f" % os.getloadavg()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=float, default=1e8)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args(argv)
    samples = int(args.samples)
    model = fs.models.Gaussian(n=args.n)
    from distributed import Client, LocalCluster

    print(f"simulate(Gaussian(n={args.n}), {samples:.3g}) float32, "
          f"{os.cpu_count()} cores, numba {numba.__version__} "
          f"({numba.config.NUMBA_NUM_THREADS} threads max); {_load()}")
    clusters, clients = {}, {}
    try:
        for w in (1, 2):
            clusters[w] = LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                                       dashboard_address=":0")
            clients[w] = Client(clusters[w], set_as_default=False)
        # warm-up: every process compiles (or loads) the kernels once
        fs.simulate(model, 10_000, backend="cpu")
        for w in (1, 2):
            fs.simulate(model, 10_000, backend="cpu", client=clients[w])

        def run_local(k):
            numba.set_num_threads(k)
            c0 = _cpu_seconds()
            s = fs.simulate(model, samples, backend="cpu")
            return s, _cpu_seconds() - c0

        def run_dask(k):
            w0 = clients[k].run(_cpu_seconds)
            c0 = _cpu_seconds()
            s = fs.simulate(model, samples, backend="cpu", client=clients[k])
            c1 = _cpu_seconds()
            w1 = clients[k].run(_cpu_seconds)
            return s, c1 - c0 + sum(w1[a] - w0[a] for a in w1 if a in w0)

        configs = {("local", 1): run_local, ("dask", 1): run_dask,
                   ("local", 2): run_local, ("dask", 2): run_dask}
        best = {c: np.inf for c in configs}
        best_cpu = {c: np.inf for c in configs}
        results = {}
        for rnd in range(args.rounds):
            for (kind, k), fn in configs.items():
                before = _load()
                t0 = time.perf_counter()
                s, cpu = fn(k)
                dt = time.perf_counter() - t0
                results[kind, k] = s.to_dict()
                best[kind, k] = min(best[kind, k], dt)
                best_cpu[kind, k] = min(best_cpu[kind, k], cpu)
                print(f"  round {rnd}: {kind:5s} {k} thread(s)/worker(s): {dt:7.2f} s "
                      f"({samples / dt / 1e6:6.2f} M rows/s), CPU {cpu:7.2f} s   "
                      f"{before} -> {_load()}")
        same = all(r == results["local", 1] for r in results.values())
    finally:
        for w in clients:
            clients[w].close()
        for w in clusters:
            clusters[w].close()

    print(f"best of {args.rounds}: " + ", ".join(f"{kind} {k}: {t:.2f} s"
                                                 for (kind, k), t in best.items()))
    speedup = best["dask", 1] / best["dask", 2]
    ov1 = best["dask", 1] / best["local", 1] - 1
    ov2 = best["dask", 2] / best["local", 2] - 1
    print(f"speed-up 2 workers vs 1: {speedup:.2f}x (target >= 1.7x)")
    print(f"Dask overhead vs local, same threads: 1 worker {ov1:+.1%}, "
          f"2 workers {ov2:+.1%} (target <= 15%)")
    print(f"local speed-up 2 threads vs 1: {best['local', 1] / best['local', 2]:.2f}x")
    # CPU seconds (client + workers) do not depend on what else the machine runs
    print("CPU-time overhead vs local (client + workers): "
          + ", ".join(f"{k} worker(s) {best_cpu['dask', k] / best_cpu['local', k] - 1:+.1%}"
                      for k in (1, 2)))
    print(f"identical Summaries: {same}; {_load()}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
