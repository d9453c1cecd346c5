"""workflow/scripts/plan_diff.py (issue 29's "plans equal"): a forced dry run's jobs read back with
their outputs and resources, and the comparison fails on a changed resource, output or job, never on
a changed command line alone. The plan text is Snakemake 9's own (a real `-n -p -F` of fusespeed)."""

from __future__ import annotations

import copy
import importlib.util

from repro.testing import REPO

_spec = importlib.util.spec_from_file_location("plan_diff", REPO / "workflow/scripts/plan_diff.py")
plan_diff = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(plan_diff)

PLAN = """Building DAG of jobs...
Job stats:
job                 count
----------------  -------
fusespeed_run           1
fusespeed               1
total                   2


[Sat Nov 28 22:28:53 2026]
rule fusespeed_run:
    input: containers/sif/mpifuse.sif, workflow/studies/fusespeed/run.py
    output: results/fusespeed/raw/source~scratch/size~1GB/rep~0.json
    log: results/fusespeed/log/run.log
    jobid: 3
    benchmark: results/fusespeed/benchmarks/fusespeed_run.tsv
    reason: Forced execution
    resources: tmpdir=/tmp, mem_mb=4000, slurm_partition=batch, runtime=60, nodes=5, tasks=5, mpi=srun
Shell command: (srun --nodes=5 apptainer exec --bind /some/dir containers/sif/mpifuse.sif python3 -m x) > log

[Sat Nov 28 22:28:53 2026]
localrule fusespeed:
    input: results/fusespeed/claims.csv, results/fusespeed/tables/speed.csv
    jobid: 0
    reason: Forced execution
    resources: tmpdir=/tmp, mem_mb=2000, runtime=30
Shell command: None
Job stats:
job                 count
----------------  -------
fusespeed_run           1
fusespeed               1
total                   2

This was a dry-run (flag -n). The order of jobs does not reflect the order of execution.
"""


def _snap(text):
    return {"slurm:fusespeed": {**plan_diff.parse_plan(text), "rc": 0}}


def test_parse_reads_every_job_with_its_fields():
    p = plan_diff.parse_plan(PLAN)
    assert p["counts"] == {"fusespeed_run": 1, "fusespeed": 1}
    run = p["jobs"]["fusespeed_run -> results/fusespeed/raw/source~scratch/size~1GB/rep~0.json"]
    assert run["resources"].endswith("nodes=5, tasks=5, mpi=srun") and run["log"] == "results/fusespeed/log/run.log"
    assert run["shell"].startswith("(srun --nodes=5") and "jobid" not in run and "reason" not in run
    target = p["jobs"]["fusespeed -> [no output] results/fusespeed/claims.csv, results/fusespeed/tables/speed.csv"]
    assert target["shell"] == "None" and target["rule"] == "fusespeed"


def test_compare_fails_on_resources_outputs_jobs_never_on_commands_alone():
    before = _snap(PLAN)
    assert plan_diff.compare(before, copy.deepcopy(before)) == ([], [])
    # a command line changed, nothing else: listed, not a difference
    diffs, cmds = plan_diff.compare(before, _snap(PLAN.replace("python3 -m x", "python3 -m y")))
    assert diffs == [] and len(cmds) == 1 and "python3 -m y" in cmds[0]
    # one node fewer: a difference naming the job and the field
    diffs, _ = plan_diff.compare(before, _snap(PLAN.replace("nodes=5, tasks=5", "nodes=4, tasks=5")))
    assert len(diffs) == 1 and "fusespeed_run" in diffs[0] and "resources" in diffs[0]
    # another output: the job is gone and a new one is there
    diffs, _ = plan_diff.compare(before, _snap(PLAN.replace("size~1GB", "size~2GB")))
    assert any("job gone" in d for d in diffs) and any("new job" in d for d in diffs)
    # the same resources printed in another order, one twice (Snakemake does so): no difference
    reordered = PLAN.replace("tmpdir=/tmp, mem_mb=4000, slurm_partition=batch,",
                             "slurm_partition=batch, mem_mb=4000, tmpdir=/tmp, mem_mb=4000,")
    assert reordered != PLAN and plan_diff.compare(before, _snap(reordered)) == ([], [])
    # the same inputs in another order: no difference; one input more: a difference
    key = "fusespeed_run -> results/fusespeed/raw/source~scratch/size~1GB/rep~0.json"
    job = before["slurm:fusespeed"]["jobs"][key]
    assert ", " in job["input"]
    swapped = copy.deepcopy(before)
    swapped_job = swapped["slurm:fusespeed"]["jobs"][key]
    swapped_job["input"] = ", ".join(reversed(job["input"].split(", ")))
    assert swapped_job["input"] != job["input"] and plan_diff.compare(before, swapped) == ([], [])
    swapped_job["input"] += ", extra.txt"
    assert any("input" in d for d in plan_diff.compare(before, swapped)[0])
    # a log path moved: a difference (unless ignored)
    moved = _snap(PLAN.replace("log/run.log", "log/run2.log"))
    assert plan_diff.compare(before, moved)[0] and plan_diff.compare(before, moved, ignore=("log",))[0] == []
    # a plan that failed after
    failed = _snap(PLAN)
    failed["slurm:fusespeed"]["rc"] = 1
    assert any("exit status" in d for d in plan_diff.compare(before, failed)[0])


def test_a_checkout_path_is_written_the_same_for_two_checkouts(tmp_path):
    a = plan_diff._normalize(f"--bind {tmp_path}/a x", tmp_path / "a")
    b = plan_diff._normalize(f"--bind {tmp_path}/b x", tmp_path / "b")
    assert a == b == "--bind <DIR> x"
