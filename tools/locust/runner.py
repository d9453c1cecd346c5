"""Run Locust headless against one server, once per user count, and record the generator's CPU use.

    python -m tools.locust.runner --protocol torchserve --host http://127.0.0.1:8080 \
        --users 1,10,25 --run-time 30s --out DIR [--processes 4] [--env REPRO_MODEL=resnet50 ...] \
        [--system-kind real] [--label server=torchserve ...]

For each user count U it writes ``DIR/users~U/locust_{stats,stats_history,failures,exceptions}.csv``
(Locust's own ``--csv`` output) and ``DIR/users~U/generator.json``: wall time, the CPU seconds of
every Locust process (``getrusage`` of the waited children, so ``--processes`` workers count too),
the cores that amounts to, where it ran (hostname, Slurm node), its window (started_at / ended_at, epoch s:
the study cuts the server's GPU samples to it) and the run's labels. single-stream = ``--users 1``;
multi-stream = a list.
All users start at once and fire their next request when the previous completes (no wait time).
``--processes N`` runs N Locust worker processes beside the master (Locust's distributed mode on one
node) so the generator is not the bottleneck. Locust runs from its cached venv (tools/locust/setup.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROTOCOLS = ("torchserve", "triton", "tfserving", "trivial")


def locust_bin() -> Path:
    """$REPRO_LOCUST_BIN, else the cached venv (tools/locust/setup.sh), else `locust` on PATH (the image)."""
    if os.environ.get("REPRO_LOCUST_BIN"):
        return Path(os.environ["REPRO_LOCUST_BIN"])
    out = subprocess.run([str(HERE / "setup.sh"), "path"], check=True, capture_output=True, text=True)
    venv = Path(out.stdout.strip())
    if (venv / ".complete").exists():
        return venv / "bin" / "locust"
    if shutil.which("locust"):
        return Path(shutil.which("locust"))
    raise FileNotFoundError(f"Locust's venv is not built ({venv}); run tools/locust/setup.sh")


def parse_seconds(text: str) -> float:
    units = {"h": 3600, "m": 60, "s": 1}
    if text and text[-1] in units:
        return float(text[:-1]) * units[text[-1]]
    return float(text)


def run_one(protocol: str, host: str, users: int, run_time: str, out: Path, processes: int = 0,
            env_extra: dict | None = None, labels: dict | None = None, system_kind: str = "real",
            stop_timeout: int = 30) -> dict:
    """One headless Locust run; returns the generator record (also written to ``generator.json``)."""
    out.mkdir(parents=True, exist_ok=True)
    prefix = out / "locust"
    cmd = [str(locust_bin()), "-f", str(HERE / f"locustfile_{protocol}.py"), "--headless", "--host", host,
           "-u", str(users), "-r", str(users), "-t", run_time, "--csv", str(prefix), "--only-summary",
           "--stop-timeout", str(stop_timeout), "--exit-code-on-error", "0", "--loglevel", "WARNING"]
    if processes:
        cmd += ["--processes", str(processes)]
    env = dict(os.environ, **(env_extra or {}), REPRO_SYSTEM_KIND=system_kind)
    print(f"locust: {protocol} {users} user(s) for {run_time} against {host} -> {out}", flush=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    with open(out / "locust.log", "wb") as log:
        rc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    wall = time.time() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user_s, sys_s = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    record = {
        "protocol": protocol, "host": host, "users": users, "run_time_s": parse_seconds(run_time),
        "processes": processes, "started_at": round(t0, 3), "ended_at": round(t0 + wall, 3),
        "wall_s": round(wall, 3), "cpu_user_s": round(user_s, 3),
        "cpu_sys_s": round(sys_s, 3), "cpu_cores_used": round((user_s + sys_s) / wall, 4),
        "host_cores": os.cpu_count(), "hostname": socket.gethostname(),
        "slurm_node": os.environ.get("SLURMD_NODENAME", ""), "returncode": rc, "system_kind": system_kind,
        "labels": labels or {}, "env": env_extra or {}, "command": cmd,
    }
    (out / "generator.json").write_text(json.dumps(record, indent=1) + "\n")
    if rc != 0 or not (out / "locust_stats.csv").exists():
        tail = (out / "locust.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"locust failed (exit code {rc}); its log:\n{tail}")
    return record


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--protocol", required=True, choices=PROTOCOLS)
    p.add_argument("--host", default=os.environ.get("REPRO_SERVER_URL"), help="default: $REPRO_SERVER_URL")
    p.add_argument("--users", default="1", help="a user count or a comma list (multi-stream)")
    p.add_argument("--run-time", default="30s")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--processes", type=int, default=0, help="Locust worker processes (0: one process)")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="for the locustfile")
    p.add_argument("--label", action="append", default=[], metavar="KEY=VALUE", help="copied into the record")
    p.add_argument("--system-kind", default=os.environ.get("REPRO_SYSTEM_KIND", "real"))
    a = p.parse_args(argv)
    if not a.host:
        p.error("--host is required (or set REPRO_SERVER_URL)")
    try:
        users = [int(u) for u in a.users.split(",")]
        env = dict(kv.split("=", 1) for kv in a.env)
        labels = dict(kv.split("=", 1) for kv in a.label)
    except ValueError as err:
        p.error(f"bad --users/--env/--label: {err}")
    if any(u < 1 for u in users):
        p.error("user counts must be >= 1")
    if a.protocol != "trivial" and "REPRO_MODEL" not in env and "REPRO_MODEL" in os.environ:
        env["REPRO_MODEL"] = os.environ["REPRO_MODEL"]
    for i, u in enumerate(users, 1):
        rec = run_one(a.protocol, a.host, u, a.run_time, a.out / f"users~{u}", a.processes, env, labels, a.system_kind)
        print(f"locust: [{i}/{len(users)}] {u} user(s) done, generator used {rec['cpu_cores_used']:.2f} cores",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
