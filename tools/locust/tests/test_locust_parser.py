"""The tidy rows equal Locust's own numbers, and those numbers agree with the rest of Locust's CSVs."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tools.locust import parser

FIX = Path(__file__).resolve().parents[1] / "fixtures"
RUNS = sorted(FIX.glob("*/users~*"))


def rows_of(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_fixtures_exist():
    assert len(RUNS) >= 3


@pytest.mark.parametrize("run", RUNS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_tidy_rows_recomputed_from_raw_csvs(run):
    tidy = {r["metric"]: r for r in parser.tidy_run(run)}
    stats = rows_of(run / "locust_stats.csv")
    per_name = [r for r in stats if r["Name"] != "Aggregated"]
    agg = next(r for r in stats if r["Name"] == "Aggregated")
    users = int(run.name.split("~")[1])
    assert all(r["users"] == users for r in tidy.values())
    # counts: the per-name rows add up to the aggregate the table reports
    requests = sum(int(r["Request Count"]) for r in per_name)
    failures = sum(int(r["Failure Count"]) for r in per_name)
    assert tidy["requests"]["value"] == requests > 0
    assert tidy["failures"]["value"] == failures
    # the failure table accounts for every failure
    assert sum(f["occurrences"] for f in parser.failures(run / "locust_failures.csv")) == failures
    # the mean latency is the request-weighted mean of the per-name means
    mean = sum(float(r["Average Response Time"]) * int(r["Request Count"]) for r in per_name) / requests
    assert tidy["latency_mean"]["value"] == pytest.approx(mean, rel=1e-9)
    # failures/s and req/s share one time base: their ratio is the failure fraction
    assert tidy["failures_per_s"]["value"] / tidy["throughput"]["value"] == pytest.approx(failures / requests)
    assert tidy["throughput"]["value"] == float(agg["Requests/s"])
    # percentiles as Locust wrote them, in order
    assert tidy["latency_p95"]["value"] == float(agg["95%"]) and tidy["latency_p99"]["value"] == float(agg["99%"])
    assert tidy["latency_p95"]["value"] <= tidy["latency_p99"]["value"] <= float(agg["Max Response Time"]) + 1
    # the history's last row (written once a second) never exceeds the final totals
    span = parser.history_span(run / "locust_stats_history.csv")
    assert 0 < span["history_requests"] <= requests and span["history_failures"] <= failures
    assert tidy["locustfile_exceptions"]["value"] == 0
    # the generator record of the same run
    assert tidy["generator_cpu_cores"]["value"] > 0 and tidy["generator_cpu_cores"]["unit"] == "cores"


def test_bad_input_failures_are_the_servers_error_status():
    run = FIX / "tfserving-standin-bad-input" / "users~2"
    rows = {r["metric"]: r for r in parser.tidy_run(run)}
    assert rows["failures"]["value"] > 0
    assert rows["throughput"]["system_kind"] == "stand-in:tfserving-rest-on-tf-python"
    assert rows["throughput"]["server"] == "tfserving-standin"
    errors = parser.failures(run / "locust_failures.csv")
    assert errors and all("HTTP 400" in e["error"] and "expects [-1, 3, 64, 64]" in e["error"] for e in errors)
    # every third request was wrong-shaped (REPRO_BAD_EVERY=3): exactly a third failed
    assert rows["failures"]["value"] * 3 == rows["requests"]["value"]


def test_tidy_dirs_and_csv_output(tmp_path):
    rows = parser.tidy_dirs([FIX / "trivial"], {"study": "inference"})
    assert sorted({r["users"] for r in rows}) == [1, 4]
    assert all(r["study"] == "inference" for r in rows)
    out = tmp_path / "tidy.csv"
    parser.write_csv(rows, out)
    back = rows_of(out)
    assert len(back) == len(rows) and {r["metric"] for r in back} >= {"throughput", "latency_p99", "failures_per_s"}


def test_a_stats_file_without_aggregate_is_an_error(tmp_path):
    (tmp_path / "locust_stats.csv").write_text("Type,Name,Request Count\nGET,x,1\n")
    with pytest.raises(ValueError, match="Aggregated"):
        parser.aggregated(tmp_path / "locust_stats.csv")
