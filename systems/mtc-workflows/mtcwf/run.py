"""Run one workflow configuration: the measurement, engine-free.

    python -m mtcwf.run --workflow montage --inputs results/memfs/wf_inputs/montage \
        --design memfs --nodes 4 --tasks-per-node 2 --rep 0 --raw out.json

The driver (this process, node 0 of the n+1 layout) starts the cluster
(memcached + k MemFS mounts per node, or node-local directories), runs the
workflow's stages with the MTC scheduler, takes the memory snapshot at the
end of the run (before anything is removed, as the paper's Figure 2.9), then
verifies the result (the mosaic, the planted BLAST hits) and tears down.

``measure`` fills a plain dict (system_kind, extra: stages, placement, per-node
memory, MemFS's counters; sanity) and raises ``RunFailed`` when a task fails, the
verification fails or the run crashes. The study records it (a repro.raw/1 record
or a failure record: workflow/studies/memfs/wf_run.py); this module's own command
line writes the dict as JSON (``ok``, ``why``) to --raw. systems/ never imports the
project's engine.
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


class RunFailed(Exception):
    """A run that is a result, not a measurement: a task or the verification failed, or it crashed."""


def kind_guess(args) -> str:
    return "stand-in:local-processes" if args.launcher == "standin" else "stand-in:network-namespaces"


def measure(args, rec: dict, log) -> dict:
    """Run one configuration, filling ``rec`` (system_kind, extra, sanity) as it goes, so a failed run's
    record holds what was measured until then. Returns the run's time and per-node memory; raises
    RunFailed with the reason."""
    wf = build_workflow(args.workflow, args.inputs)
    memfs_opts = json.loads(args.memfs_opts) if args.memfs_opts else {}
    network = json.loads(args.network) if args.network else {}
    rec["extra"] = {"launcher": args.launcher, "image": args.image, "placement": PLACEMENT[args.design],
                    "scheduler_node": 1,
                    "memfs_opts": memfs_opts, "network": network, "inputs": str(args.inputs),
                    "input_bytes": wf.manifest.get("input_bytes"), "stages": []}
    xfer_base = args.shared_tmp or os.path.dirname(os.path.abspath(args.raw))
    os.makedirs(xfer_base, exist_ok=True)
    xfer = tempfile.mkdtemp(prefix=".xfer-", dir=xfer_base)
    own_workdir = not args.workdir
    workdir = args.workdir or tempfile.mkdtemp(prefix=f"mtcwf-{args.workflow}-{args.design}-", dir=args.tmp_base)
    # the stores: -m memcached_mb, or a per-node memory limit for data (montage-memlimit)
    store = (cluster_api.data_limited_store(args.data_limit_mb) if args.data_limit_mb
             else {"mem_mb": args.memcached_mb, "options": []})
    rec["extra"]["store"] = store
    log(f"{args.workflow} design={args.design} nodes={args.nodes} tasks/node={args.tasks_per_node} rep={args.rep}"
        f" launcher={args.launcher}" + (f" data limit {args.data_limit_mb} MiB per node (memcached -m"
                                        f" {store['mem_mb']} {' '.join(store['options'])})" if args.data_limit_mb
                                        else ""))
    try:
        with cluster_api.open_cluster(args.launcher, args.nodes, args.design, args.tasks_per_node, memfs_opts,
                                      network, workdir, store["mem_mb"], image=args.image or None,
                                      memcached_opts=store["options"]) as c:
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
        raise RunFailed(f"{exc}") from None
    except Exception as exc:  # noqa: BLE001 - a crash is a failed run, recorded
        traceback.print_exc()
        raise RunFailed(f"{type(exc).__name__}: {exc}") from None
    finally:
        shutil.rmtree(xfer, ignore_errors=True)
        if own_workdir and not _mounted_under(workdir):  # the launcher removes the node dirs, we ours
            shutil.rmtree(workdir, ignore_errors=True)
    rec["sanity"] = check
    rec["extra"]["memfs_counters"] = {str(k): v for k, v in counters.items()}
    rec["extra"]["node_stats"] = stats
    if not check.get("ok"):
        raise RunFailed(f"verification failed: {check.get('why')}")
    return {"wf_time": wf_time, "stats": stats}


def log(m: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {m}", flush=True)


def _mounted_under(path: str) -> bool:
    path = os.path.realpath(path)
    try:
        with open("/proc/self/mountinfo") as fh:
            return any(ln.split()[4].startswith(path + "/") for ln in fh)
    except OSError:
        return True


def parse_args(argv=None) -> argparse.Namespace:
    """The command line of one run (the study's recorder takes the same, workflow/studies/memfs/wf_run.py)."""
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
    ap.add_argument("--memcached-mb", type=int, default=1024, help="every node's memcached -m")
    ap.add_argument("--data-limit-mb", type=int, default=0,
                    help="instead: every node's memory for data, in MiB (cluster_api.data_limited_store: "
                         "-m this plus one preallocated page per slab class, 16 KiB chunks); 0: off")
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
    if args.data_limit_mb < 0:
        ap.error("--data-limit-mb must be >= 0")
    return args


def main(argv=None) -> int:
    """Measure one configuration; --raw gets the plain dict with ok and why (no repro.raw/1 record)."""
    args = parse_args(argv)
    rec = {"params": {"workflow": args.workflow, "design": args.design, "nodes": args.nodes,
                      "tasks_per_node": args.tasks_per_node}, "rep": args.rep, "system_kind": kind_guess(args)}
    try:
        rec.update(measure(args, rec, log), ok=True, why="")
    except RunFailed as exc:
        rec.update(ok=False, why=str(exc))
    os.makedirs(os.path.dirname(os.path.abspath(args.raw)), exist_ok=True)
    Path(args.raw).write_text(json.dumps(rec, indent=1, default=str) + "\n")
    print(("ok: " if rec["ok"] else "FAILED: ") + (rec["why"] or args.raw), flush=True)
    return 0 if rec["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
