#!/usr/bin/env python3
"""Sequential write/read bandwidth of one 128 MiB file through one MemFS
mount over N local memcached servers, vs. raw libmemcached set/get bandwidth
(mcbench) with the same value size (= stripe size) and thread count.

Writes go through mount A (dd if=/dev/zero bs=1M, timed until close()
returns, i.e. all stripes stored and metadata published); reads go through a
second mount B (dd of=/dev/null bs=1M), so no page cache of the writer is
involved.  Each repetition then runs mcbench set and get moving the same
volume (file size / stripe size values, same thread count), so that MemFS and
raw memcached are measured back to back under the same machine load.  Prints
one JSON line per repetition, a steady-state mcbench line per op (--seconds),
a summary JSON line (medians; ratios are medians of per-repetition ratios)
and a one-line human summary on stderr.

usage: measure_bandwidth.py [--servers 2] [--size-mib 128] [--stripe 524288]
                            [--threads 8] [--reps 5] [--mcbench-seconds 5]
                            [--write-bs 1048576] [--memfs-args "--writeback-cache"]
--write-bs: dd's block size for the write (4096 = the study's iozone 4 KiB records).
"""
import argparse
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from systems.mtc import netns  # the shared mount and process helpers (the project's Python path)
from tools.common import free_port, port_taken_by_another  # the tree's one

HERE = Path(__file__).resolve().parent
BUILD = Path(os.environ.get("MEMFS_BUILD", HERE.parent / "build"))  # another build: MEMFS_BUILD=dir


def start_memcached(mem_mb, item_max, tries=5):
    """One memcached of this run's own: a port that answers counts only when the server there is the
    one started here (tools.common.port_taken_by_another) -- another job's memcached may bind the port
    between free_port() and ours, which then exits; another port is tried, up to `tries` times."""
    taken = []
    for _ in range(tries):
        port = free_port()
        cmd = ["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", str(mem_mb),
               "-I", item_max, "-M", "-t", "2", "-c", "4096"]
        if os.geteuid() == 0:
            cmd += ["-u", "root"]
        err = tempfile.TemporaryFile()  # its stderr, for the failure message
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        for _ in range(250):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if p.poll() is not None:
                    err.seek(0)
                    tail = err.read().decode(errors="replace").strip()[-1000:]
                    raise RuntimeError(f"memcached exited at start (status {p.returncode}) on 127.0.0.1:{port}: "
                                       + (tail or "(no output)"))
                time.sleep(0.02)
        else:
            p.kill()
            p.wait()
            raise RuntimeError(f"memcached did not answer on 127.0.0.1:{port} within 5 s")
        why = port_taken_by_another("127.0.0.1", port, p)
        if not why:
            return p, f"127.0.0.1:{port}"
        taken.append(why)
        print(f"memcached on port {port} not ours: {why}; another port", file=sys.stderr, flush=True)
        if p.poll() is None:
            p.kill()
        p.wait()
    raise RuntimeError(f"memcached: {tries} ports in a row were taken by other processes: " + "; ".join(taken))


is_mounted = netns.in_mountinfo


def mount(servers, path, args):
    os.makedirs(path, exist_ok=True)
    log = open(path + ".log", "w")
    p = subprocess.Popen([str(BUILD / "memfs"), "--servers", servers, *args, "-f", path],
                         stdout=log, stderr=subprocess.STDOUT)
    for _ in range(500):
        if is_mounted(path):
            return p
        if p.poll() is not None:
            raise RuntimeError(open(path + ".log").read())
        time.sleep(0.02)
    raise RuntimeError("mount timeout")


def unmount(p, path):
    if is_mounted(path):
        subprocess.run(["fusermount3", "-u", path], capture_output=True)
        if is_mounted(path):
            subprocess.run(["fusermount3", "-u", "-z", path], capture_output=True)
    netns.wait_or_kill(p, 10)


TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pids):
    """user+system CPU seconds of running processes"""
    tot = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        tot += int(fields[11]) + int(fields[12])
    return tot / TCK


def proc_cpu_split(pid):
    """(user, system) CPU seconds of one running process"""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / TCK, int(fields[12]) / TCK


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Cpu:
    """CPU seconds used during a block by: 'client' (given daemon pids +
    waited-for children such as dd/mcbench) and 'server' (memcached pids)."""

    def __init__(self, client_pids, server_pids):
        self.cp, self.sp = client_pids, server_pids

    def __enter__(self):
        self.c0 = proc_cpu(self.cp) + children_cpu()
        self.s0 = proc_cpu(self.sp)
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.t0
        self.client = proc_cpu(self.cp) + children_cpu() - self.c0
        self.server = proc_cpu(self.sp) - self.s0


def read_stats(mnt):
    with open(os.path.join(mnt, ".memfs-stats")) as f:
        return json.load(f)


def reset_stats(mnt):
    with open(os.path.join(mnt, ".memfs-stats"), "w") as f:
        f.write("reset\n")


BREAKDOWN_GROUPS = ("fuse_read", "fuse_write", "copy", "mc_rtt", "pool", "wait", "lock", "daemon")


def breakdown(st):
    """The per-request groups of a stats snapshot (absent in older builds)."""
    return {g: st[g] for g in BREAKDOWN_GROUPS if g in st}


def timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t


def med_counters(snaps):
    out = {}
    for g in BREAKDOWN_GROUPS:
        if snaps and g in snaps[0]:
            out[g] = {k: statistics.median(s[g][k] for s in snaps) for k in snaps[0][g]}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--servers", type=int, default=2)
    ap.add_argument("--size-mib", type=int, default=128)
    ap.add_argument("--stripe", type=int, default=524288)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--mcbench-seconds", type=float, default=5)
    ap.add_argument("--memfs-args", default="",
                    help="extra memfs arguments for both mounts (e.g. a variant's options)")
    ap.add_argument("--write-bs", type=int, default=1 << 20,
                    help="dd block size of the write, bytes (must divide the file size)")
    a = ap.parse_args()
    if a.write_bs <= 0 or (a.size_mib << 20) % a.write_bs:
        ap.error(f"--write-bs {a.write_bs} does not divide --size-mib {a.size_mib} MiB")
    size = a.size_mib << 20
    tmp = tempfile.mkdtemp(prefix="memfs-bw-")
    procs, mounts = [], []
    try:
        # each server holds (reps * size / servers) plus slack
        mem = max(256, int(a.reps * a.size_mib / a.servers * 1.5) + 128)
        item_max = f"{max(1, (2 * a.stripe) >> 20)}m"
        specs = []
        for _ in range(a.servers):
            p, spec = start_memcached(mem, item_max)
            procs.append(p)
            specs.append(spec)
        servers = ",".join(specs)
        margs = ["--stripe-size", str(a.stripe), "--threads", str(a.threads), *a.memfs_args.split()]
        A, B = os.path.join(tmp, "A"), os.path.join(tmp, "B")
        mounts.append((mount(servers, A, margs), A))
        mounts.append((mount(servers, B, margs), B))
        nops = size // a.stripe

        def mcbench(op, **kw):
            extra = [f"--{k}" if v is True else f"--{k}={v}" for k, v in kw.items()]
            r = subprocess.run([str(BUILD / "mcbench"), "--servers", servers, "--op", op,
                                "--value-size", str(a.stripe), "--threads", str(a.threads),
                                *sum((x.split("=", 1) for x in extra), [])],
                               capture_output=True, text=True, check=True)
            return json.loads(r.stdout)

        # Interleaved: the machine's load varies, so each repetition measures
        # MemFS and raw memcached moving the same volume back to back.
        wr, rd, rs, rg = [], [], [], []
        cpu = {k: [] for k in ("write", "read", "set", "get")}
        spids = [p.pid for p in procs]
        pa, pb = mounts[0][0].pid, mounts[1][0].pid
        gib = size / (1 << 30)
        load_start = os.getloadavg()[0]
        bd_w, bd_r = [], []
        for i in range(a.reps):
            f = f"f{i}"
            reset_stats(A)
            u0 = proc_cpu_split(pa)
            with Cpu([pa], spids) as c:
                subprocess.run(["dd", "if=/dev/zero", f"of={A}/{f}", f"bs={a.write_bs}",
                                f"count={size // a.write_bs}"], check=True, capture_output=True)
            u1 = proc_cpu_split(pa)
            wr.append(size / c.wall)
            bd_w.append(breakdown(read_stats(A)))
            bd_w[-1]["daemon"] = {"wall_s": c.wall, "user_s": u1[0] - u0[0], "sys_s": u1[1] - u0[1]}
            cpu["write"].append((c.client / gib, c.server / gib))
            assert os.path.getsize(f"{B}/{f}") == size
            reset_stats(B)
            u0 = proc_cpu_split(pb)
            with Cpu([pb], spids) as c:
                subprocess.run(["dd", f"if={B}/{f}", "of=/dev/null", "bs=1M"],
                               check=True, capture_output=True)
            u1 = proc_cpu_split(pb)
            rd.append(size / c.wall)
            bd_r.append(breakdown(read_stats(B)))
            bd_r[-1]["daemon"] = {"wall_s": c.wall, "user_s": u1[0] - u0[0], "sys_s": u1[1] - u0[1]}
            cpu["read"].append((c.client / gib, c.server / gib))
            for op, lst in (("set", rs), ("get", rg)):
                with Cpu([], spids) as c:
                    j = mcbench(op, ops=nops)
                lst.append(j["bytes_per_s"])
                cpu[op].append((c.client / gib, c.server / gib))  # incl. untimed setup
            print(json.dumps({"rep": i, "memfs_write": wr[-1], "memfs_read": rd[-1],
                              "raw_set": rs[-1], "raw_get": rg[-1],
                              "breakdown_write": bd_w[-1], "breakdown_read": bd_r[-1]}), flush=True)
        steady = {op: mcbench(op, seconds=a.mcbench_seconds) for op in ("set", "get")}
        for op in ("set", "get"):
            print(json.dumps(steady[op]))
        med = statistics.median
        res = {
            "file_bytes": size, "servers": a.servers, "stripe_size": a.stripe,
            "threads": a.threads, "reps": a.reps, "write_bs": a.write_bs,
            "memfs_write_bytes_per_s": med(wr), "memfs_read_bytes_per_s": med(rd),
            "raw_set_bytes_per_s": med(rs), "raw_get_bytes_per_s": med(rg),
            "write_fraction_of_raw_set": med([w / r for w, r in zip(wr, rs)]),
            "read_fraction_of_raw_get": med([x / r for x, r in zip(rd, rg)]),
            "raw_set_steady_bytes_per_s": steady["set"]["bytes_per_s"],
            "raw_get_steady_bytes_per_s": steady["get"]["bytes_per_s"],
            "loadavg_1min_start": load_start,
            "loadavg_1min_end": os.getloadavg()[0],
            "margs": margs,
            # per-request breakdown, medians over repetitions of each counter
            "breakdown_write": med_counters(bd_w), "breakdown_read": med_counters(bd_r),
            # CPU seconds per GiB moved (median): client = memfs daemon + dd,
            # or mcbench (including its untimed key population for get);
            # server = both memcached processes
            "cpu_s_per_gib": {k: {"client": med([x[0] for x in v]),
                                  "server": med([x[1] for x in v])}
                              for k, v in cpu.items()},
        }
        print(json.dumps(res))
        mib = 1 << 20
        print(f"MemFS write {res['memfs_write_bytes_per_s'] / mib:.0f} MiB/s, "
              f"raw set {res['raw_set_bytes_per_s'] / mib:.0f} MiB/s "
              f"(ratio {res['write_fraction_of_raw_set']:.2f}); "
              f"MemFS read {res['memfs_read_bytes_per_s'] / mib:.0f} MiB/s, "
              f"raw get {res['raw_get_bytes_per_s'] / mib:.0f} MiB/s "
              f"(ratio {res['read_fraction_of_raw_get']:.2f}); medians of {a.reps}, "
              f"load {res['loadavg_1min_end']:.1f}", file=sys.stderr)
    finally:
        for p, path in reversed(mounts):
            unmount(p, path)
        for p in procs:
            p.send_signal(signal.SIGKILL)
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
