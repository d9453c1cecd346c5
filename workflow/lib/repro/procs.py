"""Child processes with their I/O counters, per-process I/O, a watchdog, and the one way a
failure message is built from a finished process (``failure_message``: never empty)."""

from __future__ import annotations

import os
import signal
import socket
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


# ----------------------------------------------------------------------------- failure messages
OVERLOAD_PER_CPU = 1.5
"""Load per CPU (1-minute load average / CPUs) above which a timed-out or failed operation is the
machine's (``overload``), not the code's: 1.5 runnable tasks per core means every process waits as
long for a core as it runs (repro.rawio.classify uses it)."""


def load_now() -> dict:
    """This host's 1-minute load average and CPU count: ``{"loadavg_1m": x, "ncpu": n}``
    (``/proc/loadavg``; loadavg_1m None where it cannot be read)."""
    try:
        with open("/proc/loadavg") as fh:
            la = float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        try:
            la = os.getloadavg()[0]
        except OSError:
            la = None
    return {"loadavg_1m": None if la is None else round(la, 2), "ncpu": os.cpu_count() or 1}


def load_text(load: dict | None = None) -> str:
    """``load 3.20 on 2 CPUs (1.60 per CPU)`` for a message."""
    load = load or load_now()
    la, n = load.get("loadavg_1m"), load.get("ncpu") or 1
    if la is None:
        return f"load unknown on {n} CPUs"
    return f"load {la:.2f} on {n} CPUs ({la / n:.2f} per CPU)"


def exit_text(rc: int | None, timed_out: bool = False, timeout: float | None = None) -> str:
    """``exited 1`` / ``killed by SIGSEGV`` (a negative returncode, or 128+N from a shell) /
    ``timed out after 30 s (killed)``."""
    if timed_out:
        return f"timed out after {timeout:g} s (killed)" if timeout else "timed out (killed)"
    if rc is None:
        return "did not finish"
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return f"killed by {name}"
    if rc > 128 and rc - 128 in {s.value for s in signal.Signals}:
        return f"exited {rc} (a shell's report of {signal.Signals(rc - 128).name})"
    return f"exited {rc}"


def _text(x) -> str:
    if x is None:
        return ""
    if isinstance(x, bytes):
        return x.decode(errors="replace")
    return str(x)


def output_tail(stdout="", stderr="", tail: int = 800) -> str:
    """The last ``tail`` characters of stderr, else of stdout (labelled), else ``no output at all``."""
    err, out = _text(stderr).strip(), _text(stdout).strip()
    if err:
        return err[-tail:]
    if out:
        return "no stderr; stdout: " + out[-tail:]
    return "no output at all"


def text_tail(text, tail: int = 800) -> str:
    """The last ``tail`` characters of one output (a log with stdout and stderr together), or
    ``no output at all``."""
    text = _text(text).strip()
    return text[-tail:] if text else "no output at all"


def _fields(proc) -> tuple:
    """(rc, stdout, stderr, timed_out, node) of a CompletedProcess, ChildResult, TimeoutExpired,
    Popen (after communicate) or a launcher's result dict ({rc, stdout, stderr, node})."""
    if isinstance(proc, dict):
        rc = proc.get("rc", proc.get("returncode"))
        return (rc, proc.get("stdout"), proc.get("stderr"), bool(proc.get("timed_out")) or rc == 124 and
                "timeout after" in _text(proc.get("stderr")), proc.get("node"))
    if isinstance(proc, subprocess.TimeoutExpired):
        return None, proc.stdout or proc.output, proc.stderr, True, None
    rc = getattr(proc, "returncode", getattr(proc, "rc", None))
    return rc, getattr(proc, "stdout", ""), getattr(proc, "stderr", ""), bool(getattr(proc, "timed_out", False)), None


def failure_message(name: str, proc, *, node=None, tail: int = 800, timeout: float | None = None,
                    load: dict | None = None, what: str = "") -> str:
    """Why ``name`` failed, never empty: ``<name> <exited N | killed by SIGx | timed out after T s>
    on <node> (<host>; load L on N CPUs): <stderr tail | stdout tail | no output at all>``.

    ``proc``: a finished subprocess.CompletedProcess / Popen / ChildResult, a TimeoutExpired, a
    launcher's result dict ({rc, stdout, stderr, node, host?, load?}), or a bare returncode.
    ``node``: where it ran (a label such as ``node 1``); the host and the load are this host's
    unless the result carries its own (``host``, ``load``). ``what``: what it was doing (optional).
    """
    if isinstance(proc, int) or proc is None:
        rc, out, err, timed_out, pnode = proc, "", "", False, None
    else:
        rc, out, err, timed_out, pnode = _fields(proc)
    if isinstance(proc, subprocess.TimeoutExpired) and timeout is None:
        timeout = proc.timeout
    node = node if node is not None else pnode
    host = proc.get("host") if isinstance(proc, dict) and proc.get("host") else socket.gethostname()
    load = load or (proc.get("load") if isinstance(proc, dict) and proc.get("load") else None) or load_now()
    where = "" if node is None else f"node {node}, " if isinstance(node, int) or str(node).isdigit() else f"{node}, "
    head = f"{name or 'a command'}{' ' + what if what else ''} {exit_text(rc, timed_out, timeout)}"
    return f"{head} ({where}host {host}; {load_text(load)}): {output_tail(out, err, tail)}"
