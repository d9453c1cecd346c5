"""Starts and stops the local stand-in platforms of systems/faas-standin (``faas-standin up``/``down``)
and the bare echo server, for the director and the tests. Every process started here is stopped
by ``stop()`` (or the context manager), by PID file, also when the caller fails."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STANDIN_BIN = REPO / "systems" / "faas-standin" / "build" / "faas-standin"
FUNCTIONS_BUILD = REPO / "systems" / "faas-functions" / "build"

# the functions each stand-in platform runs (None: the Go handler compiled into the runtime)
FUNCTIONS = {
    "imageproc": FUNCTIONS_BUILD / "imageproc",
    "imageproc-np": FUNCTIONS_BUILD / "imageproc-np",
    "reverse": FUNCTIONS_BUILD / "reverse",
    "reverse-go": None,
}


class StandInError(RuntimeError):
    pass


def _log_tail(log: Path | None, n: int = 1500) -> str:
    try:
        text = log.read_text(errors="replace").strip() if log else ""
    except OSError as exc:
        return f"its log {log} could not be read ({exc.strerror})"
    return f"its log {log} ends: {text[-n:]}" if text else f"its log {log} is empty (no output at all)"


def _load() -> str:
    try:
        la = os.getloadavg()[0]
    except OSError:
        return "load unknown"
    n = os.cpu_count() or 1
    return f"load {la:.2f} on {n} CPUs ({la / n:.2f} per CPU)"


def _wait_for(path: Path, proc: subprocess.Popen, what: str, timeout: float, log: Path | None = None) -> str:
    """The ready file's content; a start that fails says how (exit status or signal), the log's last
    lines and, for a timeout, the load it waited under."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return path.read_text().strip()
        if proc.poll() is not None:
            rc = proc.returncode
            how = f"killed by {signal.Signals(-rc).name}" if rc < 0 and -rc in signal.valid_signals() \
                else f"exited {rc}"
            raise StandInError(f"{what} {how} before it was ready ({' '.join(map(str, proc.args))}); "
                               + _log_tail(log))
        time.sleep(0.02)
    raise StandInError(f"{what} not ready within {timeout} s (timed out; {_load()}); " + _log_tail(log))


def _spawn(owner, argv: list[str], log_path: Path, ready: Path, what: str, timeout: float) -> str:
    """Starts argv as owner.proc (own session, output to log_path) and waits for the ready file;
    stops the owner if it does not get ready. Returns the ready file's content."""
    owner.state_dir.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        owner.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        return _wait_for(ready, owner.proc, what, timeout, log_path)
    except BaseException:
        owner.stop()
        raise


class _Managed:
    """A process started here (``proc``, in ``state_dir``): ``stop()`` ends it and removes a
    temporary state directory; usable as a context manager."""

    proc: subprocess.Popen | None = None
    _tmp: tempfile.TemporaryDirectory | None = None
    state_dir: Path

    def _end(self) -> None:
        raise NotImplementedError

    def start(self):
        raise NotImplementedError

    def stop(self) -> None:
        if self.proc is not None:
            self._end()
            self.proc = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class LocalPlatform(_Managed):
    """``faas-standin up --kind KIND`` running FUNCTION; ``url`` is the function's endpoint,
    ``scale_url`` the director's callback for the instance count.

    Placement (the cluster path; default: everything on this host, on loopback): ``launch`` is the
    command prefix that runs ``up`` on the platform's node (an srun step), ``listen`` the address
    it binds, ``instance_hosts`` the hosts its instances spread over (``[{"node", "listen",
    "launch"}]``, see systems/faas-standin/README.md). ``state_dir`` must then be on a directory
    both nodes see; ``down`` runs through ``launch`` too (the PID files are the platform node's)."""

    def __init__(self, kind: str, function: str, instances: int = 1, workers: int | None = None,
                 max_body: int | None = None, state_dir: Path | None = None, log: Path | None = None,
                 launch: list[str] = (), listen: str | None = None, instance_hosts: list[dict] | None = None):
        if kind not in ("openfaas", "nuclio-cpp", "nuclio-go"):
            raise StandInError(f"kind {kind!r}: want openfaas, nuclio-cpp or nuclio-go")
        if function not in FUNCTIONS:
            raise StandInError(f"function {function!r}: want one of {sorted(FUNCTIONS)}")
        if (kind == "nuclio-go") != (function == "reverse-go"):
            raise StandInError("nuclio-go runs exactly the compiled-in Go handler (function reverse-go)")
        if not STANDIN_BIN.exists():
            raise StandInError(f"{STANDIN_BIN} missing: run `make -C systems/faas-standin`")
        self.kind, self.function, self.instances = kind, function, instances
        self._tmp = None
        if state_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix=f"faas-{kind}-")
            state_dir = Path(self._tmp.name)
        self.state_dir = Path(state_dir)
        self.log = log or self.state_dir / "standin.log"
        self.argv = [str(STANDIN_BIN), "up", "--kind", kind, "--instances", str(instances),
                     "--state-dir", str(self.state_dir)]
        fprocess = FUNCTIONS[function]
        if fprocess is not None:
            if not fprocess.exists():
                raise StandInError(f"{fprocess} missing: run `make -C systems/faas-functions`")
            self.argv += ["--fprocess", str(fprocess)]
        if workers is not None:
            self.argv += ["--workers", str(workers)]
        if max_body is not None:
            self.argv += ["--max-body", str(max_body)]
        if listen is not None:
            self.argv += ["--listen", f"{listen}:0"]
        if instance_hosts:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            hosts = self.state_dir / "instance-hosts.json"
            hosts.write_text(json.dumps(instance_hosts))
            self.argv += ["--instance-hosts", str(hosts)]
        self.launch = list(launch)
        self.proc: subprocess.Popen | None = None
        self.base_url = ""

    @property
    def url(self) -> str:
        prefix = "/function/" if self.kind == "openfaas" else "/"
        return f"{self.base_url}{prefix}{self.function}"

    @property
    def scale_url(self) -> str:
        return f"{self.base_url}/system/scale"

    @property
    def status_url(self) -> str:
        return f"{self.base_url}/system/status"

    def start(self) -> LocalPlatform:
        _spawn(self, self.launch + self.argv, self.log, self.state_dir / "ready",
               f"faas-standin up --kind {self.kind}", 180 if self.launch else 30)
        try:
            self.base_url = (self.state_dir / "endpoint").read_text().strip()
        except FileNotFoundError:
            why = (f"faas-standin up --kind {self.kind} said ready but wrote no endpoint file; "
                   + _log_tail(self.log))
            self.stop()
            raise StandInError(why) from None
        return self

    def status(self) -> dict:
        """``GET /system/status``: the front's and every instance's measured node, hostname, address."""
        with urllib.request.urlopen(self.status_url, timeout=30) as r:
            return json.loads(r.read())

    def instance_pids(self) -> list[int]:
        return [int(p.read_text()) for p in sorted(self.state_dir.glob("instance-*.pid"))]

    def _end(self) -> None:
        subprocess.run(self.launch + [str(STANDIN_BIN), "down", "--state-dir", str(self.state_dir)], check=False,
                       capture_output=True, timeout=120)
        try:
            self.proc.wait(timeout=30 if self.launch else 15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()


class EchoServer(_Managed):
    """The bare HTTP echo server (no platform): the director's ceiling. ``launch``/``listen`` place
    it (an srun step on a system node, bound to its address); ``state_dir`` must then be shared."""

    def __init__(self, state_dir: Path | None = None, launch: list[str] = (), listen: str = "127.0.0.1"):
        if not STANDIN_BIN.exists():
            raise StandInError(f"{STANDIN_BIN} missing: run `make -C systems/faas-standin`")
        self._tmp = tempfile.TemporaryDirectory(prefix="faas-echo-") if state_dir is None else None
        self.state_dir = Path(self._tmp.name if self._tmp else state_dir)
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.launch, self.listen = list(launch), listen

    def start(self) -> EchoServer:
        endpoint = self.state_dir / "echo.endpoint"
        argv = [*self.launch, str(STANDIN_BIN), "echo", "--listen", f"{self.listen}:0", "--endpoint-file",
                str(endpoint), "--pid-file", str(self.state_dir / "echo.pid")]
        self.url = _spawn(self, argv, self.state_dir / "echo.log", endpoint, "faas-standin echo",
                          180 if self.launch else 15) + "/"
        return self

    def where(self, timeout: float = 20) -> dict:
        """Where the echo server measured it runs (its NODE line in its log, which may reach the log
        after the endpoint file when it runs on another node) and its address."""
        deadline = time.monotonic() + timeout
        while True:
            for line in (self.state_dir / "echo.log").read_text(errors="replace").splitlines():
                parts = line.split()
                if len(parts) >= 3 and parts[0] == "NODE":
                    return {"node": parts[1], "hostname": parts[2], "listen": self.url}
            if time.monotonic() > deadline:
                return {"node": None, "hostname": None, "listen": self.url}
            time.sleep(0.1)

    def _end(self) -> None:
        self.proc.terminate()  # srun forwards it to the step
        try:
            self.proc.wait(timeout=30 if self.launch else 10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def ensure_built() -> None:
    """Builds the functions and the stand-in runtimes (``make``; seconds when up to date)."""
    for folder in ("faas-functions", "faas-standin"):
        done = subprocess.run(["make", "-s", "-C", str(REPO / "systems" / folder), "all"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise StandInError(f"make -C systems/{folder} failed:\n{done.stdout}{done.stderr}")


def make_test_images(out: Path, count: int, size: int = 64, small_size: int = 48, small_every: int = 25) -> list[Path]:
    """Small test images with systems/faas-functions' generator (same format as the paper's)."""
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(FUNCTIONS_BUILD / "mkimages"), "--out", str(out), "--count", str(count), "--size", str(size),
                    "--small-size", str(small_size), "--small-every", str(small_every)],
                   check=True, capture_output=True)
    return sorted(out.glob("*.png"))


def pid_alive(pid: int) -> bool:
    """True while pid runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
