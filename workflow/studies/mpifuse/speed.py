#!/usr/bin/env python3
"""How close the mpifuse file systems run to this machine's limits (not a paper experiment).

Run with max(speed.nodes)+1 MPI ranks (rank 0 writes the file, ranks 1..k read):

* read throughput of one large file on one node: native vs FUSE passthrough vs OSR (n=1),
  with ``dd bs=1M`` (raw reading) and with ``sha256sum`` (the benchmark's reader); FUSE
  overhead = 1 - throughput(FUSE) / throughput(native);
* bytes read from the source as the node count k grows: OSR (and OSR refined) read the file
  once (1x), native readers k times.

Every file system is started through libmpifuse with the study's options (``fs_options``);
passthrough is also measured with the FUSE loop's threads switched the other way, to show what
that option costs or gains. One raw file (repro.raw/1) with every measurement as a metric.
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from pathlib import Path

from repro import cli, paramspace, procs, rawio
from studies.mpifuse import layout
from studies.mpifuse import run as mb

REPO = Path(__file__).resolve().parents[3]


def main() -> int:
    a, cfg = cli.parse(__doc__, "tag", "out")
    sp = cfg["speed"]
    mpifuse = mb.load_mpifuse()
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    kmax = max(sp["nodes"])
    if world.Get_size() != kmax + 1:
        print(f"[mpifuse-speed] needs {kmax + 1} ranks, got {world.Get_size()}", file=sys.stderr)
        world.Abort(2)
    size = paramspace.size_bytes(sp["size"])
    timeout = layout.test_timeout(cfg, sp["size"], kmax) * 2
    src = mb.resolve_source(cfg, sp["source"])
    mnt = os.path.join(layout.expand_path(cfg["mount_dir"]), a.tag, f"mnt{rank}")
    sub = a.tag
    if rank == 0:
        os.makedirs(os.path.join(src["write"], sub), exist_ok=True)
    else:
        os.makedirs(mnt, exist_ok=True)
    mb.idle_barrier(world)
    comms = {k: world.Split(1 if 1 <= rank <= k else MPI.UNDEFINED, rank) for k in sorted(set(sp["nodes"]) | {1})}
    opts = layout.fs_options(cfg, "passthrough")
    metrics, notes = [], {}

    def say(msg):
        if rank == 0:
            print(f"[mpifuse-speed] {msg}", flush=True)

    def new_file():
        info = None
        if rank == 0:
            rel = f"{sub}/speed-{uuid.uuid4().hex[:12]}.bin"
            sha, _ = mb.generate(os.path.join(src["write"], rel), size)
            info = {"rel": rel, "sha": sha}
        mb.idle_barrier(world)
        return world.bcast(info, root=0)

    def reader(cmd_for_path, path):
        r = procs.run_child(cmd_for_path(path), timeout)
        if r.rc != 0 or r.timed_out:
            raise RuntimeError(f"{r.cmd}: rc {r.rc}, timed out {r.timed_out}: {r.stderr[-300:]}")
        return r

    dd = (lambda p: ["dd", f"if={p}", "of=/dev/null", "bs=1M"])
    sha = (lambda p: ["sha256sum", p])
    results = {}
    for rep in range(sp["repeats"]):
        # 1. one node: native vs passthrough (both thread settings) vs OSR, dd and sha256sum
        for variant, mode, extra in (("native", None, {}), ("passthrough", "passthrough", {}),
                                     ("passthrough-threads-" + ("off" if opts.get("threads", True) else "on"),
                                      "passthrough", {"threads": not opts.get("threads", True)}),
                                     ("osr", "osr", {}), ("osr-refined", "osr-refined", {})):
            for tool, cmdf in (("dd", dd), ("sha256sum", sha)):
                info = new_file()  # a fresh file per measurement: no FUSE page cache can help
                fs = None
                if rank == 1 and mode:
                    o = dict(layout.fs_options(cfg, mode), timeout=int(timeout), **extra)
                    fs = mpifuse.start(comms[1], mode, mb.read_dir(src, 1), mnt, **o)
                    notes.setdefault(variant, {"options": o})
                mb.idle_barrier(world)
                res = None
                if rank == 1:
                    base = src["read"].format(node=1) if not mode else mnt
                    # warm the source's page cache first, so both sides read the same cached source
                    reader(dd, os.path.join(mb.read_dir(src, 1), info["rel"]))
                    t0 = MPI.Wtime()
                    r = reader(cmdf, os.path.join(base, info["rel"]))
                    t = MPI.Wtime() - t0
                    if tool == "sha256sum" and r.stdout.split()[0] != info["sha"]:
                        raise RuntimeError(f"{variant}: wrong hash")
                    res = {"time": t, "stats": fs.stats() if fs else None}
                    if fs:
                        notes[variant]["stats_sample"] = {k: res["stats"].get(k) for k in
                                                          ("max_read", "fuse_threads", "mpi_thread_level")}
                        fs.stop()
                mb.idle_barrier(world)
                res = world.bcast(res, root=1)
                lab = {"variant": variant, "tool": tool, "nodes": 1, "rep": rep}
                metrics.append(rawio.metric("time", res["time"], "s", **lab))
                metrics.append(rawio.metric("throughput", size / res["time"] / 1e9, "GB/s", **lab))
                results.setdefault((variant, tool), []).append(size / res["time"] / 1e9)
                say(f"rep {rep + 1}/{sp['repeats']} {variant:26s} {tool:9s} n=1: {res['time']:.3f} s, "
                    f"{size / res['time'] / 1e9:.3f} GB/s")
                if rank == 0:
                    os.unlink(os.path.join(src["write"], info["rel"]))
                mb.idle_barrier(world)
        # 2. bytes from the source as k grows: OSR reads once, native k times (deterministic: first repeat only)
        for k in sorted(sp["nodes"]) if rep == 0 else []:
            for variant, mode in (("native", None), ("osr", "osr"), ("osr-refined", "osr-refined")):
                info = new_file()
                fs = None
                c = comms[k]
                if c != MPI.COMM_NULL and mode:
                    fs = mpifuse.start(c, mode, mb.read_dir(src, rank), mnt,
                                       **dict(layout.fs_options(cfg, mode), timeout=int(timeout)))
                    fs.reset()
                mb.idle_barrier(world)
                got = None
                if c != MPI.COMM_NULL:
                    base = mnt if mode else mb.read_dir(src, rank)
                    t0 = MPI.Wtime()
                    r = reader(sha, os.path.join(base, info["rel"]))
                    t = MPI.Wtime() - t0
                    ok = r.stdout.split()[0] == info["sha"]
                    got = {"time": t, "ok": ok, "src_bytes": fs.stats()["bytes_read_source"] if fs
                           else r.io.get("rchar", 0)}
                    if fs:
                        fs.stop()
                mb.idle_barrier(world)
                allv = [g for g in world.allgather(got) if g]
                if not all(g["ok"] for g in allv):
                    raise RuntimeError(f"{variant} k={k}: wrong hash")
                b = sum(g["src_bytes"] for g in allv)
                lab = {"variant": variant, "tool": "sha256sum", "nodes": k, "rep": rep}
                metrics.append(rawio.metric("bytes_from_source", b, "B", **lab))
                metrics.append(rawio.metric("file_sizes_from_source", b / size, "x", **lab))
                metrics.append(rawio.metric("time", max(g["time"] for g in allv), "s", **lab))
                say(f"rep {rep + 1}/{sp['repeats']} {variant:26s} n={k}: {b / size:.3f}x the file from the source, "
                    f"{max(g['time'] for g in allv):.3f} s")
                if rank == 0:
                    os.unlink(os.path.join(src["write"], info["rel"]))
                mb.idle_barrier(world)
    notes = world.bcast(notes, root=1)
    if rank == 0:
        rec = rawio.new_record(layout.STUDY, "speed", {"source": sp["source"], "size": sp["size"]}, 0,
                               layout.system_kind(cfg, sp["source"]), mb.tool_versions(MPI))
        rec["metrics"] = metrics
        rec["extra"] = {"fs_options": notes, "study_fs_options": cfg.get("fs_options", {}), "size_bytes": size,
                        "nodes": sp["nodes"], "repeats": sp["repeats"],
                        "note": "one node reads while the others idle; the source file is in the page cache "
                                "(warmed with dd before every timed read) so native and FUSE read the same cached "
                                "data and the difference is the file system's own cost"}
        rawio.write_json_atomic(a.out, rawio.finish(rec))
        shutil.rmtree(os.path.join(src["write"], sub), ignore_errors=True)
        say(f"wrote {a.out}")
    else:
        try:
            os.rmdir(mnt)
        except OSError:
            pass
    mb.idle_barrier(world)
    if rank == 0:
        shutil.rmtree(os.path.dirname(mnt), ignore_errors=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # noqa: BLE001 - one rank's error must end every rank
        import traceback

        traceback.print_exc()
        print(f"[mpifuse-speed] FATAL: {exc}; aborting the MPI job", file=sys.stderr, flush=True)
        from mpi4py import MPI

        MPI.COMM_WORLD.Abort(1)
