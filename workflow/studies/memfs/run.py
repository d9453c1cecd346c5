#!/usr/bin/env python3
"""MemFS study (paper 004, Section 2.4.1): one benchmark configuration per call.

    python3 -m studies.memfs.run envelope --config '<memfs config JSON>' \
        --params '{"network": "IPoIB", "design": "memfs", "nodes": 4, "size": "1MiB", "launcher": "local"}' \
        --rep 0 --out results/memfs/raw/envelope/.../rep~0.json

The run contract is repro.runner's: --params the configuration (network, nodes and the experiment's
dimensions: the record's params) and how the job runs (launcher, single_host, image, workdir:
job_args); the runner writes the record at --out, or a failure record, and owns signals and
progress. Experiments (each writes one repro.raw/1 record; a failed sanity check is a failure
record and a non-zero exit):

* ``envelope``  -- the MTC Envelope I/O metrics with real iozone: write,
  1-1 read (locality design: locality-aware placement, i.e. local; plus the
  "remote" 1-1 read of Table 2.1), N-1 read (locality design: multicast by
  replicate-on-read, then local reads).
* ``metadata``  -- create/stat/open/remove rates with mdtest (or
  tools/mdtest/mdbench, same flags and summary) over MPI ranks on the nodes.
* ``stripe``    -- write (and read) bandwidth for one stripe size (Figure 2.3a).
* ``threads``   -- read (and write) bandwidth for one prefetch pool size (Figure 2.3b).
* ``limit``     -- raw memcached set/get bandwidth (mcbench) on the same layout and
  value size, and the emulated link's measured rate (iperf3).

The driver is this process (the n+1 layout's extra node); the n system nodes
are agents of systems/mtc (memcached + FUSE clients each).  Only the standard
library is used, so it runs with any python3 on a cluster's first node.

Envelope protocol (one configuration = one fresh cluster):

* write: every node writes ``files_per_node`` files of the size in batches of
  ``procs_per_node`` iozone processes (``iozone -t P -F ... -i 0 -c -e -+n -w
  -x -C -V 165``: close and fsync timed, no re-tests, no stonewalling, data
  pattern written for verification);
* 1-1 read: every node reads a different node's files (MemFS: node i+1's;
  locality design: its own, i.e. locality-aware placement) with ``-i 1 -V``
  (every byte checked);
* N-1 read: node 0 writes one file (untimed), every node reads it with P
  processes; for the locality design every other node first opens it once
  (replicate-on-read = the multicast), timed in the agent;
* remote 1-1 read (locality design, n >= 2): node i opens node i+1's files
  (each open replicates the file: the remote transfer, timed), then reads them.
* the limit, side by side (MemFS design, ``envelope.side_by_side_limit``): on
  the same cluster, network and layout, after the phases above, mcbench on
  every node at once with the value size MemFS stores (min(size,
  stripe_size)) and the bytes per node of the phases (files_per_node x
  size), with procs_per_node threads and with MemFS's pool size (the
  memcached requests MemFS keeps in flight); the faster of the two per
  operation is the limit: metrics limit_set_bw / limit_get_bw.  Each phase's
  MemFS counter deltas (every numeric key of its stats JSON, summed over the
  nodes) go to extra.memfs_stats.<phase>: the per-request breakdown.

Per node, iozone's own per-child timings give the time of a batch (its slowest
child); the node's time is the sum over its batches.  bandwidth (MB/s, 10^6 B)
= bytes / (time + the node's multicast/replication time) and throughput
(ops/s) = read()/write() calls (bytes / record size) / time -- the multicast
counts in the N-1 bandwidth only (the paper's rule), the remote transfer in
both.  Aggregates are sums over the nodes, which run concurrently.
Sanity (else a failure record): every iozone exits 0, transfers every byte,
finds no verify error; written files have their size; the locality design
keeps files on the writer's server, does not replicate local reads, and
replicates on the multicast and remote reads (memfs-stats counters).
"""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from types import SimpleNamespace

from repro import paramspace, procs, provenance, rawio, runner
from studies.memfs.layout import system_kind
from systems.mtc import launch
from tools.common import ParseError
from tools.iozone import parser as iozone
from tools.iperf3.parser import parse_iperf3
from tools.mcbench.parser import parse_mcbench
from tools.mdtest.parser import parse_mdtest

REPO = Path(__file__).resolve().parents[3]

MB = 1e6  # the paper's MB/s
DESIGN_LABEL = {"memfs": "MemFS", "locality": "locality-based (AMFS-style re-implementation)"}


class SanityError(RuntimeError):
    pass


def say(msg: str) -> None:
    print(f"[memfs_bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ----------------------------------------------------------------------------- tools
NOSLEEP = REPO / "tools" / "iozone" / "build" / "libnosleep.so"


class Tools:
    """Paths of the tools the system nodes run: on the host (local runs) or in the
    memfs image (container mode: the agents run them inside an instance of it)."""

    def __init__(self, cfg: dict, image: str = ""):
        self.image = image
        want_md = cfg.get("metadata", {}).get("tool", "auto")
        if image:
            self.iozone = cfg.get("iozone", {}).get("binary") or "iozone"
            self.nosleep = "/usr/local/lib/libnosleep.so"
            self.mcbench = "mcbench"
            self.memfs = "/usr/local/bin/memfs"
            has = subprocess.run(["apptainer", "exec", image, "sh", "-c", "command -v mdtest"],
                                 capture_output=True).returncode == 0
            if want_md == "mdtest" and not has:
                raise SystemExit("metadata.tool = mdtest but the image has no mdtest")
            self.md, self.md_kind = ("mdtest", "mdtest") if has and want_md != "mdbench" else ("mdbench", "mdbench")
            return
        self.iozone = iozone_path(cfg)
        self.nosleep = str(NOSLEEP) if NOSLEEP.exists() else ""
        self.mcbench = str(REPO / "systems" / "memfs" / "build" / "mcbench")
        self.memfs = None  # the launcher's default: systems/memfs/build/memfs
        try:
            self.md, self.md_kind = mdtest_path(cfg)
        except SystemExit as exc:  # only the metadata experiment needs it
            self.md, self.md_kind, self.md_missing = None, None, str(exc)

    def iozone_version(self) -> str:
        if self.image:
            out = subprocess.run(["apptainer", "exec", self.image, self.iozone, "-v"], capture_output=True, text=True)
            m = re.search(r"Version \$Revision: ([\d.]+) \$", out.stdout)
            return m.group(1) if m else "unknown"
        return iozone.parse_iozone_version(self.iozone)


def iozone_path(cfg: dict) -> str:
    for cand in (cfg.get("iozone", {}).get("binary") or "", shutil.which("iozone") or "",
                 os.path.expanduser(os.path.join(os.environ.get("REPRO_CACHE", "~/.cache/repro"),
                                                 "iozone/usr/bin/iozone"))):
        if cand and os.access(os.path.expanduser(cand), os.X_OK):
            return os.path.expanduser(cand)
    raise SystemExit("iozone not found: run tools/iozone/setup.sh (./repro setup)")


def mdtest_path(cfg: dict) -> tuple[str, str]:
    """The real mdtest if it is on PATH (the cluster image builds it), else mdbench."""
    want = cfg.get("metadata", {}).get("tool", "auto")
    real = shutil.which("mdtest")
    if want in ("auto", "mdtest") and real:
        return real, "mdtest"
    if want == "mdtest":
        raise SystemExit("metadata.tool = mdtest but mdtest is not on PATH")
    mdb = REPO / "tools" / "mdtest" / "build" / "mdbench"
    if not os.access(mdb, os.X_OK):
        raise SystemExit(f"{mdb} missing: make -C tools/mdtest")
    return str(mdb), "mdbench"


def tool_versions(extra: dict | None = None) -> dict:
    v = {"memcached": provenance.tool_version(["memcached", "-V"]),
         "memfs": provenance.tool_version([str(REPO / "systems/memfs/build/memfs"), "--version"])}
    v.update(extra or {})
    return v


# ----------------------------------------------------------------------------- cluster
def cluster_for(args, cfg, design, memfs_opts=None, mounts=1):
    net = dict(cfg["networks"][args.network])
    net["name"] = args.network
    net["single_host"] = args.single_host
    opts = dict(cfg["memfs"])
    opts.update(memfs_opts or {})
    mc = cfg["memcached"]
    return launch.cluster(
        nodes=args.nodes, design=design, mounts_per_node=mounts,
        memfs_opts=opts, network=net, workdir=args.workdir or None, launcher=args.launcher,
        memcached={"mem_mb": mc["mem_mb"], "threads": mc["threads"]}, image=args.image or None,
        memfs_bin=args.tools.memfs, start_timeout=120, logs_on_failure=rawio.logs_path(args.out))


# ----------------------------------------------------------------------------- iozone phases
class Iozone:
    """iozone in throughput mode: ``-t P -F f1..fP`` per batch of a node's files.

    Throughput mode opens each file once (O_RDWR|O_CREAT), which a write-once
    file system accepts; single-file mode re-opens a file it has just created
    and closed, which MemFS (write-once) rightly refuses.  Its parent sleeps 2 s
    twice per run outside the timed region: libnosleep.so (tools/iozone) skips them.
    """

    def __init__(self, tools, cfg, size_bytes, record_bytes, timeout):
        self.bin = tools.iozone
        self.size_kb = max(1, size_bytes // 1024)
        self.record_kb = max(1, min(record_bytes, size_bytes) // 1024)
        self.verify = cfg["iozone"].get("verify", True)
        self.timeout = timeout
        self.env = {"LD_PRELOAD": tools.nosleep} if tools.nosleep else {}

    def cmd(self, test: str, files: list[str]) -> list[str]:
        c = [self.bin, "-t", str(len(files)), "-F", *files, "-s", f"{self.size_kb}k",
             "-r", f"{self.record_kb}k", "-+n", "-w", "-x", "-C"]
        c += ["-i", "0", "-c", "-e"] if test == "write" else ["-i", "1"]
        if self.verify:
            c += ["-V", "165"]
        return c

    def script(self, test: str, batches: list[list[str]]) -> str:
        return "\n".join(shlex.join(self.cmd(test, b)) + "; echo \"@@RC=$?@@\"" for b in batches)

    def run_node(self, node, test, batches, cwd):
        """One node's batches, one after the other (P processes each)."""
        res = node.run(self.script(test, batches), shell=True, cwd=cwd, env=self.env, timeout=self.timeout)
        parts = re.split(r"@@RC=(\d+)@@", res["stdout"])
        texts, rcs = parts[0:-1:2], [int(x) for x in parts[1::2]]
        runs = []
        for text, rc in zip(texts, rcs):
            if rc != 0:
                raise SanityError(procs.failure_message(f"iozone {test}", {**res, "rc": rc, "stdout": text},
                                                        node=node.index))
            runs.append(iozone.parse_iozone(text))
        if len(runs) != len(batches):
            raise SanityError(f"{len(runs)} iozone outputs for {len(batches)} batches: "
                              + procs.failure_message(f"iozone {test}", res, node=node.index,
                                                      timeout=self.timeout))
        return {"streams": [runs], "texts": texts, "elapsed": res["elapsed"]}


def _check_runs(node_idx, test, streams, size_kb, sanity):
    for r in (r for runs in streams for r in runs):
        t = r["tests"].get(test)
        if t is None:
            raise SanityError(f"node {node_idx}: iozone printed no {test} result")
        if r["verify_errors"]:
            sanity["verify_ok"] = False
            raise SanityError(f"node {node_idx}: iozone {test}: {r['verify_errors']} verify errors (wrong data)")
        short = [k for k in t["children"] if abs(k["xfer_kb"] - size_kb) > 1e-6]
        if short or len(t["children"]) != t["n"]:
            sanity["xfer_complete"] = False
            raise SanityError(f"node {node_idx}: iozone {test}: incomplete transfers {short}")


def batches_of(files: list[str], procs: int) -> list[list[str]]:
    """A node's files in batches of ``procs`` (one iozone run of procs processes each)."""
    return [files[i:i + procs] for i in range(0, len(files), procs)]


def node_files(c, node, prefix: str, nfiles: int) -> list[str]:
    """Paths of node's files, spread over its mounts round robin (file j -> mount j % k)."""
    k = len(node.mountpoints)
    return [os.path.join(node.mountpoints[j % k], prefix.lstrip("/"), f"f{j}") for j in range(nfiles)]


def rel_of(node, path: str) -> str:
    for mp in node.mountpoints:
        if path.startswith(mp + "/"):
            return path[len(mp):]
    raise ValueError(path)


def on_node(node, rel: str, j: int = 0) -> str:
    """The same file-system path seen through this node's mount j."""
    return node.path(rel, j % len(node.mountpoints))


def mkdirs(c, rels: list[str]) -> None:
    nd = c.nodes[0]
    for rel in rels:
        r = nd.run(["mkdir", "-p", nd.path(rel)])
        if r["rc"] != 0:
            raise SanityError(procs.failure_message(f"mkdir {rel}", r, node=nd.index))


def phase(c, io, test, plan, record_bytes, extra_s=None, extra_in_tput=False):
    """Run one test on all nodes at once; plan[i] = list of batches of node i.

    Returns per-node totals and the aggregates: bw (node bytes over iozone's
    time + extra_s[i], summed over nodes) and tput (read()/write() calls over
    iozone's time, + extra_s[i] only with extra_in_tput).
    """
    t0 = time.perf_counter()
    outs = c.map(lambda nd: io.run_node(nd, test, plan[nd.index], nd.workdir))
    wall = time.perf_counter() - t0
    per = []
    for nd, o in zip(c.nodes, outs):
        tot = iozone.iozone_node_totals(o["streams"], test, record_bytes)
        ext = (extra_s or {}).get(nd.index, 0.0)
        per.append({"node": nd.index, **tot, "extra_s": ext,
                    "bw": tot["bytes"] / (tot["seconds"] + ext) / MB,
                    "tput": tot["ops"] / (tot["seconds"] + (ext if extra_in_tput else 0.0)),
                    "agent_elapsed_s": o["elapsed"]})
    return {"per_node": per, "bw": sum(p["bw"] for p in per), "tput": sum(p["tput"] for p in per),
            "bytes": sum(p["bytes"] for p in per), "wall_s": wall,
            "bw_wall": sum(p["bytes"] for p in per) / wall / MB,
            "texts": {nd.index: o["texts"] for nd, o in zip(c.nodes, outs)}, "runs": outs}


def timed_opens(c, paths_of: dict[int, list[str]]) -> dict[int, float]:
    """Open every listed file on its node (all nodes at once); seconds per node."""
    nodes = [nd for nd in c.nodes if paths_of.get(nd.index)]
    res = c.map(lambda nd: nd.timed_open(paths_of[nd.index]), nodes=nodes)
    return {r["node"]: r["elapsed"] for r in res}


def memfs_counters(stats: list[dict], group: str, name: str) -> dict[int, int]:
    out = {}
    for s in stats:
        tot = 0
        for m in s.get("mounts", []):
            tot += int(m.get("memfs", {}).get(group, {}).get(name, 0))
        out[s["node"]] = tot
    return out


# configuration values in MemFS's stats JSON (not counters): left out of the per-phase deltas
STATS_NOT_COUNTERS = frozenset({"local_server", "stripe_size", "buffer_size", "threads", "timeout_ms", "time",
                                "since", "index"})


def flat_numeric(d, prefix: str = "", out: dict | None = None) -> dict:
    """Every numeric leaf of a (MemFS stats) JSON value as {"group.name": number}; list entries are
    summed key by key ("per_server.bytes_get" = over all servers). Generic: a counter MemFS adds
    later is carried without a change here."""
    out = {} if out is None else out
    if isinstance(d, dict):
        for k, v in d.items():
            if k not in STATS_NOT_COUNTERS:
                flat_numeric(v, f"{prefix}{k}.", out)
    elif isinstance(d, list):
        for item in d:
            flat_numeric(item, prefix, out)
    elif isinstance(d, (int, float)) and not isinstance(d, bool) and prefix:
        key = prefix[:-1]
        out[key] = out.get(key, 0) + d
    return out


def memfs_totals(stats: list[dict]) -> dict:
    """MemFS's counters summed over every node's mounts (c.stats())."""
    out: dict = {}
    for s in stats:
        for m in s.get("mounts", []):
            flat_numeric(m.get("memfs", {}), "", out)
    return out


def stats_delta(before: dict, after: dict) -> dict:
    """What one phase added to every counter (after - before)."""
    return {k: after[k] - before.get(k, 0) for k in sorted(after)}


def side_by_side_limit(c, args, cfg, size: int, nfiles: int, procs: int, timeout: float) -> dict:
    """The raw-memcached limit of this very cluster, network and layout: mcbench on every node at once
    with the value size MemFS stores (min(size, stripe_size)) and the bytes a node wrote and read in
    the envelope phases (files_per_node x size), at two client counts: the benchmark's processes per
    node (procs_per_node) and the memcached requests MemFS itself keeps in flight per node (its pool,
    memfs.threads x mounts_per_node: one iozone process still has that many stripe fetches or stores
    outstanding). The limit is the larger rate of the two, per operation: an upper bound for MemFS."""
    stripe = int(cfg["memfs"]["stripe_size"])
    vsize = min(size, stripe)
    ops = nfiles * int(math.ceil(size / vsize))
    pool = int(cfg["memfs"].get("threads", 8)) * int(cfg["envelope"].get("mounts_per_node", 1))
    runs = []
    for threads in sorted({procs, pool}):
        cmd = [args.tools.mcbench, "--servers", ",".join(c.servers), "--op", "both", "--value-size", str(vsize),
               "--threads", str(threads), "--ops", str(ops), "--distribution", cfg["memfs"]["distribution"],
               "--timeout-ms", str(cfg["memfs"].get("timeout_ms", 2000))]
        outs = c.run_all(cmd, timeout=timeout)
        per = []
        for o in outs:
            if o["rc"] != 0:
                raise SanityError(procs.failure_message("side-by-side mcbench", o, timeout=timeout, tail=1500))
            p = parse_mcbench(o["stdout"])
            for op in ("set", "get"):
                if op not in p or p[op]["errors"] or p[op]["bytes"] < ops * vsize:
                    raise SanityError(f"node {o['node']}: side-by-side mcbench {op} moved {p.get(op, {}).get('bytes')}"
                                      f" of {ops * vsize} B ({p.get(op, {}).get('errors')} errors); its stderr: "
                                      + procs.output_tail("", o.get("stderr"), 1200))
            per.append({"node": o["node"], **p})
        runs.append({"threads": threads, "command": cmd, "per_node": per,
                     "set_bw": sum(p["set"]["bytes_per_s"] for p in per) / MB,
                     "get_bw": sum(p["get"]["bytes_per_s"] for p in per) / MB})
    best_set = max(runs, key=lambda r: r["set_bw"])
    best_get = max(runs, key=lambda r: r["get_bw"])
    return {"value_size": vsize, "ops_per_node": ops, "bytes_per_node": ops * vsize, "procs_per_node": procs,
            "pool_threads_per_node": pool, "runs": runs,
            "set_bw": best_set["set_bw"], "set_threads": best_set["threads"],
            "get_bw": best_get["get_bw"], "get_threads": best_get["threads"]}


def storage_metrics(stats: list[dict]) -> dict:
    b = [int(s["memcached"].get("bytes") or 0) for s in stats]
    rss = [x for s in stats for x in (s.get("fuse_rss_bytes") or []) if x]
    return {"stored_total": sum(b), "stored_max": max(b) if b else 0, "stored_min": min(b) if b else 0,
            "per_node": b, "fuse_rss_max": max(rss) if rss else 0,
            "memcached_rss": [s.get("memcached_rss_bytes") for s in stats]}


# ----------------------------------------------------------------------------- envelope
def run_envelope(args, cfg, rec) -> None:
    env = cfg["envelope"]
    n, design = args.nodes, args.design
    size = paramspace.size_bytes(args.size)
    record = min(paramspace.size_bytes(cfg["iozone"]["record_size"]), size)
    procs = env["procs_per_node"]
    nfiles = int(env["files_per_node"].get(args.size, procs))
    nfiles = max(procs, int(math.ceil(nfiles / procs) * procs))
    io = Iozone(args.tools, cfg, size, record, env["timeout_s"])
    rec["tool_versions"].update({"iozone": f"iozone {args.tools.iozone_version()}"})
    sanity = rec["sanity"]
    sanity.update({"iozone_ok": True, "verify_ok": True, "xfer_complete": True})
    extra = rec["extra"]
    extra.update({"files_per_node": nfiles, "procs_per_node": procs, "record_bytes": record,
                  "size_bytes": size, "iozone": io.bin, "verify": io.verify})
    with cluster_for(args, cfg, design, mounts=env["mounts_per_node"]) as c:
        extra["cluster"] = c.describe()
        say(f"cluster up: {n} x {design} on {args.network}; {nfiles} files of {args.size} per node, "
            f"{procs} iozone processes per node, records {record} B")
        mkdirs(c, [f"/w/n{i}" for i in range(n)] + ["/n1"])
        files = {nd.index: node_files(c, nd, f"/w/n{nd.index}", nfiles) for nd in c.nodes}
        per_phase = extra["memfs_stats"] = {}  # each phase's counter deltas (MemFS's stats JSON, summed)
        first = next((m.get("memfs", {}) for st in c.stats() for m in st.get("mounts", [])), {})
        extra["memfs_fuse"] = first.get("fuse", {})  # the negotiated FUSE parameters (max_write, readahead...)

        # -- write: every node writes its own files
        s0 = memfs_totals(c.stats())
        w = phase(c, io, "write", {i: batches_of(f, procs) for i, f in files.items()}, record)
        per_phase["write"] = stats_delta(s0, memfs_totals(c.stats()))
        for i, o in enumerate(w["runs"]):
            _check_runs(i, "write", o["streams"], io.size_kb, sanity)
        sizes = c.map(lambda nd: nd.stat(files[nd.index]))
        sanity["sizes_ok"] = all(s == size for ss in sizes for s in ss)
        if not sanity["sizes_ok"]:
            raise SanityError(f"written files have wrong sizes: {sizes}")
        say(f"write: {w['bw']:.1f} MB/s, {w['tput']:.0f} ops/s")
        if design == "locality":
            owners = {nd.index: c.locate(rel_of(nd, files[nd.index][0])) for nd in c.nodes}
            sanity["locality_writes_local"] = all(v == [i] for i, v in owners.items())
            extra["owners_after_write"] = owners
            if not sanity["locality_writes_local"]:
                raise SanityError(f"locality design: files not on their writer's server: {owners}")
        else:
            extra["owners_after_write"] = {0: c.locate(rel_of(c.nodes[0], files[0][0]))}

        # -- 1-1 read: each node reads a different file
        if design == "locality":
            src = {i: i for i in range(n)}  # locality-aware placement: the reader runs where the file is
        else:
            src = {i: (i + 1) % n for i in range(n)}  # any placement: read another node's file
        plan = {}
        for nd in c.nodes:
            theirs = [on_node(nd, rel_of(c.nodes[src[nd.index]], p), j) for j, p in enumerate(files[src[nd.index]])]
            plan[nd.index] = batches_of(theirs, procs)
        st_before = c.stats()
        before = memfs_counters(st_before, "locality", "replications")
        r11 = phase(c, io, "read", plan, record)
        st_after = c.stats()
        for i, o in enumerate(r11["runs"]):
            _check_runs(i, "read", o["streams"], io.size_kb, sanity)
        after = memfs_counters(st_after, "locality", "replications")
        per_phase["read11"] = stats_delta(memfs_totals(st_before), memfs_totals(st_after))
        if design == "locality":
            sanity["local_reads_not_replicated"] = after == before
        say(f"1-1 read: {r11['bw']:.1f} MB/s, {r11['tput']:.0f} ops/s")

        # -- N-1 read: all nodes read one file written by node 0
        srcfile = c.nodes[0].path("/n1/src")
        wsrc = io.run_node(c.nodes[0], "write", [[srcfile]], c.nodes[0].workdir)
        _check_runs(0, "write", wsrc["streams"], io.size_kb, sanity)
        say(f"N-1 source written by node 0 in {wsrc['elapsed']:.2f} s")
        mcast = {}
        if design == "locality":
            # multicast from the source node: every other node replicates the file
            # (replicate-on-read at open); timed, and counted in the bandwidth only
            mcast = timed_opens(c, {nd.index: [on_node(nd, "/n1/src")] for nd in c.nodes if nd.index != 0})
            extra["multicast_s"] = mcast
            say(f"multicast: {max(mcast.values()) if mcast else 0:.3f} s")
            owners = c.locate("/n1/src")
            sanity["multicast_replicated"] = sorted(owners) == list(range(n))
            if not sanity["multicast_replicated"]:
                raise SanityError(f"after the multicast the file is on {owners}, not on all {n} nodes")
        plan = {nd.index: batches_of([on_node(nd, "/n1/src", j) for j in range(procs)], procs) for nd in c.nodes}
        s0 = memfs_totals(c.stats())
        rn1 = phase(c, io, "read", plan, record, extra_s=mcast)
        per_phase["readN1"] = stats_delta(s0, memfs_totals(c.stats()))
        for i, o in enumerate(rn1["runs"]):
            _check_runs(i, "read", o["streams"], io.size_kb, sanity)
        say(f"N-1 read: {rn1['bw']:.1f} MB/s, {rn1['tput']:.0f} ops/s"
            + (f" (multicast {max(mcast.values()):.3f} s)" if mcast else ""))

        # -- remote 1-1 read of the locality design (Table 2.1): the file is on another node
        rrem = None
        if design == "locality" and n >= 2:
            paths = {nd.index: [on_node(nd, rel_of(c.nodes[(nd.index + 1) % n], p), j)
                                for j, p in enumerate(files[(nd.index + 1) % n])] for nd in c.nodes}
            before = memfs_counters(c.stats(), "locality", "replications")
            rep_s = timed_opens(c, paths)  # the remote transfer (replicate-on-read)
            after = memfs_counters(c.stats(), "locality", "replications")
            sanity["remote_reads_replicated"] = all(after[i] - before[i] >= nfiles for i in range(n))
            if not sanity["remote_reads_replicated"]:
                raise SanityError(f"remote reads did not replicate: {before} -> {after}")
            s0 = memfs_totals(c.stats())
            rrem = phase(c, io, "read", {i: batches_of(p, procs) for i, p in paths.items()}, record,
                         extra_s=rep_s, extra_in_tput=True)
            per_phase["read11_remote"] = stats_delta(s0, memfs_totals(c.stats()))
            for i, o in enumerate(rrem["runs"]):
                _check_runs(i, "read", o["streams"], io.size_kb, sanity)
            extra["remote_transfer_s"] = rep_s
            say(f"remote 1-1 read: {rrem['bw']:.1f} MB/s, {rrem['tput']:.0f} ops/s")
        stats = c.stats()
        lim = None
        if design == "memfs" and env.get("side_by_side_limit", True):
            # the limit, side by side: same job, cluster, network, clients and bytes per node
            t_lim = time.perf_counter()
            lim = side_by_side_limit(c, args, cfg, size, nfiles, procs, env["timeout_s"])
            lim["elapsed_s"] = time.perf_counter() - t_lim  # what the side-by-side limit adds to the job
            extra["side_by_side_limit"] = lim
            say(f"side-by-side mcbench ({lim['value_size']} B values, {lim['ops_per_node']} ops/node; "
                + ", ".join(f"{r['threads']} thread(s)/node: set {r['set_bw']:.1f}, get {r['get_bw']:.1f} MB/s"
                            for r in lim["runs"]) + "); "
                f"MemFS/limit: write {w['bw'] / lim['set_bw']:.2f}, 1-1 read {r11['bw'] / lim['get_bw']:.2f}")
    st = storage_metrics(stats)
    m = rawio.metric
    rec["metrics"] += [
        m("write_bw", w["bw"], "MB/s"), m("write_tput", w["tput"], "ops/s"),
        m("read11_bw", r11["bw"], "MB/s"), m("read11_tput", r11["tput"], "ops/s"),
        m("readN1_bw", rn1["bw"], "MB/s"), m("readN1_tput", rn1["tput"], "ops/s"),
        m("stored_bytes_total", st["stored_total"], "B"), m("stored_bytes_max_node", st["stored_max"], "B"),
        m("fuse_rss_max", st["fuse_rss_max"], "B"),
    ]
    if lim is not None:
        rec["metrics"] += [m("limit_set_bw", lim["set_bw"], "MB/s"), m("limit_get_bw", lim["get_bw"], "MB/s")]
    if rrem is not None:
        rec["metrics"] += [m("read11_remote_bw", rrem["bw"], "MB/s"), m("read11_remote_tput", rrem["tput"], "ops/s")]
    extra["phases"] = {name: {"per_node": ph["per_node"], "wall_s": ph["wall_s"], "bw_wall": ph["bw_wall"],
                              "bw": ph["bw"], "tput": ph["tput"]}
                       for name, ph in (("write", w), ("read11", r11), ("readN1", rn1), ("read11_remote", rrem))
                       if ph is not None}
    extra["iozone_outputs"] = {name: {str(k): v for k, v in ph["texts"].items()}
                               for name, ph in (("write", w), ("read11", r11), ("readN1", rn1),
                                                ("read11_remote", rrem)) if ph is not None}
    extra["storage"] = st


# ----------------------------------------------------------------------------- sweeps
def run_sweep(args, cfg, rec, knob: str) -> None:
    sw = cfg["sweeps"]
    size = paramspace.size_bytes(sw["size"])
    record = min(paramspace.size_bytes(cfg["iozone"]["record_size"]), size)
    procs = sw["procs_per_node"]
    nfiles = max(procs, int(math.ceil(sw["files_per_node"] / procs) * procs))
    io = Iozone(args.tools, cfg, size, record, sw["timeout_s"])
    rec["tool_versions"].update({"iozone": f"iozone {args.tools.iozone_version()}"})
    opts = {}
    if knob == "stripe":
        opts["stripe_size"] = paramspace.size_bytes(args.stripe)
    else:
        opts["threads"] = int(args.threads)
    sanity = rec["sanity"]
    sanity.update({"iozone_ok": True, "verify_ok": True, "xfer_complete": True})
    with cluster_for(args, cfg, "memfs", memfs_opts=opts) as c:
        rec["extra"]["cluster"] = c.describe()
        say(f"cluster up: {args.nodes} x memfs {opts}; {nfiles} files of {sw['size']} per node")
        mkdirs(c, [f"/w/n{i}" for i in range(args.nodes)])
        files = {nd.index: node_files(c, nd, f"/w/n{nd.index}", nfiles) for nd in c.nodes}
        w = phase(c, io, "write", {i: batches_of(f, procs) for i, f in files.items()}, record)
        for i, o in enumerate(w["runs"]):
            _check_runs(i, "write", o["streams"], io.size_kb, sanity)
        n = args.nodes
        plan = {nd.index: batches_of([on_node(nd, rel_of(c.nodes[(nd.index + 1) % n], p), j)
                                      for j, p in enumerate(files[(nd.index + 1) % n])], procs) for nd in c.nodes}
        r = phase(c, io, "read", plan, record)
        for i, o in enumerate(r["runs"]):
            _check_runs(i, "read", o["streams"], io.size_kb, sanity)
    say(f"{knob} {opts}: write {w['bw']:.1f} MB/s, read {r['bw']:.1f} MB/s")
    m = rawio.metric
    rec["metrics"] += [m("write_bw", w["bw"], "MB/s"), m("read_bw", r["bw"], "MB/s"),
                       m("write_tput", w["tput"], "ops/s"), m("read_tput", r["tput"], "ops/s")]
    rec["extra"].update({"files_per_node": nfiles, "procs_per_node": procs, "record_bytes": record,
                         "size_bytes": size, "memfs_opts": opts,
                         "phases": {"write": {"per_node": w["per_node"]}, "read": {"per_node": r["per_node"]}},
                         "iozone_outputs": {"write": {str(k): v for k, v in w["texts"].items()},
                                            "read": {str(k): v for k, v in r["texts"].items()}}})


# ----------------------------------------------------------------------------- metadata
def run_metadata(args, cfg, rec) -> None:
    md = cfg["metadata"]
    tool, kind = args.tools.md, args.tools.md_kind
    if tool is None:
        raise SystemExit(args.tools.md_missing)
    rec["tool_versions"]["metadata_tool"] = kind
    k = md["ranks_per_node"]
    with cluster_for(args, cfg, args.design, mounts=md.get("mounts_per_node", 1)) as c:
        rec["extra"]["cluster"] = c.describe()
        # one directory per node: mdtest's first task of each path creates (and removes)
        # that path's test directory; the paths of different nodes must differ
        mkdirs(c, [f"/md/n{i}" for i in range(args.nodes)])
        paths = c.mpi_paths("/md/n{node}", ranks_per_node=k)
        argv = [tool, "-n", str(md["items_per_rank"]), "-F", "-u", "-i", str(md["iterations"]),
                "-w", str(md["write_bytes"]), "-e", str(md["read_bytes"]), "-d", "@".join(paths)]
        cmd = c.mpi_command(argv, ranks_per_node=k)
        say(f"metadata: {' '.join(cmd)}")
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=md["timeout_s"])
        elapsed = time.perf_counter() - t0
        rec["extra"].update({"command": cmd, "stdout": r.stdout[-200000:], "stderr": r.stderr[-20000:],
                             "elapsed_s": elapsed, "ranks": args.nodes * k})
        rec["sanity"]["rc"] = r.returncode
        if r.returncode != 0:
            raise SanityError(procs.failure_message(kind, r, tail=1500))
        res = parse_mdtest(r.stdout)
        rec["sanity"]["tasks_match"] = res["tasks"] == args.nodes * k
        if not rec["sanity"]["tasks_match"]:
            raise SanityError(f"{kind} ran {res['tasks']} tasks, expected {args.nodes * k}")
    m = rawio.metric
    for op, metric in (("create", "create_rate"), ("stat", "stat_rate"), ("open", "open_rate"),
                       ("remove", "remove_rate")):
        if op in res["rates"]:
            rec["metrics"].append(m(metric, res["rates"][op]["mean"], "ops/s"))
    say("metadata: " + ", ".join(f"{x['metric']} {x['value']:.0f}" for x in rec["metrics"]))


# ----------------------------------------------------------------------------- limit
def run_limit(args, cfg, rec) -> None:
    lim = cfg["limit"]
    vsize = int(lim.get("value_size") or cfg["memfs"]["stripe_size"])
    mcbench = args.tools.mcbench
    with cluster_for(args, cfg, "none") as c:
        rec["extra"]["cluster"] = c.describe()
        servers = ",".join(c.servers)
        cmd = [mcbench, "--servers", servers, "--op", "both", "--value-size", str(vsize),
               "--threads", str(lim["threads"]), "--seconds", str(lim["seconds"]),
               "--distribution", cfg["memfs"]["distribution"]]
        outs = c.run_all(cmd, timeout=lim["seconds"] * 4 + 60)
        per = []
        for o in outs:
            if o["rc"] != 0:
                raise SanityError(procs.failure_message("mcbench", o, timeout=lim["seconds"] * 4 + 60, tail=1500))
            per.append(parse_mcbench(o["stdout"]))
        errors = sum(p[op]["errors"] for p in per for op in p)
        rec["sanity"]["mcbench_errors"] = errors
        if errors:
            raise SanityError(f"mcbench reported {errors} failed operations")
        iperf = None
        if args.nodes >= 2 and shutil.which("iperf3"):
            srv = c.nodes[1].start(["iperf3", "-s", "-1", "-B", c.nodes[1].ip, "-p", "5299"])
            time.sleep(0.5)
            cl = c.nodes[0].run(["iperf3", "-c", c.nodes[1].ip, "-p", "5299", "-t", str(lim["iperf_seconds"]), "-J"],
                                timeout=lim["iperf_seconds"] + 30)
            c.nodes[1].wait(srv, timeout=10)
            if cl["rc"] == 0:
                iperf = parse_iperf3(cl["stdout"])
            rec["extra"]["iperf3"] = cl["stdout"][-20000:]
    m = rawio.metric
    set_bw = sum(p["set"]["bytes_per_s"] for p in per) / MB
    get_bw = sum(p["get"]["bytes_per_s"] for p in per) / MB
    rec["metrics"] += [m("memcached_set_bw", set_bw, "MB/s"), m("memcached_get_bw", get_bw, "MB/s")]
    rate = cfg["networks"][args.network].get("rate_mbit")
    if rate:
        rec["metrics"].append(m("link_rate_configured", rate, "Mbit/s"))
    if iperf:
        rec["metrics"].append(m("link_rate_measured", iperf["received_bps"] / 1e6, "Mbit/s"))
    rec["extra"].update({"value_size": vsize, "mcbench": per})
    say(f"limit: set {set_bw:.1f} MB/s, get {get_bw:.1f} MB/s"
        + (f", link {iperf['received_bps'] / 1e6:.0f} Mbit/s" if iperf else ""))


# ----------------------------------------------------------------------------- the run contract
RUN = runner.Experiments("memfs")
EXPERIMENTS = ("envelope", "metadata", "stripe", "threads", "limit")
# --params: the configuration (recorded as the record's params) and how the job runs (not recorded)
DIMENSIONS = {"envelope": ("design", "size"), "metadata": ("design",), "stripe": ("stripe",),
              "threads": ("threads",), "limit": ()}
RUN_KEYS = ("launcher", "single_host", "image", "workdir")
LAUNCHERS = ("auto", "local", "slurm")


def job_args(ctx: runner.Context) -> SimpleNamespace:
    """The job from the run contract: --params {"network", "nodes", the experiment's dimensions
    (DIMENSIONS; design defaults to memfs), and how it runs: "launcher" (auto|local|slurm, default auto),
    "single_host" (default 1), "image" (memfs.sif: the system nodes' tools run in it), "workdir" (a
    node-local base directory for mounts; default a temp dir)}, --rep, --out."""
    p, exp = ctx.params, ctx.experiment
    dims = DIMENSIONS[exp]
    allowed = {"network", "nodes", *dims, *RUN_KEYS}
    unknown = sorted(set(p) - allowed)
    if unknown:
        raise runner.Refused(f"--params: {unknown} are not parameters of {exp} (it takes {sorted(allowed)})")
    missing = [k for k in ("network", "nodes", *dims) if k not in p and k != "design"]
    if missing:
        raise runner.Refused(f"--params lacks {missing}")
    a = SimpleNamespace(experiment=exp, network=str(p["network"]), nodes=int(p["nodes"]),
                        design=str(p.get("design", "memfs")), size=str(p.get("size", "")),
                        stripe=str(p.get("stripe", "")), threads=str(p.get("threads", "")),
                        launcher=str(p.get("launcher", "auto")), single_host=int(p.get("single_host", 1)),
                        image=str(p.get("image", "")), workdir=str(p.get("workdir", "")), rep=ctx.rep, out=ctx.out)
    if a.design not in DESIGN_LABEL:
        raise runner.Refused(f"--params: design {a.design!r} is not one of {sorted(DESIGN_LABEL)}")
    if a.launcher not in LAUNCHERS:
        raise runner.Refused(f"--params: launcher {a.launcher!r} is not one of {LAUNCHERS}")
    if a.network not in ctx.cfg.get("networks", {}):
        raise runner.Refused(f"--params: network {a.network!r} is not in the config's networks")
    return a


def record_params(a: SimpleNamespace) -> dict:
    """The record's params: the configuration (the path's dimensions), in the order of the raw files."""
    params = {"network": a.network}
    if a.experiment in ("envelope", "metadata"):
        params["design"] = a.design
    params["nodes"] = a.nodes
    if a.experiment == "envelope":
        params["size"] = a.size
    if a.experiment == "stripe":
        params["stripe"] = a.stripe
    if a.experiment == "threads":
        params["threads"] = int(a.threads)
    return params


RUNS = {"envelope": run_envelope, "metadata": run_metadata, "stripe": partial(run_sweep, knob="stripe"),
        "threads": partial(run_sweep, knob="threads"), "limit": run_limit}


def run_one(ctx: runner.Context) -> dict:
    """One configuration on one fresh cluster: its repro.raw/1 record; a failed sanity check, a tool's
    error, a lost agent or a time-out: RunFailed with the record and why (the runner records it)."""
    a = job_args(ctx)
    cfg = ctx.cfg
    net = dict(cfg["networks"][a.network], name=a.network)
    rec = ctx.record(tool_versions(), system_kind(net), params=record_params(a))
    rec["extra"] = {"network": net, "design_label": DESIGN_LABEL.get(a.design, a.design), "launcher": a.launcher}
    a.tools = Tools(cfg, a.image)
    say(f"{a.experiment} {rec['params']} rep {a.rep} -> {a.out}")
    t0 = time.time()
    try:
        RUNS[a.experiment](a, cfg, rec)
    except (SanityError, ParseError, launch.LaunchError, launch.RemoteError, subprocess.TimeoutExpired,
            OSError) as exc:  # OSError: TimeoutError, a file the FS could not find, a lost connection
        rec["metrics"] = []
        # the kind where the exception says it (a timeout; an agent that stopped answering: its node
        # is gone); otherwise repro.rawio.classify reads the message (crash, overload, error)
        kind = ("timeout" if isinstance(exc, (subprocess.TimeoutExpired, TimeoutError)) else
                "lost_node" if isinstance(exc, ConnectionError) else None)
        why = f"{type(exc).__name__}: {exc}".strip()
        raise runner.RunFailed(why if len(why) <= 4000 else why[:1500] + " ... " + why[-2400:], rec,
                               kind=kind) from None
    rec["extra"]["elapsed_s"] = time.time() - t0
    say(f"done in {time.time() - t0:.1f} s")
    return rec


for _exp in EXPERIMENTS:
    RUN.experiment(_exp)(run_one)


def main(argv=None) -> int:
    return RUN.main(argv)


if __name__ == "__main__":
    sys.exit(main())
