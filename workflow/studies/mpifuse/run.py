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

The run contract is repro.runner's (one experiment, read_scaling): ``--params`` the configuration
(source, nodes, size; the launcher's kind), ``--out`` one raw file per use case (the rule's
outputs: the use cases run are the ``variant~`` of these paths), ``--tag`` the job's directories.
Rank 0 records each use case as it finishes (ctx.settle: what an aborted job finished stands);
after the launcher, the same command with ``--after RC --log LOG`` unmounts and removes what the
job left behind, and gives each use case it never finished a failure record saying why::

    mpirun -n 5 python3 -m studies.mpifuse.run read_scaling --config JSON \\
        --params '{"source": "home", "nodes": 4, "size": "10MB"}' --rep 2 --tag T --out RAW...
    python3 -m studies.mpifuse.run read_scaling --after RC --log LOG ...   # the same arguments
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import time
import traceback
import uuid
from pathlib import Path
from types import SimpleNamespace

from repro import paramspace, procs, provenance, rawio, runner
from studies.mpifuse import layout
# the file systems' side, shared with every study that runs them (fusespeed)
from systems.mpifuse.python.runkit import (CHUNK, generate, idle_barrier, link_counters, load_mpifuse, read_dir,
                                           remove_leftovers, resolve_source, tool_versions)

REPO = Path(__file__).resolve().parents[3]


def say(msg: str) -> None:
    print(f"[mpifuse] {msg}", flush=True)


def warn(msg: str) -> None:
    print(f"[mpifuse] {msg}", file=sys.stderr, flush=True)


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
    def __init__(self, args, ctx: runner.Context):
        from mpi4py import MPI

        self.MPI = MPI
        self.args, self.cfg, self.ctx = args, ctx.cfg, ctx
        cfg = ctx.cfg
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
        self.fault = dict(f.split(":", 1) for f in args.inject_fault)
        self.watchdog = procs.Watchdog(self._on_timeout)

    # ---- failure paths -------------------------------------------------
    def abort(self, why: str, code: int = 4, kind: str | None = None):
        warn(f"rank {self.rank}: FATAL: {why}; aborting the MPI job")
        if self.rank == 0 and self.current_rec is not None:
            try:  # the use case in progress; the others are the --after step's
                self.ctx.settle(self.current_out, runner.RunFailed(why, self.current_rec, kind=kind))
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
        self.versions = tool_versions(self.MPI, provenance.tool_version) if self.rank == 0 else {}
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
        out = a.outs[v.name]
        opts = dict(layout.variant_options(cfg, v.name), timeout=int(self.timeout)) if v.mode else {}
        if self.rank == 0:
            self.current_out = out
            self.current_rec = self.ctx.record(self.versions, self.kind, params=a.params(v.name), out=out)
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
                self.ctx.settle(out, runner.RunFailed(why, self.current_rec))
                self.current_rec = None
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
            self.ctx.settle(out, runner.RunFailed(why, rawio.finish(rec)))
            say(f"{label}: FAILED ({why}) [use case {index}/{total}]")
            return False, fatal
        self.ctx.settle(out, rec)
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
    def run(self) -> bool:
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
        return ok_all


# --------------------------------------------------------------------------
# the experiment (repro.runner): every rank runs it; rank 0 records
# --------------------------------------------------------------------------
RUN = runner.Experiments(layout.STUDY)


def job_args(ctx: runner.Context) -> SimpleNamespace:
    """The job's configuration from the run contract: --params (source, nodes, size; launcher, and the
    tests' inject_fault and keep_dir), the use cases from the --out paths (variant~V, in their order;
    every other dimension of a path must be the job's), ctx.tag."""
    p, cfg = ctx.params, ctx.cfg
    missing = [k for k in ("source", "nodes", "size") if k not in p]
    if missing:
        raise runner.Refused(f"--params lacks {missing}")
    if not ctx.tag:
        raise runner.Refused("--tag is needed: the job's directories on the sources and the nodes")
    source, nodes, size = p["source"], int(p["nodes"]), str(p["size"])
    want = {"source": source, "nodes": str(nodes), "size": size, "rep": str(ctx.rep)}
    outs = {}
    for path in ctx.outs:
        dims = paramspace.parse_path(path)
        if dims.get("variant") not in layout.VARIANTS or {k: dims.get(k) for k in want} != want:
            raise runner.Refused(f"--out {path}: not a raw file of this job ({want}, variant~ one of "
                                 f"{layout.VARIANT_ORDER})")
        outs[dims["variant"]] = path
    return SimpleNamespace(
        source=source, nodes=nodes, size=size, rep=ctx.rep, reps_total=cfg["repeats"], variants=list(outs),
        outs=outs, tag=ctx.tag, launcher=p.get("launcher", "local"), keep_dir=bool(p.get("keep_dir")),
        inject_fault=list(p.get("inject_fault", [])),  # TEST ONLY: wrong-hash:V | hang:V | lost-rank:V (node 1)
        params=lambda v: {"source": source, "variant": v, "nodes": nodes, "size": size})


@RUN.experiment(layout.EXPERIMENT)
def read_scaling(ctx: runner.Context):
    """One n+1-rank run of every use case (the --out paths). Rank 0 settles each use case's record as
    it finishes and returns {}; the other ranks return None. An error on any rank ends every rank now
    (MPI_Abort): rank 0 first records the use case in progress; the --after step the rest. SIGTERM on
    rank 0 is the runner's (each unfinished use case: 'stopped by SIGTERM')."""
    a = job_args(ctx)
    kind = layout.system_kind(ctx.cfg, a.source)
    for v, path in a.outs.items():  # each use case's record until it starts (a failure before names it)
        ctx.record(system_kind=kind, params=a.params(v), out=path)
    bench = Bench(a, ctx)
    try:
        ok = bench.run()
    except runner.Terminated:
        if bench.rank == 0:
            raise
        bench.abort("stopped by a signal", kind="error")
    except BaseException as exc:  # noqa: BLE001 -- any error on one rank must end every rank now
        bench.abort(f"unexpected error {exc!r}\n{traceback.format_exc()}", kind="crash")
        raise
    if bench.rank != 0:
        return None
    if not ok:
        ctx.progress("some use cases failed (their failure records are written)")
    return {}


@RUN.after(layout.EXPERIMENT)
def read_scaling_after(ctx: runner.Context, rc: int) -> None:
    """On the batch node after mpirun/srun: lazy-unmount and remove what the run left behind; each use
    case's record (params, job_tag) for the failure record of one it never finished (the runner's)."""
    a, cfg = job_args(ctx), ctx.cfg
    remove_leftovers(cfg, a.source, a.tag, warn=lambda m: warn(f"after: {m}"))
    kind = layout.system_kind(cfg, a.source)
    for v, path in a.outs.items():
        ctx.record(system_kind=kind, params=a.params(v), out=path)["extra"] = {"job_tag": a.tag}


if __name__ == "__main__":
    sys.exit(RUN.main())
