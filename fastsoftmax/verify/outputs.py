"""What ``verify --out DIR`` writes: tables (CSV, Parquet), summary.json, every
point's Summary (gzipped JSON) and the PNG plots."""
import gzip
import json
import os


def write_outputs(res, out):
    """Tables (CSV and Parquet), summary.json and the PNG plots into ``out``."""
    from .. import plot
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
    # recomputed later with fs.Summary.from_dict), compact and gzipped
    path = os.path.join(out, "summaries.json.gz")
    with gzip.open(path, "wt", compresslevel=6) as f:
        json.dump(res.to_dict(summaries=True)["summaries"], f, allow_nan=False,
                  separators=(",", ":"))
    written.append(path)
    written.extend(plot.verify_plots(res, out))
    return written
