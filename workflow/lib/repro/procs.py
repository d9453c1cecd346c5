"""Child processes with their I/O counters, per-process I/O, and a watchdog."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field


def proc_io(pid: int | str = "self") -> dict:
    """/proc/<pid>/io as a dict (rchar = bytes the process read with read(2)-like calls)."""
    out = {}
    try:
        with open(f"/proc/{pid}/io") as fh:
            for line in fh:
                k, _, v = line.partition(":")
                out[k.strip()] = int(v)
    except (OSError, ValueError):
        pass
    return out


@dataclass
class ChildResult:
    cmd: list
    rc: int
    stdout: str
    stderr: str
    elapsed: float
    io: dict = field(default_factory=dict)
    timed_out: bool = False


def run_child(cmd: list[str], timeout: float, env: dict | None = None) -> ChildResult:
    """Run cmd; read its /proc/<pid>/io after it exited but before it is reaped.

    On timeout the child is killed (SIGKILL also ends a read blocked in FUSE)
    and the result says so.
    """
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    fired = threading.Event()

    def kill():
        fired.set()
        try:
            p.kill()
        except ProcessLookupError:
            pass

    timer = threading.Timer(timeout, kill)
    timer.daemon = True
    timer.start()
    # drain the pipes in threads so a chatty child cannot block on a full pipe
    outs: dict[str, bytes] = {}

    def drain(name, fh):
        outs[name] = fh.read()

    ts = [threading.Thread(target=drain, args=(k, f), daemon=True) for k, f in (("o", p.stdout), ("e", p.stderr))]
    for t in ts:
        t.start()
    try:
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped
        io = proc_io(p.pid)
        rc = p.wait()
    finally:
        timer.cancel()
    for t in ts:
        t.join(5)
    return ChildResult(cmd, rc, outs.get("o", b"").decode(errors="replace"),
                       outs.get("e", b"").decode(errors="replace"), time.monotonic() - t0, io, fired.is_set())


class Watchdog:
    """Fires ``on_fire(what, seconds)`` when an armed phase overruns its deadline.

    A hung MPI collective or a blocked FUSE read cannot be interrupted from
    Python's main thread; this thread can still write a failure record and
    call MPI_Abort (mpi4py initialises MPI with MPI_THREAD_MULTIPLE).
    """

    def __init__(self, on_fire, label: str = "repro"):
        self._on_fire = on_fire
        self._label = label  # the prefix of its own message (the study's log prefix)
        self._lock = threading.Lock()
        self._deadline = None
        self._what = ""
        self._seconds = 0.0
        self._t = threading.Thread(target=self._loop, daemon=True, name="repro-watchdog")
        self._t.start()

    def arm(self, seconds: float, what: str) -> None:
        with self._lock:
            self._deadline = time.monotonic() + seconds
            self._what, self._seconds = what, seconds

    def disarm(self) -> None:
        with self._lock:
            self._deadline = None

    def _loop(self):
        while True:
            time.sleep(0.2)
            with self._lock:
                late = self._deadline is not None and time.monotonic() > self._deadline
                what, seconds = self._what, self._seconds
                if late:
                    self._deadline = None
            if late:
                try:
                    self._on_fire(what, seconds)
                except BaseException as exc:  # noqa: BLE001 - never let the watchdog die silently
                    print(f"[{self._label}] watchdog handler failed: {exc!r}", file=sys.stderr, flush=True)
                    os.kill(os.getpid(), signal.SIGKILL)


MPI_ENV_SH = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "mpi-env.sh")


def mpi_env(base: dict | None = None, single_host: bool = True, shm: bool = False) -> dict:
    """The environment after sourcing workflow/scripts/mpi-env.sh (the one copy of the Open MPI
    settings): single_host as the rules' REPRO_SINGLE_HOST, shm lets UCX use shared memory."""
    env = dict(os.environ if base is None else base)
    for k in ("UCX_TLS", "UCX_NET_DEVICES", "REPRO_MPI_SHM", "REPRO_SINGLE_HOST"):
        env.pop(k, None)
    if single_host:
        env["REPRO_SINGLE_HOST"] = "1"
    if shm:
        env["REPRO_MPI_SHM"] = "1"
    out = subprocess.run(["bash", "-c", f". {os.path.abspath(MPI_ENV_SH)} && env -0"], env=env, check=True,
                         capture_output=True).stdout
    return dict(kv.split("=", 1) for kv in out.decode().split("\0") if "=" in kv)
