#!/usr/bin/env python3
"""Where a daemon (or a benchmark task) *measured* it ran: the placement record of a storage stack.

    where.py run OUT [--serves ADDR] -- ARGV...   # write OUT (JSON), then exec ARGV in this process
    where.py probe [PATH]                         # print one JSON line: this host, and PATH's mount

`run` wraps every daemon a stack starts (`Stack.launch_on`): it runs on the node the daemon runs on
(inside the srun step on a cluster), writes `here()` -- hostname, Slurm node name, the host's
addresses -- plus the address the daemon serves, then becomes the daemon (exec: same PID, so PID
files and stop() are unchanged). The state directory holding OUT is shared on a cluster, so the
driver reads every daemon's record (`Stack.placement()`).

`here()` is the record the studies write with `repro.allocation.here()`, measured here without the
engine: a system is a plain program (tests/test_where.py holds the two equal).

`probe` is what a benchmark's tasks run under the same launcher as the benchmark (mdtest's srun or
mpirun), to record where the tasks ran and whether the file system under test was mounted there.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path


def addresses() -> list[str]:
    """This host's IPv4 addresses (``ip -4 -o addr``), loopback last."""
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return sorted(set(re.findall(r"\binet (\d+\.\d+\.\d+\.\d+)/", out)), key=lambda a: (a.startswith("127."), a))


def here() -> dict:
    """Where this process runs: hostname, Slurm node name (``SLURMD_NODENAME``, set by srun in
    every step, else the hostname) and the host's addresses."""
    h = socket.gethostname()
    return {"hostname": h, "node": os.environ.get("SLURMD_NODENAME") or h, "addresses": addresses()}


def mount_of(path: str) -> dict:
    """The mount point and file system type holding `path` (from /proc/self/mounts)."""
    p = os.path.realpath(path)
    best, kind = "", ""
    with open("/proc/self/mounts") as f:
        for line in f:
            _, mnt, typ = line.split()[:3]
            mnt = mnt.replace("\\040", " ")
            if (p == mnt or p.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                best, kind = mnt, typ
    return {"path": path, "exists": os.path.isdir(p), "mount_point": best, "fs_type": kind}


def record(serves: str = "") -> dict:
    return {**here(), "serves": serves, "pid": os.getpid(),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["probe"]:
        out = record()
        if len(argv) > 1:
            out["mount"] = mount_of(argv[1])
        print(json.dumps(out, sort_keys=True), flush=True)
        return 0
    if argv[:1] != ["run"] or "--" not in argv or len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    sep = argv.index("--")
    opts, cmd = argv[1:sep], argv[sep + 1:]
    out = Path(opts[0])
    serves = opts[opts.index("--serves") + 1] if "--serves" in opts else ""
    rec = {**record(serves), "argv0": cmd[0]}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(rec, sort_keys=True))
    tmp.replace(out)
    os.execvp(cmd[0], cmd)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
