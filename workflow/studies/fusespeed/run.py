#!/usr/bin/env python3
"""How close the mpifuse file systems run to this machine's limits (not a paper experiment).

The run contract is repro.runner's (one experiment, speed)::

    mpirun -n K+1 python3 -m studies.fusespeed.run speed --config FUSESPEED --uses mpifuse=MPIFUSE \\
        --tag T --out RAW
    python3 -m studies.fusespeed.run speed ... --after RC --log LOG     # after the launcher, the same

``--config`` is the fusespeed section (what this benchmark varies: source, size, nodes, repeats,
variants, idle_s); ``--uses mpifuse=`` is mpifuse's run section (the file systems' options, the
sources, mount_dir, timeout), which the engine hands to a study that declares it uses mpifuse's
systems (workflow/rules/uses.smk): the file systems are mounted as the mpifuse study configures
them, read through systems/mpifuse/python/runkit.py -- nothing of the mpifuse study's folder.

Run with max(fusespeed.nodes)+1 MPI ranks (rank 0 writes the files, ranks 1..k read):

1. read throughput of one large file on one node, ``dd bs=1M`` (raw reading from a hot page cache)
   and ``sha256sum`` (the benchmark's reader), per repeat every variant of ``fusespeed.variants`` in
   turn (the order rotates by one every repeat; repeat 0 native first): native, the paper's
   user-space FUSE passthrough (libmpifuse; also with the FUSE threads option switched the other
   way), OSR, OSR refined (ours) and kernel FUSE
   passthrough (systems/kpassthrough, ours, beyond the paper), OSR refined with map_source (ours: the
   own part's window is a mapping of the source file) and the FUSE ceiling (tools/fuseceiling: a
   FUSE file system serving a preloaded file from its own memory, no backend, mounted with OSR
   refined's knobs: request size, readahead, single- or multi-threaded loop; the best any FUSE
   file system reaches with them on this machine and kernel); where asked (issue 30, ours), OSR
   refined (and with map_source) and the ceiling over FUSE-over-io_uring (tools/fuseuring:
   libmpifuse ``-o io_uring``, fuseceiling ``--transport io_uring``; each read's stats say whether
   its requests went through the ring). Beside each timing: the reader's
   CPU (user+sys of dd/sha256sum), the file system's CPU (the rank's process, which runs
   libmpifuse in-process, or kpassthrough's server process; /proc/<pid>/stat), dd's own time and
   the file system's counters (libmpifuse's stats JSON, kept whole; kpassthrough's op counts);
2. bytes read from the source as the node count k grows: OSR (and OSR refined) read the file
   once (1x), native readers k times (first repeat only: deterministic);
3. idle CPU: every file system mounted on max(nodes) ranks, ``fusespeed.idle_s`` seconds without a
   read, each rank's CPU time over that window (and kpassthrough's server's), plus the CPU of
   mounting and unmounting.

A measurement that goes wrong (a wrong hash, a mount that fails, a short read) is recorded as
failed with its reason in ``extra.failures`` and carries no throughput; the job goes on. One raw
file (repro.raw/1); its load_start/load_end say how busy the machine was. An error that ends the
job (on any rank: every rank is aborted) is a failure record at the raw file's failed/ path; the
--after step writes one saying why the launcher ended when no rank could.
"""

from __future__ import annotations

import atexit
import os
import re
import resource
import shutil
import socket
import sys
import time
import uuid
from pathlib import Path

from repro import paramspace, procs, provenance, rawio, runner
from studies.fusespeed import kpt
from systems.mpifuse.python import runkit

REPO = Path(__file__).resolve().parents[3]
STUDY = "fusespeed"
DD_RE = re.compile(r"^(\d+) bytes .* copied, ([0-9.e+-]+) s,", re.M)
CEILING = "fuse-ceiling"  # the speed variant (and its "mode") of tools/fuseceiling
CEILING_URING = "fuse-ceiling-io_uring"  # the same over FUSE-over-io_uring (issue 30, tools/fuseuring)
# the ceilings: mode -> fuseceiling's transport options
CEILINGS = {CEILING: [], CEILING_URING: ["--transport", "io_uring"]}
URING = {"io_uring": True}  # libmpifuse's -o io_uring (issue 30): requests through per-CPU io_uring queues
CEILING_FILE = "speed-ceiling-{i}.bin"  # the files the ceiling serves (preloaded pattern), one per read
# fusespeed.variants -> (mode: an mpifuse mode, "kpassthrough", CEILING or None for native; extra options)
MODES = {"native": (None, {}), "passthrough": ("passthrough", {}), "osr": ("osr", {}),
         "osr-refined": ("osr-refined", {}), "kpassthrough": (kpt.VARIANT, {}),
         "osr-refined-map": ("osr-refined", {"map_source": True}), CEILING: (CEILING, {}),
         "osr-refined-io_uring": ("osr-refined", URING),
         "osr-refined-map-io_uring": ("osr-refined", {"map_source": True, **URING}),
         CEILING_URING: (CEILING_URING, {})}
# the mpifuse variant whose mount knobs the ceiling takes
CEILING_LIKE = "osr-refined"
SETTLE_S = 1.0  # before a multi-rank stop, after the last read (not timed)
# what the idle window mounts besides them: the broadcast file system (its stream thread)
IDLE_EXTRA = ("bcast",)


def variant_plan(sp: dict, opts: dict) -> list[tuple[str, str | None, dict]]:
    """(name in the raw file, mode, extra library options) of the one-node part, in order."""
    if "native" not in sp["variants"]:
        raise SystemExit("fusespeed.variants: must contain native (every ratio is to native)")
    flip = not opts.get("threads", True)
    out = []
    for v in sp["variants"]:
        if v == "passthrough-threads":
            out.append((f"passthrough-threads-{'on' if flip else 'off'}", "passthrough", {"threads": flip}))
        else:
            out.append((v, *MODES[v]))
    # native first (repeat 0; later repeats rotate, see rotated): each variant's ratio pairs it with the
    # native read of the same repeat
    return sorted(out, key=lambda x: x[0] != "native")


def rotated(plan: list, rep: int) -> list:
    """The one-node plan of repeat `rep`: rotated left by rep (repeat 0 = the plan, native first)."""
    k = rep % len(plan) if plan else 0
    return plan[k:] + plan[:k]


def idle_plan(plan) -> list[str | None]:
    modes = []
    for _, mode, extra in plan:
        if not extra and mode not in modes and mode not in CEILINGS:
            modes.append(mode)
    if any(m not in (None, kpt.VARIANT, *CEILINGS) for m in modes):
        modes += [m for m in IDLE_EXTRA if m not in modes]
    return modes


def ceiling_options(cfg: dict) -> list[str]:
    """fuseceiling's command-line knobs matching the mounts of CEILING_LIKE (osr-refined): its FUSE
    request size (max_read), its readahead (readahead_kb, 0 = libmpifuse's 4 x max_read, -1 = the
    kernel's) and its FUSE loop (threads off = single-threaded, -s)."""
    o = runkit.fs_options(cfg, CEILING_LIKE)
    max_read = paramspace.size_bytes(str(o.get("max_read", "1MiB")))
    ra = o.get("readahead_kb", 0)
    ra = -1 if str(ra).lower() in ("-1", "off") else paramspace.size_bytes(str(ra)) if ra else 0
    out = ["--max-read", str(max_read)]
    if ra != -1:
        out += ["--readahead", str(ra * 1024 if ra else 4 * max_read)]
    else:
        out += ["--readahead", "0"]
    if not o.get("threads", True):
        out.append("-s")
    return out


def ceiling_binary() -> str:
    """$FUSECEILING_BIN (the image's build), else tools/fuseceiling/build/fuseceiling, built with make
    when missing (as the kpassthrough binary is by its rule); OSError when there is none."""
    exe = os.environ.get("FUSECEILING_BIN") or str(REPO / "tools" / "fuseceiling" / "build" / "fuseceiling")
    if not os.access(exe, os.X_OK) and not os.environ.get("FUSECEILING_BIN"):
        r = procs.run_child(["make", "-C", str(REPO / "tools" / "fuseceiling")], 120)
        if r.rc != 0:
            raise OSError(2, "fuseceiling is not built and " + procs.failure_message("make", r, tail=300))
    if not os.access(exe, os.X_OK):
        raise OSError(2, f"fuseceiling binary {exe} is missing")
    return exe


def ceiling_sha256(size: int) -> str:
    """sha256 of fuseceiling's preload pattern of `size` bytes (64-bit LE word k = splitmix64(k + 1),
    tools/fuseceiling/README.md), vectorised in 8 Mi-word steps: the same bytes as
    tools.fuseceiling.ceiling.pattern(size), which is too slow for hundreds of MB in pure Python."""
    import hashlib

    import numpy as np

    h = hashlib.sha256()
    words, step, k = (size + 7) // 8, 1 << 23, 0
    with np.errstate(over="ignore"):
        while k < words:
            x = np.arange(k + 1, min(words, k + step) + 1, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
            x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            x = x ^ (x >> np.uint64(31))
            b = x.astype("<u8").tobytes()
            end = min(size - 8 * k, len(b))
            h.update(b[:end])
            k += step
    return h.hexdigest()


class CMount:
    """The FUSE ceiling on this rank: tools/fuseceiling at `mnt` serving `count` preloaded files of
    `size` bytes (CEILING_FILE) from its memory, with `options` (ceiling_options). Mounted once per
    job, before the first round, so that its daemon (like libmpifuse's FUSE thread in the long-lived
    rank) has been idle when it serves a timed read, never just after generating its data (a fresh
    daemon that had just burnt a CPU-second on its preload served sha256sum consistently slower than
    the file systems it bounds at load 5-14); every read takes a file never opened before (a fresh
    inode, no page cache to drop at open, as the mpifuse variants' fresh files). sha = the files'
    sha256 (all equal); stats() = its cumulative counters (the benchmark keeps differences)."""

    _sha: dict[int, str] = {}

    def __init__(self, mnt: str, options: list[str], size: int, count: int, timeout: float):
        from tools.fuseceiling import ceiling

        self.options = list(options)
        if size not in CMount._sha:
            CMount._sha[size] = ceiling_sha256(size)
        self.sha = CMount._sha[size]
        self.mnt, self.count, self.used = mnt, count, 0
        self.m = ceiling.Mount(mnt, self.options, preload=[(CEILING_FILE.format(i=i), size) for i in range(count)],
                               timeout=max(60.0, timeout), binary=ceiling_binary())
        try:
            self.m.__enter__()
        except RuntimeError as exc:
            raise OSError(5, str(exc)) from exc
        self.pid = self.m.proc.pid

    def next_file(self) -> str:
        """The path of the next never-read file."""
        if self.used >= self.count:
            raise RuntimeError(f"the FUSE ceiling has no unread file left ({self.count} preloaded)")
        self.used += 1
        return os.path.join(self.mnt, CEILING_FILE.format(i=self.used - 1))

    def stats(self) -> dict:
        return self.m.stats()

    def stop(self) -> None:
        self.m.__exit__(None, None, None)


def counters_delta(before: dict, after: dict) -> dict:
    """fuseceiling's counters over one read: numeric top-level counters as differences (read_max and
    the negotiated `fuse` values as they stand after it)."""
    out = {k: (v - before.get(k, 0) if isinstance(v, (int, float)) and not isinstance(v, bool)
               and k not in ("read_max", "write_max", "files", "bytes_stored") else v)
           for k, v in after.items()}
    return out


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


DD = (lambda p: ["dd", f"if={p}", "of=/dev/null", "bs=1M"])
SHA = (lambda p: ["sha256sum", p])
READERS = (("dd", DD), ("sha256sum", SHA))
# the variants of step 2 (bytes from the source as k grows): name, mpifuse mode (None: native)
SOURCE_VARIANTS = (("native", None), ("osr", "osr"), ("osr-refined", "osr-refined"))
NOTE = ("one node reads while the others idle; the source file is in the page cache (warmed with dd before every "
        "timed read) so native and FUSE read the same cached data and the difference is the file system's own cost")


class Job:
    """One speed job on this rank: its config, the MPI communicators, where its files and mounts are,
    and what it records (metrics, the file systems' options, failures, counters). Every step below
    is collective: each rank calls it with the same arguments, in the same order."""

    def __init__(self, tag: str, cfg: dict, MPI):
        self.cfg, self.MPI = cfg, MPI
        self.sp = sp = cfg["speed"]
        self.world = world = MPI.COMM_WORLD
        self.rank = rank = world.Get_rank()
        self.kmax = max(sp["nodes"])
        if world.Get_size() != self.kmax + 1:
            print(f"[fusespeed] FATAL: needs {self.kmax + 1} ranks, got {world.Get_size()}", file=sys.stderr,
                  flush=True)
            world.Abort(2)
        self.size = paramspace.size_bytes(sp["size"])
        self.timeout = runkit.test_timeout(cfg, paramspace.size_bytes(sp["size"]), self.kmax) * 2
        self.src = runkit.resolve_source(cfg, sp["source"])
        self.top = os.path.join(runkit.expand_path(cfg["mount_dir"]), tag)
        self.mnt = os.path.join(self.top, f"mnt{rank}")
        self.sub = tag
        if rank == 0:
            os.makedirs(os.path.join(self.src["write"], self.sub), exist_ok=True)
        else:
            os.makedirs(self.mnt, exist_ok=True)
        runkit.idle_barrier(world)
        # where each rank ran (the Slurm node, else this host), as mpifuse's runs record it: the raw file
        # names its job and nodes, so a rehearsal can tell which job wrote it and where its ranks were
        self.ranks = world.allgather({"rank": rank, "node": os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
                                      "pid": os.getpid()})
        self.comms = {k: world.Split(1 if 1 <= rank <= k else MPI.UNDEFINED, rank)
                      for k in sorted(set(sp["nodes"]) | {1})}
        self.plan = plan = variant_plan(sp, runkit.fs_options(cfg, "passthrough"))
        self.metrics, self.notes, self.failures, self.fs_stats, self.idle_stats = [], {}, [], [], []
        self.orders = []
        self.mpifuse = runkit.load_mpifuse() if any(m not in (None, kpt.VARIANT) for _, m, _ in plan) else None
        self.ceiling_fs, self.ceiling_why = {}, {}  # per ceiling mode (CEILINGS)

    def say(self, msg):
        if self.rank == 0:
            print(f"[fusespeed] {msg}", flush=True)

    def new_file(self):
        """A fresh file of the job's size on the source (rank 0 writes it): {rel, sha} on every rank."""
        info = None
        if self.rank == 0:
            rel = f"{self.sub}/speed-{uuid.uuid4().hex[:12]}.bin"
            sha, _ = runkit.generate(os.path.join(self.src["write"], rel), self.size)
            info = {"rel": rel, "sha": sha}
        runkit.idle_barrier(self.world)
        return self.world.bcast(info, root=0)

    def drop_file(self, info):
        if self.rank == 0:
            os.unlink(os.path.join(self.src["write"], info["rel"]))
        runkit.idle_barrier(self.world)

    def reader(self, cmd_for_path, path):
        r = procs.run_child(cmd_for_path(path), self.timeout)
        if r.rc != 0 or r.timed_out:
            raise RuntimeError(procs.failure_message(" ".join(r.cmd), r, timeout=self.timeout, tail=300))
        return r

    def start_fs(self, comm, mode, node, extra=None, stats_name="kpt"):
        """One file system on this rank: libmpifuse in-process, or a kpassthrough server."""
        if mode == kpt.VARIANT:
            return kpt.KMount(runkit.read_dir(self.src, node), self.mnt,
                              os.path.join(self.top, f"{stats_name}-rank{self.rank}.json"))
        if mode in CEILINGS:
            tag = "" if mode == CEILING else "-io_uring"
            return CMount(os.path.join(self.top, f"ceiling{self.rank}{tag}"),
                          ceiling_options(self.cfg) + CEILINGS[mode], self.size, 2 * self.sp["repeats"], self.timeout)
        o = dict(runkit.fs_options(self.cfg, mode), timeout=int(self.timeout), **(extra or {}))
        return self.mpifuse.start(comm, mode, runkit.read_dir(self.src, node), self.mnt, **o), o

    def start_ceiling(self):
        """The FUSE ceilings (over /dev/fuse; over io_uring where asked), once per job before the first
        round (rank 1; see CMount)."""
        if self.rank == 1 and any(m == CEILING_URING or (x or {}).get("io_uring") for _, m, x in self.plan):
            from tools.fuseceiling.ceiling import enable_uring
            # where root may; whether each read went through the ring is in its stats (the report checks)
            print(f"[fusespeed] rank 1: {enable_uring()}", flush=True)
        for mode in [m for m in CEILINGS if any(m == pm for _, pm, _ in self.plan)] if self.rank == 1 else []:
            try:
                self.ceiling_fs[mode] = self.start_fs(None, mode, 1)
                atexit.register(self.ceiling_fs[mode].stop)  # also when a later step fails (stop is idempotent)
            except OSError as exc:
                self.ceiling_why[mode] = f"file system did not start: {exc}"

    # ---- 1. one node: every variant, dd and sha256sum ----

    def one_node_round(self, rep):
        """Every variant in an order that rotates by one every repeat (interleaved, and no variant always
        runs first or last in its round: a load that moves within a round, or one left by the variant
        before, does not fall on the same one each time)."""
        order = rotated(self.plan, rep)
        self.orders.append([v for v, _, _ in order])
        for variant, mode, extra in order:
            for tool, cmdf in READERS:
                self.one_node_read(rep, variant, mode, extra, tool, cmdf)

    def mount_reader_fs(self, variant, mode, extra):
        """Rank 1's file system of a one-node read (None for native; the ceiling mounted once):
        (fs, why it did not start)."""
        fs, why = None, ""
        try:
            if mode in CEILINGS:
                if self.ceiling_why.get(mode):
                    raise OSError(5, self.ceiling_why[mode])
                fs = self.ceiling_fs[mode]
                self.notes.setdefault(variant, {"options": {"fuseceiling": " ".join(fs.options)},
                                                "like": CEILING_LIKE,
                                                "system": "tools/fuseceiling (libfuse3 low-level, memory)"})
            elif mode == kpt.VARIANT:
                fs = self.start_fs(None, mode, 1)
                self.notes.setdefault(variant, {"options": {"passthrough": "kernel"},
                                                "system": "systems/kpassthrough (fuser, Rust)"})
            else:
                fs, o = self.start_fs(self.comms[1], mode, 1, extra)
                self.notes.setdefault(variant, {"options": o})
        except OSError as exc:
            why = f"file system did not start: {exc}"
        return fs, why

    def timed_read(self, info, variant, mode, fs, tool, cmdf):
        """Rank 1 reads the file once with `tool`, timed, with the CPU of the reader and of the file
        system and the file system's counters: (result, why it went wrong)."""
        MPI, size = self.MPI, self.size
        res, why = None, ""
        base = self.src["read"].format(node=1) if not mode else self.mnt
        # the ceiling serves its own preloaded file of the same size (no source behind it)
        try:
            path, want = ((fs.next_file(), fs.sha) if mode in CEILINGS else
                          (os.path.join(base, info["rel"]), info["sha"]))
            c_before = fs.stats() if mode in CEILINGS else None
            # warm the source's page cache first, so both sides read the same cached source
            self.reader(DD, os.path.join(runkit.read_dir(self.src, 1), info["rel"]))
            kp = fs.pid if mode in (kpt.VARIANT, *CEILINGS) else "self"
            c0, ch0 = kpt.cpu_s(kp), children_cpu()
            t0 = MPI.Wtime()
            r = self.reader(cmdf, path)
            t = MPI.Wtime() - t0
            c1, ch1 = kpt.cpu_s(kp), children_cpu()
            res = {"time": t, "reader_cpu": ch1 - ch0, "fs_cpu": c1 - c0, "load": provenance.loadavg()}
            if tool == "sha256sum":
                res["hash_ok"] = r.stdout.split()[0] == want if r.stdout.split() else False
                if not res["hash_ok"]:
                    why = f"wrong hash {r.stdout.split()[:1]} != {want}"
            else:
                m = DD_RE.search(r.stderr)
                if not m or int(m.group(1)) != size:
                    why = f"dd read {m.group(1) if m else '?'} bytes of {size}"
                else:
                    res["dd_time"] = float(m.group(2))
            if mode == kpt.VARIANT:
                st = fs.stats()
                res["stats"] = st
                res["server_read_requests"] = kpt.read_requests(st)
            elif mode in CEILINGS:
                res["stats"] = {"fuseceiling": counters_delta(c_before, fs.stats())}
            elif fs:
                res["stats"] = fs.stats()
                self.notes[variant]["stats_sample"] = {k: res["stats"].get(k) for k in
                                                       ("max_read", "fuse_threads", "mpi_thread_level")}
        except (RuntimeError, OSError) as exc:
            why = str(exc).strip() or f"{type(exc).__name__} without a message"
        return res, why

    def one_node_read(self, rep, variant, mode, extra, tool, cmdf):
        info = self.new_file()  # a fresh file per measurement: no FUSE page cache can help
        fs, res, why = None, None, ""
        if self.rank == 1 and mode:
            fs, why = self.mount_reader_fs(variant, mode, extra)
        runkit.idle_barrier(self.world)
        if self.rank == 1 and not why:
            res, why = self.timed_read(info, variant, mode, fs, tool, cmdf)
        if fs is not None and mode not in CEILINGS:
            fs.stop()
        runkit.idle_barrier(self.world)
        res, why = self.world.bcast((res, why), root=1)
        self.record_one_node({"variant": variant, "tool": tool, "nodes": 1, "rep": rep}, res, why)
        self.drop_file(info)

    def record_one_node(self, lab, res, why):
        """The metrics of one one-node read (every rank holds them; rank 0 writes them)."""
        sp, size, metrics = self.sp, self.size, self.metrics
        variant, tool, rep = lab["variant"], lab["tool"], lab["rep"]
        if res and "hash_ok" in res:
            metrics.append(rawio.metric("hash_ok", int(res["hash_ok"]), "bool", **lab))
        if why:
            self.failures.append({**lab, "why": why})
            self.say(f"rep {rep + 1}/{sp['repeats']} {variant:26s} {tool:9s} n=1: FAILED ({why})")
            return
        metrics.append(rawio.metric("time", res["time"], "s", **lab))
        metrics.append(rawio.metric("throughput", size / res["time"] / 1e9, "GB/s", **lab))
        metrics.append(rawio.metric("reader_cpu", res["reader_cpu"], "s", **lab))
        if res.get("load"):  # the 1-minute load right after this reader
            metrics.append(rawio.metric("load1", res["load"][0], "load", **lab))
        if res["fs_cpu"] is not None:
            metrics.append(rawio.metric("fs_cpu", res["fs_cpu"], "s", **lab))
        if "dd_time" in res:
            metrics.append(rawio.metric("dd_time", res["dd_time"], "s", **lab))
        if "server_read_requests" in res:
            metrics.append(rawio.metric("server_read_requests", res["server_read_requests"], "count", **lab))
        if res.get("stats") is not None:
            self.fs_stats.append({**lab, "stats": res["stats"]})
        self.say(f"rep {rep + 1}/{sp['repeats']} {variant:26s} {tool:9s} n=1: {res['time']:.3f} s, "
                 f"{size / res['time'] / 1e9:.3f} GB/s, fs CPU {res['fs_cpu'] or 0:.3f} s")

    # ---- 2. bytes from the source as k grows: OSR reads once, native k times ----

    def source_bytes(self, rep, k, variant, mode):
        """Ranks 1..k read one fresh file with sha256sum through `mode` (native: the source itself)."""
        MPI, world, rank = self.MPI, self.world, self.rank
        info = self.new_file()
        fs = None
        c = self.comms[k]
        if c != MPI.COMM_NULL and mode:
            fs = self.mpifuse.start(c, mode, runkit.read_dir(self.src, rank), self.mnt,
                                    **dict(runkit.fs_options(self.cfg, mode), timeout=int(self.timeout)))
            fs.reset()
        runkit.idle_barrier(world)
        got = None
        if c != MPI.COMM_NULL:
            base = self.mnt if mode else runkit.read_dir(self.src, rank)
            t0 = MPI.Wtime()
            r = self.reader(SHA, os.path.join(base, info["rel"]))
            t = MPI.Wtime() - t0
            ok = r.stdout.split()[0] == info["sha"]
            got = {"time": t, "ok": ok, "src_bytes": fs.stats()["bytes_read_source"] if fs
                   else r.io.get("rchar", 0)}
        runkit.idle_barrier(world)
        if fs:
            # the kernel's RELEASE of the reader's file is asynchronous: give it time to reach
            # the file system before the collective stop (stopping first made libmpifuse free
            # the file with a local open and hang in its final barrier at load ~10, n >= 2)
            time.sleep(SETTLE_S)
            fs.stop()
        runkit.idle_barrier(world)
        allv = [g for g in world.allgather(got) if g]
        if not all(g["ok"] for g in allv):
            raise RuntimeError(f"{variant} k={k}: wrong hash")
        b = sum(g["src_bytes"] for g in allv)
        lab = {"variant": variant, "tool": "sha256sum", "nodes": k, "rep": rep}
        self.metrics.append(rawio.metric("bytes_from_source", b, "B", **lab))
        self.metrics.append(rawio.metric("file_sizes_from_source", b / self.size, "x", **lab))
        self.metrics.append(rawio.metric("time", max(g["time"] for g in allv), "s", **lab))
        self.say(f"rep {rep + 1}/{self.sp['repeats']} {variant:26s} n={k}: {b / self.size:.3f}x the file from the "
                 f"source, {max(g['time'] for g in allv):.3f} s")
        self.drop_file(info)

    # ---- 3. idle CPU: mounted on kmax ranks, no reads for idle_s seconds ----

    def idle_mount(self, mode, c):
        """This rank's file system of the idle window, its mount's CPU: (got, fs)."""
        got = {"rank": self.rank, "pid": os.getpid()}
        fs, why = None, ""
        c0 = kpt.cpu_s()
        try:
            if mode == kpt.VARIANT:
                fs = self.start_fs(None, mode, self.rank, stats_name="kpt-idle")
                got["server_pid"] = fs.pid
            elif mode:
                fs, _ = self.start_fs(c, mode, self.rank)
        except OSError as exc:
            why = f"file system did not start: {exc}"
        got["mount_cpu_s"] = kpt.cpu_s() - c0
        if mode == kpt.VARIANT and fs:
            got["server_mount_cpu_s"] = fs.cpu()
        got["why"] = why
        return got, fs

    def idle_window(self, mode, got, fs):
        """Every rank of the window sleeps idle_s; nothing else of ours runs."""
        s0 = fs.cpu() if mode == kpt.VARIANT and fs else None
        c0, t0 = kpt.cpu_s(), time.monotonic()
        time.sleep(self.sp["idle_s"])
        c1, t1 = kpt.cpu_s(), time.monotonic()
        s1 = fs.cpu() if mode == kpt.VARIANT and fs else None
        got.update(window_s=t1 - t0, rank_cpu_s=c1 - c0,
                   server_cpu_s=(s1 - s0) if s0 is not None and s1 is not None else None)
        if fs is not None and mode != kpt.VARIANT:
            got["stats"] = fs.stats()

    def idle(self, mode):
        name = mode or "native"
        c = self.comms[self.kmax]
        got, fs = None, None
        if c != self.MPI.COMM_NULL:
            got, fs = self.idle_mount(mode, c)
        runkit.idle_barrier(self.world)
        self.world.Barrier()
        if got is not None:
            self.idle_window(mode, got, fs)
        runkit.idle_barrier(self.world)
        if got is not None:
            c0 = kpt.cpu_s()
            if fs is not None:
                fs.stop()
            got["unmount_cpu_s"] = kpt.cpu_s() - c0
        runkit.idle_barrier(self.world)
        self.record_idle(name, [g for g in self.world.allgather(got) if g])

    def record_idle(self, name, allv):
        metrics = self.metrics
        for g in allv:
            lab = {"variant": name, "nodes": self.kmax, "rank": g["rank"]}
            if g["why"]:
                self.failures.append({**lab, "tool": "idle", "why": g["why"]})
                continue
            metrics.append(rawio.metric("idle_window", g["window_s"], "s", **lab))
            metrics.append(rawio.metric("idle_cpu", g["rank_cpu_s"], "s", proc="rank", **lab))
            metrics.append(rawio.metric("mount_cpu", g["mount_cpu_s"], "s", proc="rank", **lab))
            metrics.append(rawio.metric("unmount_cpu", g["unmount_cpu_s"], "s", proc="rank", **lab))
            if g.get("server_cpu_s") is not None:
                metrics.append(rawio.metric("idle_cpu", g["server_cpu_s"], "s", proc="server", **lab))
                metrics.append(rawio.metric("mount_cpu", g["server_mount_cpu_s"], "s", proc="server", **lab))
            if g.get("stats") is not None:
                self.idle_stats.append({**lab, "stats": g["stats"]})
        self.say(f"idle {name:12s} on {self.kmax} ranks: " + ", ".join(
            f"rank {g['rank']} {g['rank_cpu_s'] / g['window_s']:.3f}"
            + (f" + server {g['server_cpu_s'] / g['window_s']:.3f}" if g.get("server_cpu_s") is not None else "")
            for g in allv if not g["why"]) + " of a core")

    # ---- the raw file, clean-up ----

    def finish(self, ctx: runner.Context, load_start, started_at) -> dict | None:
        """Rank 0's raw record (with rank 1's file system options; the runner writes it); every rank
        cleans up."""
        cfg, sp, src = self.cfg, self.sp, self.src
        notes = self.world.bcast(self.notes, root=1)
        rec = None
        if self.rank == 0:
            rec = ctx.record(runkit.tool_versions(self.MPI, provenance.tool_version),
                             runkit.system_kind(cfg, sp["source"]), params=speed_params(sp), out=ctx.out)
            rec["load_start"], rec["started_at"] = load_start, started_at
            rec["metrics"] = self.metrics
            rec["extra"] = {"fs_options": notes, "study_fs_options": cfg.get("fs_options", {}),
                            "size_bytes": self.size, "nodes": sp["nodes"], "repeats": sp["repeats"],
                            "variants": [v for v, _, _ in self.plan], "orders": self.orders,
                            "idle_s": sp["idle_s"], "failures": self.failures, "fs_stats": self.fs_stats,
                            "idle_stats": self.idle_stats, "kernel": os.uname().release, "cpus": os.cpu_count(),
                            "note": NOTE, "ranks": self.ranks,
                            "slurm_job_id": os.environ.get("SLURM_JOB_ID", "")}
            shutil.rmtree(os.path.join(src["write"], self.sub), ignore_errors=True)
        else:
            try:
                os.rmdir(self.mnt)
            except OSError:
                pass
        runkit.idle_barrier(self.world)
        if self.rank == 0:
            shutil.rmtree(self.top, ignore_errors=True)
        return rec


RUN = runner.Experiments(STUDY)


def speed_params(sp: dict) -> dict:
    return {"source": sp["source"], "size": sp["size"]}


def config(ctx: runner.Context) -> dict:
    """What the job reads: mpifuse's run section (--uses mpifuse=) with this study's section as its
    `speed` (the shape the benchmark had inside mpifuse)."""
    if "mpifuse" not in ctx.uses:
        raise runner.Refused("--uses mpifuse=JSON is needed: mpifuse's run section (the file systems' options, "
                             "the sources, mount_dir, timeout)")
    if not ctx.tag:
        raise runner.Refused("--tag is needed: the job's directories on the source and the mount points")
    return {**ctx.uses["mpifuse"], "speed": ctx.cfg}


@RUN.experiment("speed")
def speed(ctx: runner.Context):
    """The whole benchmark on max(nodes)+1 ranks: rank 0 returns the raw record, the others None. An
    error on any rank ends every rank (MPI_Abort); rank 0 first records it as the job's failure."""
    cfg = config(ctx)
    sp = cfg["speed"]
    ctx.record(system_kind=runkit.system_kind(cfg, sp["source"]), params=speed_params(sp), out=ctx.out)
    load_start, started_at = provenance.loadavg(), provenance.now_iso()  # before anything of ours runs
    from mpi4py import MPI

    try:
        job = Job(ctx.tag, cfg, MPI)
        job.start_ceiling()
        for rep in range(sp["repeats"]):
            job.one_node_round(rep)
            for k in sorted(sp["nodes"]) if rep == 0 else []:  # deterministic: first repeat only
                for variant, mode in SOURCE_VARIANTS:
                    if variant in sp["variants"]:
                        job.source_bytes(rep, k, variant, mode)
        for cfs in job.ceiling_fs.values():
            cfs.stop()
        for mode in idle_plan(job.plan) if sp["idle_s"] > 0 else []:
            job.idle(mode)
        return job.finish(ctx, load_start, started_at)
    except BaseException as exc:  # noqa: BLE001 -- one rank's error must end every rank
        import traceback

        traceback.print_exc()
        why = f"{type(exc).__name__}: {exc}" if not isinstance(exc, runner.Terminated) else str(exc)
        print(f"[fusespeed] FATAL: {why}; aborting the MPI job", file=sys.stderr, flush=True)
        if MPI.COMM_WORLD.Get_rank() == 0:
            try:
                ctx.settle(ctx.out, runner.RunFailed(why, kind="error" if isinstance(exc, runner.Terminated)
                                                     else None))
            except Exception as exc2:  # noqa: BLE001
                print(f"[fusespeed] could not write the failure record: {exc2!r}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
        raise


@RUN.after("speed")
def speed_after(ctx: runner.Context, rc: int) -> None:
    """On the batch node after the launcher: unmount and remove what the job left behind; the raw
    file's record (params) for the failure record of a job that never wrote one (the runner's)."""
    cfg = config(ctx)
    runkit.remove_leftovers(cfg, cfg["speed"]["source"], ctx.tag, dirs=("mount_dir",),
                        warn=lambda m: print(f"[fusespeed] after: {m}", file=sys.stderr, flush=True))
    ctx.record(system_kind=runkit.system_kind(cfg, cfg["speed"]["source"]), params=speed_params(cfg["speed"]),
               out=ctx.out)["extra"] = {"job_tag": ctx.tag}


if __name__ == "__main__":
    sys.exit(RUN.main())
