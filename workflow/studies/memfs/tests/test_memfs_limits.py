"""MemFS against its side-by-side limit (issue 13): the ratios, verdicts, breakdown and the issue-13
table recomputed from hand-made raw files, and each verdict shown to flip on contradicting data
(a ratio above 1.0 is a measurement error, a ratio under the target is not met). No benchmark runs."""

from __future__ import annotations

import math
import statistics

import pandas as pd
import pytest
from repro import rawio

from studies.memfs import analyze as A
from studies.memfs import limits as L
from studies.memfs import run as R

CFG = {
    "envelope": {"designs": ["memfs", "locality"], "networks": ["IPoIB"], "nodes": [4], "sizes": ["128MiB"]},
    "table": {"networks": ["IPoIB", "1GbE"], "nodes": [4], "size": "1MiB"},
}
KIND = "stand-in:IPoIB link emulated by netns+tc HTB (8000 Mbit/s)"
MIB = 1 << 20


def _stats(op: str, nbytes: int, calls: int, extra: dict | None = None) -> dict:
    s = {"io.bytes_written" if op == "write" else "io.bytes_read": nbytes,
         "io.write_calls" if op == "write" else "io.read_calls": calls,
         "stripes.set" if op == "write" else "stripes.get": nbytes // (512 * 1024),
         "stripes.demand_fetches": 0 if op == "write" else 2, "memcached_meta.get": 4, "memcached_meta.set": 2,
         "memcached_meta.cas_conflicts": 7, "mc_rtt.get_ns" if op != "write" else "mc_rtt.set_ns": 3_000_000,
         "mc_rtt.get_count" if op != "write" else "mc_rtt.set_count": 2, "copy.read_bytes": 2 * nbytes,
         "wait.read_stripe_ns": 1_000_000, "wait.inline_fetch_ns": 500_000}
    s.update(extra or {})
    return s


def write_raw(root, net, size, rep, write_bw, read_bw, set_bw, get_bw, nbytes=128 * MIB, extra=None) -> str:
    rel = f"results/memfs/raw/envelope/network~{net}/design~memfs/nodes~4/size~{size}/rep~{rep}.json"
    rec = rawio.new_record("memfs", "envelope", {"network": net, "design": "memfs", "nodes": 4, "size": size}, rep,
                           KIND)
    m = rawio.metric
    rec["metrics"] = [m("write_bw", write_bw, "MB/s"), m("read11_bw", read_bw, "MB/s"),
                      m("limit_set_bw", set_bw, "MB/s"), m("limit_get_bw", get_bw, "MB/s")]
    rec["extra"] = {"memfs_stats": {"write": _stats("write", nbytes, nbytes // (128 * 1024), extra),
                                    "read11": _stats("read11", nbytes, nbytes // (32 * 1024), extra)},
                    "side_by_side_limit": {"value_size": 524288, "set_threads": 1, "get_threads": 8,
                                           "bytes_per_node": nbytes}}
    rawio.write_json_atomic(root / rel, rawio.finish(rec))
    return str(root / rel)


def tidy_of(paths) -> pd.DataFrame:
    return A.collect(paths, None)


def build(tmp_path, runs):
    """runs: {(net, size): [(write_bw, read_bw, set_bw, get_bw), ...]} -> (pairs, limit table, paths)."""
    paths = [write_raw(tmp_path, net, size, rep, *vals) for (net, size), reps in runs.items()
             for rep, vals in enumerate(reps)]
    pr = L.pairs(paths)
    return pr, L.limit_table(pr, tidy_of(paths), CFG), paths


GOOD = {("IPoIB", "128MiB"): [(90, 95, 100, 100), (85, 92, 100, 100), (88, 99, 100, 100)],
        ("1GbE", "1MiB"): [(90, 90, 100, 100)] * 3, ("IPoIB", "1MiB"): [(90, 90, 100, 100)] * 3}


def test_ratios_and_breakdown_are_recomputed_from_the_raw_files(tmp_path):
    pr, lim, paths = build(tmp_path, GOOD)
    for p in paths:
        rec = rawio.read(p)
        m = {x["metric"]: x["value"] for x in rec["metrics"]}
        got = pr[(pr["raw_file"] == p) & (pr["op"] == "write")].iloc[0]
        assert got["ratio"] == pytest.approx(m["write_bw"] / m["limit_set_bw"])
        st = rec["extra"]["memfs_stats"]["read11"]
        got = pr[(pr["raw_file"] == p) & (pr["op"] == "read11")].iloc[0]
        assert got["ratio"] == pytest.approx(m["read11_bw"] / m["limit_get_bw"])
        assert got["fuse_request_kib"] == pytest.approx(st["io.bytes_read"] / st["io.read_calls"] / 1024)  # 32
        # metadata round trips: get + set, not the cas_conflicts counter
        assert got["meta_round_trips_per_mib"] == pytest.approx(6 / (st["io.bytes_read"] / MIB))
        assert got["mc_rtt_ms"] == pytest.approx(1.5)  # 3 ms over 2 round trips
        assert got["copies_per_byte"] == pytest.approx(2.0)
        assert got["client_wait_ms_per_mib"] == pytest.approx(1.5 / (st["io.bytes_read"] / MIB))
        assert got["client_ms_per_mib"] == pytest.approx(4 * MIB / 1e3 / m["read11_bw"])  # 4 nodes
    row = lim[(lim["network"] == "IPoIB") & (lim["size"] == "128MiB") & (lim["op"] == "write")].iloc[0]
    assert (row["ratio_min"], row["ratio_median"], row["ratio_max"]) == pytest.approx((0.85, 0.88, 0.90))
    assert row["verdict"] == L.MET and row["reps"] == 3 and row["reps_above_1"] == 0
    assert row["fuse_request_kib"] == pytest.approx(128)


def test_a_ratio_above_one_is_a_measurement_error_not_a_result(tmp_path):
    bad = dict(GOOD)
    bad[("1GbE", "1MiB")] = [(90, 124, 100, 100), (90, 90, 100, 100), (90, 95, 100, 100)]  # one read 1.24x
    _pr, lim, _ = build(tmp_path, bad)
    row = lim[(lim["network"] == "1GbE") & (lim["op"] == "read11")].iloc[0]
    assert row["verdict"] == L.MEASUREMENT_ERROR and row["reps_above_1"] == 1
    assert all(math.isnan(row[c]) for c in ("ratio_min", "ratio_median", "ratio_max"))  # no value reported
    assert "1.24" in row["measured_ratios_invalid"]
    tab = L.issue13_table(lim, CFG)
    r13 = tab[tab["row"] == "MemFS vs memcached at 1 MiB (1GbE)"].iloc[0]
    assert r13["verdict"] == L.MEASUREMENT_ERROR and r13["this_run_min_median_max"].startswith("invalid")
    cl = {c.claim_id: c for c in A.limit_claims(lim, CFG)}
    c = cl["limit-read11-1GbE-4-1MiB"]
    assert c.verdict == "failed" and c.reproduced is None and "measurement error" in c.note
    # the write of the same runs stays a result
    assert cl["limit-write-1GbE-4-1MiB"].reproduced == pytest.approx(0.9)


def test_a_ratio_under_the_target_is_not_met(tmp_path):
    slow = dict(GOOD)
    slow[("IPoIB", "128MiB")] = [(26, 66, 100, 100), (15, 53, 100, 100), (20, 60, 100, 100)]  # the issue's values
    _pr, lim, _ = build(tmp_path, slow)
    tab = L.issue13_table(lim, CFG)
    w = tab[tab["row"] == "MemFS write 128 MiB, 4 nodes, IPoIB"].iloc[0]
    r = tab[tab["row"] == "MemFS 1-1 read, same"].iloc[0]
    assert w["verdict"] == L.NOT_MET and r["verdict"] == L.NOT_MET
    assert w["this_run_min_median_max"] == "0.15x / 0.20x / 0.26x"
    assert w["earlier_runs"] == "0.26x / 0.15x" and r["earlier_runs"] == "0.66x / 0.53x"
    # the same table on data that meets the target says met
    _pr, lim, _ = build(tmp_path / "good", GOOD)
    tab = L.issue13_table(lim, CFG)
    assert set(tab[tab["row"].str.startswith("MemFS write 128")]["verdict"]) == {L.MET}


@pytest.mark.parametrize("ratios, want", [
    ([0.9, 0.85, 0.8], L.MET), ([0.9, 0.5, 0.7], L.NOT_MET), ([0.9, 1.01, 0.95], L.MEASUREMENT_ERROR),
    ([1.0, 1.0], L.MET), ([], L.NOT_RUN)])
def test_verdict(ratios, want):
    assert L.verdict(ratios) == want
    if ratios:
        assert (statistics.median(ratios) >= L.TARGET) == (want == L.MET) or want == L.MEASUREMENT_ERROR


def test_missing_runs_are_not_run_rows(tmp_path):
    _pr, lim, _ = build(tmp_path, {("IPoIB", "128MiB"): GOOD[("IPoIB", "128MiB")]})
    row = lim[(lim["network"] == "1GbE")].iloc[0]
    assert row["verdict"] == L.NOT_RUN and row["reps"] == 0 and row["ok_runs_without_limit"] == 0
    tab = L.issue13_table(lim, CFG)
    assert tab[tab["network"] == "1GbE"]["verdict"].eq(L.NOT_RUN).all()
    assert len(tab) == len(L.ISSUE13_ROWS)


def test_every_counter_memfs_writes_is_carried(tmp_path):
    """flat_numeric/memfs_totals/stats_delta are generic: a counter MemFS adds later (here a pool-wait
    time) reaches the raw record and the table's other_counters column without a code change."""
    node = {"mounts": [{"memfs": {"schema": "memfs-stats/1", "stripe_size": 524288, "time": 5,
                                  "io": {"bytes_read": 2 * MIB, "read_calls": 16},
                                  "pool": {"wait_ns": 3000},
                                  "per_server": [{"index": 0, "bytes_get": MIB}, {"index": 1, "bytes_get": MIB}]}}]}
    before = R.memfs_totals([{"mounts": [{"memfs": {"io": {"bytes_read": 0, "read_calls": 0},
                                                    "pool": {"wait_ns": 0}}}]}])
    after = R.memfs_totals([node, node])  # two nodes
    d = R.stats_delta(before, after)
    assert d["io.bytes_read"] == 4 * MIB and d["pool.wait_ns"] == 6000 and d["per_server.bytes_get"] == 4 * MIB
    assert "stripe_size" not in d and "time" not in d and "per_server.index" not in d
    assert L.other_counters(d, "read11") == "pool.wait_ns=1500/MiB"


def test_a_run_without_the_side_by_side_limit_gives_no_ratio(tmp_path):
    """An ok MemFS run written without mcbench beside it (older code) is counted, never paired with
    another job's limit."""
    paths = [write_raw(tmp_path, "IPoIB", "128MiB", 0, 90, 95, 100, 100)]
    rec = rawio.read(paths[0])
    rec["metrics"] = [x for x in rec["metrics"] if not x["metric"].startswith("limit_")]
    rawio.write_json_atomic(paths[0], rec)
    pr = L.pairs(paths)
    lim = L.limit_table(pr, tidy_of(paths), CFG)
    row = lim[(lim["network"] == "IPoIB") & (lim["size"] == "128MiB") & (lim["op"] == "write")].iloc[0]
    assert pr.empty and row["verdict"] == L.NOT_RUN and row["ok_runs_without_limit"] == 1


def _row(**kw):
    base = {"verdict": "not met", "client_ms_per_mib": 40.0, "limit_ms_per_mib": 10.0, "fuse_request_kib": 4.0,
            "client_wait_ms_per_mib": 0.02, "pool_queue_ms_per_mib": 0.6, "lock_wait_ms_per_mib": 0.04,
            "mc_rtt_ms": 9.0}
    return {**base, **kw}


def test_the_reading_follows_the_breakdown_not_a_fixed_text():
    small = L.reading(_row())
    assert "4 KiB" in small and "per-request cost" in small and "30 ms/MiB gap" in small
    # the same gap with big requests and most of it spent blocked on stripes reads as waiting, not per request
    waiting = L.reading(_row(fuse_request_kib=500.0, client_wait_ms_per_mib=20.0))
    assert "per-request" not in waiting and "blocked on stripes" in waiting
    queued = L.reading(_row(fuse_request_kib=500.0, pool_queue_ms_per_mib=25.0))
    assert "queued in the pool" in queued
    cpu = L.reading(_row(fuse_request_kib=500.0, client_wait_ms_per_mib=1.0, pool_queue_ms_per_mib=1.0))
    assert "CPU in the FUSE path" in cpu
    assert "no gap" in L.reading(_row(client_ms_per_mib=9.0))
    assert "within timing noise" in L.reading(_row(verdict=L.MEASUREMENT_ERROR, client_ms_per_mib=6.7,
                                                   limit_ms_per_mib=7.2))
    assert L.reading(_row(client_ms_per_mib=float("nan"))) == ""


def test_like_for_like_columns_name_streams_transfer_and_the_same_streams_limit(tmp_path):
    """Issue 22: each ratio says its streams and transfer size; the limit at the same stream count is kept
    beside the one at MemFS's pool size (the verdict uses the faster; the same-streams ratio is shown)."""
    p = write_raw(tmp_path, "IPoIB", "128MiB", 0, 60, 70, 100, 100)
    rec = rawio.read(p)
    rec["extra"].update({"procs_per_node": 1, "record_bytes": 4096})
    rec["extra"]["side_by_side_limit"].update({"procs_per_node": 1, "pool_threads_per_node": 8, "runs": [
        {"threads": 1, "set_bw": 40.0, "get_bw": 50.0}, {"threads": 8, "set_bw": 100.0, "get_bw": 100.0}]})
    rawio.write_json_atomic(p, rec)
    pr = L.pairs([p])
    w = pr[pr["op"] == "write"].iloc[0]
    assert (w["streams_per_node"], w["transfer_bytes"]) == (1, 4096)
    assert w["limit_same_streams_bw"] == 40.0 and w["limit_inflight_bw"] == 100.0
    assert w["ratio"] == pytest.approx(0.6) and w["ratio_same_streams"] == pytest.approx(1.5)
    r = pr[pr["op"] == "read11"].iloc[0]
    assert r["ratio_same_streams"] == pytest.approx(70 / 50)
    lim = L.limit_table(pr, tidy_of([p]), CFG)
    row = lim[(lim["network"] == "IPoIB") & (lim["size"] == "128MiB") & (lim["op"] == "write")].iloc[0]
    assert row["streams_per_node"] == 1 and row["ratio_same_streams_median"] == pytest.approx(1.5)
    assert row["verdict"] == L.NOT_MET  # against the faster (in-flight) limit: 0.6
