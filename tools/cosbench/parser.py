"""Parse COSBench result CSVs — real COSBench 0.4.x archives and cosbench-driver output alike —
into tidy rows (one metric per row) for the study's measurements table.

    from tools.cosbench.parser import workload_rows, tidy
    rows = workload_rows("archive/w12-name/w12-name.csv")   # one dict per stage and Op-Name
    long = tidy("results/.../out")                          # metric/value/unit rows + summary facts

Both COSBench header variants are read (with and without Avg-ProcTime); "N/A" becomes None,
"98.5%" becomes 0.985; the extra "Detailed Status" fields are joined into one string.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

# COSBench column -> (our metric name, unit)
METRICS = {
    "Op-Count": ("op_count", "ops"),
    "Byte-Count": ("byte_count", "B"),
    "Avg-ResTime": ("avg_res_time", "ms"),
    "Avg-ProcTime": ("avg_proc_time", "ms"),
    "60%-ResTime": ("res_time_p60", "ms"),
    "80%-ResTime": ("res_time_p80", "ms"),
    "90%-ResTime": ("res_time_p90", "ms"),
    "95%-ResTime": ("res_time_p95", "ms"),
    "99%-ResTime": ("res_time_p99", "ms"),
    "100%-ResTime": ("res_time_p100", "ms"),
    "Throughput": ("throughput", "op/s"),
    "Bandwidth": ("bandwidth", "B/s"),
    "Succ-Ratio": ("succ_ratio", "1"),
}


def _value(col: str, text: str):
    text = text.strip()
    if text in ("", "N/A"):
        return None
    if col == "Succ-Ratio":
        return float(text.rstrip("%")) / 100
    if col in ("Op-Count", "Byte-Count"):
        return int(text)
    return float(text)


def workload_rows(path: str | Path) -> list[dict]:
    """The rows of a COSBench workload CSV (<wid>-<name>.csv), values typed."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows or rows[0][:3] != ["Stage", "Op-Name", "Op-Type"]:
        raise ValueError(f"{path}: not a COSBench workload CSV (header {rows[0][:3] if rows else None})")
    header = rows[0]
    status_at = header.index("Status")
    out = []
    for i, r in enumerate(rows[1:], start=2):
        if len(r) < status_at + 1:
            raise ValueError(f"{path}:{i}: {len(r)} fields, expected at least {status_at + 1}")
        row = {"stage": r[0], "op_name": r[1], "op_type": r[2], "status": r[status_at],
               "detailed_status": ",".join(r[status_at + 1:])}
        for col in header[3:status_at]:
            row[col] = _value(col, r[header.index(col)])
        out.append(row)
    return out


def find_workload_csv(outdir: str | Path) -> Path:
    outdir = Path(outdir)
    found = sorted(p for p in outdir.glob("w*-*.csv") if not p.name.endswith("-worker.csv"))
    if len(found) != 1:
        raise FileNotFoundError(f"{outdir}: expected one w<id>-<name>.csv, found {[p.name for p in found]}")
    return found[0]


def tidy(outdir: str | Path, **labels) -> list[dict]:
    """Long rows (stage, op_name, op_type, metric, value, unit, status, + labels) from an output
    folder; with cosbench-driver's summary.json, adds its system_kind and the stage windows."""
    outdir = Path(outdir)
    summary = {}
    if (outdir / "summary.json").exists():
        summary = json.loads((outdir / "summary.json").read_text())
    windows = {s["id"]: s["window_s"] for s in summary.get("stages", [])}
    kind = summary.get("system_kind", "real")
    long = []
    for row in workload_rows(find_workload_csv(outdir)):
        if row["op_name"] == "N/A":
            continue
        for col, (metric, unit) in METRICS.items():
            if col in row:
                long.append({**labels, "stage": row["stage"], "op_name": row["op_name"], "op_type": row["op_type"],
                             "metric": metric, "value": row[col], "unit": unit, "status": row["status"],
                             "window_s": windows.get(row["stage"]), "tool_kind": kind})
    return long


if __name__ == "__main__":
    json.dump(tidy(sys.argv[1]), sys.stdout, indent=1)
    print()
