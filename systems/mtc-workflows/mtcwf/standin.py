"""A minimal local stand-in of the shared launcher API (systems/mtc/).

Same surface as ``systems/mtc``'s ``launch.cluster(...)`` as far as the
workflows use it, but with no network namespaces and no agents: n "nodes" on
this host, each with its own real memcached (designs ``memfs`` and
``locality``) and ``mounts_per_node`` real MemFS FUSE mounts
(``systems/memfs/build/memfs``), or a node-local directory (``local-disk``).
Commands run as local subprocesses.  Used by the tests, and by the runner
when the shared launcher is not available (the raw record then says so).

    with cluster(nodes=2, design="locality", mounts_per_node=2, workdir=d) as c:
        r = c.nodes[0].run("ls", cwd=c.nodes[0].mountpoints[0])
        c.stats(); c.locate(["/x/y"])

``c.nodes[i]`` is system node ``i + 1`` (node 0 is the driver: the caller).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tools.common import free_port, port_taken_by_another  # the tree's one (the repository root is on PYTHONPATH)

REPO = Path(__file__).resolve().parents[3]
MEMFS_BUILD = REPO / "systems" / "memfs" / "build"
DESIGNS = ("memfs", "locality", "local-disk")


def rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for ln in fh:
                if ln.startswith("VmRSS:"):
                    return int(ln.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def dir_bytes(path: str | os.PathLike) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except FileNotFoundError:
                pass
    return total


def memcached_stats(host: str, port: int) -> dict:
    out = {}
    with socket.create_connection((host, port), 5) as s:
        s.sendall(b"stats\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    for ln in buf.decode().splitlines():
        p = ln.split()
        if len(p) == 3 and p[0] == "STAT":
            out[p[1]] = int(p[2]) if p[2].isdigit() else p[2]
    return out


class Node:
    def __init__(self, index: int, root: Path):
        self.index = index          # 1..n (node 0 is the driver)
        self.name = f"node{index}"
        self.root = root
        self.mountpoints: list[str] = []
        self.local_dir: str | None = None
        self.memcached = None       # Popen
        self.port = None
        self.fuse = []              # Popen per mount

    def run(self, cmd: str, cwd: str | None = None, env: dict | None = None,
            timeout: float | None = None) -> dict:
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        t0 = time.time()
        try:
            p = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=full_env, capture_output=True,
                               text=True, timeout=timeout)
            rc, so, se = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as exc:
            rc, so, se = 124, exc.stdout or "", (exc.stderr or "") + f"\ntimeout after {timeout}s"
            so = so.decode() if isinstance(so, bytes) else so
            se = se.decode() if isinstance(se, bytes) else se
        return {"rc": rc, "stdout": so, "stderr": se, "t_start": t0, "t_end": time.time(),
                "node": self.index}


class StandInCluster:
    kind = "stand-in:local-processes"

    def __init__(self, nodes: int, design: str, mounts_per_node: int = 1, memfs_opts: dict | None = None,
                 network: dict | None = None, workdir: str | os.PathLike = "/tmp/mtcwf-standin",
                 memcached_mb: int = 1024, memcached_opts: list[str] | None = None):
        if design not in DESIGNS:
            raise ValueError(f"design {design!r} not in {DESIGNS}")
        self.n = int(nodes)
        self.design = design
        self.k = int(mounts_per_node)
        self.memfs_opts = dict(memfs_opts or {})
        self.network = dict(network or {})
        self.workdir = Path(workdir)
        self.memcached_mb = memcached_mb
        self.memcached_opts = list(memcached_opts or [])
        self.nodes: list[Node] = []
        self._log_fhs = []

    # -------------------------------------------------------------- start
    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    @property
    def servers(self) -> str:
        return ",".join(f"127.0.0.1:{nd.port}" for nd in self.nodes)

    def start(self):
        self.workdir.mkdir(parents=True, exist_ok=True)
        for i in range(1, self.n + 1):
            root = self.workdir / f"node{i}"
            if root.exists():
                shutil.rmtree(root)
            root.mkdir(parents=True)
            self.nodes.append(Node(i, root))
        if self.design == "local-disk":
            for nd in self.nodes:
                d = nd.root / "disk"
                d.mkdir()
                nd.local_dir = str(d)
                nd.mountpoints = [str(d)] * self.k
            return
        for nd in self.nodes:
            self._start_memcached(nd)
        for nd in self.nodes:
            for j in range(self.k):
                self._mount(nd, j)

    def _start_memcached(self, nd: Node):
        why = []
        for _ in range(5):
            port = free_port()
            cmd = ["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", str(self.memcached_mb),
                   "-I", "8m", "-M", "-t", "2", "-c", "4096"] + self.memcached_opts
            if os.geteuid() == 0:
                cmd += ["-u", "root"]
            err = tempfile.TemporaryFile()  # memcached's own words, for the failure
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
            deadline = time.time() + 5
            while time.time() < deadline and p.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", port), 0.2).close()
                except OSError:
                    time.sleep(0.02)
                    continue
                # the answer may be another job's memcached on a port taken since free_port()
                taken = port_taken_by_another("127.0.0.1", port, p)
                if not taken:
                    nd.memcached, nd.port = p, port
                    return
                why.append(taken)
                break
            _stop_proc(p)
            err.seek(0)
            said = err.read().decode(errors="replace").strip()[-500:]
            if said or p.returncode not in (None, 0):
                why.append(f"port {port}: exit {p.returncode}: {said or 'no output'}")
        raise RuntimeError(f"{nd.name}: could not start memcached in 5 tries: "
                           + "; ".join(why or ["no answer in 5 s"]))

    def _mount(self, nd: Node, j: int):
        mnt = nd.root / f"mnt{j}"
        mnt.mkdir()
        log = open(nd.root / f"mnt{j}.log", "w")
        self._log_fhs.append(log)
        cmd = [str(MEMFS_BUILD / "memfs"), "--servers", self.servers]
        if self.design == "locality":
            cmd += ["--policy", "locality", "--local-server", str(nd.index - 1)]
        for key, val in self.memfs_opts.items():
            cmd += [f"--{key.replace('_', '-')}", str(val)]
        cmd += ["-f", str(mnt)]
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        nd.fuse.append(p)
        deadline = time.time() + 15
        while time.time() < deadline:
            if p.poll() is not None:
                raise RuntimeError(f"{nd.name}: memfs exited ({p.returncode}): "
                                   + (nd.root / f"mnt{j}.log").read_text()[-2000:])
            if os.path.ismount(mnt):
                nd.mountpoints.append(str(mnt))
                return
            time.sleep(0.02)
        raise RuntimeError(f"{nd.name}: memfs did not mount {mnt}")

    # -------------------------------------------------------------- stop
    def stop(self):
        for nd in self.nodes:
            for mnt, p in zip(list(nd.mountpoints), list(nd.fuse)):
                if os.path.ismount(mnt):
                    r = subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
                    if r.returncode != 0:
                        subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
                _stop_proc(p)
            for p in nd.fuse:
                _stop_proc(p)
            if nd.memcached is not None:
                _stop_proc(nd.memcached)
        for fh in self._log_fhs:
            with contextlib.suppress(Exception):
                fh.close()
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(self.workdir)

    # -------------------------------------------------------------- queries
    def stats(self) -> list[dict]:
        """Per system node: data held (memcached bytes or directory bytes) and RSS."""
        out = []
        for nd in self.nodes:
            row = {"node": nd.index, "fuse_rss_bytes": sum(rss_bytes(p.pid) for p in nd.fuse)}
            if self.design == "local-disk":
                row.update(memcached_bytes=0, memcached_items=0, memcached_rss_bytes=0,
                           disk_bytes=dir_bytes(nd.local_dir))
            else:
                st = memcached_stats("127.0.0.1", nd.port)
                row.update(memcached_bytes=int(st.get("bytes", 0)), memcached_items=int(st.get("curr_items", 0)),
                           memcached_rss_bytes=rss_bytes(nd.memcached.pid), disk_bytes=0)
            out.append(row)
        return out

    def locate(self, paths: list[str]) -> dict[str, list[int]]:
        """FS path -> owner nodes (1..n), from the file system's own metadata (memfs-locate)."""
        if self.design == "local-disk":
            raise ValueError("local-disk has no file-system owner information")
        paths = list(paths)
        out: dict[str, list[int]] = {}
        for i in range(0, len(paths), 200):
            chunk = paths[i:i + 200]
            r = subprocess.run([str(MEMFS_BUILD / "memfs-locate"), "--servers", self.servers,
                                "--format", "owners", *chunk], capture_output=True, text=True)
            for ln in r.stdout.splitlines():
                p, _, own = ln.partition("\t")
                out[p] = [int(x) + 1 for x in own.split(",") if x.strip()]
        return {p if p.startswith("/") else "/" + p: out.get(p if p.startswith("/") else "/" + p, [])
                for p in paths}


def _stop_proc(p: subprocess.Popen):
    if p.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        p.send_signal(signal.SIGTERM)
    try:
        p.wait(5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            p.kill()
        p.wait()


def cluster(nodes: int, design: str, mounts_per_node: int = 1, memfs_opts: dict | None = None,
            network: dict | None = None, workdir: str | os.PathLike = "/tmp/mtcwf-standin", **kw):
    return StandInCluster(nodes, design, mounts_per_node, memfs_opts, network, workdir, **kw)
