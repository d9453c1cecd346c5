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
    log = (workspace / f"results/mpifuse/log/read_scaling/source~{source}/nodes~2/size~64KB/rep~0.log").read_text()
    assert f"[mpifuse] {source} osr n=2 64KB rep 1/" in log
    assert json.loads(json.dumps(rec["extra"]["fs_options"]))["max_read"]
    # the job's run time reaches the report through its Snakemake benchmark file
    bench = workspace / f"results/mpifuse/benchmarks/mpifuse_run/source~{source},nodes~2,size~64KB,rep~0.tsv"
    header, values = bench.read_text().splitlines()[:2]
    assert float(dict(zip(header.split("\t"), values.split("\t")))["s"]) > 0


def test_each_generated_rule_runs_its_own_command(snake, workspace, tmp_path):
    """The build rules (a loop over MF_BUILDS) and mpifuse_aggregate/_table/_figure/_claims (the engine's
    analysis_rule) are generated: a real job of each must run its own command (a rule's shell expression
    is evaluated again when the job runs, so a bare loop variable would make every job run the last
    rule's command; snakemake -n cannot show it)."""
    from mpifuse_study_testlib import study_config
    from test_mpifuse_claims import write_study

    cfg = study_config(tmp_path)
    write_study(workspace, cfg)  # every raw record of the local matrix, synthetic
    outs = ["results/mpifuse/tables/ratios.csv", "results/mpifuse/tables/figure3.csv",
            "results/mpifuse/figures/figure3.png", "results/mpifuse/claims.csv"]
    snake(*outs, "--profile", "profiles/local", "--configfile", "config/local.yaml",
          _overlay(workspace, {"mpifuse": {k: cfg[k] for k in ("scratch", "local_dir", "mount_dir", "home")}}),
          "--allowed-rules", "mpifuse_aggregate", "mpifuse_table", "mpifuse_figure", "mpifuse_claims",
          "--rerun-triggers", "mtime", timeout=400)
    ratios, fig3, claims_csv = ((workspace / p).read_text() for p in (outs[0], outs[1], outs[3]))
    assert ratios.splitlines()[0] != fig3.splitlines()[0]  # each script's own table
    assert claims_csv.startswith("claim_id") or "verdict" in claims_csv.splitlines()[0], claims_csv[:200]
    assert (workspace / outs[2]).stat().st_size > 10_000
    # a build rule runs its own make -C (make prints the directory it enters)
    snake("mpifuse_build_fs", "-F", "--profile", "profiles/local", "--allowed-rules", "mpifuse_build_fs",
          timeout=400)
    log = (workspace / "results/mpifuse/log/build_fs.log").read_text()
    assert "systems/mpifuse" in log and "systems/homefs" not in log, log[-1000:]
