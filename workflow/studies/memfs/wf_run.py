#!/usr/bin/env python3
"""One run of a Montage/BLAST configuration (paper 004, Section 2.4.2) as a repro.raw/1 record.

    python3 -m studies.memfs.wf_run <the arguments of mtcwf.run>

systems/mtc-workflows measures it (mtcwf.run.measure: cluster, scheduler, memory snapshot,
verification; engine-free); this records it: the record's parameters and tool versions, then
either the metrics (stage times, parallel-stage time, per-node data and memory, their sums) or,
when a task or the verification failed or the run crashed, a failure record under
results/memfs/failed/ holding what was measured until then (exit 1).
"""

from __future__ import annotations

import sys

from mtcwf import run as wfrun  # systems/mtc-workflows: the project's Python path (workflow/pythonpath.txt)
from repro import rawio

STUDY = "memfs"


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


def main(argv=None) -> int:
    args = wfrun.parse_args(argv)
    params = {"workflow": args.workflow, "design": args.design, "nodes": args.nodes,
              "tasks_per_node": args.tasks_per_node}
    rec = rawio.new_record(STUDY, f"workflow_{args.workflow}", params, args.rep, wfrun.kind_guess(args),
                           wfrun.tool_versions())
    rec["primary_metric"] = "parallel_time"
    try:
        res = wfrun.measure(args, rec, wfrun.log)
    except wfrun.RunFailed as exc:
        path = rawio.write_failure(args.raw, rec, str(exc))
        print(f"FAILED: {exc}\n  failure record: {path}", file=sys.stderr, flush=True)
        return 1
    par = add_metrics(rec, res["wf_time"], res["stats"])
    rawio.finish(rec)
    rawio.write_json_atomic(args.raw, rec)
    rawio.clear_failure(args.raw)
    wfrun.log(f"ok: parallel stages {par:.2f} s, workflow {res['wf_time']:.2f} s, data per node "
              + ", ".join(f"{r['node']}:{r['data_bytes'] / 1e6:.1f}MB" for r in res["stats"]) + f" -> {args.raw}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
