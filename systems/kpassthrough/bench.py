#!/usr/bin/env python3
"""kpassthrough benchmark (ours, beyond the paper): one file from a hot page cache, read by
`dd bs=1M of=/dev/null`, by `dd bs=32K` (sha256sum's read size, without the hashing) and by
`sha256sum`, natively and through FUSE:

  native            the source file itself
  kernel            kpassthrough --passthrough kernel (Linux kernel FUSE passthrough)
  off               kpassthrough --passthrough off (the same server answering every READ: pread)
  libfuse-userspace mpifuse --mode passthrough, 1 rank (libfuse 3.14, pread per READ) -- the
                    user-space passthrough of the mpifuse study; not run when its binary is absent

Every (variant, tool) pair is measured --repeats times, interleaved (one round = every pair,
the variant order rotated each round), with the load average before and after each measurement.
The raw JSON keeps every measurement; the summary prints min/median/max GB/s and the ratio of
the medians to native (throughput: native seconds / variant seconds). The machine may be shared:
the load averages say how busy it was.

  python3 -m systems.kpassthrough.bench [--size-mib 256] [--repeats 5] [--dir DIR] [--out FILE]
  python3 -m systems.kpassthrough.bench --report RAW.json...   (markdown table from raw files)
"""
import argparse
import hashlib
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time

from systems.kpassthrough import hostinfo  # the project's Python path (workflow/pythonpath.txt)
from systems.kpassthrough.hostinfo import cpu_s, mounted

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
KP = os.path.join(HERE, "build", "kpassthrough")
MPIFUSE = os.path.join(ROOT, "systems", "mpifuse", "build", "mpifuse")
MPI_ENV_SH = os.path.join(ROOT, "workflow", "scripts", "mpi-env.sh")
MIB = 1 << 20
DD_RE = re.compile(r"^(\d+) bytes .* copied, ([0-9.e+-]+) s,", re.M)


def wait_mount(proc, mp, what, timeout=60, ready=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if mounted(mp) and (ready is None or ready()):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited ({proc.returncode}) before mounting")
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not mount within {timeout} s")


def unmount(proc, mp):
    hostinfo.unmount(proc, mp, grace=30)


class KpMount:
    def __init__(self, mode, src, mp, workdir):
        self.mode, self.mp = mode, mp
        self.stats = os.path.join(workdir, f"kp-{mode}.stats.json")
        self.logf = open(os.path.join(workdir, f"kp-{mode}.log"), "wb")
        os.makedirs(mp, exist_ok=True)
        self.proc = subprocess.Popen([KP, src, mp, "--passthrough", mode, "--stats", self.stats],
                                     stdout=self.logf, stderr=subprocess.STDOUT)

        def ready():
            try:
                with open(self.stats) as f:
                    return json.load(f)["state"] == "ready"
            except (OSError, ValueError):
                return False
        wait_mount(self.proc, mp, f"kpassthrough --passthrough {mode}", ready=ready)

    def ops(self):
        before = os.stat(self.stats).st_mtime_ns
        self.proc.send_signal(signal.SIGUSR1)
        for _ in range(500):
            if os.stat(self.stats).st_mtime_ns != before:
                with open(self.stats) as f:
                    return json.load(f)
            time.sleep(0.01)
        return None

    def close(self):
        unmount(self.proc, self.mp)
        self.logf.close()


def with_mpi_env(argv, base=None):
    """(argv, env) running argv after sourcing workflow/scripts/mpi-env.sh (the one copy of the
    Open MPI settings, a shell file as mpifuse's bench scripts source it) for one host with UCX
    over shared memory: REPRO_SINGLE_HOST=1 REPRO_MPI_SHM=1, transports set before not kept."""
    env = dict(os.environ if base is None else base)
    for k in ("UCX_TLS", "UCX_NET_DEVICES"):
        env.pop(k, None)
    env.update(REPRO_SINGLE_HOST="1", REPRO_MPI_SHM="1")
    return ["bash", "-c", '. "$0" && exec "$@"', MPI_ENV_SH, *argv], env


class MpifuseMount:
    def __init__(self, src, mp, workdir):
        self.mp = mp
        os.makedirs(mp, exist_ok=True)
        self.logf = open(os.path.join(workdir, "mpifuse.log"), "wb")
        argv, env = with_mpi_env(["mpirun", "-n", "1", "--oversubscribe", MPIFUSE, "--mode", "passthrough",
                                  "--mount-template", mp, src])
        self.proc = subprocess.Popen(argv, stdout=self.logf, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        wait_mount(self.proc, mp, "mpirun mpifuse --mode passthrough")

    def ops(self):
        return None

    def close(self):
        unmount(self.proc, self.mp)
        self.logf.close()


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


TOOLS = ("dd", "dd32k", "sha256sum")  # dd32k: dd with sha256sum's read size (coreutils 9.1: 32 KiB)


def run_dd(path, bs="1M"):
    la0, c0 = os.getloadavg(), child_cpu()
    t0 = time.perf_counter()
    r = subprocess.run(["dd", f"if={path}", "of=/dev/null", f"bs={bs}"], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    la1, cpu = os.getloadavg(), child_cpu() - c0
    m = DD_RE.search(r.stderr)
    ok = r.returncode == 0 and m is not None
    return {"ok": ok, "bs": bs, "wall_s": wall, "seconds": float(m.group(2)) if m else None,
            "bytes": int(m.group(1)) if m else None, "cpu_s": cpu, "load_start": la0, "load_end": la1,
            "stderr": None if ok else r.stderr[-500:]}


def run_sha(path, want):
    la0, c0 = os.getloadavg(), child_cpu()
    t0 = time.perf_counter()
    r = subprocess.run(["sha256sum", path], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    la1, cpu = os.getloadavg(), child_cpu() - c0
    got = r.stdout.split()[0] if r.returncode == 0 and r.stdout else None
    return {"ok": got == want, "wall_s": wall, "seconds": wall, "sha256": got, "cpu_s": cpu,
            "load_start": la0, "load_end": la1, "stderr": None if got == want else r.stderr[-500:]}


def summarize(raw, size):
    rows = []
    native = {}
    tools = [t for t in TOOLS if any(m["tool"] == t for m in raw["measurements"])]
    for tool in tools:
        for v in raw["variants"]:
            name = v["name"]
            ms = [m for m in raw["measurements"] if m["variant"] == name and m["tool"] == tool]
            good = [m["seconds"] for m in ms if m["ok"]]
            row = {"variant": name, "tool": tool, "n": len(good), "failed": len(ms) - len(good),
                   "status": v["status"]}
            if good and len(good) == len(ms):
                gbps = sorted(size / s / 1e9 for s in good)
                med_s = statistics.median(good)
                cpus = [m.get("cpu_s") for m in ms]
                row.update(min_gbps=gbps[0], median_gbps=statistics.median(gbps), max_gbps=gbps[-1],
                           median_s=med_s,
                           median_cpu_s=statistics.median(cpus) if None not in cpus else None,
                           median_load=statistics.median(m["load_start"][0] for m in ms))
                if name == "native":
                    native[tool] = (med_s, row["median_cpu_s"])
            rows.append(row)
    # paired: native and the variant measured in the same round (minutes apart at most), the
    # ratio per round, then its median -- steadier than a ratio of medians when the load drifts
    rounds = {}
    for m in raw["measurements"]:
        if "round" in m:
            rounds.setdefault((m["tool"], m["round"]), {})[m["variant"]] = m
    for row in rows:
        if "median_s" not in row:
            continue
        t, c = [], []
        for (tool, _), by in rounds.items():
            nat, var = by.get("native"), by.get(row["variant"])
            if tool != row["tool"] or not nat or not var or not (nat["ok"] and var["ok"]):
                continue
            t.append(nat["seconds"] / var["seconds"])
            if nat.get("cpu_s") and var.get("cpu_s"):
                c.append(nat["cpu_s"] / var["cpu_s"])
        if t:
            row["paired_ratio_to_native"] = statistics.median(t)
            row["paired_ratio_range"] = [min(t), max(t)]
        if c:
            row["paired_cpu_ratio_to_native"] = statistics.median(c)
    for row in rows:
        n = native.get(row["tool"])
        if n and "median_s" in row:
            row["ratio_to_native"] = n[0] / row["median_s"]
            row["time_overhead_pct"] = (row["median_s"] / n[0] - 1) * 100
            # the reader's own CPU (user + sys of dd / sha256sum; a FUSE server's CPU is not in it)
            row["cpu_ratio_to_native"] = n[1] / row["median_cpu_s"] if n[1] and row["median_cpu_s"] else None
    return rows


def report(paths):
    """A markdown table of the summaries of raw files (the README's table is this output)."""
    def f(x, fmt):
        return format(x, fmt) if isinstance(x, (int, float)) else "—"
    raws = []
    for p in paths:
        with open(p) as fh:
            raws.append(json.load(fh))
    # compact: the per-round-pair medians, one line per run
    print("| run (UTC), rounds, load | dd: kernel | dd: off | dd: libfuse | sha256sum: kernel | sha256sum: off "
          "| sha256sum: libfuse | kernel reader CPU dd / sha256sum |")
    print("|---|---|---|---|---|---|---|---|")
    for raw in raws:
        rows = {(x["variant"], x["tool"]): x for x in summarize(raw, raw["file_bytes"])}

        def c(v, t, key="paired_ratio_to_native"):
            return f((rows.get((v, t)) or {}).get(key), ".2f")
        loads = [m["load_start"][0] for m in raw["measurements"]]
        print(f"| {raw['started_utc'][11:16]}, {raw['repeats']}, {min(loads):.0f}–{max(loads):.0f} | "
              + " | ".join(c(v, t) for t in ("dd", "sha256sum") for v in ("kernel", "off", "libfuse-userspace"))
              + f" | {c('kernel', 'dd', 'paired_cpu_ratio_to_native')} / "
              f"{c('kernel', 'sha256sum', 'paired_cpu_ratio_to_native')} |")
    print()
    print("| run (start, UTC) | tool | variant | GB/s min / median / max | × native (ratio of medians) "
          "| time vs native | × native, per-round pairs: median [min–max] | reader CPU × native (pairs) "
          "| load |")
    print("|---|---|---|---|---|---|---|---|---|")
    for raw in raws:
        # recomputed from the measurements, not copied from the file's own summary
        for row in summarize(raw, raw["file_bytes"]):
            if "median_gbps" not in row:
                print(f"| {raw['started_utc']} | {row['tool']} | {row['variant']} | {row['status']} | | | | | |")
                continue
            print(f"| {raw['started_utc']} | {row['tool']} | {row['variant']} | {row['min_gbps']:.3f} / "
                  f"{row['median_gbps']:.3f} / {row['max_gbps']:.3f} | {f(row.get('ratio_to_native'), '.2f')} | "
                  f"{f(row.get('time_overhead_pct'), '+.0f')} % | {f(row.get('paired_ratio_to_native'), '.2f')}"
                  + (" [{:.2f}–{:.2f}]".format(*row["paired_ratio_range"]) if "paired_ratio_range" in row else "")
                  + f" | {f(row.get('paired_cpu_ratio_to_native'), '.2f')} | {f(row.get('median_load'), '.1f')} |")


def main():
    if sys.argv[1:2] == ["--report"]:
        return report(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dir", default="/tmp/kpassthrough-bench",
                    help="scratch directory (source file + mount points); removed at the end")
    ap.add_argument("--out", default=os.path.join(HERE, "build", "bench", "raw.json"))
    ap.add_argument("--no-libfuse", action="store_true", help="skip the mpifuse (libfuse) variant")
    a = ap.parse_args()
    if a.size_mib < 1 or a.repeats < 1:
        sys.exit("bench: --size-mib and --repeats must be >= 1")
    if os.geteuid() != 0:
        sys.exit("bench: needs root (FUSE mounts; kernel passthrough needs CAP_SYS_ADMIN)")
    if not os.access(KP, os.X_OK):
        sys.exit(f"bench: {KP} is missing: make -C {HERE}")
    size = a.size_mib * MIB
    src, work = os.path.join(a.dir, "src"), a.dir
    shutil.rmtree(a.dir, ignore_errors=True)
    os.makedirs(src)
    path = os.path.join(src, "data.bin")
    h = hashlib.sha256()
    with open(path, "wb") as f:
        for _ in range(a.size_mib):
            b = os.urandom(MIB)
            h.update(b)
            f.write(b)
    want = h.hexdigest()
    subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=1M"], capture_output=True)  # hot cache

    raw = {"bench": "kpassthrough", "label": "ours, beyond the paper",
           "file_bytes": size, "repeats": a.repeats, "source_fs": subprocess.run(
               ["findmnt", "-no", "FSTYPE", "-T", src], capture_output=True, text=True).stdout.strip(),
           "kernel": platform.release(), "cpus": os.cpu_count(),
           "note": "shared machine: other jobs may run beside this one; see load_start/load_end",
           "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "load_start": os.getloadavg(), "variants": [], "measurements": []}
    mounts = {}
    variants = [("native", None)]
    try:
        for mode in ("kernel", "off"):
            mp = os.path.join(work, f"mnt-{mode}")
            try:
                mounts[mode] = KpMount(mode, src, mp, work)
                variants.append((mode, os.path.join(mp, "data.bin")))
                raw["variants"].append({"name": mode, "status": "ran", "system": f"kpassthrough --passthrough {mode}"})
            except RuntimeError as e:
                raw["variants"].append({"name": mode, "status": f"failed: {e}"})
        lib = "libfuse-userspace"
        if a.no_libfuse:
            raw["variants"].append({"name": lib, "status": "not run: --no-libfuse"})
        elif not (os.access(MPIFUSE, os.X_OK) and shutil.which("mpirun")):
            raw["variants"].append({"name": lib, "status": f"not run: {MPIFUSE} or mpirun missing"})
        else:
            mp = os.path.join(work, "mnt-libfuse")
            try:
                mounts[lib] = MpifuseMount(src, mp, work)
                variants.append((lib, os.path.join(mp, "data.bin")))
                raw["variants"].append({"name": lib, "status": "ran",
                                        "system": "mpifuse --mode passthrough, 1 rank (libfuse 3.14)"})
            except RuntimeError as e:
                raw["variants"].append({"name": lib, "status": f"failed: {e}"})
        variants[0] = ("native", path)
        raw["variants"].insert(0, {"name": "native", "status": "ran", "system": "the source file"})
        # warm-up round (not recorded): every variant reads the file once and must hash it right
        for name, p in variants:
            w = run_sha(p, want)
            if not w["ok"]:
                raise SystemExit(f"bench: {name}: sha256 through the mount is wrong ({w['sha256']})")
        # server CPU: the kpassthrough process itself (for mpifuse, mpirun is not the server)
        cpu0 = {k: cpu_s(m.proc.pid) if isinstance(m, KpMount) else None for k, m in mounts.items()}
        ops0 = {k: m.ops() for k, m in mounts.items()}
        for r in range(a.repeats):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for tool in TOOLS:
                for name, p in order:
                    m = (run_dd(p) if tool == "dd" else run_dd(p, "32K") if tool == "dd32k"
                         else run_sha(p, want))
                    m.update(variant=name, tool=tool, round=r)
                    raw["measurements"].append(m)
        servers = {}
        for k, mnt in mounts.items():
            c1, o1 = (cpu_s(mnt.proc.pid) if isinstance(mnt, KpMount) else None), mnt.ops()
            s = {"cpu_s": None if c1 is None or cpu0[k] is None else c1 - cpu0[k]}
            if o1 and ops0[k]:
                d = {op: o1["ops"][op] - ops0[k]["ops"][op] for op in o1["ops"]}
                s.update(passthrough=o1["passthrough"], ops=d,
                         avg_read_request_bytes=(d["read_bytes"] / d["read"]) if d["read"] else None)
            servers[k] = s
        raw["servers_during_measurements"] = servers
    finally:
        for mnt in mounts.values():
            mnt.close()
        left = [m.mp for m in mounts.values() if mounted(m.mp)]
        raw["mounts_left"] = left
        raw["load_end"] = os.getloadavg()
        raw["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        shutil.rmtree(a.dir, ignore_errors=True)
    raw["summary"] = summarize(raw, size)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(raw, f, indent=1)
    print(f"kpassthrough bench: {a.size_mib} MiB file on {raw['source_fs']}, {a.repeats} repeats, "
          f"kernel {raw['kernel']}, {raw['cpus']} CPUs; load {raw['load_start'][0]:.2f} -> {raw['load_end'][0]:.2f}"
          " (shared machine)")
    print(f"{'tool':10} {'variant':18} {'GB/s min':>9} {'median':>8} {'max':>8} {'x native':>9} {'time +%':>8}"
          f" {'paired x':>9} {'reader CPU s':>12} {'CPU x native':>12} {'load':>6}")
    for row in raw["summary"]:
        if "median_gbps" not in row:
            print(f"{row['tool']:10} {row['variant']:18} {row['status'] if row['status'] != 'ran' else 'failed'}")
            continue
        print(f"{row['tool']:10} {row['variant']:18} {row['min_gbps']:9.3f} {row['median_gbps']:8.3f} "
              f"{row['max_gbps']:8.3f} {row.get('ratio_to_native', float('nan')):9.3f} "
              f"{row.get('time_overhead_pct', float('nan')):+8.1f} "
              f"{row.get('paired_ratio_to_native', float('nan')):9.3f} {row['median_cpu_s']:12.3f} "
              f"{row.get('cpu_ratio_to_native') or float('nan'):12.3f} {row['median_load']:6.1f}")
    for k, s in raw["servers_during_measurements"].items():
        print(f"server {k}: {s}")
    print(f"raw: {a.out}")
    if left:
        sys.exit(f"bench: mounts left behind: {left}")


if __name__ == "__main__":
    main()
