"""Helpers: run the driver and recompute its COSBench CSV from its raw per-request log."""

from __future__ import annotations

import csv
import json
import subprocess
from collections import defaultdict
from pathlib import Path

WORKLOAD_COLS = 16  # the columns before Status / Detailed Status


def run(driver: Path, workload: Path, out: Path, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run([str(driver), "run", str(workload), "--out", str(out), *args],
                          capture_output=True, text=True, timeout=timeout)


def workload_csv(out: Path) -> list[dict]:
    """Rows of the <wid>-<name>.csv file (one per stage and Op-Name)."""
    files = [p for p in out.glob("w1-*.csv")]
    assert len(files) == 1, files
    with open(files[0], newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    assert header[-2:] == ["Status", "Detailed Status"]
    return [dict(zip(header[:WORKLOAD_COLS], r[:WORKLOAD_COLS]), Status=r[WORKLOAD_COLS]) for r in rows[1:]]


def op_log(out: Path) -> list[dict]:
    with open(out / "ops.csv", newline="") as f:
        return list(csv.DictReader(f))


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def check_csv_against_log(out: Path) -> dict[tuple[str, str], dict]:
    """Op-Count, Byte-Count, Succ-Ratio and Throughput of every workload-CSV row equal what
    the per-request log gives (successful, counted requests; throughput over the stage's
    measurement window from summary.json). Returns the rows by (stage id, Op-Name)."""
    ok_count: dict = defaultdict(int)
    fail_count: dict = defaultdict(int)
    nbytes: dict = defaultdict(int)
    for r in op_log(out):
        if r["counted"] != "true":
            continue
        key = (r["stage_id"], r["op_name"])
        if r["ok"] == "true":
            ok_count[key] += 1
            nbytes[key] += int(r["bytes"])
        else:
            fail_count[key] += 1
    windows = {s["id"]: s["window_s"] for s in summary(out)["stages"]}
    rows = {}
    for row in workload_csv(out):
        if row["Op-Name"] == "N/A":  # a stage without requests (delay)
            continue
        key = (row["Stage"], row["Op-Name"])
        rows[key] = row
        assert int(row["Op-Count"]) == ok_count[key], (key, row["Op-Count"], ok_count[key])
        assert int(row["Byte-Count"]) == nbytes[key], (key, row["Byte-Count"], nbytes[key])
        total = ok_count[key] + fail_count[key]
        if total:
            assert abs(float(row["Succ-Ratio"].rstrip("%")) - 100 * ok_count[key] / total) <= 0.006, (key, row)
        if windows[row["Stage"]] > 0:
            want = ok_count[key] / windows[row["Stage"]]
            assert abs(float(row["Throughput"]) - want) <= 0.006 + 1e-9 * want, (key, row["Throughput"], want)
    return rows
