"""The mpifuse rules: the full cluster plan, the configuration's n+1 layout check, and the benchmark rule
on the local Slurm cluster with n+1 distinct nodes."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml
from repro import rawio


def _overlay(ws, data, name="overlay.yaml"):
    p = ws / name
    p.write_text(yaml.safe_dump(data))
    return str(p)


def test_full_scale_plan(snake):
    out = snake("-n", "mpifuse", "--profile", "profiles/slurm", "--configfile", "config/config.yaml",
                timeout=300).stdout
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", out, re.MULTILINE))
    # 2 sources x 6 node counts x 4 sizes x 10 repeats, one job per run (all 8 use cases)
    assert counts.get("mpifuse_run") == "480", out[-3000:]
    assert counts.get("mpifuse_claims") == "1"
    assert "containers/sif/mpifuse.sif" in out  # the cluster runs the file systems from their image


def test_impossible_layout_fails_at_start_up(snake, workspace):
    p = snake("-n", "mpifuse", "--configfile", "config/config.yaml",
              _overlay(workspace, {"mpifuse": {"nodes": [1, 80]}}), check=False, timeout=300)
    assert p.returncode != 0
    assert "mpifuse.nodes[1]: impossible layout, 80 system nodes + 1 driver node = 81" in p.stdout + p.stderr


def test_local_plan_is_the_scaled_matrix(snake):
    out = snake("-n", "mpifuse", "--profile", "profiles/local", timeout=300).stdout
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", out, re.MULTILINE))
    assert counts.get("mpifuse_run") == str(2 * 3 * 4 * 3)


def _slurm_job(comment: str) -> dict:
    out = subprocess.run(["scontrol", "show", "job", "-o"], capture_output=True, text=True, check=True).stdout
    jobs = [dict(re.findall(r"(\w+)=(\S*)", line)) for line in out.splitlines()]
    jobs = [j for j in jobs if j.get("Comment") == comment]
    assert jobs, f"no Slurm job with Comment={comment} (MinJobAge keeps finished jobs 600 s)"
    return max(jobs, key=lambda f: int(f["JobId"]))


@pytest.mark.slow
@pytest.mark.parametrize("source", ["scratch", "home"])
def test_benchmark_rule_on_slurm_gets_n_plus_1_distinct_nodes(snake, workspace, slurm_cluster, tmp_path,
                                                              mpifuse_ready, homefs_ready, source):
    over = {"mpifuse": {"variants": ["native", "osr", "bcast-nocopy"], "sources": [source],
                        "kick": {"source": source, "nodes": [2], "size": "64KB"},
                        "scratch": {"path": str(tmp_path / "scratch")}, "local_dir": str(tmp_path / "local"),
                        "mount_dir": str(tmp_path / "mnt"), "home": {"state_dir": str(tmp_path / "home")}}}
    snake("mpifuse_kick", "--profile", "profiles/slurm", "--configfile", "config/local.yaml",
          _overlay(workspace, over), timeout=500)
    raw = workspace / f"results/mpifuse/raw/source~{source}/variant~osr/nodes~2/size~64KB/rep~0.json"
    rec = rawio.read(raw)
    assert rec["status"] == "ok" and rec["sanity"]["hash_match"]
    if source == "home":  # the emulated home came up in the batch step and carried the file once
        assert rec["extra"]["home"]["kind"] == "emulated" and not list((tmp_path / "home").glob("*/homefs.json"))
    job = _slurm_job(f"rule_mpifuse_run_wildcards_{source}_2_64KB_0")
    nodes = subprocess.run(["scontrol", "show", "hostnames", job["NodeList"]], capture_output=True, text=True,
                           check=True).stdout.split()
    assert job["NumNodes"] == "3" and len(set(nodes)) == 3, job
    ranks = rec["extra"]["ranks"]
    assert sorted(r["node"] for r in ranks) == sorted(nodes)  # one rank per node of this job
    assert rec["extra"]["launcher"] == "slurm" and rec["extra"]["slurm_job_id"] == job["JobId"]
    log = (workspace / f"results/mpifuse/log/run/source~{source}/nodes~2/size~64KB/rep~0.log").read_text()
    assert f"[mpifuse] {source} osr n=2 64KB rep 1/" in log
    assert json.loads(json.dumps(rec["extra"]["fs_options"]))["max_read"]
    # the job's run time reaches the report through its Snakemake benchmark file
    bench = workspace / f"results/mpifuse/benchmarks/mpifuse_run/source~{source},nodes~2,size~64KB,rep~0.tsv"
    header, values = bench.read_text().splitlines()[:2]
    assert float(dict(zip(header.split("\t"), values.split("\t")))["s"]) > 0
