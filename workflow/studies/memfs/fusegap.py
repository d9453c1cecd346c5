#!/usr/bin/env python3
"""MemFS against raw memcached, the FUSE ceiling and their composite, like for like (issue 22).

    python3 -m studies.memfs.fusegap fusegap --config '<memfs config JSON>' --rep 0 --out .../raw/fusegap/rep~0.json
    python3 -m studies.memfs.fusegap table RAW.json... --runs runs.csv --table table.csv [--md table.md]

One job (experiment ``fusegap``, on repro.runner) = one repeat on one host: ``fuse_gap.servers`` memcached
servers on loopback, then for every transfer size T, operation and stream count S of ``fuse_gap.transfers``,
in one interleaved round (the order of the systems rotates with the repeat, so none is always first):

* **raw memcached** (the backend limit): ``mcbench`` with S threads (the same number of concurrent
  streams) and, where more, with MemFS's pool size (``memcached_inflight``, default memfs.threads: the
  stripe requests one MemFS stream keeps in flight, which a sequential mcbench thread does not), values of
  MemFS's stripe size and of ``memcached_values``, the same bytes; the fastest is the limit (each try is
  kept; ``memcached_same_streams_mib_s`` is the S-thread one); ``set`` for writes, ``get`` for reads;
* **the FUSE ceiling** (``tools/fuseceiling``, no backend) and **MemFS**, each with every variant's mount
  options (the ceiling gets the variant's matching options: same request sizes, direct I/O, writeback
  cache): S concurrent ``dd`` streams of block size T, write (a new file each, close included) then read
  (the files just written, through FUSE: keep_cache is off in both), same bytes.

Every measurement keeps the load average before and after it, the file systems' counter deltas (request
sizes, splice, round trips, the transport's ring and /dev/fuse requests) and the command. Only the
standard library and the engine's runner are used by the experiment.

**Over FUSE-over-io_uring** (issue 30; ``fuse_gap.io_uring``: names of variants): each named variant is
also measured as ``NAME-io_uring`` -- MemFS ``--transport=io_uring`` and the ceiling ``--transport io_uring``
(tools/fuseuring), the other options the same (splice off: ring replies are not spliced). Its rows are
compared with both ceilings of the same options (over /dev/fuse and over io_uring) and the composites
they give. Every mount is data-checked after its timed part (random bytes written in requests of the
transfer size, read back equal byte for byte), and every io_uring measurement must have gone through
the ring (ring requests > 0 and no READ/WRITE read from /dev/fuse during the timed part); a row whose
check failed is ``data check failed``, one whose transport was not used ``transport not used`` -- never
a result.

``table``: per repeat, composite = 1 / (1/memcached + 1/ceiling) (the two per-byte costs added:
both share the cores), MemFS's ratio to each, and which limit is lower (bounds it); per configuration the
min/median/max over the repeats and a verdict: a ratio above 1.0 to any of the three in any repeat is a
``measurement error`` (its ratios are then listed apart, never as a result), else ``met`` when the median
ratio to the composite is >= 0.8 (issue 22's target, set for the 1 MiB rows), else ``not met``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from repro import procs, runner  # the project's Python path (workflow/pythonpath.txt)
from tools.common import free_port, port_taken_by_another
from tools.fuseceiling import ceiling as fc
from tools.fuseceiling.transports import data_check

REPO = Path(__file__).resolve().parents[3]

MiB = 1 << 20
TARGET = 0.8
VALID_MAX = 1.0
TARGET_SIZES = ("1MiB",)  # issue 22: the target is set for 1 MiB transfers (at 1 and 8 streams)
MET, NOT_MET, MEASUREMENT_ERROR, NOT_RUN, INFO = "met", "not met", "measurement error", "not run", "no target"
CHECK_FAILED, NOT_USED = "data check failed", "transport not used"
DEV, URING = "dev-fuse", "io_uring"
TRANSPORTS = (DEV, URING)

DEFAULTS = {
    "enabled": True,
    "servers": 4,
    "memcached_mem_mb": 2048,
    "reps": 5,
    "cpus": "",
    "memcached_values": ["512KiB", "1MiB"],
    "memcached_inflight": 0,
    "transfers": [
        {"size": "1MiB", "ops": ["write", "read"], "streams": [1, 8], "bytes": "256MiB"},
        {"size": "4KiB", "ops": ["write"], "streams": [1, 8], "bytes": "32MiB"},
    ],
    "variants": [
        {"name": "paper", "memfs": [], "ceiling": ["--max-read", "512k"]},
        {"name": "direct-io", "memfs": ["--direct-io"], "ceiling": ["--direct-io"]},
        {"name": "writeback-cache", "memfs": ["--writeback-cache"],
         "ceiling": ["--writeback-cache", "--direct-io-read"]},
        {"name": "stripe-1m", "memfs": ["--stripe-size", "1m"], "ceiling": ["--max-read", "1m"]},
        {"name": "direct-io-stripe-1m", "memfs": ["--direct-io", "--stripe-size", "1m"], "ceiling": ["--direct-io"]},
        {"name": "splice", "memfs": ["--splice"], "ceiling": ["--max-read", "512k", "--splice", "all"]},
        {"name": "direct-io-stripe-1m-keep", "memfs": ["--direct-io", "--stripe-size", "1m", "--keep-buffers"],
         "ceiling": ["--direct-io"]},
    ],
    "io_uring": [],  # issue 30: variants also measured over FUSE-over-io_uring (NAME-io_uring)
}


def gap_config(cfg: dict) -> dict:
    g = dict(DEFAULTS)
    g.update(cfg.get("fuse_gap", {}))
    return g


def _no_splice(opts: list[str]) -> list[str]:
    """The ceiling's options without --splice X (the ring's replies are not spliced)."""
    out, skip = [], False
    for o in opts:
        if skip:
            skip = False
        elif o == "--splice":
            skip = True
        elif not o.startswith("--splice="):
            out.append(o)
    return out


def all_variants(g: dict) -> list[dict]:
    """The configured variants (over /dev/fuse, the paper's transport) and, for each name in
    ``io_uring``, the same variant over FUSE-over-io_uring as NAME-io_uring; each with ``transport`` and
    ``base`` (the variant whose options it shares)."""
    vs = [dict(v, transport=v.get("transport", DEV), base=v.get("base", v["name"])) for v in g["variants"]]
    by = {v["name"]: v for v in vs}
    for name in g.get("io_uring") or []:
        if name not in by:
            raise SystemExit(f"fuse_gap.io_uring: no variant {name!r} (variants: {', '.join(by)})")
        v = by[name]
        vs.append({"name": f"{name}-{URING}", "transport": URING, "base": name,
                   "memfs": [o for o in v["memfs"] if o != "--splice"] + [f"--transport={URING}"],
                   "ceiling": _no_splice(v["ceiling"]) + ["--transport", URING]})
    return vs


def transport_used(counters: dict) -> str:
    """From a timed part's counter deltas: io_uring when requests came through the ring and no READ/WRITE
    was read from /dev/fuse, dev-fuse when none came through the ring, else mixed."""
    ring = counters.get("transport.ring_reqs", 0)
    dev_rw = counters.get("transport.dev_rw_reqs", 0)
    if ring > 0:
        return URING if dev_rw == 0 else "mixed"
    return DEV


def size_bytes(s) -> int:
    if isinstance(s, int):
        return s
    m = re.fullmatch(r"(\d+)\s*([KMG]?)i?B?", str(s).strip(), re.I)
    if not m:
        raise ValueError(f"bad size {s!r}")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]


def say(msg: str) -> None:
    print(f"[memfs_fusegap {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ----------------------------------------------------------------------------- services
def is_mounted(path) -> bool:
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


class Services:
    """memcached servers and mounts this job started; everything is stopped by PID on exit."""

    def __init__(self, binaries: dict, prefix: list[str]):
        self.bin = binaries
        self.prefix = prefix
        self.procs: list[subprocess.Popen] = []
        self.servers: list[str] = []

    def start_memcached(self, n: int, mem_mb: int) -> None:
        for _ in range(n):
            self.servers.append(self._start_one(mem_mb))

    def _start_one(self, mem_mb: int, tries: int = 5) -> str:
        """One memcached of this job's own: a port that answers is taken only when the server there is
        the one started here (tools.common.port_taken_by_another); a port another process took between
        free_port() and the start is tried again with another port, up to ``tries`` times."""
        taken = []
        for _ in range(tries):
            port = free_port()
            cmd = [*self.prefix, self.bin["memcached"], "-l", "127.0.0.1", "-p", str(port), "-U", "0",
                   "-m", str(mem_mb), "-I", "2m", "-M", "-t", "2", "-c", "4096"]
            if os.geteuid() == 0:
                cmd += ["-u", "root"]
            log = tempfile.TemporaryFile()  # its stderr, for the failure message
            p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
            self.procs.append(p)
            for _ in range(500):
                try:
                    socket.create_connection(("127.0.0.1", port), 0.2).close()
                    break
                except OSError:
                    if p.poll() is not None:
                        log.seek(0)
                        raise RuntimeError(procs.failure_message(
                            "memcached", {"rc": p.returncode, "stderr": log.read()}, what="at start")) from None
                    time.sleep(0.02)
            else:
                log.seek(0)
                raise RuntimeError(f"memcached did not start in 10 s on 127.0.0.1:{port} ({procs.load_text()}): "
                                   + procs.output_tail("", log.read()))
            why = port_taken_by_another("127.0.0.1", port, p)
            if not why:
                return f"127.0.0.1:{port}"
            taken.append(why)
            print(f"fusegap: memcached on port {port} not ours: {why}; another port", file=sys.stderr, flush=True)
            if p.poll() is None:
                p.kill()
            p.wait()
        raise RuntimeError(f"memcached: every port tried was taken by another process ({procs.load_text()}): "
                           + "; ".join(taken))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


class MemfsMount:
    def __init__(self, binary: str, servers: list[str], opts: list[str], path: Path, prefix: list[str]):
        self.cmd = [*prefix, binary, "--servers", ",".join(servers), *opts, "-f", str(path)]
        self.path = path
        self.proc = None
        self.log = None

    def __enter__(self):
        self.path.mkdir(parents=True, exist_ok=True)
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT)
        uring = any(o.startswith("--transport") and "io_uring" in o for o in self.cmd) or "io_uring" in self.cmd
        for _ in range(1000):
            # over io_uring the daemon says what its transport did once the queues are up (after "mounted"):
            # no timed part may overlap their set-up
            if is_mounted(self.path) and (not uring or "io_uring" in self.output()):
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(procs.failure_message("memfs", {"rc": self.proc.returncode,
                                                                   "stderr": self.output()}, what="at mount"))
            time.sleep(0.02)
        out = self.output()
        self.__exit__()
        raise RuntimeError(f"memfs did not mount {self.path} in 20 s ({procs.load_text()}): "
                           + procs.output_tail("", out))

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-2000:]

    def stats(self) -> dict:
        return json.loads((self.path / ".memfs-stats").read_text())

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            subprocess.run(["fusermount3", "-u", str(self.path)], capture_output=True)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                subprocess.run(["fusermount3", "-u", "-z", str(self.path)], capture_output=True)
                self.proc.kill()
                self.proc.wait()
        if self.log:
            self.log.close()


_TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pids, minflt=False) -> float:
    """utime + stime (all threads) of running processes, in seconds (or their minor page faults)."""
    t = 0.0
    for pid in pids:
        try:
            f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            t += int(f[7]) if minflt else (int(f[11]) + int(f[12])) / _TICK
        except (OSError, IndexError, ValueError):
            pass
    return t


def children_cpu() -> float:
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class CpuMeter:
    """CPU seconds of the client processes (reaped children: dd, mcbench), a daemon and the servers."""

    def __init__(self, daemon_pids, server_pids):
        self.d, self.s = list(daemon_pids), list(server_pids)

    def __enter__(self):
        self.c0, self.d0, self.s0 = children_cpu(), proc_cpu(self.d), proc_cpu(self.s)
        self.f0 = proc_cpu(self.d, minflt=True)
        return self

    def __exit__(self, *exc):
        self.cpu = {"client": children_cpu() - self.c0, "daemon": proc_cpu(self.d) - self.d0,
                    "servers": proc_cpu(self.s) - self.s0}
        self.daemon_minflt = proc_cpu(self.d, minflt=True) - self.f0


def flat(d, prefix="", out=None) -> dict:
    """Every numeric leaf of a stats JSON as 'a.b.c' -> value."""
    out = {} if out is None else out
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            flat(v, key + ".", out)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[key] = v
    return out


def delta(before: dict, after: dict) -> dict:
    a, b = flat(after), flat(before)
    return {k: a[k] - b.get(k, 0) for k in sorted(a) if a[k] - b.get(k, 0)}


# ----------------------------------------------------------------------------- measurements
def mcbench(binaries, servers, op, threads, vsize, nbytes, prefix, server_pids=()) -> dict:
    ops = max(threads, nbytes // vsize)
    cmd = [*prefix, binaries["mcbench"], "--servers", ",".join(servers), "--op", op, "--value-size", str(vsize),
           "--threads", str(threads), "--ops", str(ops)]
    load = fc.loadavg()
    with CpuMeter([], server_pids) as cm:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    rec = next((x for x in lines if x.get("op") == op), None)
    if r.returncode or rec is None or rec["errors"] or rec["bytes"] < ops * vsize:
        raise RuntimeError(procs.failure_message(f"mcbench {op}", r, tail=1200)
                           + (f"; moved {rec['bytes']} of {ops * vsize} B, {rec['errors']} errors" if rec else ""))
    # the `get` run first stores its keys (untimed); only the timed op counts
    return {"mib_s": rec["bytes_per_s"] / MiB, "seconds": rec["seconds"], "bytes": rec["bytes"],
            "value_size": vsize, "threads": threads, "command": cmd, "loadavg": load,
            "loadavg_after": fc.loadavg(), "raw": rec, "cpu": cm.cpu}  # cpu: the get's untimed stores too


def fs_streams(root: Path, stats, op, bs, streams, per_stream, prefix, daemon_pids=(), server_pids=()) -> dict:
    paths = [root / f"s{i}" for i in range(streams)]
    before = stats()
    with CpuMeter(daemon_pids, server_pids) as cm:
        r = fc.run_streams(paths, op, bs, per_stream, prefix=prefix)
    r["counters"] = delta(before, stats())
    r["cpu"] = cm.cpu
    r["daemon_minflt"] = cm.daemon_minflt
    r["loadavg_after"] = fc.loadavg()
    return r


MC_STATS = ("curr_items", "total_items", "bytes", "limit_maxbytes", "evictions", "reclaimed",
            "slab_reassign_evictions_nomem", "slab_reassign_rescues", "expired_unfetched", "evicted_unfetched",
            "curr_connections", "rejected_connections")


def memcached_stats(server: str) -> str:
    """One server's counters that say whether it dropped items (evictions, slab moves without memory,
    expiries) -- what a 'stripe missing' needs beside it; or why they could not be read. The `stats`
    call is mtcwf.standin's (the workflows' stand-in reads the same counters)."""
    from mtcwf.standin import memcached_stats as read_stats

    host, port = server.rsplit(":", 1)
    try:
        got = read_stats(host, int(port))
    except OSError as e:
        return f"{server}: stats unreadable ({e})"
    return f"{server}: " + " ".join(f"{k}={got[k]}" for k in MC_STATS if k in got)


def measure_fs(kind, variant, binaries, servers, T, ops, S, per_stream, base: Path, prefix,
               server_pids=(), memfs_base=()) -> list[dict]:
    """Write (then read back, if asked) S files of per_stream bytes through a fresh mount."""
    mnt = base / f"{kind}-{variant['name']}"
    if kind == "memfs":
        opts = list(variant["memfs"])
        ctx = MemfsMount(binaries["memfs"], servers, [*memfs_base, *opts], mnt, prefix)
    else:  # writes go into populated memory, as a file system recycling its buffers (no page faults timed)
        opts = list(variant["ceiling"])
        ctx = fc.Mount(mnt, ["--prealloc", f"{S}:{per_stream}", *opts], binary=binaries["fuseceiling"],
                       prefix=prefix)
    out = []
    transport = variant.get("transport", DEV)
    with ctx as m:
        stats = m.stats
        for op in ["write", "read"]:
            try:
                r = fs_streams(mnt, stats, op, T, S, per_stream, prefix, [m.proc.pid],
                               server_pids if kind == "memfs" else ())
            except RuntimeError as exc:  # the daemon's own words with the failure
                log = m.output() if kind == "memfs" else m.stderr()
                mc = "; memcached: " + "; ".join(memcached_stats(a) for a in servers) if kind == "memfs" else ""
                raise RuntimeError(f"{kind} {variant['name']} {op} x{S}: {exc}; "
                                   f"daemon log: {log[-1500:]}{mc}") from None
            if op in ops:
                r.update(system=kind, variant=variant["name"], options=opts, transport=transport,
                         base_variant=variant.get("base", variant["name"]),
                         transport_used=transport_used(r["counters"]))
                out.append(r)
        for i in range(S):
            os.unlink(mnt / f"s{i}")
        # the data check (fio/IOR-style): random bytes written in requests of T, read back equal
        check = data_check(mnt, T, None, 0)
        tr = stats().get("transport", {})
        check["transport"] = {k: tr.get(k) for k in ("transport", "ring_reqs", "dev_rw_reqs", "message")}
        for r in out:
            r["check"] = check
    return out


def binaries(cfg: dict) -> dict:
    b = {"memcached": shutil.which("memcached") or "memcached",
         "memfs": os.environ.get("MEMFS_BIN", str(REPO / "systems/memfs/build/memfs")),
         "mcbench": os.environ.get("MCBENCH_BIN", str(REPO / "systems/memfs/build/mcbench")),
         "fuseceiling": os.environ.get("FUSECEILING_BIN", str(fc.BIN))}
    for k in ("memfs", "mcbench", "fuseceiling"):
        if not Path(b[k]).exists():
            raise SystemExit(f"{k} not built: {b[k]} (make -C systems/memfs tools/fuseceiling)")
    return b


def run_job(cfg: dict, rep: int) -> dict:
    g = gap_config(cfg)
    stripe = int(cfg.get("memfs", {}).get("stripe_size", 524288))
    prefix = ["taskset", "-c", g["cpus"]] if g["cpus"] else []
    # raw memcached at MemFS's stripe size and at every other value size asked for (a variant with larger
    # stripes): the limit is the fastest, so it bounds every variant
    values = sorted({stripe, *(size_bytes(v) for v in g["memcached_values"])})
    # ... and at the stripe requests MemFS keeps in flight (its pool: one dd stream still has up to that many
    # gets or sets outstanding; one sequential mcbench thread is latency-bound and no bound for it)
    inflight = int(g.get("memcached_inflight") or cfg.get("memfs", {}).get("threads", 8))
    # the study's MemFS settings (pool size, time-out) under every variant's own options
    mf = cfg.get("memfs", {})
    memfs_base = ["--threads", str(mf.get("threads", 8)), "--timeout-ms", str(mf.get("timeout_ms", 2000))]
    bins = binaries(cfg)
    variants = all_variants(g)
    if any(v["transport"] == URING for v in variants):
        say(fc.enable_uring())  # where root may; the daemons say what they got, the counters show it
    rec = {"experiment": "fusegap", "rep": rep, "host": socket.gethostname(), "nproc": os.cpu_count(),
           "cpus": g["cpus"], "config": g, "stripe_size": stripe, "binaries": bins,
           "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "loadavg_start": fc.loadavg(),
           "measurements": []}
    base = Path(tempfile.mkdtemp(prefix="memfs-fusegap-"))
    try:
        with Services(bins, prefix) as sv:
            sv.start_memcached(int(g["servers"]), int(g["memcached_mem_mb"]))
            rec["servers"] = sv.servers
            k = 0
            for tr in g["transfers"]:
                T, total = size_bytes(tr["size"]), size_bytes(tr["bytes"])
                for S in tr["streams"]:
                    per_stream = total // S // T * T
                    if per_stream < T:
                        raise SystemExit(f"fuse_gap: {tr['bytes']} is less than {S} x {tr['size']}")
                    systems = [("mcbench", None)] + [(kind, v) for v in variants for kind in ("fuseceiling", "memfs")]
                    shift = (rep + k) % len(systems)  # rotate: no system is always measured first
                    k += 1
                    for kind, v in systems[shift:] + systems[:shift]:
                        if kind == "mcbench":
                            rs = []
                            for op in tr["ops"]:
                                tries = [mcbench(bins, sv.servers, "set" if op == "write" else "get", th,
                                                 min(v, per_stream), per_stream * S, prefix,
                                                 [p.pid for p in sv.procs])
                                         for th in sorted({S, max(S, inflight)}) for v in values]
                                same = [t for t in tries if t["threads"] == S]
                                r = max(tries, key=lambda x: x["mib_s"])  # the limit: the fastest
                                r["same_streams_mib_s"] = max(t["mib_s"] for t in same)
                                keep = ("threads", "value_size", "mib_s", "seconds", "loadavg")
                                r["tries"] = [{k: t[k] for k in keep} for t in tries]
                                r.update(system="memcached", variant="", op=op)
                                rs.append(r)
                        else:
                            rs = measure_fs(kind, v, bins, sv.servers, T, tr["ops"], S, per_stream, base, prefix,
                                            [p.pid for p in sv.procs], memfs_base)
                        for r in rs:
                            r.update(transfer=tr["size"], transfer_bytes=T, streams=S, bytes_per_stream=per_stream)
                            rec["measurements"].append(r)
                            say(f"rep {rep} {tr['size']} x{S} {r['op']:5s} {r['system']:11s} {r['variant']:16s} "
                                f"{r['mib_s']:8.1f} MiB/s  load {r['loadavg'][0]:.1f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    rec["loadavg_end"] = fc.loadavg()
    rec["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return rec


# ----------------------------------------------------------------------------- analysis
def _div(a, b):
    return a / b if a is not None and b and not (isinstance(a, float) and math.isnan(a)) else math.nan


def composite(mc: float, ceil: float) -> float:
    """Per-byte costs added (both share the cores): 1/composite = 1/memcached + 1/ceiling."""
    if not mc or not ceil or math.isnan(mc) or math.isnan(ceil):
        return math.nan
    return 1.0 / (1.0 / mc + 1.0 / ceil)


def run_rows(records: list[dict]) -> list[dict]:
    """One row per repeat, transfer, op, streams and variant: MemFS, both limits, composite, ratios, bound."""
    rows = []
    for rec in records:
        ms = rec["measurements"]
        key = lambda m: (m["transfer"], m["op"], m["streams"])  # noqa: E731
        mc = {key(m): m for m in ms if m["system"] == "memcached"}
        ceil = {key(m) + (m["variant"],): m for m in ms if m["system"] == "fuseceiling"}
        # the ceiling of the same options over each transport (issue 30): (base variant, transport)
        ceil_t = {key(m) + (m.get("base_variant", m["variant"]), m.get("transport", DEV)): m
                  for m in ms if m["system"] == "fuseceiling"}
        for m in ms:
            if m["system"] != "memfs":
                continue
            k = key(m)
            lim, c = mc.get(k), ceil.get(k + (m["variant"],))
            mc_bw = lim["mib_s"] if lim else math.nan
            c_bw = c["mib_s"] if c else math.nan
            comp = composite(mc_bw, c_bw)
            by_t = _by_transport(m, lim, mc_bw, {t: ceil_t.get(k + (m.get("base_variant", m["variant"]), t))
                                                 for t in TRANSPORTS})
            loads = [x["loadavg"][0] for x in (m, lim, c) if x] + [x["loadavg_after"][0] for x in (m, lim, c) if x]
            rows.append({
                "rep": rec["rep"], "transfer": m["transfer"], "op": m["op"], "streams": m["streams"],
                "variant": m["variant"], "memfs_options": " ".join(m["options"]),
                "ceiling_options": " ".join(c["options"]) if c else "",
                "memcached_value_size": lim["value_size"] if lim else math.nan,
                "memcached_threads": lim["threads"] if lim else math.nan,
                "memcached_same_streams_mib_s": lim.get("same_streams_mib_s", lim["mib_s"]) if lim else math.nan,
                "bytes": m["bytes"], "memfs_mib_s": m["mib_s"], "memcached_mib_s": mc_bw, "ceiling_mib_s": c_bw,
                "composite_mib_s": comp, "ratio_memcached": _div(m["mib_s"], mc_bw),
                "ratio_ceiling": _div(m["mib_s"], c_bw), "ratio_composite": _div(m["mib_s"], comp),
                "bound": ("memcached" if mc_bw < c_bw else "FUSE ceiling") if mc_bw == mc_bw and c_bw == c_bw else "",
                "load_min": min(loads), "load_max": max(loads), "host": rec["host"], "nproc": rec["nproc"],
                "cpus": rec["cpus"], "started_at": rec["started_at"],
                "memfs_fuse_write_kib": _req_kib(m, "write"), "memfs_fuse_read_kib": _req_kib(m, "read"),
                "ceiling_request_kib": _ceil_kib(c, m["op"]) if c else math.nan,
                "ratio_pipelined": _div(m["mib_s"], min(mc_bw, c_bw)),
                **_cpu_cols(m, lim, c),
                **by_t,
            })
    return rows


def _check_state(*ms) -> str:
    """ok / failed from the data checks of the measurements (their mounts); "" when none was checked
    (raw files from before issue 30)."""
    checks = [x["check"] for x in ms if x and x.get("check")]
    if not checks:
        return ""
    return "ok" if all(c.get("ok") for c in checks) else "failed"


def _transport_state(*ms) -> str:
    """ok when every measurement asked for io_uring went through the ring; else which did not."""
    bad = [f"{x['system']} {x.get('transport_used', '?')}" for x in ms
           if x and x.get("transport", DEV) == URING and x.get("transport_used") != URING]
    return "not used: " + ", ".join(bad) if bad else "ok"


def _by_transport(m, lim, mc_bw, ceils: dict) -> dict:
    """MemFS against the ceiling of its options over each transport and the composite each gives."""
    out = {"transport": m.get("transport", DEV), "base_variant": m.get("base_variant", m["variant"]),
           "data_check": _check_state(m, ceils.get(m.get("transport", DEV))),
           "transport_check": _transport_state(m, ceils.get(m.get("transport", DEV)))}
    for t, c in ceils.items():
        tk = t.replace("-", "_")
        c_bw = c["mib_s"] if c else math.nan
        comp = composite(mc_bw, c_bw)
        out.update({f"ceiling_{tk}_mib_s": c_bw, f"composite_{tk}_mib_s": comp,
                    f"ratio_ceiling_{tk}": _div(m["mib_s"], c_bw), f"ratio_composite_{tk}": _div(m["mib_s"], comp),
                    f"bound_{tk}": ("memcached" if mc_bw < c_bw else f"FUSE ceiling ({t})")
                    if mc_bw == mc_bw and c_bw == c_bw else "",
                    f"ceiling_{tk}_check": _check_state(c) if c else "",
                    f"ceiling_{tk}_transport_check": _transport_state(c) if c else ""})
    return out


def _cpu_per_gib(m, parts) -> float:
    cpu = m.get("cpu") if m else None
    if not cpu or not m.get("bytes"):
        return math.nan
    return sum(cpu[p] for p in parts) / (m["bytes"] / (1 << 30))


def _cpu_cols(m, lim, c) -> dict:
    """CPU seconds per GiB moved: MemFS (dd + daemon + memcached servers), the ceiling (dd + daemon), raw
    memcached (mcbench + servers); their sum is what the composite assumes MemFS spends."""
    out = {"memfs_cpu_s_per_gib": _cpu_per_gib(m, ("client", "daemon", "servers")),
           "memfs_daemon_cpu_s_per_gib": _cpu_per_gib(m, ("daemon",)),
           "ceiling_cpu_s_per_gib": _cpu_per_gib(c, ("client", "daemon")),
           "memcached_cpu_s_per_gib": _cpu_per_gib(lim, ("client", "servers"))}
    out["composite_cpu_s_per_gib"] = out["ceiling_cpu_s_per_gib"] + out["memcached_cpu_s_per_gib"]
    out["memfs_extra_cpu_s_per_gib"] = out["memfs_cpu_s_per_gib"] - out["composite_cpu_s_per_gib"]
    out["memfs_daemon_faults_per_gib"] = _div(m.get("daemon_minflt", math.nan), m["bytes"] / (1 << 30))
    return out


def _req_kib(m, op) -> float:
    c = m.get("counters", {})
    key = "io.bytes_written" if op == "write" else "io.bytes_read"
    calls = "io.write_calls" if op == "write" else "io.read_calls"
    return _div(c.get(key, math.nan), c.get(calls, 0)) / 1024 if m["op"] == op else math.nan


def _ceil_kib(c, op) -> float:
    k = c.get("counters", {})
    return _div(k.get(f"{op}_bytes", math.nan), k.get(f"{op}_reqs", 0)) / 1024


COMPOSITE, PIPELINED = "composite", "pipelined"


def limit_used(ratios: dict[str, list[float]]) -> str:
    """The composite (costs added) is MemFS's limit when both stages compete for the same cores. Where MemFS
    beats it in a repeat (with one stream neither limit fills the cores, and MemFS overlaps its FUSE path with
    its memcached round trips), the costs did not add: the limit is then the slower stage alone
    (``pipelined``: min(memcached, ceiling)), which nothing can beat."""
    comp = [r for r in ratios.get(COMPOSITE, []) if r == r]
    return PIPELINED if any(r > VALID_MAX for r in comp) else COMPOSITE


def verdict(ratios: dict[str, list[float]], transfer: str) -> tuple[str, str]:
    """(verdict, why): measurement error if any repeat's ratio to memcached, to the ceiling or to the limit in
    use (limit_used) is above 1.0; else met / not met (median >= 0.8 of that limit) for the target sizes,
    'no target' for the others."""
    used = limit_used(ratios)
    names = ("memcached", "ceiling", used)
    above = [f"{name} {r:.2f}" for name in names for r in ratios.get(name, []) if r == r and r > VALID_MAX]
    lim = [r for r in ratios.get(used, []) if r == r]
    if not lim:
        return NOT_RUN, ""
    if above:
        return MEASUREMENT_ERROR, "above 1.0: " + ", ".join(above)
    if transfer not in TARGET_SIZES:
        return INFO, ""
    return (MET if statistics.median(lim) >= TARGET else NOT_MET), ""


def _mmm(xs):
    xs = [x for x in xs if x == x]
    return (min(xs), statistics.median(xs), max(xs)) if xs else (math.nan,) * 3


def gap_table(rows: list[dict]) -> list[dict]:
    """Per transfer, op, streams and variant: min/median/max over the repeats, what bounds it, the verdict."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["transfer"], r["op"], r["streams"], r["variant"]), []).append(r)
    out = []
    for (tr, op, s, var), rs in groups.items():
        ratios = {n: [r[f"ratio_{n}"] for r in rs] for n in ("memcached", "ceiling", "composite", "pipelined")}
        v, why = verdict(ratios, tr)
        used = limit_used(ratios)
        failed = [f"rep {r['rep']}" for r in rs if r.get("data_check") == "failed"]
        unused = [f"rep {r['rep']} {r['transport_check']}" for r in rs if r.get("transport_check", "ok") != "ok"]
        if failed:  # bytes read back differ from those written: no speed of it is a result
            v, why = CHECK_FAILED, "read back differs: " + ", ".join(failed)
        elif unused:  # asked for io_uring, served through /dev/fuse: not the variant
            v, why = NOT_USED, "; ".join(unused)
        bad = v in (MEASUREMENT_ERROR, CHECK_FAILED, NOT_USED)
        thr = sorted({r["memcached_threads"] for r in rs if r["memcached_threads"] == r["memcached_threads"]})
        row = {"path": op, "streams": s, "transfer": tr, "variant": var, "reps": len(rs),
               "memcached_threads": "/".join(str(int(t)) for t in thr),
               "memcached_value_size": rs[0]["memcached_value_size"],
               "memfs_options": rs[0]["memfs_options"], "ceiling_options": rs[0]["ceiling_options"]}
        for col in ("memfs_mib_s", "memcached_mib_s", "memcached_same_streams_mib_s", "ceiling_mib_s",
                    "composite_mib_s"):
            lo, med, hi = _mmm([r[col] for r in rs])
            row.update({f"{col}_min": lo, f"{col}_median": med, f"{col}_max": hi})
        for n in ("memcached", "ceiling", "composite", "pipelined"):
            lo, med, hi = _mmm(ratios[n])
            row.update({f"ratio_{n}_min": math.nan if bad else lo, f"ratio_{n}_median": math.nan if bad else med,
                        f"ratio_{n}_max": math.nan if bad else hi})
        bounds = [r["bound"] for r in rs if r["bound"]]
        row["bound"] = max(set(bounds), key=bounds.count) if bounds else ""
        row["bound_reps"] = f"{bounds.count(row['bound'])}/{len(rs)}" if bounds else ""
        lo, med, hi = _mmm(ratios[used])
        row.update({"limit_used": used, "ratio_limit_min": math.nan if bad else lo,
                    "ratio_limit_median": math.nan if bad else med, "ratio_limit_max": math.nan if bad else hi})
        for col in ("memfs_cpu_s_per_gib", "memfs_daemon_cpu_s_per_gib", "ceiling_cpu_s_per_gib",
                    "memcached_cpu_s_per_gib", "composite_cpu_s_per_gib", "memfs_extra_cpu_s_per_gib",
                    "memfs_daemon_faults_per_gib"):
            row[col] = _mmm([r.get(col, math.nan) for r in rs])[1]
        checks = {r.get("data_check", "") for r in rs}
        row.update({"transport": rs[0].get("transport", DEV), "base_variant": rs[0].get("base_variant", var),
                    "data_check": "failed" if "failed" in checks else "ok" if checks == {"ok"} else
                    "not checked" if checks == {""} else "partly checked"})
        for t in TRANSPORTS:  # both ceilings of the same options, the composites they give, MemFS's ratios
            tk = t.replace("-", "_")
            for col in (f"ceiling_{tk}_mib_s", f"composite_{tk}_mib_s"):
                row[f"{col}_median"] = _mmm([r.get(col, math.nan) for r in rs])[1]
            for col in (f"ratio_ceiling_{tk}", f"ratio_composite_{tk}"):
                lo, med, hi = _mmm([r.get(col, math.nan) for r in rs])
                row.update({f"{col}_min": math.nan if bad else lo, f"{col}_median": math.nan if bad else med,
                            f"{col}_max": math.nan if bad else hi})
            bs = [r.get(f"bound_{tk}", "") for r in rs if r.get(f"bound_{tk}")]
            row[f"bound_{tk}"] = max(set(bs), key=bs.count) if bs else ""
        row.update({"verdict": v, "target": f">= {TARGET:g}x the limit in use (median)" if tr in TARGET_SIZES else "",
                    "invalid_ratios": why,
                    "memfs_request_kib": _mmm([r["memfs_fuse_write_kib" if op == "write" else "memfs_fuse_read_kib"]
                                               for r in rs])[1],
                    "ceiling_request_kib": _mmm([r["ceiling_request_kib"] for r in rs])[1],
                    "load_min": min(r["load_min"] for r in rs), "load_max": max(r["load_max"] for r in rs),
                    "nproc": rs[0]["nproc"], "cpus": rs[0]["cpus"]})
        out.append(row)
    order = {"write": 0, "read": 1}
    out.sort(key=lambda r: (size_bytes(r["transfer"]) * -1, order.get(r["path"], 9), r["streams"], r["variant"]))
    return out


def _fmt(v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return f"{v:.3g}" if abs(v) < 10 else f"{v:.0f}"
    return str(v)


def write_csv(rows: list[dict], path: str) -> None:
    import csv
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    cols = list(rows[0]) if rows else ["path"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()})


MD_COLS = ["path", "streams", "transfer", "variant", "reps", "memcached_mib_s_median", "ceiling_mib_s_median",
           "composite_mib_s_median", "memfs_mib_s_median", "ratio_memcached_median", "ratio_ceiling_median",
           "ratio_composite_median", "limit_used", "ratio_limit_min", "ratio_limit_median", "ratio_limit_max",
           "bound", "verdict", "memfs_cpu_s_per_gib", "composite_cpu_s_per_gib", "load_min", "load_max"]


# issue 30: every row against both ceilings of its options (over /dev/fuse and over io_uring)
MD_TRANSPORT_COLS = ["path", "streams", "transfer", "variant", "transport", "reps", "memfs_mib_s_median",
                     "memcached_mib_s_median", "ceiling_dev_fuse_mib_s_median", "ceiling_io_uring_mib_s_median",
                     "composite_dev_fuse_mib_s_median", "composite_io_uring_mib_s_median",
                     "ratio_composite_dev_fuse_median", "ratio_composite_io_uring_median", "bound_dev_fuse",
                     "bound_io_uring", "data_check", "verdict", "load_min", "load_max"]


def _md_table(table: list[dict], cols: list[str]) -> list[str]:
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in table:
        lines.append("| " + " | ".join(_fmt(r.get(c, "")) for c in cols) + " |")
    return lines


def write_md(table: list[dict], path: str) -> None:
    lines = _md_table(table, MD_COLS)
    if any(r.get("transport") == URING for r in table):
        lines += ["", "Over both transports (issue 30): the ceiling of each row's options over /dev/fuse and over "
                  "FUSE-over-io_uring, the composite each gives with raw memcached, MemFS's median ratio to each "
                  "and what bounds it; the verdict is against the composite of the row's own transport.", "",
                  *_md_table(table, MD_TRANSPORT_COLS)]
    Path(path).write_text("\n".join(lines) + "\n")


# ----------------------------------------------------------------------------- the run contract
RUN = runner.Experiments("memfs")


@RUN.experiment("fusegap", own_format=True)
def fusegap_run(ctx: runner.Context) -> dict:
    """One repeat (--rep) on this host (run_job); its raw file is the study's own fusegap record (not
    repro.raw/1: the table reads its measurements). A failure (a daemon or a tool that failed, with the
    daemon's log tail, memcached's drop counters and the load) is a repro.raw/1 failure record (issue 27),
    params {"rep": R}, its kind classified from the message."""
    ctx.record(params={"rep": ctx.rep})  # the failure record's
    say(f"fusegap rep {ctx.rep} -> {ctx.out} (load {fc.loadavg()})")
    try:
        return run_job(ctx.cfg, ctx.rep)
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        raise runner.RunFailed(str(exc).strip() or repr(exc)) from None


def main(argv=None) -> int:
    """``fusegap --config ... --rep R --out RAW`` (repro.runner: one repeat), or ``table RAW... --runs ...``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] != ["table"]:
        return RUN.main(argv)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cmd", choices=["table"])
    ap.add_argument("raw", nargs="*")
    ap.add_argument("--runs", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--md", default="")
    a = ap.parse_args(argv)
    recs = [json.loads(Path(p).read_text()) for p in a.raw if Path(p).exists()]
    rows = run_rows(recs)
    tab = gap_table(rows)
    write_csv(rows, a.runs)
    write_csv(tab, a.table)
    if a.md:
        write_md(tab, a.md)
    for row in tab:
        print(" ".join(f"{c}={_fmt(row[c])}" for c in MD_COLS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
