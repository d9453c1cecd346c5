"""The FUSE ceiling over its two transports, side by side: requests read from /dev/fuse (libfuse's
loop, the default) and FUSE over io_uring (`--transport io_uring`, tools/fuseuring), with the same
`dd` requests, stream counts, request sizes, read and write, repeats outermost (interleaved).

    python3 -m tools.fuseceiling.transports [--bs 4k,128k,1m] [--streams 1,8] [--size 64m] [--reps 5] \
        [--transports dev-fuse,io_uring] [--fs-opt=...] [--out FILE.jsonl] [--summary]

Each measurement is one fresh ceiling mount (`ceiling.measure_ceiling`'s shape) and adds:

* ``cpu``: seconds of CPU of the daemon (getrusage of the whole daemon, read from its counters before
  and after the streams), of the `dd` clients (RUSAGE_CHILDREN), and of the whole machine
  (/proc/stat busy time, other load included), each also per GiB moved;
* ``ctxsw``: voluntary + involuntary context switches of the daemon and of the clients, per FUSE
  request (READ + WRITE requests the daemon counted), and the machine's (/proc/stat ctxt);
* ``check``: the data check on that mount after the timed part -- random bytes written in `bs`
  requests and read back in `bs` requests equal byte for byte, and (read runs) the sha256 of the
  first preloaded file read back through the mount equals the pattern's; a failed check marks the
  record ``ok: false`` (never averaged in by --summary);
* ``transport``: what the daemon reports (``io_uring`` only if requests went through the ring).

`--transports` with io_uring first switches the kernel's ``enable_uring`` on where it may (prints
what it did). Speeds on a shared 2-core machine are noise: ``loadavg`` is in every record.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

from tools.fuseceiling.ceiling import BIN, HERE, MiB, Mount, enable_uring, parse_size, \
    pattern_sha256, run_streams

GiB = 1 << 30
CHECK_BYTES = 8 * MiB + 4099  # odd: the last request is short


def proc_stat() -> tuple[float, int]:
    """(busy CPU seconds of the whole machine, context switches) from /proc/stat."""
    busy, ctxt = 0.0, 0
    hz = os.sysconf("SC_CLK_TCK")
    for line in Path("/proc/stat").read_text().splitlines():
        f = line.split()
        if f[0] == "cpu":
            v = [int(x) for x in f[1:]]
            busy = (sum(v[:8]) - v[3] - v[4]) / hz  # minus idle and iowait
        elif f[0] == "ctxt":
            ctxt = int(f[1])
    return busy, ctxt


@lru_cache(maxsize=8)
def _pattern_sha(size: int) -> str:
    return pattern_sha256(size)


def data_check(mnt: Path, bs: int, read_file: Path | None, read_size: int) -> dict:
    """Random bytes written in `bs` requests, read back in `bs` requests: equal byte for byte; a
    preloaded file's sha256 read through the mount equals the pattern's."""
    data = os.urandom(CHECK_BYTES)
    f = mnt / "check"
    fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for i in range(0, len(data), bs):
            os.write(fd, data[i:i + bs])
    finally:
        os.close(fd)
    got = bytearray()
    fd = os.open(f, os.O_RDONLY)
    try:
        while chunk := os.read(fd, bs):
            got += chunk
    finally:
        os.close(fd)
    out = {"bytes": len(data), "equal": bytes(got) == data}
    f.unlink()
    if read_file is not None:
        h = hashlib.sha256()
        with open(read_file, "rb", buffering=0) as r:
            while chunk := r.read(MiB):
                h.update(chunk)
        out["pattern_sha256_equal"] = h.hexdigest() == _pattern_sha(read_size)
    out["ok"] = all(v for k, v in out.items() if k != "bytes")
    return out


def measure(mountpoint: Path, transport: str, op: str, bs: int, streams: int, size: int,
            options: list[str], check: bool = True) -> dict:
    """One measurement on a fresh ceiling mount over `transport` (see the module's docstring)."""
    preload = [(f"r{i}", size) for i in range(streams)] if op == "read" else []
    pre = ["--prealloc", f"{streams}:{size}"] if op == "write" else []
    opts = [*pre, "--transport", transport, *options]
    with Mount(mountpoint, opts, preload=preload) as m:
        names = [f"r{i}" if op == "read" else f"w{i}" for i in range(streams)]
        s0 = m.stats()
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        busy0, ctxt0 = proc_stat()
        r = run_streams([m.mountpoint / n for n in names], op, bs, size)
        busy1, ctxt1 = proc_stat()
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        s1 = m.stats()
        r["check"] = data_check(m.mountpoint, bs, m.mountpoint / "r0" if op == "read" else None, size) \
            if check else None
        r["daemon_log"] = m.stderr().strip().splitlines()
    d0, d1 = s0["rusage"], s1["rusage"]
    reqs = (s1["read_reqs"] - s0["read_reqs"]) + (s1["write_reqs"] - s0["write_reqs"])
    gib = r["bytes"] / GiB
    cpu = {"daemon_s": d1["utime"] + d1["stime"] - d0["utime"] - d0["stime"],
           "clients_s": (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime),
           "machine_s": busy1 - busy0}
    cpu.update({k.replace("_s", "_s_per_gib"): v / gib for k, v in list(cpu.items())})
    cs = {"daemon": (d1["nvcsw"] + d1["nivcsw"]) - (d0["nvcsw"] + d0["nivcsw"]),
          "clients": (ru1.ru_nvcsw + ru1.ru_nivcsw) - (ru0.ru_nvcsw + ru0.ru_nivcsw),
          "machine": ctxt1 - ctxt0, "fuse_requests": reqs}
    cs.update({f"{k}_per_request": (cs[k] / reqs if reqs else None) for k in ("daemon", "clients", "machine")})
    r.update(system="fuseceiling", transport_requested=transport, transport=s1["transport"], fs=s1,
             cpu=cpu, ctxsw=cs, options=options, size_per_stream=size,
             ok=(r["check"] is None or r["check"]["ok"]) and
             (transport != "io_uring" or s1["transport"]["transport"] == "io_uring"))
    return r


def summarize(recs: list[dict]) -> list[dict]:
    """Median (and min..max, n) per transport x op x bs x streams, of the records whose check passed."""
    groups: dict[tuple, list[dict]] = {}
    for r in recs:
        if r.get("ok"):
            groups.setdefault((r["op"], r["bs"], r["streams"], r["transport_requested"]), []).append(r)
    rows = []
    for (op, bs, n, t), rs in sorted(groups.items()):
        def med(f):
            return statistics.median(f(x) for x in rs)
        rows.append({"op": op, "bs": bs, "streams": n, "transport": t, "n": len(rs),
                     "mib_s": med(lambda x: x["mib_s"]), "mib_s_min": min(x["mib_s"] for x in rs),
                     "mib_s_max": max(x["mib_s"] for x in rs),
                     "daemon_cpu_s_per_gib": med(lambda x: x["cpu"]["daemon_s_per_gib"]),
                     "clients_cpu_s_per_gib": med(lambda x: x["cpu"]["clients_s_per_gib"]),
                     "machine_cpu_s_per_gib": med(lambda x: x["cpu"]["machine_s_per_gib"]),
                     "daemon_ctxsw_per_req": med(lambda x: x["ctxsw"]["daemon_per_request"] or 0),
                     "clients_ctxsw_per_req": med(lambda x: x["ctxsw"]["clients_per_request"] or 0),
                     "machine_ctxsw_per_req": med(lambda x: x["ctxsw"]["machine_per_request"] or 0),
                     "fuse_requests": med(lambda x: x["ctxsw"]["fuse_requests"]),
                     "load": [min(x["loadavg"][0] for x in rs), max(x["loadavg"][0] for x in rs)]})
    return rows


def print_table(rows: list[dict], out=sys.stdout) -> None:
    hdr = ("op", "bs", "streams", "transport", "n", "MiB/s med (min-max)", "daemon CPU s/GiB",
           "dd CPU s/GiB", "machine CPU s/GiB", "daemon cs/req", "dd cs/req", "machine cs/req", "load1")
    print("| " + " | ".join(hdr) + " |", file=out)
    print("|" + "---|" * len(hdr), file=out)
    for r in rows:
        bs = f"{r['bs'] >> 10}k" if r["bs"] < MiB else f"{r['bs'] >> 20}m"
        print(f"| {r['op']} | {bs} | {r['streams']} | {r['transport']} | {r['n']} | "
              f"{r['mib_s']:.0f} ({r['mib_s_min']:.0f}-{r['mib_s_max']:.0f}) | {r['daemon_cpu_s_per_gib']:.2f} | "
              f"{r['clients_cpu_s_per_gib']:.2f} | {r['machine_cpu_s_per_gib']:.2f} | "
              f"{r['daemon_ctxsw_per_req']:.2f} | {r['clients_ctxsw_per_req']:.2f} | "
              f"{r['machine_ctxsw_per_req']:.1f} | {r['load'][0]:.1f}-{r['load'][1]:.1f} |", file=out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--op", choices=["write", "read", "both"], default="both")
    ap.add_argument("--bs", default="4k,128k,1m", help="comma-separated request (dd block) sizes")
    ap.add_argument("--streams", default="1,8")
    ap.add_argument("--size", default="64m", help="bytes per stream")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--transports", default="dev-fuse,io_uring")
    ap.add_argument("--fs-opt", action="append", default=[], help="an option for fuseceiling (repeat)")
    ap.add_argument("--no-check", action="store_true", help="skip the data check after each measurement")
    ap.add_argument("--out", help="append the JSON lines here too")
    ap.add_argument("--summary", action="store_true", help="print a median table at the end (stderr)")
    a = ap.parse_args(argv)
    bss = [parse_size(b) for b in a.bs.split(",")]
    streams = [int(s) for s in a.streams.split(",")]
    transports = a.transports.split(",")
    ops = ["write", "read"] if a.op == "both" else [a.op]
    if not BIN.exists():
        print(f"build it first: make -C {HERE}", file=sys.stderr)
        return 2
    if "io_uring" in transports:
        print(enable_uring(), file=sys.stderr)
    out = open(a.out, "a") if a.out else None
    tmp = tempfile.mkdtemp(prefix="fuseceiling-tr-")
    mnt = Path(tmp) / "mnt"
    recs = []
    total, k = a.reps * len(streams) * len(bss) * len(ops) * len(transports), 0
    try:
        for rep in range(a.reps):
            for n in streams:
                for bs in bss:
                    for op in ops:
                        for t in transports:
                            k += 1
                            print(f"[{k}/{total}] rep {rep} {t} {op} bs={bs} streams={n}", file=sys.stderr,
                                  flush=True)
                            r = measure(mnt, t, op, bs, n, parse_size(a.size), a.fs_opt, check=not a.no_check)
                            r["rep"] = rep
                            recs.append(r)
                            line = json.dumps(r, sort_keys=True)
                            print(line, flush=True)
                            if out:
                                out.write(line + "\n")
                                out.flush()
    finally:
        if out:
            out.close()
        shutil.rmtree(tmp, ignore_errors=True)
    if a.summary:
        print_table(summarize(recs), out=sys.stderr)
    bad = [r for r in recs if not r["ok"]]
    if bad:
        print(f"{len(bad)} measurement(s) failed their check (transport or bytes)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
