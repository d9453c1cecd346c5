#!/usr/bin/env python3
"""mpifuse speed report: FUSE overhead (passthrough vs native), OSR at n=1 vs native, and bytes
from the source as the node count grows -- from the speed benchmark's raw file only."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pandas as pd

from repro import rawio, tidy

AIM = 0.10  # at most 10 % FUSE overhead


def tables(rec: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Statistics per measurement, and the FUSE overhead per variant and tool.

    The overhead is 1 - the median over repeats of throughput(variant) / throughput(native) of the
    same repeat: native and FUSE reads of one repeat run back to back, so the ratio of a pair is far
    less sensitive to other load on a shared machine than a ratio of means."""
    rows = [{**m.get("labels", {}), "metric": m["metric"], "value": m["value"], "unit": m["unit"]}
            for m in rec["metrics"]]
    df = pd.DataFrame(rows)
    stats = (df.groupby(["metric", "unit", "variant", "tool", "nodes"])["value"]
             .agg(["count", "median", "mean", "std", "min", "max"]).reset_index())
    thr = df[df.metric == "throughput"]
    nat = thr[thr.variant == "native"].set_index(["tool", "rep"])["value"]
    over = []
    for (variant, tool), g in thr[thr.variant != "native"].groupby(["variant", "tool"]):
        ratios = [v / nat[(tool, r)] for r, v in zip(g["rep"], g["value"]) if (tool, r) in nat.index]
        ratio = float(pd.Series(ratios).median()) if ratios else float("nan")
        over.append({"variant": variant, "tool": tool, "throughput_GBps_median": float(g["value"].median()),
                     "native_GBps_median": float(nat.loc[tool].median()) if tool in nat.index.get_level_values(0)
                     else float("nan"),
                     "overhead": 1 - ratio, "within_aim": bool(1 - ratio <= AIM) if not math.isnan(ratio) else None,
                     "repeats": len(ratios)})
    return stats, pd.DataFrame(over)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--raw", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--report", required=True)
    a = ap.parse_args()
    rec = rawio.read(a.raw)
    stats, over = tables(rec)
    out = stats.merge(over[["variant", "tool", "overhead", "within_aim"]], on=["variant", "tool"], how="left")
    out.loc[out.metric != "throughput", ["overhead", "within_aim"]] = None
    out["system_kind"] = rec["system_kind"]
    tidy.write_csv(out, a.table)
    b = stats[stats.metric == "file_sizes_from_source"][["variant", "nodes", "count", "mean", "min", "max"]]
    ex = rec.get("extra", {})
    lines = [
        "# mpifuse speed benchmark",
        "",
        (f"File {rec['params']['size']} on {rec['params']['source']} ({rec['system_kind']}), host {rec['host']}, "
         f"{ex.get('repeats')} repeat(s), {rec['finished_at']}."),
        "",
        ("FUSE options (libmpifuse; the others are the library's defaults: readahead 4 x max_read, "
         "pread (no splice), 8 FUSE threads when threads=on) per variant: ")
        + "; ".join(f"{v}: {json.dumps(o.get('options', {}), sort_keys=True)}"
                    for v, o in ex.get("fs_options", {}).items()),
        "",
        f"Note: {ex.get('note', '')}",
        "",
        (f"## Read throughput on one node (GB/s, median of repeats; overhead = 1 - median of the per-repeat "
         f"ratio to native; aim: FUSE overhead <= {AIM:.0%})"),
        "",
        over.to_markdown(index=False, floatfmt=".3f") if hasattr(over, "to_markdown") and _has_tabulate()
        else over.to_string(index=False, float_format=lambda x: f"{x:.3f}"),
        "",
        "## Bytes read from the source (x the file size) as the node count grows",
        "",
        b.to_string(index=False, float_format=lambda x: f"{x:.3f}"),
        "",
    ]
    Path(a.report).parent.mkdir(parents=True, exist_ok=True)
    Path(a.report).write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
