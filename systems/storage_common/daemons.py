"""Daemons of a storage stack: start by PID file, wait for ports, stop, unmount, report.

One state directory per running stack:

    STATE/stack.json        what `up` started: daemons, endpoints, versions, credentials
    STATE/run/NAME.pid      PID file (line 1: pid, line 2: the process start time in clock ticks,
                            so a reused PID is never mistaken for the daemon)
    STATE/log/NAME.log      one log per daemon (stdout and stderr)
    STATE/mounts            one FUSE mount point per line, unmounted by `down`

Every daemon runs in the foreground in its own session (process group), so stopping it
also stops anything it forked. The stacks (systems/ceph, systems/minio, systems/juicefs) use
`Stack` and `main()` from here; none of them has its own copy of this logic.

From an image (a cluster run): this script and the benchmark driver stay on the host (they need
Slurm's client: srun steps, scontrol), and every command of the stack runs in the stack's image --
on this node inside one Apptainer instance (REPRO_STACK_EXEC, e.g. `apptainer exec
instance://NAME`), so that the daemons here, the FUSE mount and the benchmark's tasks share its
mount namespace; on another node behind --launcher in a plain `apptainer exec IMAGE`
(REPRO_STACK_EXEC_REMOTE). Both unset: everything on the host, as before.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from tools.common import served_by_another


class StackError(RuntimeError):
    """A stack could not be brought up or is unhealthy; the message names the daemon."""


def say(msg: str) -> None:
    """Progress for people: on stderr, so that stdout carries only the JSON result. Never raises
    (a reader gone must not skip a clean-up that follows a progress line)."""
    try:
        print(msg, file=sys.stderr, flush=True)
    except (BrokenPipeError, OSError):
        pass


def log_tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    tail = text.splitlines()[-lines:]
    return "\n".join(tail) if tail else f"(log {path} is empty)"


def _proc_stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may contain spaces: split after its closing parenthesis
    return [raw[: raw.index("(")].strip()] + ["comm"] + raw[raw.rindex(")") + 2 :].split()


def start_time(pid: int) -> str | None:
    st = _proc_stat(pid)
    return st[21] if st else None


def pid_alive(pid: int, started: str | None = None) -> bool:
    """True while `pid` runs (a zombie counts as dead) and, if given, started at `started`."""
    st = _proc_stat(pid)
    if st is None or st[2] in ("Z", "X"):
        return False
    return started is None or st[21] == started


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


# ---------------------------------------------------------------------------------------------
# where the stack's commands run: the host, or the stack's image (module docstring)
# ---------------------------------------------------------------------------------------------
EXEC_ENV, EXEC_REMOTE_ENV = "REPRO_STACK_EXEC", "REPRO_STACK_EXEC_REMOTE"


class Remote(list):
    """An argv already placed on another host (behind --launcher): not wrapped again for this one."""


def image_exec() -> list[str]:
    """The prefix that runs a command in the stack's image on this node (its instance); [] on the host."""
    return shlex.split(os.environ.get(EXEC_ENV, ""))


def here(argv: list[str]) -> list[str]:
    """argv as run on this node: in the stack's image (its instance) when there is one."""
    return list(argv) if isinstance(argv, Remote) else image_exec() + list(argv)


def python() -> str:
    """The Python that runs this package's scripts (where.py) next to a daemon: the host's, or the image's."""
    return "python3" if image_exec() else sys.executable


def mounted(path: Path) -> bool:
    """Whether `path` is a mount point where the stack mounts: this process's mount table, or the image's
    instance's (a FUSE mount made in it is not visible on the host)."""
    target = str(Path(path).resolve())
    if image_exec():
        r = subprocess.run(here(["cat", "/proc/self/mountinfo"]), capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise StackError(f"cannot read the mount table of the stack's image: {r.stderr[-500:]}")
        lines = r.stdout.splitlines()
    else:
        with open("/proc/self/mountinfo") as f:
            lines = f.read().splitlines()
    for line in lines:
        fields = line.split()
        if len(fields) > 4 and fields[4].replace("\\040", " ") == target:
            return True
    return False


def locks_under(root: Path) -> list[str]:
    """POSIX/flock locks (from /proc/locks) held on files below `root`."""
    inodes = {}
    for p in Path(root).rglob("*"):
        with contextlib.suppress(OSError):
            st = p.lstat()
            inodes[(os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)] = p
    held = []
    with open("/proc/locks") as f:
        for line in f:
            parts = line.split()
            dev = parts[-3] if parts[1] == "->" else None
            field = next((x for x in parts if x.count(":") == 2), dev)
            if not field:
                continue
            maj, mnr, ino = field.split(":")
            key = (int(maj, 16), int(mnr, 16), int(ino))
            if key in inodes:
                held.append(f"{inodes[key]}: {line.strip()}")
    return held


def unmount(path: Path, timeout: float = 10.0) -> None:
    """Unmount a FUSE mount (lazily if busy); no error if nothing is mounted there."""
    path = Path(path)
    tools = [["fusermount3", "-u"], ["fusermount", "-u"], ["umount"]]
    for lazy in (False, True):
        for tool in tools:
            if not mounted(path):
                return
            if not image_exec() and shutil.which(tool[0]) is None:
                continue
            cmd = tool + (["-z"] if lazy and tool[0].startswith("fuser") else ["-l"] if lazy else []) + [str(path)]
            subprocess.run(here(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
    if mounted(path):
        raise StackError(f"could not unmount {path}")


class Daemon:
    """One daemon of a stack, known by its name, PID file and log."""

    def __init__(self, state: Path, name: str):
        self.state, self.name = Path(state), name
        self.pidfile = self.state / "run" / f"{name}.pid"
        self.log = self.state / "log" / f"{name}.log"
        self.remote = False  # started behind --launcher (start): its processes are no descendants of ours

    def read_pid(self) -> tuple[int, str | None] | None:
        try:
            lines = self.pidfile.read_text().split()
        except OSError:
            return None
        if not lines:
            return None
        return int(lines[0]), (lines[1] if len(lines) > 1 else None)

    def alive(self) -> bool:
        rec = self.read_pid()
        return rec is not None and pid_alive(*rec)

    def pid(self) -> int | None:
        rec = self.read_pid()
        return rec[0] if rec else None

    def start(self, argv: list[str], env: dict | None = None, cwd: Path | None = None) -> int:
        """Start argv in the foreground of its own session, output to the log, PID file written."""
        if self.alive():
            raise StackError(f"{self.name}: already running (pid {self.pid()}, {self.pidfile})")
        self.pidfile.parent.mkdir(parents=True, exist_ok=True)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            log.write(f"=== {datetime.now(UTC).isoformat()} start: {' '.join(here(argv))}\n".encode())
            log.flush()
            proc = subprocess.Popen(
                here(argv), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=env, cwd=cwd, start_new_session=True,
            )
        self.write_pid(proc.pid)
        self.remote = isinstance(argv, Remote)
        return proc.pid

    def write_pid(self, pid: int) -> None:
        self.pidfile.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.pidfile.with_suffix(".pid.tmp")
        tmp.write_text(f"{pid}\n{start_time(pid) or ''}\n")
        tmp.replace(self.pidfile)

    def stop(self, timeout: float = 15.0) -> bool:
        """SIGTERM the daemon's process group, SIGKILL after `timeout`; True if it was running."""
        rec = self.read_pid()
        was = False
        if rec and pid_alive(*rec):
            was = True
            pid = rec[0]
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGTERM) if os.getpgid(pid) == pid else os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while pid_alive(*rec) and time.monotonic() < deadline:
                _reap(pid)
                time.sleep(0.1)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            while pid_alive(*rec):
                _reap(pid)
                time.sleep(0.05)
        if rec:
            _kill_group_leftovers(rec[0], rec[1])
        self.pidfile.unlink(missing_ok=True)
        return was


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _kill_group_leftovers(pgid: int, started: str | None = None) -> None:
    """Kill processes left in the daemon's process group after its leader ended -- unless the PID is
    another process's now (a live process `pgid` with another start time than the daemon's, `started`):
    its group is then that process's, not the daemon's (Linux reuses no PID while a group of that id
    has members, so leftovers of ours never share it). With pid_max 32768 and a busy machine a PID
    comes round within minutes: a stack's `down`, stopping a daemon that had already exited, would kill
    the group of whatever process had taken its PID (suspected, wrongly, of the busy local run's mon.a
    deaths of 2026-11-29: those were Ceph's 5%-free disk floor, see systems/ceph/stack.py)."""
    if started is not None and pid_alive(pgid) and not pid_alive(pgid, started):
        return
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        st = _proc_stat(int(d.name))
        if st and st[2] not in ("Z", "X") and st[4] == str(pgid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(d.name), signal.SIGKILL)


def require_free_disk(path: Path, gb: float, free: int | None = None, host: str = "") -> None:
    """Fail naming the path, the host and both sizes unless `path`'s file system has `gb` GiB free
    (`free`, in bytes, when measured elsewhere -- by df on another host)."""
    if free is None:
        st = os.statvfs(path)
        free = st.f_bavail * st.f_frsize
    if free < gb * 2**30:
        raise StackError(f"not enough free disk for {path}{' on ' + host if host else ''}: "
                         f"{free / 2**30:.1f} GiB free, {gb:g} GiB needed")


def died_because(log: Path) -> str:
    """The line of a daemon's log that says why it ended: the first error-like line written since
    its last start (Ceph writes `-1 error: ...`, Go and Python daemons `fatal`/`Error`/`Traceback`);
    else the last non-empty line; '' without a log."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return ""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("=== ") and " start: " in line]
    lines = [line.strip() for line in lines[starts[-1] + 1 if starts else 0:] if line.strip()]
    pat = re.compile(r"(?i)(\s-1\s|\berror\b|\bfatal\b|\bpanic\b|traceback|\bfailed\b|\baborted\b)")
    for line in lines:
        if pat.search(line):
            return line[:400]
    return lines[-1][:400] if lines else ""


def wait_until(what: str, check: Callable[[], bool], timeout: float, daemon: Daemon | None = None,
               interval: float = 0.2, port: tuple[str, int] | None = None) -> None:
    """Poll `check` until true; fail at once if `daemon` died, or after `timeout` seconds. With `port`
    (host, port) the daemon serves: an answer there counts only while no other process than `daemon`
    listens there (port_not_ours), and a failure names the other process."""
    deadline = time.monotonic() + timeout
    while True:
        other = ""
        with contextlib.suppress(OSError, subprocess.SubprocessError, StackError):
            if check():
                other = port_not_ours(daemon, port[1], port[0]) if port and daemon else ""
                if not other:
                    return
        taken = f" -- port {port[0]}:{port[1]} taken by another process: {other}" if other else ""
        if daemon is not None and not daemon.alive():
            why = died_because(daemon.log)
            raise StackError(f"{daemon.name} died while waiting for {what}" + (f": {why}" if why else "") + taken)
        if time.monotonic() > deadline:
            raise StackError(f"timed out after {timeout:.0f} s waiting for {what}"
                             + (f" ({daemon.name})" if daemon else "") + taken)
        time.sleep(interval)


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def port_not_ours(daemon: Daemon, port: int, host: str = "127.0.0.1") -> str:
    """'' unless another process than `daemon` (its PID file's process and descendants) listens where a
    connect to host:port lands (tools.common.served_by_another); else why, naming the port and the PID.
    '' when it cannot tell: a daemon started behind --launcher (an srun step's process descends from
    slurmstepd, not from us), one on another host, or its listener in no PID namespace seen here."""
    pid = daemon.pid()
    return served_by_another(host, port, pid) if pid and not daemon.remote else ""


def wait_port(daemon: Daemon, port: int, timeout: float, host: str = "127.0.0.1") -> None:
    """Wait until `daemon` itself accepts connections on host:port: an answer from another process
    (another job's server bound the port between the caller's free-port check and this daemon's start;
    ours then fails to bind and exits) is never taken for ours -- the start fails naming the port, the
    other's PID and the daemon's own last log line."""
    wait_until(f"{host}:{port} to accept connections", lambda: port_open(port, host), timeout, daemon,
               port=(host, port))


def require_port_free(daemon_name: str, port: int, host: str = "127.0.0.1") -> None:
    if not port_free(port, host):
        raise StackError(f"{daemon_name}: port {host}:{port} is already in use")


def binary_version(argv: list[str], timeout: float = 30) -> str:
    """First non-empty line a binary prints for its version flag."""
    out = subprocess.run(here(argv), capture_output=True, text=True, timeout=timeout)
    text = (out.stdout + out.stderr).strip()
    if out.returncode != 0 or not text:
        raise StackError(f"cannot read the version of {argv[0]}: {text or 'no output'}")
    return text.splitlines()[0].strip()


def which(name: str, hint: str) -> str:
    """`name`'s path on this node's PATH: the host's, or the stack image's."""
    if image_exec():
        r = subprocess.run(here(["sh", "-c", 'command -v "$0"', name]), capture_output=True, text=True, timeout=60)
        path = r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else None
        where = f"in the stack's image ({' '.join(image_exec())})"
    else:
        path, where = shutil.which(name), "on PATH"
    if path is None:
        raise StackError(f"{name} not found {where} ({hint})")
    return path


def run(argv: list[str], what: str, timeout: float = 120, task: Daemon | None = None,
        env: dict | None = None) -> subprocess.CompletedProcess:
    """Run a set-up command to its end; on failure raise naming it, with its output.

    With `task`, its PID file exists while the command runs, so that `down` also ends a set-up
    command left running by an `up` that was killed outright.
    """
    argv = here(argv)
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)
    if task is not None:
        task.write_pid(proc.pid)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as e:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise StackError(f"{what}: timed out after {timeout} s ({' '.join(argv)})") from e
    finally:
        if task is not None:
            task.pidfile.unlink(missing_ok=True)
    if proc.returncode != 0:
        raise StackError(f"{what} failed (exit {proc.returncode}): {' '.join(argv)}\n{out}{err}")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def write_json(path: Path, data: dict) -> None:
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


class Stack:
    """A storage stack: an ordered list of daemons plus mounts, all under one state directory.

    Subclasses implement `start()` (start daemons with `self.daemon(...)`, record mounts with
    `self.add_mount`, fill `self.info`) and may extend `versions()` and `add_arguments()`.
    """

    name = "stack"
    system_kind = "real"
    stop_timeout = 15.0  # seconds from SIGTERM to SIGKILL

    def __init__(self, state: Path, args: argparse.Namespace | None = None):
        self.state = Path(state).resolve()
        self.args = args
        self.info: dict = {}
        self.started: list[str] = []
        self.placed: list[str] = []  # daemons started through launch_on (placement recorded)

    # -- helpers for subclasses ------------------------------------------------------------
    def daemon(self, name: str) -> Daemon:
        return Daemon(self.state, name)

    def run(self, argv: list[str], what: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """A set-up command (not a daemon), findable by `down` through run/setup.pid while it runs."""
        return run(argv, what, timeout, task=self.daemon("setup"))

    def launch(self, name: str, argv: list[str], env: dict | None = None, cwd: Path | None = None) -> Daemon:
        d = self.daemon(name)
        say(f"{self.name}: starting {name}")
        d.start(argv, env=env, cwd=cwd)
        self._record_started(name)
        return d

    def launch_on(self, host: str, name: str, argv: list[str], env: dict | None = None, serves: str = "",
                  cwd: Path | None = None) -> Daemon:
        """Start `name` on `host` (this host, or behind --launcher), wrapped by where.py so that the
        node it *really* ran on, and the address it serves, land in run/NAME.where.json."""
        wrapped = [python(), str(WHERE), "run", str(self.where_file(name)), "--serves", serves, "--", *argv]
        self.where_file(name).unlink(missing_ok=True)
        self.placed.append(name)
        return self.launch(name, self.on_host(host, wrapped), env=env, cwd=cwd)

    def where_file(self, name: str) -> Path:
        return self.state / "run" / f"{name}.where.json"

    def placement(self, wait: float = 10.0) -> dict:
        """Every wrapped daemon's measured placement (hostname, node, addresses, serves), by name;
        a daemon whose record never appeared (within `wait` s) is listed with its reason."""
        out: dict = {}
        deadline = time.monotonic() + wait
        for name in self.placed:
            f = self.where_file(name)
            while not f.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            try:
                out[name] = json.loads(f.read_text())
            except (OSError, ValueError) as e:
                out[name] = {"missing": f"no placement record at {f}: {e}"}
        return out

    def _record_started(self, name: str) -> None:
        if name not in self.started:
            self.started.append(name)
        (self.state / "run").mkdir(parents=True, exist_ok=True)
        (self.state / "run" / "daemons").write_text("\n".join(self.started) + "\n")

    def add_mount(self, path: Path) -> None:
        f = self.state / "mounts"
        known = f.read_text().split("\n") if f.exists() else []
        if str(path) not in known:
            with open(f, "a") as fh:
                fh.write(f"{path}\n")

    def mounts(self) -> list[Path]:
        f = self.state / "mounts"
        return [Path(x) for x in f.read_text().split("\n") if x] if f.exists() else []

    def known_daemons(self) -> list[str]:
        f = self.state / "run" / "daemons"
        names = f.read_text().split() if f.exists() else []
        # PID files of daemons a crashed `up` never listed are found too
        extra = sorted(p.stem for p in (self.state / "run").glob("*.pid") if p.stem not in names)
        return names + extra

    # -- the three commands ----------------------------------------------------------------
    def start(self) -> None:
        raise NotImplementedError

    def up(self) -> dict:
        leftovers = [p.name for p in (self.state / "stack.json", self.state / "mounts") if p.exists()]
        leftovers += [p.name for p in (self.state / "run").glob("*.pid")]
        if leftovers:
            raise StackError(f"{self.name}: {self.state} is in use ({', '.join(sorted(leftovers))}): run `down` first")
        self.state.mkdir(parents=True, exist_ok=True)
        (self.state / "stack.json").unlink(missing_ok=True)
        t0 = time.monotonic()
        try:
            self.start()
            self.info.update(stack=self.name, system_kind=self.system_kind, state=str(self.state),
                             started_at=datetime.now(UTC).isoformat(timespec="seconds"),
                             daemons=self.started, mounts=[str(m) for m in self.mounts()],
                             placement=self.placement(),
                             versions=self.versions(), up_seconds=round(time.monotonic() - t0, 2))
            write_json(self.state / "stack.json", self.info)
        except BaseException as e:
            failing = self._failing_daemon(e)
            print(f"{self.name}: up FAILED: {e}", file=sys.stderr)
            if failing:
                d = self.daemon(failing)
                print(f"--- last lines of {d.log} ---\n{log_tail(d.log)}\n---", file=sys.stderr)
            print(f"{self.name}: cleaning up everything `up` started", file=sys.stderr)
            try:
                self.down(quiet=True)
            except StackError as cleanup:
                print(f"{self.name}: cleanup after the failed up: {cleanup}", file=sys.stderr)
            raise
        return self.info

    def _failing_daemon(self, exc: BaseException) -> str | None:
        """The daemon an error names (`rgw.a: port ...`, `... (mon.a)`) if it has a log, else a dead one."""
        msg = str(exc)
        named = re.findall(r"^([\w.@-]+)[: ]", msg) + re.findall(r"\(([\w.@-]+)\)", msg)
        for name in named:
            if self.daemon(name).log.exists():
                return name
        dead = [n for n in self.started if not self.daemon(n).alive()]
        return dead[0] if dead else None

    def down(self, quiet: bool = False) -> dict:
        t0 = time.monotonic()
        problems = []
        for m in reversed(self.mounts()):
            try:
                unmount(m)
            except StackError as e:
                problems.append(str(e))
        stopped = []
        for name in reversed(self.known_daemons()):
            t1 = time.monotonic()
            if self.daemon(name).stop(self.stop_timeout):
                stopped.append(f"{name} {time.monotonic() - t1:.1f}s")
        # a mount whose daemon was only now stopped may need a second, lazy unmount
        for m in self.mounts():
            with contextlib.suppress(StackError):
                unmount(m)
        still = [str(m) for m in self.mounts() if mounted(m)]
        if still:
            problems.append(f"still mounted: {', '.join(still)}")
        if not problems:
            (self.state / "mounts").unlink(missing_ok=True)
            (self.state / "run" / "daemons").unlink(missing_ok=True)
        (self.state / "stack.json").unlink(missing_ok=True)
        result = {"stack": self.name, "stopped": stopped, "down_seconds": round(time.monotonic() - t0, 2)}
        if not quiet:
            say(f"{self.name}: down ({', '.join(stopped) or 'nothing was running'})")
        if problems:
            raise StackError("; ".join(problems))
        return result

    def status(self) -> tuple[dict, list[str]]:
        """The stack's recorded state plus a live check of every daemon and mount."""
        f = self.state / "stack.json"
        info = json.loads(f.read_text()) if f.exists() else {"stack": self.name, "up": False}
        daemons, dead = {}, []
        for name in self.known_daemons():
            d = self.daemon(name)
            ok = d.alive()
            daemons[name] = {"pid": d.pid(), "alive": ok, "log": str(d.log)}
            if not ok:
                dead.append(name)
        for m in self.mounts():
            if not mounted(m):
                dead.append(f"mount {m}")
        if not f.exists():
            dead.append("stack (not up: no stack.json)")
        info["live"] = daemons
        info["healthy"] = not dead
        return info, dead

    def versions(self) -> dict:
        return {}

    # -- several hosts --------------------------------------------------------------------------
    def hosts(self) -> list[str]:
        hosts = [h for h in getattr(self.args, "hosts", "localhost").split(",") if h]
        if not hosts:
            raise StackError("--hosts is empty")
        return hosts

    def is_local(self, host: str) -> bool:
        return host in LOCAL_HOSTS or host == socket.gethostname()

    def loopback(self) -> bool:
        """Every daemon on this host: services bind 127.0.0.1. Otherwise each binds its node's address."""
        return all(self.is_local(h) for h in self.hosts())

    def address(self, host: str) -> str:
        """The address a daemon on `host` binds to and is reached at: 127.0.0.1 when the whole stack is
        on this host, else the host's entry of --addresses (the allocation's NodeAddr), else DNS."""
        if self.loopback():
            return "127.0.0.1"
        addrs = [a for a in (getattr(self.args, "addresses", None) or "").split(",") if a]
        if addrs:
            hosts = self.hosts()
            if len(addrs) != len(hosts):
                raise StackError(f"--addresses has {len(addrs)} entries for {len(hosts)} --hosts")
            return addrs[hosts.index(host)]
        return socket.gethostbyname(host)

    def on_host(self, host: str, argv: list[str]) -> list[str]:
        """argv as run on `host`: unchanged for this host (run and start put it in the image when there is
        one), else behind the --launcher prefix, in the stack's image there when there is one."""
        if self.is_local(host):
            return argv
        return Remote(self.args.launcher.format(host=host).split()
                      + shlex.split(os.environ.get(EXEC_REMOTE_ENV, "")) + list(argv))

    # -- command line ----------------------------------------------------------------------
    @classmethod
    def add_arguments(cls, p: argparse.ArgumentParser) -> None:
        pass


LOCAL_HOSTS = ("localhost", "127.0.0.1")
WHERE = Path(__file__).resolve().parent / "where.py"


def add_port_arguments(p: argparse.ArgumentParser, mount: str | None = None, **ports: tuple[int, str]) -> None:
    """--<name>-port for each daemon (`rgw=(7480, "radosgw S3")`), and --mount for a FUSE client."""
    for name, (default, what) in ports.items():
        p.add_argument(f"--{name}-port", type=int, default=default, help=f"{what} port (default {default})")
    if mount:
        p.add_argument("--mount", type=Path, help=f"{mount} mount point (default STATE/mnt)")


def add_host_arguments(p: argparse.ArgumentParser, first_host_runs: str) -> None:
    """--hosts and --launcher, the same for every stack."""
    p.add_argument("--hosts", default="localhost",
                   help=f"comma-separated system nodes; {first_host_runs} (default: localhost, one host)")
    p.add_argument("--addresses", default="",
                   help="comma-separated addresses of --hosts, in order (the allocation's NodeAddr); default: DNS")
    p.add_argument("--launcher", default="srun --overlap --nodes=1 --ntasks=1 --nodelist={host}",
                   help="command prefix that runs a daemon on another host ({host} is replaced; default: an srun step)")


@contextlib.contextmanager
def state_lock(state: Path) -> Iterator[None]:
    """Serialise up/down/status on one state directory (the lock dies with the process)."""
    state.mkdir(parents=True, exist_ok=True)
    with open(state / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _terminate(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through `up`, which then cleans up what it started


def main(stack_cls: type[Stack], argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=f"{stack_cls.name}/stack.py", description=(stack_cls.__doc__ or "").strip())
    p.add_argument("command", choices=["up", "down", "status"])
    p.add_argument("--state", required=True, type=Path, help="state directory (PID files, logs, stack.json)")
    stack_cls.add_arguments(p)
    args = p.parse_args(argv)
    stack = stack_cls(args.state, args)
    signal.signal(signal.SIGTERM, _terminate)
    with state_lock(stack.state):
        try:
            if args.command == "up":
                info = stack.up()
                print(json.dumps(info, indent=2, sort_keys=True))
                return 0
            if args.command == "down":
                stack.down()
                return 0
            info, dead = stack.status()
            print(json.dumps(info, indent=2, sort_keys=True))
            if dead:
                for name in dead:
                    print(f"{stack.name}: DEAD: {name}", file=sys.stderr)
                    d = stack.daemon(name)
                    if d.log.exists():
                        print(f"--- last lines of {d.log} ---\n{log_tail(d.log)}\n---", file=sys.stderr)
                return 1
            return 0
        except StackError as e:
            print(f"{stack.name}: error: {e}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130
