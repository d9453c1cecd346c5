"""Start, check and stop the inference servers — one worker each, threads pinned (stdlib only).

    python -m repro_inference.servers start KIND --models DIR --model M --workdir W [--threads N] [--port P]
    python -m repro_inference.servers stop --workdir W
    python -m repro_inference.servers run KIND --models DIR --model M --workdir W -- CMD ...
    python -m repro_inference.servers serve KIND --models DIR --model M --workdir W --bind 0.0.0.0 \
        --ready-file W/server.json        (the server alone, until SIGTERM: the n+1 layout's server node)

KIND (the protocol each speaks, the ``system_kind`` its rows get):
  torchserve            TorchServe 0.12, /predictions/<m>                                     real
  triton-python-torch   tritonserver 2.51 (nvidia-pytriton), Python backend running the torch model
                                                                  stand-in:tritonserver-python-backend
  triton-python-tf      the same server, Python backend running the TF SavedModel   (the same label)
  triton-pytorch        tritonserver on PATH, libtorch backend (the cluster image)            real
  triton-tensorflow     tritonserver on PATH, TensorFlow backend (the cluster image)          real
  tfserving-standin     TF Serving's REST API over TF in Python, /v1/models/<m>:predict
                                                                  stand-in:tfserving-rest-on-tf-python
  tfserving             tensorflow_model_server on PATH (the cluster image)                   real

``start`` returns once the model answers ready, writing ``W/server.json`` (url, port, pid, host,
slurm_node, system_kind) and ``W/server.pid``; the server runs in its own session and ``stop`` ends that
whole process group (TERM, then KILL after 20 s). A model that fails to load ends ``start`` with the server's exit code
(or 1 if the server keeps running without the model, as TorchServe does) and the tail of its own log;
the server is stopped. ``run`` starts, runs CMD with REPRO_SERVER_URL / REPRO_SYSTEM_KIND /
REPRO_MODEL set, and always stops the server (also on SIGINT/SIGTERM). ``serve`` starts, writes
``--ready-file`` (the same JSON, atomically) and blocks until SIGTERM/SIGINT/SIGUSR1 (srun forwards
USR1 to its task; srun's own TERM cancels the step) or until the server dies,
always stopping the server group; its exit code is 0 after a signal, the server's own if it died.

``--bind ADDR`` (default 127.0.0.1) is the address the inference API listens on (TorchServe's
inference address, tritonserver's --http-address/--grpc-address, the TF Serving stand-in's host);
TorchServe's management and metrics APIs stay on 127.0.0.1 (only the readiness check uses them).
The real tensorflow_model_server cannot be bound: it always listens on 0.0.0.0 (``bind_effective``).
The URL in server.json is reachable from other nodes: with a wildcard bind (0.0.0.0, ::) it names
``--advertise`` or this node's hostname, else the bind address.

``--device cuda|cpu`` (default cpu): with cuda the server must find a GPU before it starts
(device.require: otherwise exit 3, the message naming the node -- never a silent CPU run); TorchServe
gets ``number_of_gpu: 1`` (one worker on the GPU, its handler puts the model on ``cuda:<gpu_id>``),
Triton's served config.pbtxt ``instance_group KIND_GPU`` (rendered into the run's repository), the torch
and TF stand-ins ``REPRO_DEVICE=cuda``; ``tensorflow_model_server`` (the GPU image) uses the GPU it sees.
server.json records the device measured (GPU name, driver, memory); ``serve`` samples the GPU's
utilisation and memory while serving into ``gpu_samples.json`` beside the ready file.
``--threads 0``: the frameworks' default thread pools (the paper's "default configurations").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from repro_inference import device as devmod
from repro_inference.spec import SYSTEM_KINDS
from repro_inference.triton_config import with_device

SRC = Path(__file__).resolve().parents[1]
SYSTEM = SRC.parent
TRITON_KINDS = ("triton-python-torch", "triton-python-tf", "triton-pytorch", "triton-tensorflow")
PYINFO = "import sys, sysconfig; print('%d.%d' % sys.version_info[:2], sysconfig.get_config_var('LIBDIR'))"
KINDS = ("torchserve", *TRITON_KINDS, "tfserving-standin", "tfserving")
# lines in TorchServe's logs that mean the model will not come up (it retries the worker forever)
TORCHSERVE_FATAL = ("Backend worker process died", "Load model failed", "Failed to load model",
                    "ModelNotFoundException", "InvalidModelException")


class ServerError(RuntimeError):
    def __init__(self, message: str, returncode: int, log: str):
        super().__init__(f"{message} (exit code {returncode})\n--- server log (tail) ---\n{log}")
        self.returncode, self.log = returncode, log


class PortTaken(ServerError):
    """A port handed to the server is served by another process (``why`` names the port and its PID)."""

    def __init__(self, kind: str, taken: tuple[int, str], returncode: int, log: str):
        self.port, self.why = taken
        super().__init__(f"{kind}: port {self.port} taken: {self.why}", returncode, log)


def venv(stack: str) -> Path:
    """$REPRO_VENV_TORCH / $REPRO_VENV_TF (the images' /opt/repro/venv-*), else the cached venv that
    systems/inference/setup.sh builds (never built here; tests call setup.sh first)."""
    override = os.environ.get(f"REPRO_VENV_{stack.upper()}")
    if override:
        return Path(override)
    out = subprocess.run([str(SYSTEM / "setup.sh"), f"path-{stack}"], check=True, capture_output=True, text=True)
    path = Path(out.stdout.strip())
    if not (path / ".complete").exists():
        raise FileNotFoundError(f"the {stack} venv is not built ({path}); run systems/inference/setup.sh {stack}")
    return path


WILDCARD = ("0.0.0.0", "::", "")


try:  # the tree's one free_port, where the repository is on the path (run.py's steps; images via in-image.sh)
    from tools.common import free_port, served_by_another
except ImportError:  # this package alone (`apptainer exec <image> python3 -m repro_inference.servers`, no repo)
    def free_port(host: str = "127.0.0.1") -> int:
        with socket.socket() as s:
            s.bind(("0.0.0.0" if host in WILDCARD else host, 0))
            return s.getsockname()[1]

    def served_by_another(host: str, port: int, root: int) -> str:
        return ""  # without the tree's listener check: the readiness answer alone decides, as before

PORT_TRIES = 3  # starts on fresh ports when one handed out was taken by another process meanwhile


def advertised_host(bind: str, advertise: str | None = None) -> str:
    """The host name other nodes reach this server at: --advertise, else the bind address unless it is
    a wildcard, else this node's hostname."""
    if advertise:
        return advertise
    return socket.gethostname() if bind in WILDCARD else bind


def _get(url: str, timeout: float = 2.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, b""


def _tail(path: Path, n: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except FileNotFoundError:
        return "(no log)"


class Server:
    """One server process group; ``with Server(...) as s:`` starts and always stops it."""

    def __init__(self, kind: str, models: Path, model: str, workdir: Path, threads: int = 1,
                 port: int | None = None, timeout: float = 600.0, bind: str = "127.0.0.1",
                 advertise: str | None = None, device: str = "cpu"):
        if kind not in KINDS:
            raise ValueError(f"unknown server kind {kind!r}; known: {', '.join(KINDS)}")
        if device not in devmod.DEVICES:
            raise ValueError(f"device must be one of {devmod.DEVICES}, not {device!r}")
        self.device = device
        self.kind, self.models, self.model = kind, Path(models).resolve(), model
        self.workdir, self.threads, self.timeout = Path(workdir).resolve(), int(threads), timeout
        self.bind = bind
        # tensorflow_model_server has no host flag: it always listens on every interface
        self.bind_effective = "0.0.0.0" if kind == "tfserving" else bind
        self.port = port or free_port(self.bind_effective)
        self.port_given = bool(port)  # a port chosen here may be changed when another process took it
        self.system_kind = SYSTEM_KINDS[kind]
        self.proc = None
        self.log = self.workdir / "server.log"
        self.ports: list[int] = []  # the other ports this start handed its server (management, gRPC, metrics)
        # what other nodes use (the advertised URL) and what the readiness checks on this node use
        self.advertise = advertise
        self._urls()

    def _urls(self) -> None:
        self.url = f"http://{advertised_host(self.bind_effective, self.advertise)}:{self.port}"
        self.local = "127.0.0.1" if self.bind_effective in WILDCARD else self.bind_effective
        self.local_url = f"http://{self.local}:{self.port}"

    def _free_port(self, host: str = "127.0.0.1") -> int:
        """A port for one of the server's other listeners, remembered for the check that they are ours."""
        port = free_port(host)
        self.ports.append(port)
        return port

    def _taken(self) -> tuple[int, str] | None:
        """None unless a process other than our server (its Popen and descendants) listens on a port this
        start handed it (tools.common.served_by_another), else (port, why), naming that process:
        another job's server bound it between free_port() and our server's bind. Ours then exits (its
        bind failed), and a readiness answer on that port came from the other server."""
        for port in (self.port, *self.ports):
            why = served_by_another(self.local, port, self.proc.pid)
            if why:
                return port, why
        return None

    # ------------------------------------------------------------------ commands per kind
    def _env(self) -> dict:
        env = dict(os.environ, REPRO_THREADS=str(self.threads), REPRO_DEVICE=self.device, PYTHONUNBUFFERED="1",
                   TF_CPP_MIN_LOG_LEVEL="2")
        if self.threads:  # 0: the frameworks' defaults
            env.update(OMP_NUM_THREADS=str(self.threads), MKL_NUM_THREADS=str(self.threads))
        else:
            env.pop("OMP_NUM_THREADS", None)
        if self.device == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""  # a CPU run never touches a GPU that happens to be there
        env.pop("PYTHONPATH", None)
        return env

    def _torchserve(self, env):
        store = self.models / "torchserve"
        if not (store / f"{self.model}.mar").exists():
            raise FileNotFoundError(f"no {store}/{self.model}.mar; run prepare_torch first")
        self.mgmt = self._free_port()
        props = {
            "inference_address": f"http://{self.bind}:{self.port}", "management_address": f"http://127.0.0.1:{self.mgmt}",
            "metrics_address": f"http://127.0.0.1:{self._free_port()}", "model_store": str(store),
            "load_models": f"{self.model}={self.model}.mar", "default_workers_per_model": 1,
            # cuda: one GPU, one worker on it (TorchServe's default: workers = GPUs); cpu: none
            "number_of_gpu": 1 if self.device == "cuda" else 0, "job_queue_size": 1000,
            "install_py_dep_per_model": "false",
            "default_response_timeout": 600, "disable_token_authorization": "true",
            "vmargs": "-Xmx1g -XX:+UseSerialGC -XX:-UsePerfData",
        }
        (self.workdir / "config.properties").write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        env.update(LOG_LOCATION=str(self.workdir / "logs"), METRICS_LOCATION=str(self.workdir / "logs"))
        bin_ = venv("torch") / "bin"
        env["PATH"] = f"{bin_}:{env['PATH']}"  # its workers are started with the venv's python
        return [str(bin_ / "torchserve"), "--start", "--foreground", "--ncs", "--disable-token-auth",
                "--model-store", str(store), "--ts-config", str(self.workdir / "config.properties")]

    def _triton(self, env):
        repo = self.models / self.kind
        if not (repo / self.model / "config.pbtxt").exists():
            raise FileNotFoundError(f"no {repo}/{self.model}/config.pbtxt; run model preparation first")
        # a repository with only this model (the paper serves one model at a time)
        one = self.workdir / "repository"
        one.mkdir(exist_ok=True)
        # the model's versions linked, its config.pbtxt rendered for the run's device (KIND_GPU on cuda)
        mdir = one / self.model
        mdir.mkdir(exist_ok=True)
        for item in (repo / self.model).iterdir():
            if item.name != "config.pbtxt" and not (mdir / item.name).exists():
                (mdir / item.name).symlink_to(item)
        (mdir / "config.pbtxt").write_text(with_device((repo / self.model / "config.pbtxt").read_text(), self.device))
        args = [f"--model-repository={one}", f"--http-port={self.port}", f"--grpc-port={self._free_port(self.bind)}",
                f"--metrics-port={self._free_port()}", f"--http-address={self.bind}", f"--grpc-address={self.bind}",
                "--exit-on-error=true", "--strict-readiness=true", "--exit-timeout-secs=10", "--log-verbose=0",
                "--allow-metrics=false"]
        if self.kind.startswith("triton-python"):
            root = venv("torch")
            site = next((root / "lib").glob("python3*/site-packages"))
            trit = site / "pytriton" / "tritonserver"
            stack = venv("tf" if self.kind.endswith("tf") else "torch")
            env["PYTHONPATH"] = f"{SRC}:{next((stack / 'lib').glob('python3*/site-packages'))}"
            # the stub's embedded interpreter finds its prefix (the venv) from `python3` on PATH, as pytriton sets it
            env["PATH"] = f"{stack / 'bin'}:{env['PATH']}"
            pyver, libdir = subprocess.run([str(root / "bin" / "python"), "-c", PYINFO], capture_output=True,
                                           text=True, check=True).stdout.split()
            # as pytriton does: the backends directory with the stub built for this Python version
            backends = self.workdir / "backends"
            shutil.rmtree(backends, ignore_errors=True)
            shutil.copytree(trit / "backends", backends, ignore=shutil.ignore_patterns("__pycache__"))
            shutil.copy2(trit / "python_backend_stubs" / pyver / "triton_python_backend_stub", backends / "python")
            # the server's bundled libraries, and the interpreter's own libpython for the stub (MACHINE-FACTS)
            env["LD_LIBRARY_PATH"] = ":".join(p for p in (str(site / "nvidia_pytriton.libs"), libdir,
                                                          env.get("LD_LIBRARY_PATH", "")) if p)
            return [str(trit / "bin" / "tritonserver"), f"--backend-directory={backends}",
                    f"--cache-directory={trit / 'caches'}", *args]
        return ["tritonserver", *args]

    def _tfserving(self, env):
        base = self.models / "tfserving" / self.model
        if not base.is_dir():
            raise FileNotFoundError(f"no {base}/<version>/; run prepare_tf first")
        if self.kind == "tfserving":  # the -gpu image uses the GPU it sees (cpu: CUDA_VISIBLE_DEVICES="")
            return ["tensorflow_model_server", f"--rest_api_port={self.port}", f"--port={self._free_port()}",
                    f"--model_name={self.model}", f"--model_base_path={base}",
                    *([f"--tensorflow_intra_op_parallelism={self.threads}", "--tensorflow_inter_op_parallelism=1"]
                      if self.threads else [])]
        env["PYTHONPATH"] = str(SRC)
        return [str(venv("tf") / "bin" / "python"), "-m", "repro_inference.tfserving_standin",
                f"--model_base_path={base}", f"--model_name={self.model}", f"--rest_api_port={self.port}",
                f"--rest_api_host={self.bind}", f"--threads={self.threads}"]

    # ------------------------------------------------------------------ readiness
    def infer_path(self) -> str:
        if self.kind == "torchserve":
            return f"/predictions/{self.model}"
        if self.kind.startswith("triton"):
            return f"/v2/models/{self.model}/infer"
        return f"/v1/models/{self.model}:predict"

    def _ready(self) -> bool:
        if self.kind == "torchserve":
            code, body = _get(f"http://127.0.0.1:{self.mgmt}/models/{self.model}")
            if code != 200:
                return False
            workers = json.loads(body)[0].get("workers", [])
            return any(w.get("status") == "READY" for w in workers)
        if self.kind.startswith("triton"):
            return _get(f"{self.local_url}/v2/models/{self.model}/ready")[0] == 200
        return _get(f"{self.local_url}/v1/models/{self.model}")[0] == 200

    def _torchserve_failed(self) -> str | None:
        for f in sorted((self.workdir / "logs").glob("*.log")) + [self.log]:
            try:
                text = f.read_text(errors="replace")
            except FileNotFoundError:
                continue
            for marker in TORCHSERVE_FATAL:
                if marker in text:
                    return marker
        return None

    def _logs(self, settle_s: float = 0.0) -> str:
        """The server's log tails; with ``settle_s``, first wait (at most that long) until the logs
        have stopped growing for half a second."""
        model_log = self.workdir / "logs" / "model_log.log"
        deadline, last, still = time.time() + settle_s, None, 0.0
        while time.time() < deadline:
            size = tuple(p.stat().st_size if p.exists() else -1 for p in (self.log, model_log))
            still = still + 0.25 if size == last else 0.0
            if still >= 0.5:
                break
            last = size
            time.sleep(0.25)
        parts = [f"== {self.log.name}\n{_tail(self.log)}"]
        if model_log.exists():
            parts.append(f"== logs/model_log.log\n{_tail(model_log)}")
        return "\n".join(parts)

    def start(self) -> Server:
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            devmod.require(self.device)  # cuda and no GPU here: fail loudly, before anything starts
        except devmod.NoGPU as err:
            raise ServerError(str(err), 3, "(not started)") from err
        for attempt in range(1, PORT_TRIES + 1):
            try:
                return self._start()
            except PortTaken as err:
                if attempt == PORT_TRIES or (self.port_given and err.port == self.port):
                    raise
                print(f"servers: {err.why}: starting again on other ports", flush=True)
                if not self.port_given:
                    self.port = free_port(self.bind_effective)
                    self._urls()
        raise AssertionError("unreachable")

    def _start(self) -> Server:
        """One start on this start's ports; PortTaken when another process serves one of them."""
        self.ports = []
        env = self._env()
        if self.kind == "torchserve":
            cmd = self._torchserve(env)
        elif self.kind.startswith("triton"):
            cmd = self._triton(env)
        else:
            cmd = self._tfserving(env)
        print(f"servers: starting {self.kind} ({self.system_kind}) for {self.model} on {self.url}", flush=True)
        t0 = time.time()
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(cmd, cwd=self.workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        (self.workdir / "server.pid").write_text(f"{self.proc.pid}\n")
        try:
            while True:
                rc = self.proc.poll()
                if rc is not None:
                    if taken := self._taken():  # it could not bind: another process took a port first
                        raise PortTaken(self.kind, taken, rc, self._logs())
                    raise ServerError(f"{self.kind} exited while loading {self.model}", rc, self._logs())
                if self.kind == "torchserve" and (marker := self._torchserve_failed()):
                    # the worker's traceback may reach the log after the line that says it died (seen
                    # under load): let the logs settle before quoting them
                    raise ServerError(f"torchserve could not load {self.model} ({marker!r} in its log)", 1,
                                      self._logs(settle_s=5.0))
                if self._ready():
                    if taken := self._taken():  # the answer came from another job's server, not ours
                        raise PortTaken(self.kind, taken, 1 if self.proc.poll() is None else self.proc.returncode,
                                        self._logs())
                    break
                if time.time() - t0 > self.timeout:
                    raise ServerError(f"{self.kind}: {self.model} not ready after {self.timeout:.0f} s", 1,
                                      self._logs())
                time.sleep(0.5)
        except BaseException:
            self.stop()
            raise
        self.ready_s = time.time() - t0
        self.info = {"kind": self.kind, "system_kind": self.system_kind, "model": self.model, "url": self.url,
                     "port": self.port, "bind": self.bind, "bind_effective": self.bind_effective,
                     "host": socket.gethostname(), "slurm_node": os.environ.get("SLURMD_NODENAME", ""),
                     "slurm_job_id": os.environ.get("SLURM_JOB_ID", ""),
                     "infer_path": self.infer_path(), "pid": self.proc.pid, "threads": self.threads,
                     "device": devmod.describe(self.device),
                     "ready_s": round(self.ready_s, 2), "log": str(self.log)}
        write_json_atomic(self.workdir / "server.json", self.info)
        print(f"servers: {self.kind} ready in {self.ready_s:.1f} s", flush=True)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            stop_group(self.proc.pid, self.proc)
            self.proc = None
        (self.workdir / "server.pid").unlink(missing_ok=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def write_json_atomic(path: Path, data: dict) -> None:
    """Write, then rename: a reader on another node never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)


def stop_group(pid: int, proc: subprocess.Popen | None = None, grace: float = 20.0) -> None:
    """TERM the server's process group (its session: workers, stubs), KILL what is left after ``grace``."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.time() + grace
    while time.time() < deadline:
        if proc is not None:
            proc.poll()
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    if proc is not None:
        proc.wait()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("start", "run", "serve"):
        s = sub.add_parser(name)
        s.add_argument("kind", choices=KINDS)
        s.add_argument("--models", required=True, type=Path, help="the prepared models' directory")
        s.add_argument("--model", required=True)
        s.add_argument("--workdir", required=True, type=Path)
        s.add_argument("--threads", type=int, default=1)
        s.add_argument("--port", type=int)
        s.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the model to be ready")
        s.add_argument("--bind", default="127.0.0.1", help="address the inference API listens on (0.0.0.0: all)")
        s.add_argument("--advertise", help="host name written into the URL (default: hostname on a wildcard bind)")
        s.add_argument("--device", choices=devmod.DEVICES, default="cpu",
                       help="cuda: the model on the GPU (exit 3 if none is visible)")
        if name == "serve":
            s.add_argument("--ready-file", type=Path, required=True, help="server.json's copy, written once ready")
    st = sub.add_parser("stop")
    st.add_argument("--workdir", required=True, type=Path)
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    a = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if a.cmd == "run" and not command:
        p.error("run needs a command after --")
    if a.cmd == "stop":
        pidfile = a.workdir / "server.pid"
        if pidfile.exists():
            stop_group(int(pidfile.read_text()))
            pidfile.unlink()
        return 0
    server = Server(a.kind, a.models, a.model, a.workdir, a.threads, a.port, a.timeout, a.bind, a.advertise,
                    a.device)
    if a.cmd != "start":  # a signal while the model loads stops the server too (start()'s except)
        # SIGUSR1 too: srun forwards it to the task, while its SIGTERM cancels the step (SIGKILL)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
            signal.signal(sig, _interrupt)
    try:
        server.start()
    except ServerError as err:
        print(f"servers: {err}", file=sys.stderr)
        return err.returncode or 1
    except KeyboardInterrupt:
        print("servers: stopped by a signal while loading", file=sys.stderr, flush=True)
        return 130
    if a.cmd == "start":
        print(json.dumps({"url": server.url, "system_kind": server.system_kind, "pid": server.proc.pid}))
        return 0
    if a.cmd == "serve":
        return _serve(server, a.ready_file)
    try:
        env = dict(os.environ, REPRO_SERVER_URL=server.url, REPRO_SYSTEM_KIND=server.system_kind,
                   REPRO_MODEL=a.model, REPRO_SERVER_KIND=a.kind)
        return subprocess.run(command, env=env).returncode
    except KeyboardInterrupt:
        return 130
    finally:
        _ignore_signals()
        server.stop()


def _interrupt(*_):
    raise KeyboardInterrupt()


def _ignore_signals() -> None:
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        signal.signal(sig, signal.SIG_IGN)


def _serve(server: Server, ready_file: Path) -> int:
    """Block until SIGTERM/SIGINT (0) or the server's death (its exit code, with its log); always stop.
    On cuda the GPU's utilisation and memory are sampled all the while (gpu_samples.json beside the ready
    file, written when serving ends; the study cuts it into each Locust run's time window)."""
    sampler = devmod.GpuSampler(server.device).start()
    try:
        write_json_atomic(ready_file, server.info)
        print(f"servers: serving at {server.url} (ready file {ready_file}); SIGTERM or SIGUSR1 stops it", flush=True)
        while True:
            rc = server.proc.poll()
            if rc is not None:
                print(f"servers: {server.kind} died while serving (exit code {rc})\n--- server log (tail) ---\n"
                      f"{server._logs()}", file=sys.stderr, flush=True)
                return rc or 1
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("servers: stopping (signal)", flush=True)
        return 0
    finally:
        _ignore_signals()  # a second TERM must not cut the stop short
        server.stop()
        sampler.stop()
        write_json_atomic(Path(ready_file).with_name("gpu_samples.json"),
                          {"source": sampler.source, "device": server.device, "samples": sampler.samples})


if __name__ == "__main__":
    sys.exit(main())
