"""The run rules are the engine's experiment_rule, one call per experiment of the declaration (rules.smk):
each job must run its own experiment. Snakemake evaluates a rule's shell expression again when the job runs; a bare loop
made every job run the last experiment (run.py limit) while `snakemake -n` printed the right
commands. Here every kick job really runs, with a `python3` on PATH that only writes its arguments
to the job's --out file, and each file must name its own experiment."""

import json
import os
import subprocess

from repro import paramspace, pythonpath
from repro.testing import copy_repo

from studies.memfs import layout

SHIM = """#!/bin/sh
out=""; prev=""
for a in "$@"; do [ "$prev" = "--out" ] && out="$a"; prev="$a"; done
mkdir -p "$(dirname "$out")" && printf '%s\\n' "$*" > "$out"
"""


def run_shimmed(tmp_path, shim_text, *args, overlay="", reuse=None):
    """snakemake ARGS in a copy of the repository (``reuse``: one made already) with `shim_text` as the
    python3 on PATH; the copy."""
    work = reuse or tmp_path / "repo"
    if reuse is None:
        copy_repo(work)
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "python3").write_text(shim_text)
    (shim / "python3").chmod(0o755)
    (work / "overlay.yaml").write_text(overlay or "{}\n")
    # the copy's own Python path (its engine and studies, never the repository's)
    env = dict(os.environ, PATH=f"{shim}:{os.environ['PATH']}", PYTHONPATH=pythonpath.value(work, ""))
    r = subprocess.run(["snakemake", *args, "--profile", "profiles/local", "--configfile", "config/local.yaml",
                        "overlay.yaml"], cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    return work


def test_each_run_rule_runs_its_own_experiment(tmp_path):
    kick = {"network": "IPoIB", "nodes": [2], "size": "1MiB"}
    cfg = {"kick": kick, "memfs": {"threads": 8}}
    paths = layout.kick_paths(cfg)
    work = run_shimmed(tmp_path, SHIM, *paths, "-F")
    for p in paths:
        exp = p.split("/")[3]  # results/memfs/raw/<experiment>/...
        text = (work / p).read_text()
        args = text.split()
        assert args[:3] == ["-m", "studies.memfs.run", exp], (p, args[:6])
        # the run contract: --params names the job's own wildcards (the record's params) and the launcher
        params = json.loads(text.split(" --params ", 1)[1].split(" --rep ", 1)[0])
        dims = paramspace.parse_path(p)
        assert params == {"network": "IPoIB", "nodes": 2, "launcher": "local", "single_host": params["single_host"],
                          **{k: int(v) if k == "threads" else v for k, v in dims.items()
                             if k not in ("network", "nodes", "rep")}}, (p, params)
        assert args[args.index("--rep") + 1] == dims["rep"] and args[args.index("--out") + 1] == p


# The analysis rules (engine: analysis_rule; figures: memfs_figure_rule) and the module each output's
# job must run: a job of every rule and every figure really runs, with the same python3 shim writing
# its arguments to each results/ file it names that does not exist yet (its outputs; analyze writes
# issue13_limits.md beside the --issue13 table).
ANALYSIS_OUTPUTS = {
    "results/memfs/claims_envelope.csv": "analyze",
    "results/memfs/figures/figure2_3_design.png": "figure2_3",
    "results/memfs/figures/figure2_4_bandwidth.png": "figure2_4",
    "results/memfs/figures/figure2_5_throughput.png": "figure2_5",
    "results/memfs/figures/figure2_6_metadata.png": "figure2_6",
    "results/memfs/measurements_workflows.csv": "wf_tidy",
    "results/memfs/tables/table2_3_memory_distribution.csv": "wf_table2_3",
    "results/memfs/figures/figure2_7_vertical.png": "wf_figure2_7",
    "results/memfs/figures/figure2_8_horizontal.png": "wf_figure2_8",
    "results/memfs/figures/figure2_9_memory.png": "wf_figure2_9",
    "results/memfs/claims_workflows.csv": "wf_claims",
}
WRITE_SHIM = """#!/bin/sh
w() { [ -e "$1" ] || { mkdir -p "$(dirname "$1")"; printf '%s\\n' "$ARGS" > "$1"; }; }
ARGS="$*"
for a in "$@"; do case "$a" in results/*issue13*.csv) w "$a"; w "${a%.csv}.md";; results/*) w "$a";; esac; done
"""


def test_each_analysis_job_runs_its_own_module(tmp_path):
    # no raw files: with allow_incomplete the analysis reads the ones that exist, no run job is planned
    work = run_shimmed(tmp_path, WRITE_SHIM, *ANALYSIS_OUTPUTS, overlay="allow_incomplete: true\n")
    for path, module in ANALYSIS_OUTPUTS.items():
        args = (work / path).read_text().split()
        assert args[:2] == ["-m", f"studies.memfs.{module}"], (path, args[:4])
        assert "--config" in args, (path, args[:4])
    # the benchmark files the report sums (collected by the engine) are the ones these jobs wrote
    for name in ("aggregate", "figure2_3_design", "figure2_4_bandwidth", "figure2_5_throughput", "figure2_6_metadata",
                 "wf_tidy", "wf_table23", "wf_figure2_7_vertical", "wf_figure2_8_horizontal", "wf_figure2_9_memory",
                 "wf_claims"):
        assert (work / f"results/memfs/benchmarks/memfs_{name}.tsv").exists(), name


EXIT3_SHIM = SHIM.replace("mkdir -p", "[ -n \"$out\" ] || exit 0; mkdir -p").rstrip("\n") + "\nexit 3\n"


def test_a_memory_limit_run_that_fails_is_its_result(tmp_path):
    """memfs_wf_memlimit_run (experiment_rule's status form): the run's exit status is the job's output, the
    run gets the declared raw path as --out, and an earlier run's raw file and failure record are gone first."""
    from studies.memfs.declaration import STUDY

    raw = STUDY.raw_path("memlimit", design="memfs", memcached_mb=18, rep=0)
    status = layout.MEMLIMIT_STATUS.format(design="memfs", memcached_mb=18)
    work = tmp_path / "repo"
    copy_repo(work)
    failed = work / raw.replace("/raw/", "/failed/", 1)
    for stale in (work / raw, failed, work / "results/memfs/wf_inputs/montage/manifest.json"):
        stale.parent.mkdir(parents=True, exist_ok=True)
        stale.write_text("{}")
    run_shimmed(tmp_path, EXIT3_SHIM, status, reuse=work)
    assert (work / status).read_text().strip() == "3"
    assert not failed.exists()
    text = (work / raw).read_text()  # written by this run (the shim), not the stale one
    assert text.split()[:3] == ["-m", "studies.memfs.wf_memlimit_run", "workflow_montage"], text[:200]
    params = json.loads(text.split(" --params ", 1)[1].split(" --rep ", 1)[0])
    assert params == {"design": "memfs", "memcached_mb": 18, "workflow": "montage", "nodes": 2, "tasks_per_node": 1}
