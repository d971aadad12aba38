"""What ``verify --out DIR`` writes: tables (CSV, Parquet), summary.json, every
point's Summary (gzipped JSON) and the PNG plots.

The points' tables (``dotproduct``, ``shifted``, ``gaussian``, ``law``,
``context``) are the sweeps' frames: one row per point, its parameters and
``Summary.record()`` (the one flat record of a Summary, the columns of every
table); ``literal`` and ``verdicts`` are verify's own.
"""
from __future__ import annotations

import gzip
import json
import os
from typing import Any


def write_outputs(res: Any, out: str) -> list[str]:
    """Tables (CSV and Parquet), summary.json, summaries.json.gz and the PNG plots into ``out``."""
    from . import _plot as plot
    os.makedirs(out, exist_ok=True)
    written = []
    for name, df in res.tables.items():
        for ext in ("csv", "parquet"):
            path = os.path.join(out, f"{name}.{ext}")
            if ext == "csv":
                df.to_csv(path, index=False)
            else:
                df.to_parquet(path, index=False)
            written.append(path)
    path = os.path.join(out, "summary.json")            # what --json prints
    with open(path, "w") as f:
        f.write(res.to_json())
        f.write("\n")
    written.append(path)
    # every point's full Summary (sketches included: any quantile can be
    # recomputed later with fs.Summary.from_dict), compact and gzipped;
    # dumps, not dump: json.dump streams through the pure-Python encoder
    path = os.path.join(out, "summaries.json.gz")
    text = json.dumps(res.to_dict(summaries=True)["summaries"], allow_nan=False,
                      separators=(",", ":"))
    with gzip.open(path, "wt", compresslevel=6) as f:
        f.write(text)
    written.append(path)
    written.extend(plot.verify_plots(res, out))
    return written
