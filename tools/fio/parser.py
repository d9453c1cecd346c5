"""fio's JSON output (`--output-format=json`) as tidy rows: metric, value, unit and the job's parameters.

One row per (job, direction, metric) for each direction that moved data:

    bandwidth  B/s      bw_bytes
    iops       op/s     iops
    lat_mean   us       lat_ns.mean / 1000 (completion + submission)
    lat_p99    us       clat_ns.percentile["99.000000"] / 1000

plus the parameters (rw, bs, iodepth, direct, ioengine, size, numjobs, job, fio_version).

    python -m tools.fio.parser OUT/*.json > fio.csv
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

PARAMS = ("rw", "bs", "iodepth", "direct", "ioengine", "size", "numjobs", "runtime")
COLUMNS = ("tool", "fio_version", "job", *PARAMS, "direction", "metric", "value", "unit")


class FioParseError(ValueError):
    pass


def load(path: Path) -> dict:
    text = Path(path).read_text()
    start = text.find("{")
    if start < 0:
        raise FioParseError(f"{path}: no JSON object (not fio --output-format=json output)")
    try:
        return json.loads(text[start:])
    except json.JSONDecodeError as e:
        raise FioParseError(f"{path}: invalid JSON: {e}") from e


def rows(data: dict, source: str = "") -> list[dict]:
    if "jobs" not in data or "fio version" not in data:
        raise FioParseError(f"{source or 'input'}: not fio JSON output (no 'jobs' / 'fio version')")
    glob = data.get("global options", {})
    out = []
    for job in data["jobs"]:
        if job.get("error", 0):
            raise FioParseError(f"{source}: fio job {job.get('jobname')} failed with error {job['error']}")
        opts = {**glob, **job.get("job options", {})}
        params = {k: opts.get(k, "") for k in PARAMS}
        for direction in ("read", "write", "trim"):
            d = job.get(direction)
            if not d or not d.get("io_bytes"):
                continue
            base = {"tool": "fio", "fio_version": data["fio version"], "job": job["jobname"], **params,
                    "direction": direction}
            pct = d.get("clat_ns", {}).get("percentile", {})
            metrics = [("bandwidth", float(d["bw_bytes"]), "B/s"), ("iops", float(d["iops"]), "op/s"),
                       ("lat_mean", d["lat_ns"]["mean"] / 1000.0, "us")]
            if "99.000000" in pct:
                metrics.append(("lat_p99", pct["99.000000"] / 1000.0, "us"))
            out += [{**base, "metric": m, "value": v, "unit": u} for m, v, u in metrics]
    if not out:
        raise FioParseError(f"{source}: fio output moved no data")
    return out


def parse_files(paths: list[Path]) -> list[dict]:
    return [r for p in paths for r in rows(load(p), str(p))]


def main(argv: list[str] | None = None) -> int:
    paths = [Path(p) for p in (argv if argv is not None else sys.argv[1:])]
    if not paths:
        print("usage: python -m tools.fio.parser FIO_JSON...", file=sys.stderr)
        return 2
    w = csv.DictWriter(sys.stdout, fieldnames=COLUMNS)
    w.writeheader()
    w.writerows(parse_files(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
