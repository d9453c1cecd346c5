"""Tiny Montage and BLAST runs through the real tools, on real MemFS mounts; failures are loud."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest
from mtcwf_testlib import REPO, run_workflow


def _ok(rc, raw, out):
    assert rc == 0, out[-3000:]
    rec = json.loads(raw.read_text())
    assert rec["status"] == "ok" and rec["sanity"]["ok"], rec["sanity"]
    return rec


def test_montage_on_memfs_makes_a_mosaic(tmp_path, montage_inputs):
    rec = _ok(*run_workflow(tmp_path, "montage", montage_inputs, "memfs", nodes=2, k=2))
    s = rec["sanity"]
    assert s["mosaic_naxis1"] == s["template_naxis1"] and s["mosaic_naxis2"] == s["template_naxis2"]
    assert s["coverage"] > 0.95 and s["tiles_corrected"] == 9
    assert s["bg_spread_corrected"] < 0.35 * s["bg_spread_planted"]  # mBgModel/mBackground matched them
    stages = {st["stage"]: st for st in rec["extra"]["stages"]}
    assert stages["mProjectPP"]["tasks"] == 9 and stages["mBackground"]["tasks"] == 9
    assert stages["mDiffFit"]["tasks"] >= 12  # every overlapping pair (incl. diagonals)
    timed = {m["labels"]["stage"] for m in rec["metrics"] if m["metric"] == "stage_time" and m["labels"]["timed"]}
    assert timed == {"mProjectPP", "mDiffFit", "mBackground"}
    mem = [m for m in rec["metrics"] if m["metric"] == "data_bytes"]
    assert {m["labels"]["node"] for m in mem} == {1, 2} and all(m["value"] > 0 for m in mem)
    assert [m["labels"]["role"] for m in sorted(mem, key=lambda m: m["labels"]["node"])] == ["scheduler", "other"]
    # uniform placement spread the parallel tasks over both nodes
    assert all(v > 0 for v in stages["mDiffFit"]["per_node_tasks"].values())
    # aggregation stages ran on the scheduler node only
    assert stages["mBgModel"]["per_node_tasks"] == {"1": 1, "2": 0}


def test_montage_locality_concentrates_data_on_the_scheduler_node(tmp_path, montage_inputs):
    rec = _ok(*run_workflow(tmp_path, "montage", montage_inputs, "locality", nodes=2, k=1))
    data = {m["labels"]["node"]: m["value"] for m in rec["metrics"] if m["metric"] == "data_bytes"}
    assert data[1] > 1.3 * data[2]  # mImgtbl/mAdd replicated every image onto node 1
    stages = {st["stage"]: st for st in rec["extra"]["stages"]}
    assert stages["mProjectPP"]["first_input_local"] == 9  # placed where its raw tile lives
    counters = rec["extra"]["memfs_counters"]
    assert counters["1"]["locality_replications"] > 0


def test_blast_finds_every_planted_hit(tmp_path, blast_inputs):
    rec = _ok(*run_workflow(tmp_path, "blast", blast_inputs, "memfs", nodes=2, k=1))
    assert rec["sanity"]["found"] == rec["sanity"]["queries"] == 6
    stages = {st["stage"]: st["tasks"] for st in rec["extra"]["stages"]}
    assert stages == {"stage_in": 6, "formatdb": 4, "blastall": 8, "merge": 2}


def test_blast_on_locality_and_local_disk(tmp_path, blast_inputs):
    for design in ("locality", "local-disk"):
        rec = _ok(*run_workflow(tmp_path / design, "blast", blast_inputs, design, nodes=2, k=1))
        assert rec["sanity"]["found"] == 6
        if design == "local-disk":
            st = {s["stage"]: s for s in rec["extra"]["stages"]}
            # the merge on node 1 needed the other node's outputs: the driver copied them
            assert st["merge"]["copies"] > 0
            assert all(m["value"] > 0 for m in rec["metrics"] if m["metric"] == "data_bytes")


def test_corrupted_input_fails_the_run_loudly(tmp_path, montage_inputs):
    bad = tmp_path / "bad_inputs"
    shutil.copytree(montage_inputs, bad)
    tile = sorted((bad / "raw").iterdir())[4]
    tile.write_bytes(tile.read_bytes()[:2000])  # a truncated FITS file
    rc, raw, out = run_workflow(tmp_path, "montage", bad, "memfs", nodes=2, k=1)
    assert rc == 1
    assert not raw.exists()
    failed = tmp_path / "results" / "memfs" / "failed" / raw.relative_to(tmp_path / "results" / "memfs" / "raw")
    rec = json.loads(failed.read_text())
    assert rec["status"] == "failed" and "mProjectPP" in rec["failure"] and tile.name in rec["failure"]
    assert "FAILED" in out


def test_no_leftover_mounts_or_servers(tmp_path, blast_inputs):
    """After a run (ok or failed) nothing of the cluster is left: no mounts under the work dir."""
    run_workflow(tmp_path, "blast", blast_inputs, "memfs", nodes=1, k=2)
    with open("/proc/self/mountinfo") as fh:
        mounts = fh.read()
    assert str(tmp_path) not in mounts
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("mtcwf-")]


@pytest.mark.slow
@pytest.mark.skipif(not (REPO / "systems" / "mtc" / "launch.py").exists(), reason="systems/mtc not there")
@pytest.mark.parametrize("design", ["memfs", "locality", "local-disk"])
def test_montage_on_the_shared_launcher(tmp_path, montage_inputs, design):
    """The same run on systems/mtc: agents in network namespaces, tc-shaped links."""
    net = {"name": "test", "emulate": True, "rate_mbit": 1000}
    rec = _ok(*run_workflow(tmp_path, "montage", montage_inputs, design, nodes=2, k=2, launcher="mtc",
                            cfg={"network": net}))
    assert rec["system_kind"] == "stand-in:network-namespaces"
    # where the agents ran (the rehearsal's placement checks read it): systems/mtc's describe()
    cl = rec["extra"]["cluster"]
    assert cl["nodes"] == 2 and cl["launcher"] == "local" and len(cl["netns"]) == 2 and cl["cid"]


def _failure(tmp, raw):
    return json.loads((tmp / "results" / "memfs" / "failed" / raw.relative_to(tmp / "results" / "memfs" / "raw"))
                      .read_text())


def test_a_run_that_contradicts_its_experiment_is_refused(tmp_path, montage_inputs):
    """The run contract: --params' workflow names the experiment's (workflow_<name>); a mismatch, or no
    manifest, is refused (exit 2) and records nothing -- nothing was measured."""
    cmd = [sys.executable, "-m", "studies.memfs.wf_run", "workflow_blast", "--config",
           json.dumps({"launcher": "standin", "memcached_mb": 128, "task_timeout_s": 60}), "--params",
           json.dumps({"workflow": "montage", "design": "memfs", "nodes": 1, "tasks_per_node": 1}), "--rep", "0"]
    raw = tmp_path / "results" / "memfs" / "raw" / "x" / "rep~0.json"
    p = subprocess.run(cmd + ["--input", f"manifest={montage_inputs / 'manifest.json'}", "--out", str(raw)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "'montage' is not this experiment's (workflow_blast)" in p.stderr
    cmd[3] = "workflow_montage"  # right experiment, but no --input manifest=
    p = subprocess.run(cmd + ["--out", str(raw)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "no --input manifest=PATH" in p.stderr, p.stdout + p.stderr
    assert not (tmp_path / "results").exists()


def test_sigterm_mid_run_is_a_failure_record_and_the_cluster_is_torn_down(tmp_path, montage_inputs):
    """SIGTERM (Slurm's time limit, a cancel) while the stages run: the runner's failure record says
    which signal (kind error, exit 143), not a crash wrapped by mtcwf.run; no mount or directory is left."""
    raw = tmp_path / "results" / "memfs" / "raw" / "w" / "rep~0.json"
    cmd = [sys.executable, "-m", "studies.memfs.wf_run", "workflow_montage", "--config",
           json.dumps({"launcher": "standin", "memcached_mb": 128, "task_timeout_s": 120}), "--params",
           json.dumps({"workflow": "montage", "design": "memfs", "nodes": 2, "tasks_per_node": 1}), "--rep", "0",
           "--input", f"manifest={montage_inputs / 'manifest.json'}", "--out", str(raw)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env={**os.environ, "TMPDIR": str(tmp_path)})
    seen = []
    for line in p.stdout:
        seen.append(line)
        if "stage mProjectPP" in line:  # the first stage ended: the cluster is up, the workflow runs
            p.send_signal(signal.SIGTERM)
            break
    out = "".join(seen) + p.stdout.read()
    assert p.wait(timeout=120) == 143, out[-3000:]
    assert not raw.exists()
    rec = _failure(tmp_path, raw)
    assert rec["failure"] == "stopped by SIGTERM" and rec["failure_kind"] == "error", rec["failure"]
    # what it measured until then (mProjectPP's own entry follows its log line: the signal may come first)
    assert [s["stage"] for s in rec["extra"]["stages"]][:2] == ["stage_in", "mMakeHdr"]
    with open("/proc/self/mountinfo") as fh:
        assert str(tmp_path) not in fh.read()
    assert not [x for x in tmp_path.iterdir() if x.name.startswith("mtcwf-")]


@pytest.mark.slow
@pytest.mark.skipif(not (REPO / "systems" / "mtc" / "launch.py").exists(), reason="systems/mtc not there")
def test_memlimit_run_records_the_stores_at_failure(tmp_path, montage_inputs):
    """montage-memlimit (studies.memfs.wf_memlimit_run): every node's memory for data limited to 4 MiB
    (mtcwf.cluster_api.data_limited_store: memcached -m 4 + 23 preallocated class pages), the locality
    design's 3x3 mosaic does not fit (7.6 MB on the scheduler node), a Montage task fails ("could not
    close the file", "No space left on device", or no output at all): the failure record holds the
    stores' state before tear-down (extra.at_failure: each node's limit and slab pages, MemFS's ENOSPC;
    the refusing store has every page taken); at 128 MiB the same run completes and its record has the
    stores at the end (extra.at_end), no at_failure. The limit is not one of the record's params (its
    path names it)."""
    from mtcwf import cluster_api

    kw = dict(launcher="mtc", module="studies.memfs.wf_memlimit_run")
    rc, raw, out = run_workflow(tmp_path / "4", "montage", montage_inputs, "locality", params={"memcached_mb": 4},
                                **kw)
    assert rc == 1 and not raw.exists(), out[-3000:]
    rec = _failure(tmp_path / "4", raw)
    assert rec["experiment"] == "workflow_montage" and rec["params"] == {
        "workflow": "montage", "design": "locality", "nodes": 2, "tasks_per_node": 1}
    assert rec["failure"].startswith("task m"), rec["failure"]  # a Montage tool (which one: the load decides)
    store = cluster_api.data_limited_store(4)
    assert rec["extra"]["store"] == store and store["mem_mb"] == 4 + 23
    nodes = rec["extra"]["at_failure"]["nodes"]
    assert [n["node"] for n in nodes] == [1, 2] and all(n["memcached_limit_bytes"] == 27 << 20 for n in nodes)
    refused = [n for n in nodes if n["memfs_enospc"] > 0]
    assert refused, nodes
    for n in refused:  # refused for memory: all of its pages taken (the limit plus every class's first page)
        assert n["slabs"]["total_malloced"] == 27 << 20 and n["slabs"]["active_slabs"] == 23, n
    assert "store at failure: " in out
    rec = _ok(*run_workflow(tmp_path / "128", "montage", montage_inputs, "locality", params={"memcached_mb": 128},
                            **kw))
    assert "at_failure" not in rec["extra"] and "memcached_mb" not in rec["params"]
    assert rec["extra"]["node_stats"][0]["data_bytes"] > 0
    assert rec["extra"]["store"]["mem_mb"] == 128 + 23
    end = rec["extra"]["at_end"]["nodes"]
    assert [n["node"] for n in end] == [1, 2] and all(n["memfs_enospc"] == 0 for n in end)
    # the scheduler node's pages beyond the reserve hold its data (7.6 MB): more than the 4 MiB that refused
    assert (end[0]["slabs"]["total_malloced"] >> 20) - 23 > 4, end[0]["slabs"]
