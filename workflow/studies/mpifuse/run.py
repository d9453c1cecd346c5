#!/usr/bin/env python3
"""The mpifuse benchmarker (paper 001, Section IV): one run = one source x nodes x size x repeat, every use case.

Run with n+1 MPI ranks, one per node (mpirun locally, srun on Slurm):

* rank 0, the driver node, only generates the test files: for every single
  test a fresh file of random bytes from /dev/urandom under a new name on the
  source file system (so no node can have it cached), hashing it while it
  writes; it never reads a test file back;
* ranks 1..n (nodes 1..n) split a communicator, start the file system of each
  use case in-process through libmpifuse on their own mount point (so the
  reader, a ``sha256sum`` child process, and the mount share one mount
  namespace, also inside a container), and read the file through it.

Every node's work is timed with MPI_Wtime after a barrier. The run's time is
the slowest node's: the moment every node has the hash. Every node's hash is
checked against the generator's, and the bytes read from the source file
system against the design (1x the file for OSR/Bcast, n x for native and
passthrough). A failed check, a timeout or a lost rank is a failed run: a
failure record under results/mpifuse/failed/ and a non-zero exit.

    mpirun -n 5 python3 mpifuse_bench.py --config JSON --source home --nodes 4 --size 10MB --rep 2 --tag T
    python3 mpifuse_bench.py --finish RC --config JSON --source ... --tag T      # after the launcher: post-mortem
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import traceback
import uuid
from pathlib import Path

from repro import cli, paramspace, procs, provenance, rawio
from studies.mpifuse import layout

REPO = Path(__file__).resolve().parents[3]

CHUNK = 4 << 20


def say(msg: str) -> None:
    print(f"[mpifuse] {msg}", flush=True)


def warn(msg: str) -> None:
    print(f"[mpifuse] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# sources: where rank 0 writes, where node i reads
# --------------------------------------------------------------------------
def resolve_source(cfg: dict, source: str) -> dict:
    sec = cfg[source]
    if source == "home" and sec.get("kind") == "emulated":
        state_dir = os.environ.get("HOMEFS_STATE")
        if not state_dir:
            raise SystemExit("home.kind=emulated needs the homefs emulation: run under "
                             "systems/homefs/homefs.py run ... (HOMEFS_STATE is not set)")
        st = json.loads((Path(state_dir) / "homefs.json").read_text())
        return {"write": st["export"], "read": st["mnt_template"], "homefs": st}
    path = layout.expand_path(sec["path"])
    return {"write": path, "read": path, "homefs": None}


def read_dir(src: dict, node: int) -> str:
    return src["read"].format(node=node)


def link_counters(src: dict) -> dict | None:
    st = src.get("homefs")
    if not st:
        return None
    from systems.homefs import homefs

    return homefs.counters(st)


def load_mpifuse():
    """The file systems' ctypes wrapper: the image's installed copy (its PYTHONPATH), else
    systems/mpifuse/python (which finds systems/mpifuse/build/libmpifuse.so)."""
    try:
        import mpifuse
    except ImportError:
        from systems.mpifuse.python import mpifuse
    return mpifuse


def generate(path: str, size: int) -> tuple[str, float]:
    """Write `size` random bytes from /dev/urandom; return (sha256, seconds)."""
    t0 = time.monotonic()
    h = hashlib.sha256()
    left = size
    with open("/dev/urandom", "rb", buffering=0) as rnd, open(path, "wb") as out:
        while left:
            b = rnd.read(min(CHUNK, left))
            h.update(b)
            out.write(b)
            left -= len(b)
        out.flush()
        os.fsync(out.fileno())
    return h.hexdigest(), time.monotonic() - t0


def idle_barrier(comm, poll: float = 0.001) -> None:
    """A barrier that sleeps while it waits. A blocking MPI wait spins a core; on one host
    the ranks that already finished (and rank 0) would steal CPU from the nodes still working."""
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(poll)


def tool_versions(MPI) -> dict:
    v = {"mpi": MPI.Get_library_version().splitlines()[0].strip().rstrip("\x00"),
         "sha256sum": provenance.tool_version(["sha256sum", "--version"]),
         "fuse": provenance.tool_version(["fusermount3", "--version"])}
    try:
        import mpi4py

        v["mpi4py"] = mpi4py.__version__
    except ImportError:
        pass
    return v


# --------------------------------------------------------------------------
# the MPI benchmark
# --------------------------------------------------------------------------
# libmpifuse's stats -> the raw file's per-node metrics (key, metric, unit)
FS_METRICS = (
    ("open_time_s", "fs_open_time", "s"), ("read_time_s", "fs_read_time", "s"),
    ("read_wait_time_s", "fs_read_wait_time", "s"), ("mpi_get_time_s", "fs_get_time", "s"),
    ("source_read_time_s", "fs_source_read_time", "s"), ("bcast_time_s", "fs_bcast_time", "s"),
    ("meta_time_s", "fs_meta_time", "s"), ("open_calls", "fs_open_calls", "count"),
    ("read_calls", "fs_read_calls", "count"), ("mpi_get_calls", "fs_get_calls", "count"),
    ("bytes_fetched_remote", "fs_get_bytes", "B"), ("bcast_calls", "fs_bcast_calls", "count"),
    ("source_read_calls", "fs_source_read_calls", "count"),
    # bcast on demand: time in the lockstep barriers (part of fs_bcast_time) and
    # time the stream waited for this node's own reader (not in fs_bcast_time)
    ("bcast_sync_time_s", "fs_bcast_sync_time", "s"),
    ("bcast_demand_wait_time_s", "fs_bcast_demand_wait_time", "s"))


def node_problems(results, info) -> tuple[list[str], bool]:
    """What went wrong on the nodes (an error, a wrong hash), and whether a node timed out."""
    problems, fatal = [], False
    for r in results:
        if not r["ok"]:
            problems.append(f"node {r['node']}: {r['error']}")
            fatal = fatal or bool(r.get("timed_out"))
        elif r["hash"] != info["sha256"]:
            problems.append(f"node {r['node']}: hash {r['hash']} != generator's {info['sha256']}")
    return problems, fatal


class Bench:
    def __init__(self, args, cfg):
        from mpi4py import MPI

        self.MPI = MPI
        self.args, self.cfg = args, cfg
        self.world = MPI.COMM_WORLD
        self.rank, self.size = self.world.Get_rank(), self.world.Get_size()
        self.n = args.nodes
        self.node = self.rank  # rank i runs on node i; rank 0 is the driver node
        self.fs_comm = self.world.Split(1 if self.rank > 0 else MPI.UNDEFINED, self.rank)
        self.size_bytes = paramspace.size_bytes(args.size)
        self.timeout = layout.test_timeout(cfg, args.size, self.n)
        self.kind = layout.system_kind(cfg, args.source)
        self.current_rec = None  # rank 0: the record of the test in progress
        self.current_out = None
        self.fault = dict(f.split(":", 1) for f in args.inject_fault) if args.inject_fault else {}
        self.watchdog = procs.Watchdog(self._on_timeout)

    # ---- failure paths -------------------------------------------------
    def abort(self, why: str, code: int = 4, kind: str | None = None):
        warn(f"rank {self.rank}: FATAL: {why}; aborting the MPI job")
        if self.rank == 0 and self.current_rec is not None:
            try:
                rawio.write_failure(self.current_out, rawio.finish(self.current_rec), why, kind)
            except Exception as exc:  # noqa: BLE001
                warn(f"could not write the failure record: {exc!r}")
        sys.stdout.flush()
        sys.stderr.flush()
        self.world.Abort(code)

    def _on_timeout(self, what: str, seconds: float):
        if self.rank != 0:
            time.sleep(10)  # leave rank 0 the time to write its failure record first
        self.abort(f"timeout: {what} took more than {seconds:.0f} s on rank {self.rank} "
                   f"(node {self.node}): a hung file system or a lost rank", kind="timeout")

    def phase(self, seconds: float, what: str):
        bench = self

        class _Phase:
            def __enter__(self_inner):
                bench.watchdog.arm(seconds, what)

            def __exit__(self_inner, *exc):
                bench.watchdog.disarm()
                return False

        return _Phase()

    # ---- set-up ----------------------------------------------------------
    def setup(self):
        a, cfg = self.args, self.cfg
        if self.size != self.n + 1:
            self.abort(f"launched with {self.size} ranks, but nodes={self.n} needs n+1 = {self.n + 1}", 2)
        self.src = resolve_source(cfg, a.source)
        tag = a.tag
        self.subdir = f"{tag}"  # test files live in <source>/<tag>/
        self.mnt = os.path.join(layout.expand_path(cfg["mount_dir"]), tag, f"mnt{self.node}")
        self.local = os.path.join(layout.expand_path(cfg["local_dir"]), tag, f"node{self.node}")
        self.shm = os.path.join(layout.expand_path(cfg["shm_dir"]), tag, f"node{self.node}")
        if self.rank == 0:
            os.makedirs(os.path.join(self.src["write"], self.subdir), exist_ok=True)
        else:
            for d in (self.mnt, self.local, self.shm):
                os.makedirs(d, exist_ok=True)
        me = {"rank": self.rank, "node": os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
              "pid": os.getpid()}
        self.ranks = self.world.allgather(me)
        self.world.Barrier()
        if self.rank > 0:  # the test directory must be visible before any mount looks it up
            d = os.path.join(read_dir(self.src, self.node), self.subdir)
            t_end = time.monotonic() + 30
            while not os.path.isdir(d):
                if time.monotonic() > t_end:
                    self.abort(f"{d} not visible on node {self.node} after 30 s")
                time.sleep(0.05)
        self.world.Barrier()
        self.versions = tool_versions(self.MPI) if self.rank == 0 else {}
        self.probe = self.hash_probe()

    def hash_probe(self) -> dict:
        """Per node: sha256sum of a file already in memory (tmpfs), and of /dev/null (baselines)."""
        out = {}
        if self.rank > 0 and self.cfg.get("hash_probe", True):
            f = os.path.join(self.shm, "probe.bin")
            with open(f, "wb") as fh:
                left = self.size_bytes
                z = bytes(min(CHUNK, max(left, 1)))
                while left:
                    fh.write(z[:min(CHUNK, left)])
                    left -= min(CHUNK, left)
            base = procs.run_child(["sha256sum", "/dev/null"], 60)
            idle_barrier(self.world)
            self.world.Barrier()
            r = procs.run_child(["sha256sum", f], self.timeout)
            os.unlink(f)
            out = {"hash_in_memory": r.elapsed, "hash_startup": base.elapsed,
                   "rchar_baseline": base.io.get("rchar", 0)}
        elif self.rank == 0 and self.cfg.get("hash_probe", True):
            idle_barrier(self.world)
            self.world.Barrier()
        if self.rank > 0 and "rchar_baseline" not in out:
            base = procs.run_child(["sha256sum", "/dev/null"], 60)
            out["rchar_baseline"] = base.io.get("rchar", 0)
        return out

    # ---- one test ----------------------------------------------------------
    def node_work(self, v: layout.Variant, rel: str, name: str) -> dict:
        """Node i's timed work; returns what it saw."""
        if v.action == "hash_source":
            target = os.path.join(read_dir(self.src, self.node), rel)
        else:
            target = os.path.join(self.mnt, rel)
        res = {"node": self.node, "ok": True, "error": "", "hash": "", "copy_time": None,
               "hash_time": None, "reader_rchar": 0}
        injected = self.fault.get("hang") == v.name and self.node == 1
        io0 = procs.proc_io()
        t0 = self.MPI.Wtime()
        if injected:
            r = procs.run_child(["sleep", str(int(self.timeout) + 30)], self.timeout)
            steps = [r]
        elif v.action in ("copy_local", "copy_shm"):
            dest = os.path.join(self.local if v.action == "copy_local" else self.shm, name)
            c = procs.run_child(["cp", "--", target, dest], self.timeout)
            t_c = self.MPI.Wtime()
            r = procs.run_child(["sha256sum", dest], max(1.0, self.timeout - (t_c - t0))) if c.rc == 0 else c
            res["copy_time"] = t_c - t0
            res["hash_time"] = self.MPI.Wtime() - t_c
            steps = [c, r] if c.rc == 0 else [c]
        else:
            r = procs.run_child(["sha256sum", target], self.timeout)
            steps = [r]
        t1 = self.MPI.Wtime()
        io1 = procs.proc_io()
        res["time"] = t1 - t0
        res["proc_rchar"] = io1.get("rchar", 0) - io0.get("rchar", 0)
        base = self.probe.get("rchar_baseline", 0)
        # bytes the reader(s) read, without what sha256sum/cp read at start-up (libraries, locale)
        res["reader_rchar"] = sum(max(0, s.io.get("rchar", 0) - base) for s in steps)
        for s in steps:
            if s.timed_out:
                res.update(ok=False, timed_out=True,
                           error=f"timeout: {' '.join(s.cmd[:1])} still running after {self.timeout:.0f} s")
                break
            if s.rc != 0:
                res.update(ok=False, error=procs.failure_message(" ".join(s.cmd), s, tail=500))
                break
        if res["ok"]:
            res["hash"] = steps[-1].stdout.split()[0] if steps[-1].stdout.split() else ""
            if self.fault.get("wrong-hash") == v.name and self.node == 1:
                res["hash"] = ("0" if res["hash"][:1] != "0" else "1") + res["hash"][1:]
        if self.fault.get("lost-rank") == v.name and self.node == 1:
            warn(f"rank {self.rank}: injected fault lost-rank: exiting without a word")
            os._exit(9)
        return res

    def run_variant(self, v: layout.Variant, index: int, total: int) -> bool:
        a, cfg = self.args, self.cfg
        out = layout.raw_path(a.source, v.name, a.nodes, a.size, a.rep, a.raw_dir)
        params = {"source": a.source, "variant": v.name, "nodes": a.nodes, "size": a.size}
        opts = dict(layout.variant_options(cfg, v.name), timeout=int(self.timeout)) if v.mode else {}
        if self.rank == 0:
            self.current_out = out
            self.current_rec = rawio.new_record(layout.STUDY, layout.EXPERIMENT, params, a.rep, self.kind,
                                                self.versions)
        # 1. start the file system of this use case on nodes 1..n (not timed)
        fs, start_err = None, ""
        with self.phase(120 + self.timeout / 4, f"starting {v.mode or 'no'} file system for {v.name}"):
            if v.mode and self.rank > 0:
                mpifuse = load_mpifuse()

                try:
                    fs = mpifuse.start(self.fs_comm, v.mode, read_dir(self.src, self.node), self.mnt, **opts)
                except OSError as exc:
                    start_err = str(exc)
            idle_barrier(self.world)
            start_errs = self.world.allgather(start_err)
        if any(start_errs):
            if self.rank == 0:
                why = f"file system did not start: {next(e for e in start_errs if e)}"
                rawio.write_failure(out, rawio.finish(self.current_rec), why)
                say(f"{a.source} {v.name} n={a.nodes} {a.size} rep {a.rep + 1}/{a.reps_total}: FAILED ({why})")
            return False

        # 2. rank 0 writes a fresh file (new name: nobody can have it cached)
        info = None
        if self.rank == 0:
            name = f"{v.name}-rep{a.rep}-{uuid.uuid4().hex[:12]}.bin"
            rel = f"{self.subdir}/{name}"
            sha, t_gen = generate(os.path.join(self.src["write"], rel), self.size_bytes)
            info = {"rel": rel, "name": name, "sha256": sha, "gen_time": t_gen}
        idle_barrier(self.world)  # the nodes sleep while rank 0 writes the file
        info = self.world.bcast(info, root=0)
        name, rel = info["name"], info["rel"]
        if fs is not None:
            fs.reset()
        c0 = link_counters(self.src) if self.rank == 0 else None
        # 3. the timed test: barrier, then every node reads the file through the use case
        with self.phase(self.timeout + 60, f"{v.name} test of {a.size} on {a.nodes} node(s)"):
            idle_barrier(self.world)
            self.world.Barrier()  # everybody is already here: a tight start
            res = self.node_work(v, rel, name) if self.rank > 0 else None
            if fs is not None:
                res["fs"] = fs.stats()
            idle_barrier(self.world)  # finished nodes (and rank 0) sleep while others still work
            results = self.world.gather(res, root=0)
        c1 = link_counters(self.src) if self.rank == 0 else None

        ok = True
        fatal = False
        if self.rank == 0:
            ok, fatal = self.record(v, info, results[1:], c0, c1, opts, index, total)
        ok, fatal = self.world.bcast((ok, fatal), root=0)
        if fatal:  # a timed-out file system cannot be trusted to stop: end the job
            self.abort(f"{v.name}: a node timed out; ending the job (failure record written)", 5)

        # 4. clean up (not timed): the copies, the test file, the file system
        if self.rank > 0:
            for d in (self.local, self.shm):
                try:
                    os.unlink(os.path.join(d, name))
                except FileNotFoundError:
                    pass
        with self.phase(120, f"stopping the {v.mode} file system of {v.name}"):
            if fs is not None:
                fs.stop()
            idle_barrier(self.world)
        if self.rank == 0:
            try:
                os.unlink(os.path.join(self.src["write"], rel))
            except FileNotFoundError:
                pass
        return ok

    # ---- rank 0: sanity, raw record ------------------------------------------
    def record(self, v, info, results, c0, c1, opts, index, total) -> tuple[bool, bool]:
        """Rank 0: the use case's metrics and sanity checks into its raw record, written as a result
        or, when a check failed, as a failure record: (ok, fatal: a node timed out)."""
        a, rec = self.args, self.current_rec
        n, S = a.nodes, self.size_bytes
        problems, fatal = node_problems(results, info)
        run_time = self.time_metrics(info, results)
        bfs = self.source_metrics(v, results)
        want, bytes_ok = self.check_source_bytes(v, bfs, problems)
        link = self.link_metrics(c0, c1)
        link_ok = self.check_link(link, want, problems)
        rec["sanity"] = {"hash_match": all(r.get("hash") == info["sha256"] for r in results),
                         "all_nodes_ok": all(r["ok"] for r in results), "bytes_from_source_ok": bytes_ok,
                         "expected_bytes_from_source": want, "link_bytes_ok": link_ok}
        rec["extra"] = self.record_extra(v, info, results, opts, index)
        label = f"{a.source} {v.name} n={n} {a.size} rep {a.rep + 1}/{a.reps_total}"
        out = self.current_out
        self.current_rec = None  # this test's record is written here, not by an abort
        if problems:
            why = "; ".join(problems)
            rawio.write_failure(out, rawio.finish(rec), why)
            say(f"{label}: FAILED ({why}) [use case {index}/{total}]")
            return False, fatal
        rawio.clear_failure(out)
        rawio.write_json_atomic(out, rawio.finish(rec))
        gbps = n * S / run_time / 1e9
        say(f"{label}: {run_time:.3f} s ({gbps:.3f} GB/s aggregate, {bfs / S:.2f}x the file from the source"
            + (f", {link / S:.2f}x on the home link" if link is not None else "") + f") [use case {index}/{total}]")
        return True, False

    def time_metrics(self, info, results) -> float:
        """The run's time (the slowest node), each node's times and bytes, the in-memory hash probes."""
        m = self.current_rec["metrics"]
        run_time = max(r["time"] for r in results)
        m.append(rawio.metric("time", run_time, "s"))
        for r in results:
            m.append(rawio.metric("node_time", r["time"], "s", node=r["node"]))
            if r.get("copy_time") is not None:
                m.append(rawio.metric("copy_time", r["copy_time"], "s", node=r["node"]))
                m.append(rawio.metric("hash_time", r["hash_time"], "s", node=r["node"]))
            m.append(rawio.metric("reader_bytes", r["reader_rchar"], "B", node=r["node"]))
        m.append(rawio.metric("gen_time", info["gen_time"], "s"))
        for node, p in enumerate(self.probes[1:], start=1):
            if "hash_in_memory" in p:
                m.append(rawio.metric("hash_in_memory", p["hash_in_memory"], "s", node=node))
                m.append(rawio.metric("hash_startup", p["hash_startup"], "s", node=node))
        return run_time

    def source_metrics(self, v, results) -> float:
        """Bytes read from the source file system (per node and in all) and the file system's
        counters (FS_METRICS); returns the bytes in all."""
        m = self.current_rec["metrics"]
        if v.mode:
            per_node = [r["fs"].get("bytes_read_source", 0) for r in results]
            for r in results:
                st = r["fs"]
                lab = {"node": r["node"]}
                m.append(rawio.metric("node_bytes_from_source", st.get("bytes_read_source", 0), "B", **lab))
                m.append(rawio.metric("fs_proc_rchar", r["proc_rchar"], "B", **lab))
                for key, metric_name, unit in FS_METRICS:
                    if key in st:
                        m.append(rawio.metric(metric_name, st[key], unit, **lab))
        else:
            per_node = [r["reader_rchar"] for r in results]
            for r in results:
                m.append(rawio.metric("node_bytes_from_source", r["reader_rchar"], "B", node=r["node"]))
        bfs = sum(per_node)
        m.append(rawio.metric("bytes_from_source", bfs, "B"))
        return bfs

    def check_source_bytes(self, v, bfs, problems: list) -> tuple[float, bool]:
        """Whether the source gave the use case's multiple of the file (sanity.bytes_*): (expected, ok);
        a problem when not (and nothing else went wrong)."""
        cfg, n, S = self.cfg, self.args.nodes, self.size_bytes
        want = layout.expected_source_reads(v.name, n) * S
        tol = cfg["sanity"]["bytes_rel_tol"]
        slack = cfg["sanity"]["bytes_abs_slack"] * n
        bytes_ok = want * (1 - tol) - slack <= bfs <= want * (1 + tol) + slack
        if not problems and not bytes_ok:
            problems.append(f"bytes read from the source {bfs} B, expected {want} B "
                            f"({layout.expected_source_reads(v.name, n)} x {S} B) within {tol:.0%} + {slack} B")
        return want, bytes_ok

    def link_metrics(self, c0, c1):
        """Bytes on the emulated home link over the run (None without its counters)."""
        if not (c0 and c1):
            return None
        m = self.current_rec["metrics"]
        link = c1["server_tx_bytes"] - c0["server_tx_bytes"]
        m.append(rawio.metric("link_bytes", link, "B"))
        for node, b in c1["node_rx_bytes"].items():
            m.append(rawio.metric("node_link_bytes", b - c0["node_rx_bytes"][node], "B", node=int(node)))
        return link

    def check_link(self, link, want, problems: list):
        """Whether the home link carried the expected bytes (sanity.link_band; None: not checked)."""
        cfg = self.cfg
        if link is None or self.size_bytes < cfg["sanity"]["link_check_min_bytes"]:
            return None
        lo, hi = cfg["sanity"]["link_band"]
        link_ok = want * lo <= link <= want * hi
        if not problems and not link_ok:
            problems.append(f"home link carried {link} B, expected {want} B x [{lo}, {hi}] "
                            f"(a client cache or a stray reader?)")
        return link_ok

    def record_extra(self, v, info, results, opts, index) -> dict:
        a, cfg = self.args, self.cfg
        return {
            "run_time_definition": "slowest node: MPI_Wtime from a barrier until every node has the hash",
            "file": info["rel"], "size_bytes": self.size_bytes, "sha256": info["sha256"],
            "node_hashes": {str(r["node"]): r.get("hash", "") for r in results},
            "errors": {str(r["node"]): r["error"] for r in results if r["error"]},
            "mode": v.mode, "action": v.action, "fs_options": opts,
            "fs_stats": {str(r["node"]): r.get("fs") for r in results} if v.mode else None,
            "home": ({"kind": "emulated", "rate_mbit": cfg["home"]["rate_mbit"],
                      "burst": cfg["home"]["burst"], "tag": self.src["homefs"]["tag"]}
                     if self.src.get("homefs") else {"kind": "path"}) if a.source == "home" else None,
            "test_timeout_s": self.timeout, "variant_order": self.order, "position": index,
            "job_tag": a.tag, "launcher": a.launcher, "ranks": self.ranks,
            "slurm_job_id": os.environ.get("SLURM_JOB_ID", ""), "hash_probe": self.probes[1:],
        }

    # ---- the run ---------------------------------------------------------------
    def run(self) -> int:
        a = self.args
        with self.phase(300, "set-up"):
            self.setup()
            self.probes = self.world.gather(self.probe, root=0)
        variants = [layout.VARIANTS[x] for x in a.variants]
        k = a.rep % len(variants) if self.cfg.get("order", "rotate") == "rotate" else 0
        variants = variants[k:] + variants[:k]
        self.order = [v.name for v in variants]
        if self.rank == 0:
            say(f"run {a.source} n={a.nodes} {a.size} rep {a.rep + 1}/{a.reps_total}: {len(variants)} use cases "
                f"({', '.join(self.order)}), {self.kind}, test timeout {self.timeout:.0f} s, "
                f"ranks on {[r['node'] for r in self.ranks]}")
        ok_all = True
        for i, v in enumerate(variants, start=1):
            ok_all &= self.run_variant(v, i, len(variants))
        self.world.Barrier()
        if self.rank > 0:
            for d in (self.local, self.shm):
                shutil.rmtree(d, ignore_errors=True)
            for d in (self.mnt, os.path.dirname(self.mnt), os.path.dirname(self.local), os.path.dirname(self.shm)):
                try:  # the job's directories, once every node has removed its own
                    os.rmdir(d)
                except OSError:
                    pass
        elif not a.keep_dir:
            shutil.rmtree(os.path.join(self.src["write"], self.subdir), ignore_errors=True)
        self.fs_comm.Free() if self.fs_comm != self.MPI.COMM_NULL else None
        if self.rank == 0:
            say(f"run {a.source} n={a.nodes} {a.size} rep {a.rep + 1}/{a.reps_total}: "
                + ("all use cases ok" if ok_all else "FAILED (see failure records above)"))
        return 0 if ok_all else 3


# --------------------------------------------------------------------------
# after the launcher: post-mortem records and leftovers
# --------------------------------------------------------------------------
# lines of a launcher's log that say why a job ended: a crash, a lost node or rank, a timeout, an abort
_EVIDENCE = re.compile(r"caught signal|segmentation fault|signal \d+|core dumped|killed by|node fail|\blost\b|"
                       r"unreachable|timed out|timeout:|time limit|MPI_ABORT|abort|FATAL|error|exited|"
                       r"non-zero exit", re.I)


def log_evidence(log: str | None, rc: int) -> tuple[str, str]:
    """(the lines of the launcher's log that say why the job ended -- else its last lines, else that
    there is no log --, the failure's kind: repro.rawio.classify of those lines and the exit status;
    a job that ended non-zero with nothing recognisable is a crash)."""
    try:
        lines = [x.rstrip() for x in Path(log).read_text(errors="replace").splitlines() if x.strip()] if log else []
    except OSError as exc:
        lines, missing = [], f"(its log {log} could not be read: {exc.strerror})"
    else:
        missing = "(no log named)" if not log else "(its log is empty)"
    hits = [x for x in lines if _EVIDENCE.search(x)]
    if len(hits) > 9:  # the first lines (the cause) and the last (how it ended)
        hits = hits[:6] + ["..."] + hits[-3:]
    text = " | ".join(hits or lines[-5:]) or missing
    text = text if len(text) <= 3000 else text[:2000] + " ... " + text[-1000:]
    kind = rawio.classify(text, rc)
    return text, ("crash" if kind == "error" and rc else kind)


def finish(args, cfg) -> int:
    """Runs on the batch node after mpirun/srun: lazy-unmount and remove what the run left
    behind, and give every expected raw file that neither exists nor has a failure record one
    (the job died: a lost rank, an abort, the wall-clock limit)."""
    tag = args.tag
    roots = [os.path.join(layout.expand_path(cfg[k]), tag) for k in ("mount_dir", "local_dir", "shm_dir")]
    try:
        mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    except OSError:
        mounts = []
    for mp in mounts:
        mp = mp.replace("\\040", " ")
        if any(mp.startswith(r + "/") for r in roots):
            warn(f"finish: lazy-unmounting leftover {mp}")
            subprocess.run(["fusermount3", "-u", "-z", mp], capture_output=True)
    for r in roots:
        shutil.rmtree(r, ignore_errors=True)
    if args.source != "home" or cfg["home"].get("kind") != "emulated":
        try:
            src = resolve_source(cfg, args.source)
            shutil.rmtree(os.path.join(src["write"], tag), ignore_errors=True)
        except SystemExit:
            pass
    if args.finish == 0:
        return 0
    kind = layout.system_kind(cfg, args.source)
    evidence, fkind = log_evidence(args.log, args.finish)
    n = 0
    for v in args.variants:
        out = layout.raw_path(args.source, v, args.nodes, args.size, args.rep, args.raw_dir)
        if os.path.exists(out) or os.path.exists(rawio.failure_path(out)):
            continue
        rec = rawio.new_record(layout.STUDY, layout.EXPERIMENT,
                               {"source": args.source, "variant": v, "nodes": args.nodes, "size": args.size},
                               args.rep, kind)
        rec["extra"] = {"job_tag": tag, "launcher_rc": args.finish, "log": args.log or ""}
        why = (f"the job ended with exit status {args.finish} before this use case finished; "
               f"the launcher's log ({args.log or 'not named'}) says: {evidence}")
        rawio.write_failure(out, rec, why, fkind)
        n += 1
    warn(f"finish: launcher exit status {args.finish}; {n} failure record(s) written for unfinished use cases")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="the mpifuse config section as JSON (or @file)")
    ap.add_argument("--source", required=True, choices=["home", "scratch"])
    ap.add_argument("--nodes", type=int, required=True, help="system nodes n (ranks = n+1)")
    ap.add_argument("--size", required=True)
    ap.add_argument("--rep", type=int, required=True)
    ap.add_argument("--reps-total", type=int, default=0)
    ap.add_argument("--variants", default="", help="comma separated (default: the config's)")
    ap.add_argument("--tag", required=True, help="unique name of this job's directories")
    ap.add_argument("--raw-dir", default=layout.RAW_DIR)
    ap.add_argument("--launcher", default="local")
    ap.add_argument("--keep-dir", action="store_true")
    ap.add_argument("--inject-fault", action="append", default=[],
                    help="TEST ONLY: wrong-hash:VARIANT | hang:VARIANT | lost-rank:VARIANT (node 1)")
    ap.add_argument("--finish", type=int, default=None, metavar="RC",
                    help="post-mortem after the launcher exited with RC (no MPI)")
    ap.add_argument("--log", default="")
    args = ap.parse_args(argv)
    cfg = cli.load_config(args.config)
    args.variants = [v for v in (args.variants.split(",") if args.variants else cfg["variants"]) if v]
    bad = [v for v in args.variants if v not in layout.VARIANTS]
    if bad:
        ap.error(f"unknown variant(s) {bad}; known: {layout.VARIANT_ORDER}")
    args.reps_total = args.reps_total or cfg["repeats"]
    if args.finish is not None:
        return finish(args, cfg)
    bench = Bench(args, cfg)
    try:
        return bench.run()
    except Exception as exc:  # noqa: BLE001 -- any error on one rank must end every rank now
        bench.abort(f"unexpected error {exc!r}\n{traceback.format_exc()}", kind="crash")
        raise


if __name__ == "__main__":
    sys.exit(main())
