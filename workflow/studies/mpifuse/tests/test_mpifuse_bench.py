"""The benchmarker, end to end on this host: raw files that validate, hashes checked, bytes from the
source as designed, failures recorded loudly, and every table recomputed from the raw files equal to
what the scripts wrote."""

from __future__ import annotations

import json
import math
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from studies.mpifuse import analysis, layout
from studies.mpifuse import claims as mf_claims
from repro import claims, paramspace, rawio

from mpifuse_study_testlib import PY, REPO, run_bench, study_config

PUBLISHED = REPO / "workflow" / "studies" / "mpifuse" / "published.csv"
SMALL = ["native", "osr", "bcast-shm", "bcast-nocopy", "passthrough", "osr-refined"]


@pytest.fixture(scope="module")
def small_study(tmp_path_factory, mpifuse_ready, homefs_ready):
    """n in {1, 2}, 64KB and 2MB, home (emulated) and scratch, one repeat: 8 runs of 6 use cases."""
    tmp = tmp_path_factory.mktemp("mfstudy")
    cfg = study_config(tmp, nodes=[1, 2], sizes=["64KB", "2MB"], repeats=1, variants=SMALL,
                       home={"rate_mbit": 400}, figure4={"source": "scratch", "nodes": 2, "size": "2MB"})
    procs = {}
    for r in layout.matrix(cfg):
        p = run_bench(cfg, tmp, r["source"], r["nodes"], r["size"], r["rep"])
        procs[(r["source"], r["nodes"], r["size"])] = p
        assert p.returncode == 0, f"{r}: rc {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return tmp, cfg, procs


def test_raw_files_validate_and_hashes_match(small_study):
    tmp, cfg, procs = small_study
    paths = layout.expected_raw(cfg, str(tmp / "results/mpifuse/raw"))
    assert len(paths) == 2 * 2 * 2 * len(SMALL)
    for p in paths:
        rec = rawio.read(p)  # schema repro.raw/1
        assert rec["status"] == "ok", p
        params = paramspace.parse_path(p)
        assert rec["params"] == {"source": params["source"], "variant": params["variant"],
                                 "nodes": int(params["nodes"]), "size": params["size"]}
        assert rec["sanity"]["hash_match"] is True and rec["sanity"]["bytes_from_source_ok"] is True
        n = rec["params"]["nodes"]
        assert set(rec["extra"]["node_hashes"].values()) == {rec["extra"]["sha256"]}
        assert len(rec["extra"]["node_hashes"]) == n
        m = {(x["metric"], x.get("labels", {}).get("node")): x["value"] for x in rec["metrics"]}
        node_times = [m[("node_time", i)] for i in range(1, n + 1)]
        assert m[("time", None)] == max(node_times)  # the run's time is the slowest node's
        size = paramspace.size_bytes(rec["params"]["size"])
        reads = layout.expected_source_reads(rec["params"]["variant"], n)
        assert m[("bytes_from_source", None)] == pytest.approx(reads * size, rel=0.02, abs=65536 * n)
        if rec["params"]["source"] == "home":
            assert rec["system_kind"].startswith("stand-in:")
            assert ("link_bytes", None) in m and m[("link_bytes", None)] >= reads * size * 0.95
        else:
            assert rec["system_kind"].startswith("stand-in:")
        if rec["params"]["variant"] != "native":
            mode = layout.VARIANTS[rec["params"]["variant"]].mode
            want = layout.fs_options(cfg, mode)  # fs_options with the mode's overrides
            assert {k: rec["extra"]["fs_options"][k] for k in want} == want
            assert rec["extra"]["fs_options"]["max_read"] == want.get("max_read", cfg["fs_options"]["max_read"])
            st = rec["extra"]["fs_stats"]["1"]
            if mode == "bcast":  # the configured pacing is what ran (the paper's: on demand, lockstep)
                assert st["bcast_on_demand"] is bool(want.get("bcast_on_demand", False))
                assert st["bcast_depth"] == want.get("bcast_depth", 4)
                assert ("fs_bcast_demand_wait_time", 1) in m and ("fs_bcast_sync_time", 1) in m
                if want.get("bcast_on_demand"):
                    assert st["bcast_sync"] == "barrier" and st["bcast_sync_calls"] > 0
    # the progress lines
    out = procs[("home", 2, "2MB")].stdout
    assert "[mpifuse] home osr n=2 2MB rep 1/1:" in out


def test_nothing_is_left_behind(small_study):
    tmp, _, _ = small_study
    assert not list((tmp / "home").glob("*/homefs.json")), "a homefs instance is still up"
    assert str(tmp) not in Path("/proc/self/mounts").read_text()
    assert not [f for f in (tmp / "scratch").rglob("*") if f.is_file()], "test files left on the source"
    for d in ("local", "mnt"):
        assert not (tmp / d).exists() or not any((tmp / d).iterdir()), f"{d} not cleaned"
    assert not [p for p in Path("/dev/shm").glob("rmf-t*")], "/dev/shm not cleaned"


def _run_script(name, *args, cwd):
    p = subprocess.run([PY, "-m", f"studies.mpifuse.{name}", *args], capture_output=True, text=True, cwd=cwd)
    assert p.returncode == 0, f"{name}: {p.stdout[-2000:]}\n{p.stderr[-3000:]}"
    return p


def test_tables_recomputed_from_raw_equal_the_scripts_outputs(small_study):
    tmp, cfg, _ = small_study
    c = tmp / "cfg-analysis.json"
    c.write_text(json.dumps(cfg))
    out = tmp / "results" / "mpifuse"
    _run_script("aggregate", "--config", f"@{c}", "--measurements", str(out / "measurements.csv"),
                "--summary", str(out / "tables/summary.csv"), "--bytes", str(out / "tables/bytes.csv"), cwd=tmp)
    _run_script("table1", "--config", f"@{c}", "--measurements", str(out / "measurements.csv"),
                "--published", str(PUBLISHED), "--out", str(out / "tables/table1.csv"), cwd=tmp)
    _run_script("ratios", "--config", f"@{c}", "--measurements", str(out / "measurements.csv"),
                "--published", str(PUBLISHED), "--out", str(out / "tables/ratios.csv"), cwd=tmp)
    _run_script("claims", "--config", f"@{c}", "--measurements", str(out / "measurements.csv"),
                "--published", str(PUBLISHED), "--out", str(out / "claims.csv"), cwd=tmp)
    for fig in ("figure3", "figure4", "figure5"):  # one command line for every figure (rule mpifuse_figure)
        _run_script(fig, "--config", f"@{c}", "--measurements", str(out / "measurements.csv"),
                    "--published", str(PUBLISHED), "--table", str(out / f"tables/{fig}.csv"),
                    "--out", str(out / f"figures/{fig}.png"), cwd=tmp)

    # recompute from the raw files only, in this process
    raw_rows = []
    for p in layout.expected_raw(cfg, str(tmp / "results/mpifuse/raw")):
        rec = rawio.read(p)
        for m in rec["metrics"]:
            raw_rows.append({**rec["params"], "rep": rec["rep"], **m.get("labels", {}), "metric": m["metric"],
                             "value": m["value"]})
    raw = pd.DataFrame(raw_rows)
    tidy_df = analysis.read_measurements(out / "measurements.csv")
    assert (tidy_df["status"] == "ok").all() and len(tidy_df) == len(raw)
    keys = ["source", "variant", "nodes", "size", "rep", "metric", "node"]
    a = tidy_df[keys + ["value"]].sort_values(keys, na_position="first").reset_index(drop=True)
    b = raw.reindex(columns=keys + ["value"]).sort_values(keys, na_position="first").reset_index(drop=True)
    b["nodes"], b["rep"] = b["nodes"].astype("Int64"), b["rep"].astype("Int64")
    b["node"] = pd.to_numeric(b["node"]).astype("Int64")
    pd.testing.assert_frame_equal(a, b, check_dtype=False)

    # Table I from raw: mean time of each (source, variant) at n=1 and n=2, 2MB
    t1 = pd.read_csv(out / "tables/table1.csv")
    for _, r in t1.iterrows():
        sel = raw[(raw.metric == "time") & (raw.source == r["source"]) & (raw.variant == r["variant"])
                  & (raw["size"] == "2MB")]
        m1 = sel[sel.nodes == 1]["value"].mean()
        m2 = sel[sel.nodes == 2]["value"].mean()
        assert r["time_min_nodes_s"] == pytest.approx(m1, rel=1e-9)
        assert r["time_max_nodes_s"] == pytest.approx(m2, rel=1e-9)
        assert r["increase"] == pytest.approx(m2 / m1, rel=1e-9)
        assert r["throughput_GBps"] == pytest.approx(2 * 2e6 / m2 / 1e9, rel=1e-9)
    pub = analysis.read_published(PUBLISHED)
    home_native = t1[(t1.source == "home") & (t1.variant == "native")].iloc[0]
    assert home_native["published_time_24_nodes_s"] == pytest.approx(21.408)

    # claims from the tidy table rebuilt from the raw files equal the claims file
    want = pd.DataFrame([c.row() for c in mf_claims.build(tidy_df, cfg, pub)], columns=claims.COLUMNS)
    got = claims.read(out / "claims.csv")
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.astype(str).reset_index(drop=True))
    assert set(got["kind"]) <= {"shape", "value", "info"}
    assert (got["system_kind"].str.startswith("stand-in:")).all()
    # ratios: the nominal bandwidth reduction is n for read-once designs
    rt = pd.read_csv(out / "tables/ratios.csv")
    osr = rt[(rt.source == "home") & (rt.variant == "osr")].iloc[0]
    assert osr["bandwidth_reduction_nominal"] == 2 and osr["bandwidth_reduction_measured"] == pytest.approx(2, rel=0.05)
    assert osr["ratio"] == pytest.approx(2 / osr["latency_increase"])
    assert math.isclose(rt[(rt.source == "home") & (rt.variant == "osr")]["published_ratio_from_table1"].iloc[0],
                        24 / (23.094 / 21.408), rel_tol=1e-3)


def test_wrong_hash_is_a_failed_run_and_a_nonzero_exit(tmp_path, mpifuse_ready):
    cfg = study_config(tmp_path, nodes=[1], sizes=["64KB"], repeats=1)
    p = run_bench(cfg, tmp_path, "scratch", 1, "64KB", variants=["native", "osr"],
                  faults=["wrong-hash:osr"])
    assert p.returncode != 0
    raw = tmp_path / "results/mpifuse/raw"
    ok = raw / "source~scratch/variant~native/nodes~1/size~64KB/rep~0.json"
    bad = raw / "source~scratch/variant~osr/nodes~1/size~64KB/rep~0.json"
    assert rawio.read(ok)["status"] == "ok"
    assert not bad.exists()
    rec = rawio.read(rawio.failure_path(bad))
    assert rec["status"] == "failed" and "hash" in rec["failure"] and rec["sanity"]["hash_match"] is False
    assert "FAILED" in p.stdout
    # the post-mortem (the runner's --after) leaves the existing failure record alone
    assert "0 failure record(s) written" in p.finish.stderr, p.finish.stderr[-2000:]


def test_a_hang_aborts_within_the_test_timeout(tmp_path, mpifuse_ready):
    cfg = study_config(tmp_path, nodes=[2], sizes=["64KB"], repeats=1, timeout={"base_s": 4, "per_gb_node_s": 0})
    t0 = time.monotonic()
    p = run_bench(cfg, tmp_path, "scratch", 2, "64KB", variants=["osr", "native"], faults=["hang:osr"],
                  timeout=120)
    took = time.monotonic() - t0
    assert p.returncode not in (0, 124), p.stderr[-2000:]
    assert took < 60, f"took {took:.0f} s"
    bad = tmp_path / "results/mpifuse/raw/source~scratch/variant~osr/nodes~2/size~64KB/rep~0.json"
    rec = rawio.read(rawio.failure_path(bad))
    assert "timeout" in rec["failure"]
    # the use case that never ran gets a failure record from the post-mortem
    never = tmp_path / "results/mpifuse/raw/source~scratch/variant~native/nodes~2/size~64KB/rep~0.json"
    assert rawio.read(rawio.failure_path(never))["status"] == "failed"
    assert "aborting the MPI job" in p.stderr
    assert str(tmp_path) not in Path("/proc/self/mounts").read_text()


def test_a_lost_rank_ends_the_job_with_failure_records(tmp_path, mpifuse_ready):
    cfg = study_config(tmp_path, nodes=[2], sizes=["64KB"], repeats=1)
    t0 = time.monotonic()
    p = run_bench(cfg, tmp_path, "scratch", 2, "64KB", variants=["passthrough", "osr"],
                  faults=["lost-rank:passthrough"], timeout=180)
    assert p.returncode not in (0, 124)
    assert time.monotonic() - t0 < 120
    for v in ("passthrough", "osr"):
        f = tmp_path / f"results/mpifuse/raw/source~scratch/variant~{v}/nodes~2/size~64KB/rep~0.json"
        assert not f.exists()
        rec = rawio.read(rawio.failure_path(f))
        assert rec["status"] == "failed"
        assert rec["failure_kind"] in rawio.FAILURE_KINDS and set(rec["failure_load"]) == {"loadavg_1m", "ncpu"}
    # the use case that never ran: its reason is the launcher's own words from the log, never empty
    never = rawio.read(rawio.failure_path(tmp_path / "results/mpifuse/raw/source~scratch/variant~osr/nodes~2/"
                                                     "size~64KB/rep~0.json"))
    assert f"exit status {p.returncode}" in never["failure"] and "the launcher's log" in never["failure"]
    assert never["failure"].split("says: ", 1)[1].strip() not in ("", "(its log is empty)", "(no log named)")
    assert never["failure_kind"] in ("crash", "lost_node")
    assert str(tmp_path) not in Path("/proc/self/mounts").read_text()
