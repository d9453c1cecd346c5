#!/usr/bin/env python3
"""One run of a Montage/BLAST configuration (paper 004, Section 2.4.2) as a repro.raw/1 record.

The run contract (repro.runner), one experiment per workflow (the name its records carry):

    python3 -m studies.memfs.wf_run workflow_montage|workflow_blast --config CFG --rep R --out RAW
        --params '{"workflow": "montage|blast", "design": "memfs|locality|local-disk", "nodes": N,
                   "tasks_per_node": K}'
        --input manifest=results/memfs/wf_inputs/<workflow>/manifest.json [--input image=SIF]

CFG (JSON) is the part of memfs.workflows a run reads: launcher, network, memfs_opts, memcached_mb,
task_timeout_s (rules.smk: MWF_JOB_KEYS). --params are the record's params as they are; a
"memcached_mb" there (montage-memlimit, wf_memlimit_run.py) is every node's memory limit for data
(mtcwf.run --data-limit-mb: memcached -m that plus one preallocated page per slab class, 16 KiB
chunks; mtcwf.cluster_api.data_limited_store) instead of the config's memcached_mb, and is not one
of the record's params. The inputs are the generator's directory (the manifest's); image: the Apptainer
image the agents run commands in (none: this host's tools). Scratch directories go under $TMPDIR.

systems/mtc-workflows measures it (mtcwf.run.measure: cluster, scheduler, memory snapshot,
verification; engine-free); this records it: the record's parameters and tool versions, then either
the metrics (stage times, parallel-stage time, per-node data and memory, their sums) or, when a task
or the verification failed or the run crashed, ``runner.RunFailed`` with the record holding what was
measured until then: the runner writes the failure record under results/memfs/failed/ (exit 1).
"""

from __future__ import annotations

import json
import os
import sys

from mtcwf import run as wfrun  # systems/mtc-workflows: the project's Python path (workflow/pythonpath.txt)
from repro import rawio, runner

STUDY = "memfs"
WORKFLOWS = ("montage", "blast")
PARAMS = ("workflow", "design", "nodes", "tasks_per_node")  # the record's params, in this order

RUN = runner.Experiments(STUDY)


def add_metrics(rec: dict, wf_time: float, stats: list[dict]) -> float:
    """The record's metrics from the stages and the per-node snapshot; returns the parallel-stage time."""
    m = rawio.metric
    stages = rec["extra"]["stages"]
    timed = [s for s in stages if s["timed"]]
    for s in stages:
        rec["metrics"].append(m("stage_time", s["wall_s"], "s", stage=s["stage"], timed=s["timed"]))
        rec["metrics"].append(m("stage_tasks", s["tasks"], "tasks", stage=s["stage"], timed=s["timed"]))
    par = sum(s["wall_s"] for s in timed)
    rec["metrics"].append(m("parallel_time", par, "s"))
    rec["metrics"].append(m("workflow_time", wf_time, "s"))
    rec["metrics"].append(m("tasks", sum(s["tasks"] for s in stages), "tasks"))
    rec["metrics"].append(m("failed_tasks", 0, "tasks"))
    for row in stats:
        role = "scheduler" if row["node"] == 1 else "other"
        rec["metrics"].append(m("data_bytes", row["data_bytes"], "B", node=row["node"], role=role))
        rec["metrics"].append(m("memcached_rss_bytes", row["memcached_rss_bytes"], "B", node=row["node"], role=role))
        rec["metrics"].append(m("fuse_rss_bytes", row["fuse_rss_bytes"], "B", node=row["node"], role=role))
        rec["metrics"].append(m("memory_bytes", row["memcached_rss_bytes"] + row["fuse_rss_bytes"], "B",
                                node=row["node"], role=role))
    rec["metrics"].append(m("aggregate_data_bytes", sum(r["data_bytes"] for r in stats), "B"))
    rec["metrics"].append(m("aggregate_memory_bytes",
                            sum(r["memcached_rss_bytes"] + r["fuse_rss_bytes"] for r in stats), "B"))
    return par


def mtcwf_args(ctx: runner.Context):
    """mtcwf.run's arguments of this run (its own defaults for the rest: dispatch-gap limit, $TMPDIR)."""
    p, cfg = ctx.params, ctx.cfg
    if f"workflow_{p.get('workflow')}" != ctx.experiment:
        raise runner.Refused(f"--params workflow {p.get('workflow')!r} is not this experiment's ({ctx.experiment})")
    if "manifest" not in ctx.inputs:
        raise runner.Refused("no --input manifest=PATH (the generator's manifest.json)")
    argv = ["--workflow", str(p["workflow"]), "--inputs", os.path.dirname(ctx.inputs["manifest"]),
            "--design", str(p["design"]), "--nodes", str(p["nodes"]), "--tasks-per-node", str(p["tasks_per_node"]),
            "--rep", str(ctx.rep), "--raw", ctx.out, "--launcher", str(cfg["launcher"]),
            "--task-timeout", str(cfg["task_timeout_s"])]
    if "memcached_mb" in p:  # montage-memlimit: the node's memory for data
        argv += ["--data-limit-mb", str(p["memcached_mb"])]
    else:
        argv += ["--memcached-mb", str(cfg["memcached_mb"])]
    for key, flag in (("network", "--network"), ("memfs_opts", "--memfs-opts")):
        if cfg.get(key):
            argv += [flag, json.dumps(cfg[key])]
    if ctx.inputs.get("image"):
        argv += ["--image", ctx.inputs["image"]]
    try:
        return wfrun.parse_args(argv)
    except SystemExit:  # argparse said why on stderr
        raise runner.Refused(f"mtcwf.run refuses the arguments {argv}") from None


def new_record(ctx: runner.Context, args) -> dict:
    """The run's record (its params: PARAMS of --params), kept by the runner for a failure."""
    rec = ctx.record(wfrun.tool_versions(), system_kind=wfrun.kind_guess(args),
                     params={k: ctx.params[k] for k in PARAMS})
    rec["primary_metric"] = "parallel_time"
    return rec


def measure(ctx: runner.Context, args, rec: dict) -> dict:
    """Run the configuration into ``rec``: the finished record, or RunFailed with what was measured."""
    try:
        res = wfrun.measure(args, rec, ctx.progress)
    except wfrun.RunFailed as exc:
        if isinstance(exc.__context__, runner.Terminated):  # SIGTERM/SIGINT: the runner's failure, not a crash
            raise exc.__context__ from None
        raise runner.RunFailed(str(exc), rec) from None
    par = add_metrics(rec, res["wf_time"], res["stats"])
    ctx.progress(f"ok: parallel stages {par:.2f} s, workflow {res['wf_time']:.2f} s, data per node "
                 + ", ".join(f"{r['node']}:{r['data_bytes'] / 1e6:.1f}MB" for r in res["stats"]) + f" -> {ctx.out}")
    return rec


def workflow(ctx: runner.Context) -> dict:
    args = mtcwf_args(ctx)
    return measure(ctx, args, new_record(ctx, args))


for _wf in WORKFLOWS:  # the launcher's kind until the cluster says its own (mtcwf.run.kind_guess)
    RUN.experiment(f"workflow_{_wf}", system_kind="stand-in:network-namespaces")(workflow)


if __name__ == "__main__":
    sys.exit(RUN.main())
