"""Run one workflow configuration and write its repro.raw/1 record.

    python -m mtcwf.run --workflow montage --inputs results/memfs/wf_inputs/montage \
        --design memfs --nodes 4 --tasks-per-node 2 --rep 0 --raw results/memfs/raw/.../rep~0.json

The driver (this process, node 0 of the n+1 layout) starts the cluster
(memcached + k MemFS mounts per node, or node-local directories), runs the
workflow's stages with the MTC scheduler, takes the memory snapshot at the
end of the run (before anything is removed, as the paper's Figure 2.9), then
verifies the result (the mosaic, the planted BLAST hits) and tears down.

A task that fails, a verification that fails, or a crash writes a failure
record under results/<study>/failed/ and exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from . import cluster_api, dag
from .scheduler import Scheduler, TaskFailed

from repro import rawio  # the project's library (workflow/lib on PYTHONPATH)

REPO = Path(__file__).resolve().parents[3]

STUDY = "memfs"
PLACEMENT = {"memfs": "uniform", "locality": "locality", "local-disk": "uniform"}


def tool_versions() -> dict:
    out = {}
    for name, cmd in (("montage", ["dpkg-query", "-W", "-f=${Version}", "montage"]),
                      ("montage-gridtools", ["dpkg-query", "-W", "-f=${Version}", "montage-gridtools"]),
                      ("ncbi-blast+", ["dpkg-query", "-W", "-f=${Version}", "ncbi-blast+"]),
                      ("memcached", ["dpkg-query", "-W", "-f=${Version}", "memcached"])):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            if r.returncode == 0:
                out[name] = r.stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            pass
    return out


def build_workflow(name: str, inputs: str):
    manifest = json.loads((Path(inputs) / "manifest.json").read_text())
    if name == "montage":
        return dag.Montage(inputs, manifest)
    if name == "blast":
        return dag.Blast(inputs, manifest)
    raise ValueError(f"unknown workflow {name!r}")


def memfs_counters(c, design: str) -> dict:
    """Per node, summed over its mounts: MemFS's own counters (reads, replication)."""
    out = {}
    if design == "local-disk":
        return out
    for nd in c.nodes:
        tot = {}
        for mp in sorted(set(nd.mountpoints)):
            r = nd.run(f"cat {mp}/.memfs-stats", timeout=30)
            if r["rc"] != 0:
                continue
            try:
                st = json.loads(r["stdout"])
            except json.JSONDecodeError:
                continue
            for grp in ("io", "locality"):
                for k, v in (st.get(grp) or {}).items():
                    if isinstance(v, (int, float)):
                        tot[f"{grp}_{k}"] = tot.get(f"{grp}_{k}", 0) + v
        out[nd.index] = tot
    return out


def run(args) -> int:
    params = {"workflow": args.workflow, "design": args.design, "nodes": args.nodes,
              "tasks_per_node": args.tasks_per_node}
    wf = build_workflow(args.workflow, args.inputs)
    memfs_opts = json.loads(args.memfs_opts) if args.memfs_opts else {}
    network = json.loads(args.network) if args.network else {}
    kind_guess = "stand-in:local-processes" if args.launcher == "standin" else "stand-in:network-namespaces"
    rec = rawio.new_record(STUDY, f"workflow_{args.workflow}", params, args.rep, kind_guess, tool_versions())
    rec["primary_metric"] = "parallel_time"
    rec["extra"] = {"launcher": args.launcher, "image": args.image, "placement": PLACEMENT[args.design],
                    "scheduler_node": 1,
                    "memfs_opts": memfs_opts, "network": network, "inputs": str(args.inputs),
                    "input_bytes": wf.manifest.get("input_bytes"), "stages": []}
    xfer_base = args.shared_tmp or os.path.dirname(os.path.abspath(args.raw))
    os.makedirs(xfer_base, exist_ok=True)
    xfer = tempfile.mkdtemp(prefix=".xfer-", dir=xfer_base)
    own_workdir = not args.workdir
    workdir = args.workdir or tempfile.mkdtemp(prefix=f"mtcwf-{args.workflow}-{args.design}-", dir=args.tmp_base)
    log = lambda m: print(f"[{time.strftime('%H:%M:%S')}] {m}", flush=True)
    log(f"{args.workflow} design={args.design} nodes={args.nodes} tasks/node={args.tasks_per_node} rep={args.rep}"
        f" launcher={args.launcher}")
    try:
        with cluster_api.open_cluster(args.launcher, args.nodes, args.design, args.tasks_per_node, memfs_opts,
                                      network, workdir, args.memcached_mb, image=args.image or None) as c:
            rec["system_kind"] = c.kind
            rec["extra"]["cluster"] = c.describe()  # the measured placement: which nodes the agents ran on
            c.shared_tmp = xfer
            sched = Scheduler(c, args.design, PLACEMENT[args.design], args.tasks_per_node,
                              task_timeout=args.task_timeout, log=log)
            t_wf = time.monotonic()
            for stage in wf.stages(sched):
                res = sched.run_stage(stage)
                log(f"  stage {res.name:<12} {res.tasks:5d} tasks {res.wall_s:8.2f} s"
                    f"  per node {dict(sorted(res.per_node_tasks.items()))}")
                rec["extra"]["stages"].append({
                    "stage": res.name, "tasks": res.tasks, "wall_s": res.wall_s, "parallel": stage.parallel,
                    "timed": res.name in dag.TIMED[args.workflow],
                    "per_node_tasks": {str(k): v for k, v in res.per_node_tasks.items()},
                    "per_node_busy_s": {str(k): round(v, 4) for k, v in res.per_node_busy_s.items()},
                    "first_input_local": res.first_input_local, "copies": res.copies,
                    "copied_bytes": res.copied_bytes, "max_dispatch_gap_s": round(res.max_dispatch_gap_s, 4)})
                if stage.parallel and res.max_dispatch_gap_s > args.max_dispatch_gap:
                    raise RuntimeError(
                        f"stage {res.name}: a task's reply reached the driver {res.max_dispatch_gap_s:.1f} s after"
                        f" the task ended (limit {args.max_dispatch_gap} s): the emulated network or the agent"
                        " stalled, so this run's timings are not valid")
            wf_time = time.monotonic() - t_wf
            # memory per node at the end of the run (paper: Table 2.3, Figure 2.9)
            stats = c.stats()
            counters = memfs_counters(c, args.design)
            # verification (reads only, after the snapshot)
            vt = wf.verify_task()
            if args.design == "local-disk":
                sched._ensure_inputs(sched.sched_node, vt)
            vr = sched.run_on(sched.sched_node, 0, vt)
            if vr["rc"] != 0:
                raise TaskFailed(vt, 1, vr)
            check = wf.check(vr["stdout"])
    except TaskFailed as exc:
        return fail(args, rec, f"{exc}")
    except Exception as exc:  # noqa: BLE001 - a crash is a failed run, recorded
        traceback.print_exc()
        return fail(args, rec, f"{type(exc).__name__}: {exc}")
    finally:
        shutil.rmtree(xfer, ignore_errors=True)
        if own_workdir and not _mounted_under(workdir):  # the launcher removes the node dirs, we ours
            shutil.rmtree(workdir, ignore_errors=True)
    rec["sanity"] = check
    rec["extra"]["memfs_counters"] = {str(k): v for k, v in counters.items()}
    rec["extra"]["node_stats"] = stats
    if not check.get("ok"):
        return fail(args, rec, f"verification failed: {check.get('why')}")
    m = rawio.metric
    timed = [s for s in rec["extra"]["stages"] if s["timed"]]
    for s in rec["extra"]["stages"]:
        rec["metrics"].append(m("stage_time", s["wall_s"], "s", stage=s["stage"], timed=s["timed"]))
        rec["metrics"].append(m("stage_tasks", s["tasks"], "tasks", stage=s["stage"], timed=s["timed"]))
    rec["metrics"].append(m("parallel_time", sum(s["wall_s"] for s in timed), "s"))
    rec["metrics"].append(m("workflow_time", wf_time, "s"))
    rec["metrics"].append(m("tasks", sum(s["tasks"] for s in rec["extra"]["stages"]), "tasks"))
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
    rawio.finish(rec)
    rawio.write_json_atomic(args.raw, rec)
    rawio.clear_failure(args.raw)
    par = sum(s["wall_s"] for s in timed)
    log(f"ok: parallel stages {par:.2f} s, workflow {wf_time:.2f} s, data per node "
        + ", ".join(f"{r['node']}:{r['data_bytes'] / 1e6:.1f}MB" for r in stats) + f" -> {args.raw}")
    return 0


def _mounted_under(path: str) -> bool:
    path = os.path.realpath(path)
    try:
        with open("/proc/self/mountinfo") as fh:
            return any(ln.split()[4].startswith(path + "/") for ln in fh)
    except OSError:
        return True


def fail(args, rec, why: str) -> int:
    path = rawio.write_failure(args.raw, rec, why)
    print(f"FAILED: {why}\n  failure record: {path}", file=sys.stderr, flush=True)
    return 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Run one Montage/BLAST workflow configuration.")
    ap.add_argument("--workflow", required=True, choices=["montage", "blast"])
    ap.add_argument("--inputs", required=True, help="directory made by the generator (manifest.json)")
    ap.add_argument("--design", required=True, choices=["memfs", "locality", "local-disk"])
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--tasks-per-node", type=int, required=True)
    ap.add_argument("--rep", type=int, default=0)
    ap.add_argument("--raw", required=True)
    ap.add_argument("--launcher", default="mtc", choices=["mtc", "standin"])
    ap.add_argument("--memfs-opts", default="", help="JSON: MemFS mount options (stripe_size, threads, ...)")
    ap.add_argument("--network", default="", help="JSON: network emulation for the launcher")
    ap.add_argument("--memcached-mb", type=int, default=1024)
    ap.add_argument("--task-timeout", type=float, default=600.0)
    ap.add_argument("--max-dispatch-gap", type=float, default=5.0,
                    help="fail the run if a task's reply took longer than this beyond the task itself (s)")
    ap.add_argument("--image", default="", help="Apptainer image the agents run commands in (cluster)")
    ap.add_argument("--workdir", default="")
    ap.add_argument("--tmp-base", default=os.environ.get("TMPDIR", "/tmp"),
                    help="where the cluster's node directories go (node-local disk)")
    ap.add_argument("--shared-tmp", default="",
                    help="local-disk across hosts: a directory all nodes see (default: beside --raw)")
    args = ap.parse_args(argv)
    if args.nodes < 1 or args.tasks_per_node < 1:
        ap.error("--nodes and --tasks-per-node must be >= 1")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
