"""The real Slurm path: the workflow with --profile profiles/slurm on the local
8-node cluster; n+1 layouts checked from Slurm's side; failure and resume."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml

pytestmark = pytest.mark.usefixtures("slurm_cluster")


def _expand_nodelist(text: str) -> list[str]:
    out = subprocess.run(["scontrol", "show", "hostnames", text], capture_output=True, text=True, check=True)
    return out.stdout.split()


def _slurm_job(comment: str) -> dict:
    """The newest job whose Comment is `comment` (Snakemake sets it to the rule and wildcards)."""
    out = subprocess.run(["scontrol", "show", "job", "-o"], capture_output=True, text=True, check=True).stdout
    jobs = []
    for line in out.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if fields.get("Comment") == comment:
            jobs.append(fields)
    assert jobs, f"no Slurm job with Comment={comment}"
    return max(jobs, key=lambda f: int(f["JobId"]))


def _overlay(ws, data):
    p = ws / "overlay.yaml"
    p.write_text(yaml.safe_dump(data))
    return str(p)


def test_cluster_has_eight_nodes():
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True, check=True).stdout
    nodes = {line.split()[0] for line in out.splitlines()}
    assert nodes == {f"node{i}" for i in range(8)}


def test_n_plus_1_mpi_job_gets_distinct_nodes(snake, workspace):
    snake("smoke", "--profile", "profiles/slurm", "--configfile", "config/local.yaml",
          _overlay(workspace, {"smoke": {"nodes": [3]}}), timeout=400)
    raw = json.loads((workspace / "results/smoke/raw/nodes~3/rep~0.json").read_text())
    assert raw["status"] == "ok" and raw["sanity"]["one_rank_per_node"] is True
    job = _slurm_job("rule_smoke_run_wildcards_3_0")
    nodes = _expand_nodelist(job["NodeList"])
    assert job["NumNodes"] == "4" and len(set(nodes)) == 4
    ranks = raw["extra"]["ranks"]
    assert sorted(r["node"] for r in ranks) == sorted(nodes)  # each rank ran on its own node of this job
    assert {r["slurm_job_id"] for r in ranks} == {job["JobId"]}  # inside the submitted allocation
    assert ranks[0]["node"] == nodes[0]  # rank 0, the driver, on the first node


def test_failed_job_fails_the_workflow_and_resumes(snake, workspace, tmp_path):
    fault = tmp_path / "fault-2"
    fault.write_text("inject")
    overlay = _overlay(workspace, {"smoke": {"nodes": [1, 2], "fail_if_exists": str(tmp_path / "fault-{n}")}})
    args = ("smoke", "--profile", "profiles/slurm", "--configfile", "config/local.yaml", overlay)
    proc = snake(*args, timeout=400, check=False)
    assert proc.returncode != 0
    raw = workspace / "results/smoke/raw"
    assert (raw / "nodes~1/rep~0.json").exists()
    assert not (raw / "nodes~2/rep~0.json").exists()  # no partial result under the final name
    failure = json.loads((workspace / "results/smoke/failed/nodes~2/rep~0.json").read_text())
    assert failure["status"] == "failed" and "no_injected_fault" in failure["failure"]
    first = (raw / "nodes~1/rep~0.json").stat().st_mtime_ns
    fault.unlink()
    proc = snake(*args, timeout=400)
    assert re.search(r"smoke_run\s+1\b", proc.stdout + proc.stderr)  # only the failed job re-ran
    assert (raw / "nodes~2/rep~0.json").exists()
    assert (raw / "nodes~1/rep~0.json").stat().st_mtime_ns == first
    assert not (workspace / "results/smoke/failed/nodes~2/rep~0.json").exists()
