"""The audit page's table: every built-in implementation, kind and dtype
on the default battery, as a Markdown table on stdout.

    python docs/make_audit_table.py > audit_table.md
"""
import datetime
import math
import subprocess
import sys

import fastsoftmax as fs
from fastsoftmax.audits import IMPLEMENTATIONS

RUNS = [("numpy-naive", "float32"), ("scipy", "float32"), ("scipy", "float64"),
        ("torch", "float32"), ("torch", "bfloat16"), ("jax", "float32"), ("jax", "bfloat16")]
KINDS = ("softmax", "log_softmax", "ce_loss", "ce_grad")


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines()
                    if line.startswith("Model name"))
    except (OSError, StopIteration):
        return "unknown CPU"


def fmt(v):
    return "inf" if math.isinf(v) else f"{v:.3g}"


def main():
    print(f"{datetime.date.today().isoformat()}, {cpu_model()}, fastsoftmax "
          f"{fs.__version__}, max_ulp = 4\n")
    print("| implementation | dtype | kind | cases passed | worst case | its error (units) "
          "| failing regimes |")
    print("|---|---|---|---|---|---|---|")
    for impl, dtype in RUNS:
        for kind in KINDS:
            try:
                rep = fs.audit(impl, kind=kind, dtype=dtype)
            except ImportError as e:
                print(f"| {impl} | {dtype} | {kind} | not installed ({e}) | | | |")
                continue
            judged = [c for c in rep.cases if not math.isnan(rep.case_score(c.label))]
            fails = rep.failures()
            w = rep.worst()
            regimes = sorted({c.regime for c in rep.cases if c.label in fails})
            print(f"| {impl} | {dtype} | {kind} | {len(judged) - len(fails)} of {len(judged)} "
                  f"| {w['case']} | {fmt(w['score'])} | {', '.join(regimes) or '-'} |")
            sys.stdout.flush()
    print("\nimplementations: " + "; ".join(f"{k}: {v.description}"
                                              for k, v in IMPLEMENTATIONS.items()))


if __name__ == "__main__":
    main()
