"""Locust's CSV output -> tidy rows (one row per metric), plus the generator record.

    python -m tools.locust.parser DIR [DIR ...] --out tidy.csv [--label weights=random-from-config ...]

DIR holds ``users~U/locust_stats.csv`` (+ ``_stats_history.csv``, ``_failures.csv``, ``generator.json``)
as tools/locust/runner.py writes them. Metrics, from the stats file's ``Aggregated`` row (all request
names together): throughput (Requests/s), latency_median / latency_mean / latency_p95 / latency_p99 (ms),
failures_per_s, requests, failures; locustfile_exceptions (from ``_exceptions.csv``: errors of the
checking code itself, which Locust does not count as requests — the study must treat a run with any
as failed); from generator.json: generator_cpu_cores. Every row carries the
run's labels, its users, and its system_kind. Numbers are Locust's as written, never recomputed.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

METRICS = (  # (metric, Locust column, unit)
    ("throughput", "Requests/s", "req/s"),
    ("latency_median", "Median Response Time", "ms"),
    ("latency_mean", "Average Response Time", "ms"),
    ("latency_p95", "95%", "ms"),
    ("latency_p99", "99%", "ms"),
    ("failures_per_s", "Failures/s", "1/s"),
    ("requests", "Request Count", "count"),
    ("failures", "Failure Count", "count"),
)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def aggregated(stats_csv: Path) -> dict:
    """The ``Aggregated`` row of a Locust ``_stats.csv``."""
    rows = [r for r in read_csv(stats_csv) if r["Name"] == "Aggregated"]
    if len(rows) != 1:
        raise ValueError(f"{stats_csv}: expected one 'Aggregated' row, found {len(rows)}")
    return rows[0]


def _num(text: str) -> float | None:
    return None if text in ("", "N/A") else float(text)


def failures(failures_csv: Path) -> list[dict]:
    """Locust's failure table: method, name, error text, occurrences."""
    if not failures_csv.exists():
        return []
    return [{"method": r["Method"], "name": r["Name"], "error": r["Error"], "occurrences": int(r["Occurrences"])}
            for r in read_csv(failures_csv)]


def exceptions(exceptions_csv: Path) -> int:
    """How many exceptions the locustfile itself raised (a bug in a check, not a server answer)."""
    if not exceptions_csv.exists():
        return 0
    return sum(int(r["Count"]) for r in read_csv(exceptions_csv))


def history_span(history_csv: Path) -> dict:
    """First/last timestamps and the final cumulative counts of ``_stats_history.csv``'s Aggregated rows."""
    rows = [r for r in read_csv(history_csv) if r["Name"] == "Aggregated"]
    if not rows:
        return {}
    return {"history_rows": len(rows), "history_s": int(rows[-1]["Timestamp"]) - int(rows[0]["Timestamp"]),
            "history_requests": int(rows[-1]["Total Request Count"]),
            "history_failures": int(rows[-1]["Total Failure Count"])}


def tidy_run(run_dir: Path, labels: dict | None = None) -> list[dict]:
    """Tidy rows of one ``users~U`` directory."""
    run_dir = Path(run_dir)
    gen_path = run_dir / "generator.json"
    gen = json.loads(gen_path.read_text()) if gen_path.exists() else {}
    users = gen.get("users")
    if users is None:
        m = re.search(r"users~(\d+)", run_dir.name)
        users = int(m.group(1)) if m else None
    base = {**gen.get("labels", {}), **(labels or {}), "users": users,
            "system_kind": gen.get("system_kind", (labels or {}).get("system_kind", "real"))}
    agg = aggregated(run_dir / "locust_stats.csv")
    rows = [{**base, "metric": metric, "value": _num(agg[col]), "unit": unit} for metric, col, unit in METRICS]
    rows.append({**base, "metric": "locustfile_exceptions", "value": exceptions(run_dir / "locust_exceptions.csv"),
                 "unit": "count"})
    if gen:
        rows.append({**base, "metric": "generator_cpu_cores", "value": gen["cpu_cores_used"], "unit": "cores"})
    return rows


def tidy_dirs(dirs, labels: dict | None = None) -> list[dict]:
    rows = []
    for d in dirs:
        d = Path(d)
        if (d / "locust_stats.csv").exists():
            runs = [d]
        else:
            runs = sorted(d.glob("users~*"), key=lambda p: int(p.name.split("~")[1]))
        if not runs:
            raise FileNotFoundError(f"{d}: no users~*/locust_stats.csv")
        for r in runs:
            rows.extend(tidy_run(r, labels))
    return rows


def write_csv(rows: list[dict], path: Path) -> None:
    cols = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dirs", nargs="+", type=Path)
    p.add_argument("--out", type=Path, help="CSV to write (default: stdout)")
    p.add_argument("--label", action="append", default=[], metavar="KEY=VALUE")
    a = p.parse_args(argv)
    rows = tidy_dirs(a.dirs, dict(kv.split("=", 1) for kv in a.label))
    write_csv(rows, a.out or Path("/dev/stdout"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
