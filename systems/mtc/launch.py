#!/usr/bin/env python3
"""Start n per-node agents (memcached + FUSE clients) and drive them.

    from systems.mtc import launch
    with launch.cluster(nodes=4, design="memfs", mounts_per_node=1,
                        memfs_opts={"stripe_size": 524288, "threads": 8},
                        network={"name": "1GbE", "emulate": True, "rate_mbit": 1000},
                        workdir="/tmp/x") as c:
        r = c.nodes[0].run(["dd", "if=/dev/zero", f"of={c.nodes[0].mountpoints[0]}/f", "bs=1M", "count=8"])
        print(c.servers, c.locate("/f"), c.stats())

See README.md for the full API.  Locally every agent runs in its own network
namespace (systems/mtc/netns.py) or, without emulation, on 127.0.0.1 with its
own ports; inside a Slurm allocation every agent is a task started with
``srun --nodes=1 --ntasks=1 --nodelist=<node> --overlap`` on one of the
allocation's nodes after the first (the driver's).  Teardown is guaranteed:
context manager, atexit and signal handlers, and a fallback that unmounts,
kills and removes whatever an agent left behind.
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Client
from pathlib import Path

from systems.mtc import netns  # the project's Python path (workflow/pythonpath.txt)

HERE = Path(__file__).resolve().parent
AGENT = "systems.mtc.agent"  # run as a module by the same interpreter, with the same PYTHONPATH
DESIGNS = ("memfs", "locality", "local-disk", "none")
API_VERSION = 1


class LaunchError(RuntimeError):
    pass


class RemoteError(RuntimeError):
    """An RPC raised on the agent; the message carries its traceback."""


def _say(msg: str) -> None:
    print(f"[mtc {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- nodes
class Node:
    """One system node: its agent, memcached server and mountpoints."""

    def __init__(self, info: dict, authkey: bytes, cluster: Cluster):
        self.info = info
        self.index: int = info["index"]
        self.ip: str = info["ip"]
        self.server: str = info["server"]
        host, port = info["rpc"].rsplit(":", 1)
        self.rpc_address = (host, int(port))
        self.hostname: str = info.get("slurm_node") or info.get("hostname", "")
        self.workdir: str = info["workdir"]
        self.netns: str = info.get("netns", "")
        self.mountpoints: list[str] = []
        self._key = authkey
        self._cluster = cluster

    def __repr__(self):
        return f"Node({self.index}, server={self.server}, mounts={self.mountpoints})"

    def call(self, method: str, rpc_timeout: float | None = None, **kw):
        """Call an RPC method of the agent (a new connection per call: thread-safe).

        ``rpc_timeout`` bounds the wait for the answer (None: wait); connecting
        is bounded by CONNECT_TIMEOUT either way.  Other keywords go to the method.
        """
        conn = _connect(self.rpc_address, self._key)
        try:
            conn.send((method, kw))
            if rpc_timeout is not None and not conn.poll(rpc_timeout):
                raise TimeoutError(f"node {self.index}: {method} did not answer in {rpc_timeout} s")
            status, value = conn.recv()
        finally:
            conn.close()
        if status != "ok":
            raise RemoteError(f"node {self.index}: {method}: {value}")
        return value

    def run(self, cmd, cwd=None, env=None, timeout=None, shell=False) -> dict:
        """Run a command on the node; {rc, stdout, stderr, t_start, t_end, elapsed, node}.

        ``timeout``: the command is killed after it (rc 124); the RPC then waits
        at most 60 s longer for the answer (TimeoutError)."""
        rpc_to = None if timeout is None else float(timeout) + 60.0
        return self.call("run", rpc_timeout=rpc_to, cmd=cmd, cwd=cwd, env=env, timeout=timeout, shell=shell)

    def start(self, cmd, cwd=None, env=None, shell=False, name=None) -> str:
        """Start a background command; returns a handle for wait()/poll()/kill()."""
        return self.call("start", cmd=cmd, cwd=cwd, env=env, shell=shell, name=name)

    def wait(self, handle, timeout=None) -> dict | None:
        """Wait for a background command; None if it is still running after ``timeout``."""
        rpc_to = None if timeout is None else float(timeout) + 60.0
        return self.call("wait", rpc_timeout=rpc_to, handle=handle, timeout=timeout)

    def poll(self, handle):
        return self.call("poll", handle=handle)

    def kill(self, handle, sig=signal.SIGTERM):
        return self.call("kill", handle=handle, sig=int(sig))

    def stats(self) -> dict:
        return self.call("stats")

    def timed_open(self, paths, read=False) -> dict:
        return self.call("timed_open", paths=list(paths), read=read)

    def stat(self, paths) -> list:
        return self.call("stat", paths=list(paths))

    def getxattr(self, path, name):
        return self.call("getxattr", path=path, name=name)

    def flush(self):
        return self.call("flush")

    def reset_stats(self):
        return self.call("reset_stats")

    def path(self, rel: str, mount: int = 0) -> str:
        """Absolute path of a file system path on one of this node's mounts."""
        return os.path.join(self.mountpoints[mount], rel.lstrip("/"))


CONNECT_TIMEOUT = 10.0


def _connect(address, authkey):
    """multiprocessing.connection.Client with a connect timeout (Client has none)."""
    try:
        from multiprocessing.connection import (
            Connection,
            answer_challenge,
            deliver_challenge,
        )
    except ImportError:  # pragma: no cover - other Python implementations
        return Client(address, authkey=authkey)
    s = socket.create_connection(address, timeout=CONNECT_TIMEOUT)
    try:
        s.settimeout(None)
        # the handshake is bounded too: an agent that never answers it fails this call after
        # CONNECT_TIMEOUT (SO_RCVTIMEO on the socket, cleared once authenticated)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", int(CONNECT_TIMEOUT), 0))
        conn = Connection(s.detach())
    except BaseException:
        s.close()  # a signal here must not leave a half-open connection behind
        raise
    try:
        answer_challenge(conn, authkey)
        deliver_challenge(conn, authkey)
        with socket.socket(fileno=os.dup(conn.fileno())) as same:
            same.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, 0))
    except BlockingIOError:
        conn.close()
        raise TimeoutError(f"agent {address[0]}:{address[1]} did not complete the RPC handshake in "
                           f"{CONNECT_TIMEOUT:.0f} s") from None
    except BaseException:
        conn.close()
        raise
    return conn


# ------------------------------------------------------------------------- cluster
class Cluster:
    def __init__(self, n, design, mounts_per_node, memfs_opts, network, workdir, rendezvous,
                 launcher, memcached, image, memfs_bin, fuse_opts, start_timeout, keep_workdir):
        if design not in DESIGNS:
            raise LaunchError(f"design {design!r}: one of {DESIGNS}")
        if n < 1:
            raise LaunchError("nodes must be >= 1")
        self.n = n
        self.design = design
        self.mounts_per_node = mounts_per_node
        self.memfs_opts = dict(memfs_opts or {})
        self.network = _network_defaults(network)
        self.memcached = {"mem_mb": 1024, "item_size": None, "threads": 2, **(memcached or {})}
        if not self.memcached["item_size"]:
            self.memcached["item_size"] = item_size_for(self.memfs_opts.get("stripe_size", 524288))
        self.image = image
        self.memfs_bin = memfs_bin
        self.fuse_opts = list(fuse_opts or [])
        self.start_timeout = start_timeout
        self.keep_workdir = keep_workdir
        self.launcher = _pick_launcher(launcher)
        self.cid = secrets.token_hex(3)[:5]
        self._tmp_created = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix=f"rmc-{self.cid}-")).resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        if rendezvous is None:
            rendezvous = (self.workdir / "rendezvous") if self.launcher == "local" else \
                Path(os.environ.get("RMC_RENDEZVOUS_DIR", Path.cwd() / ".rmc")) / self.cid
        self.rdv = Path(rendezvous).resolve()
        self.nodes: list[Node] = []
        self._procs: list[subprocess.Popen] = []
        self._closed = False
        self._lock = threading.Lock()
        self._hb_stop = threading.Event()
        self._netns = False
        self.slurm_nodes: list[str] = []
        self.driver_host = socket.gethostname()

    # ------------------------------------------------------------------ start
    def start(self) -> Cluster:
        _register_live(self)
        self.rdv.mkdir(parents=True, exist_ok=True)
        keyf = self.rdv / "authkey"
        fd = os.open(keyf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, secrets.token_bytes(32))
        os.close(fd)
        self._key = keyf.read_bytes()
        (self.rdv / "heartbeat").touch()
        threading.Thread(target=self._heartbeat, daemon=True).start()
        net = self.network
        emulate = bool(net.get("emulate"))
        if emulate and self.launcher == "slurm" and not net.get("single_host", True):
            raise LaunchError("network emulation needs all nodes on one host (cluster.single_host)")
        ips = [None] * self.n
        if emulate:
            ips = netns.create(self.cid, self.n, net.get("rate_mbit"), net.get("burst", "256k"))
            self._netns = True
            _say(f"cluster {self.cid}: {self.n} namespaces rmc-{self.cid}-0..{self.n - 1} on {netns.BRIDGE}"
                 f" ({net.get('name')}: {net.get('rate_mbit') or 'unlimited'} Mbit/s per link)")
        if self.launcher == "slurm":
            self.slurm_nodes = slurm_system_nodes(self.n)
        for i in range(self.n):
            argv = [sys.executable, "-m", AGENT,
                    "--index", str(i), "--rendezvous", str(self.rdv), "--workdir", str(self.workdir),
                    "--mem-mb", str(self.memcached["mem_mb"]), "--item-size", str(self.memcached["item_size"]),
                    "--mc-threads", str(self.memcached["threads"]), "--heartbeat-timeout",
                    str(net.get("heartbeat_timeout", 60))]
            # more memcached flags as they are (the memlimit runs' slab settings, mtcwf.cluster_api)
            argv += [f"--mc-opt={o}" for o in self.memcached.get("options") or []]
            if self.memfs_bin:
                argv += ["--memfs", str(self.memfs_bin)]
            if self.image:
                argv += ["--image", str(self.image), "--instance", f"rmc-{self.cid}-{i}"]
            prefix: list[str] = []
            if emulate:
                argv += ["--ip", ips[i], "--rpc-port", "7070", "--mc-port", "11211",
                         "--netns", netns.ns_name(self.cid, i)]
                prefix = netns.nsenter_prefix(self.cid, i)
            elif self.launcher == "local":
                argv += ["--ip", "127.0.0.1"]
            elif net.get("interface"):
                argv += ["--interface", net["interface"]]
            if self.launcher == "local":
                argv += ["--parent-pid", str(os.getpid())]
                cmd = prefix + argv
                preexec = _pdeathsig
            else:
                cmd = ["srun", "--nodes=1", "--ntasks=1", f"--nodelist={self.slurm_nodes[i]}", "--overlap",
                       "--kill-on-bad-exit=0", "--job-name", f"rmc-{self.cid}-{i}"] + prefix + argv
                preexec = None
            logf = open(self.rdv / f"agent-{i}.log", "ab")
            self._procs.append(subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT,
                                                preexec_fn=preexec, start_new_session=True))
            logf.close()
        self._wait_registered()
        servers = [nd.server for nd in self.nodes]
        with cf.ThreadPoolExecutor(self.n) as ex:
            mps = list(ex.map(lambda nd: nd.call(
                "mount", design=self.design, servers=servers, mounts_per_node=self.mounts_per_node,
                memfs_opts=self.memfs_opts, memfs_bin=self.memfs_bin, fuse_opts=self.fuse_opts), self.nodes))
        for nd, mp in zip(self.nodes, mps):
            nd.mountpoints = mp
        _say(f"cluster {self.cid}: {self.n} nodes up, design {self.design}, "
             f"{self.mounts_per_node} mount(s)/node, servers {','.join(servers)}")
        return self

    def _wait_registered(self):
        deadline = time.time() + self.start_timeout
        infos: dict[int, dict] = {}
        while len(infos) < self.n:
            for i in range(self.n):
                f = self.rdv / f"node-{i}.json"
                if i not in infos and f.exists():
                    infos[i] = json.loads(f.read_text())
            for i, p in enumerate(self._procs):
                if p.poll() is not None and i not in infos:
                    raise LaunchError(f"agent {i} exited with {p.returncode}: "
                                      f"{_tail(self.rdv / f'agent-{i}.log')}")
            if time.time() > deadline:
                missing = sorted(set(range(self.n)) - set(infos))
                raise LaunchError(f"agents {missing} did not register in {self.start_timeout} s: "
                                  + " | ".join(_tail(self.rdv / f"agent-{i}.log") for i in missing))
            time.sleep(0.02)
        self.nodes = [Node(infos[i], self._key, self) for i in range(self.n)]
        for nd in self.nodes:  # wait until each RPC answers
            while True:
                try:
                    nd.call("ping", rpc_timeout=5)
                    break
                except (ConnectionRefusedError, OSError):
                    if time.time() > deadline:
                        raise
                    time.sleep(0.05)

    def _heartbeat(self):
        hb = self.rdv / "heartbeat"
        while not self._hb_stop.wait(2.0):
            try:
                hb.touch()
            except OSError:
                pass

    # -------------------------------------------------------------------- API
    @property
    def servers(self) -> list[str]:
        return [nd.server for nd in self.nodes]

    def map(self, fn, nodes=None, timeout=None) -> list:
        """fn(node) on every node (or the given ones) concurrently; results in node order. A node's
        error or the timeout: raised once the other nodes' calls have ended. Anything raised in the
        caller while it waits (SIGTERM: the driver is being stopped) is raised at once, without
        waiting for calls that may run for minutes: the cluster's teardown ends them."""
        nodes = self.nodes if nodes is None else nodes
        ex = cf.ThreadPoolExecutor(max(1, len(nodes)))
        fs = [ex.submit(fn, nd) for nd in nodes]
        wait = True
        try:
            end = None if timeout is None else time.monotonic() + timeout
            return [f.result(None if end is None else max(0.0, end - time.monotonic())) for f in fs]
        except BaseException as exc:
            wait = isinstance(exc, cf.TimeoutError) or any(f.done() and not f.cancelled() and f.exception() is exc
                                                           for f in fs)
            raise
        finally:
            ex.shutdown(wait=wait, cancel_futures=not wait)

    def run_all(self, cmd_of, **kw) -> list[dict]:
        """Run cmd_of(node) (a list, or a string with shell=True) on every node at once."""
        return self.map(lambda nd: nd.run(cmd_of(nd) if callable(cmd_of) else cmd_of, **kw))

    def stats(self) -> list[dict]:
        return self.map(lambda nd: nd.stats())

    def locate(self, path: str) -> list[int]:
        """Indices of the nodes whose memcached holds the file (path inside the file system).

        MemFS answers through the ``user.memfs.owners`` xattr (for symmetric
        striping: every server holding a stripe); local-disk: the nodes whose
        directory has it.
        """
        rel = path.lstrip("/")
        if self.design == "local-disk":
            return [nd.index for nd, ok in zip(self.nodes, self.map(
                lambda nd: nd.stat([nd.path(rel)])[0] is not None)) if ok]
        if self.design == "none":
            raise LaunchError("design none has no file system")
        v = self.nodes[0].getxattr(self.nodes[0].path(rel), "user.memfs.owners")
        if isinstance(v, dict):
            raise FileNotFoundError(f"{path}: {v.get('error')}")
        return [int(x) for x in v.replace(",", " ").split() if x.strip().isdigit()]

    def mpi_command(self, argv: list[str], ranks_per_node: int = 1, env: dict | None = None) -> list[str]:
        """A command line that starts ``argv`` as MPI ranks on the system nodes.

        Rank r runs on node r // ranks_per_node (block order), so rank r's
        directory is ``mpi_paths(...)[r]``.  Locally: mpirun on this host (the
        ranks only touch the mounts; the FUSE clients doing the network I/O
        live in the nodes' namespaces); on Slurm: srun on the system nodes.
        """
        n = self.n * ranks_per_node
        if self.launcher == "slurm":
            pre = ["srun", "--overlap", "--mpi=pmix", f"--nodes={self.n}", f"--ntasks={n}",
                   f"--ntasks-per-node={ranks_per_node}", f"--nodelist={','.join(self.slurm_nodes)}",
                   "--distribution=block", "--kill-on-bad-exit=1"]
            if self.image:
                pre += [str(HERE / "node-exec.sh"), str(self.rdv), str(ranks_per_node)]
            return pre + list(argv)
        pre = ["mpirun", "--oversubscribe", "--bind-to", "none", "-n", str(n)]
        for k, v in (env or {}).items():
            pre += ["-x", f"{k}={v}"]
        if self.image:
            pre += [str(HERE / "node-exec.sh"), str(self.rdv), str(ranks_per_node)]
        return pre + list(argv)

    def mpi_paths(self, subdir: str = "", ranks_per_node: int = 1) -> list[str]:
        """Per-rank directories for mpi_command: rank r -> node r//k, mount r%k (round robin).

        ``subdir`` may contain ``{node}`` and ``{rank}`` (e.g. "/md/n{node}", so that
        each node's ranks work in their own directory of the shared file system).
        """
        out = []
        for nd in self.nodes:
            for j in range(ranks_per_node):
                mp = nd.mountpoints[j % len(nd.mountpoints)]
                sub = subdir.format(node=nd.index, rank=nd.index * ranks_per_node + j)
                out.append(os.path.join(mp, sub.lstrip("/")) if sub else mp)
        return out

    def describe(self) -> dict:
        return {"cid": self.cid, "nodes": self.n, "design": self.design, "launcher": self.launcher,
                "mounts_per_node": self.mounts_per_node, "memfs_opts": self.memfs_opts,
                "network": self.network, "memcached": self.memcached, "servers": self.servers,
                "slurm_nodes": self.slurm_nodes, "driver_host": self.driver_host,
                "netns": [nd.netns for nd in self.nodes]}

    # --------------------------------------------------------------- teardown
    def keep_logs(self, dest: Path) -> None:
        """Copy every node's logs (its workdir's ``*.log``: memcached, MemFS mounts; read through its
        agent, so a node-local /tmp works too) and the agents' own logs (the rendezvous directory) to
        ``dest``, before teardown removes them. Never raises: what it could not get is said there."""
        try:
            dest.mkdir(parents=True, exist_ok=True)
            notes = []
            for nd in self.nodes:
                try:
                    r = nd.run(["sh", "-c", 'for f in "$1"/*.log "$1"/*/*.log; do [ -f "$f" ] || continue; '
                                'echo "==> $f <=="; tail -c 4000000 "$f"; done', "sh", nd.workdir], timeout=30)
                    (dest / f"node-{nd.index}.logs").write_text(r["stdout"] + r["stderr"])
                except Exception as exc:  # noqa: BLE001 - a node gone: say so, keep the others
                    notes.append(f"node {nd.index}: its logs could not be read ({exc})")
            for f in sorted(self.rdv.glob("agent-*.log")):
                shutil.copy2(f, dest / f.name)
            if notes:
                (dest / "MISSING").write_text("\n".join(notes) + "\n")
            _say(f"cluster {self.cid}: logs kept in {dest}")
        except Exception as exc:  # noqa: BLE001 - never let keeping logs hide the failure itself
            _say(f"cluster {self.cid}: could not keep the logs in {dest}: {exc}")

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        t0 = time.time()
        if self.nodes:
            def _shut(nd):
                try:
                    nd.call("shutdown", rpc_timeout=30)
                except Exception as exc:
                    return f"node {nd.index}: {exc}"
                return None
            with cf.ThreadPoolExecutor(len(self.nodes)) as ex:
                errs = [e for e in ex.map(_shut, self.nodes) if e]
            if errs:
                _say(f"cluster {self.cid}: shutdown RPC failed ({'; '.join(errs)}); cleaning up by force")
        for p in self._procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        self._force_cleanup()
        self._hb_stop.set()
        if self._netns:
            netns.destroy(self.cid)
        if not self.keep_workdir:
            shutil.rmtree(self.rdv, ignore_errors=True)
            if self._tmp_created:
                shutil.rmtree(self.workdir, ignore_errors=True)
            else:
                for i in range(self.n):
                    shutil.rmtree(self.workdir / f"node-{i}", ignore_errors=True)
        _unregister_live(self)
        _say(f"cluster {self.cid}: torn down in {time.time() - t0:.1f} s")

    def _force_cleanup(self) -> None:
        """Whatever an agent left (it was killed): mounts, memcached, FUSE daemons."""
        for st in self.rdv.glob("state-*.json"):
            try:
                state = json.loads(st.read_text())
            except (OSError, ValueError):
                continue
            for mnt in state.get("mounts", []):
                if os.path.ismount(mnt) or netns.in_mountinfo(mnt):
                    subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
                    if netns.in_mountinfo(mnt):
                        subprocess.run(["umount", "-l", mnt], capture_output=True)
            for key in ("memcached_pid", "fuse_pids", "bg_pids", "pid"):
                pids = state.get(key) or []
                for pid in pids if isinstance(pids, list) else [pids]:
                    _kill_pid(int(pid))
            with contextlib.suppress(OSError):
                st.unlink()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _kill_pid(pid: int) -> None:
    if pid <= 1 or pid == os.getpid():
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        for _ in range(50):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.02)


def _tail(path: Path, n: int = 1500) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return "(no log)"


def _pdeathsig():
    import ctypes
    try:
        ctypes.CDLL("libc.so.6").prctl(1, int(signal.SIGTERM), 0, 0, 0)
    except OSError:
        pass


def item_size_for(stripe: int) -> str:
    """memcached -I: the next power of two above the stripe plus key and item header, >= 1m."""
    need = int(stripe) + 64 * 1024
    size = 1 << 20
    while size < need:
        size <<= 1
    return f"{size >> 20}m"


def _network_defaults(network: dict | None) -> dict:
    net = {"name": "host", "emulate": False, "rate_mbit": None, "burst": "256k", "interface": "",
           "single_host": True, "heartbeat_timeout": 60}
    net.update(network or {})
    return net


def _pick_launcher(launcher: str) -> str:
    if launcher in ("local", "slurm"):
        return launcher
    if launcher != "auto":
        raise LaunchError(f"launcher {launcher!r}: auto, local or slurm")
    return "slurm" if os.environ.get("SLURM_JOB_ID") and shutil.which("srun") else "local"


def slurm_system_nodes(n: int) -> list[str]:
    """The allocation's nodes after the first (the driver's): n of them."""
    nodelist = os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST")
    if not nodelist and os.environ.get("SLURM_JOB_ID"):
        nodelist = subprocess.run(["squeue", "-h", "-j", os.environ["SLURM_JOB_ID"], "-o", "%N"],
                                  capture_output=True, text=True).stdout.strip()
    if not nodelist:
        raise LaunchError("no Slurm allocation (SLURM_JOB_NODELIST/SLURM_JOB_ID unset)")
    hosts = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                           text=True, check=True).stdout.split()
    me = os.environ.get("SLURMD_NODENAME") or (hosts[0] if hosts else "")
    others = [h for h in hosts if h != me]
    if len(others) < n:
        raise LaunchError(f"allocation {nodelist} has {len(others)} nodes besides the driver's ({me}); "
                          f"{n} needed (ask for n+1 nodes)")
    return others[:n]


# ------------------------------------------------------ guaranteed teardown
_LIVE: list[Cluster] = []
_HANDLERS_INSTALLED = False


def _close_all(*_):
    for c in _LIVE:
        try:
            c.close()
        except Exception as exc:  # keep closing the others
            _say(f"teardown of {c.cid} failed: {exc}")


def _on_signal(signum, frame):
    _close_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _register_live(c: Cluster) -> None:
    global _HANDLERS_INSTALLED
    _LIVE.append(c)
    if not _HANDLERS_INSTALLED:
        atexit.register(_close_all)
        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGTERM, signal.SIGHUP):
                if signal.getsignal(s) in (signal.SIG_DFL, None):
                    signal.signal(s, _on_signal)
        _HANDLERS_INSTALLED = True


def _unregister_live(c: Cluster) -> None:
    with contextlib.suppress(ValueError):
        _LIVE.remove(c)


@contextlib.contextmanager
def cluster(nodes: int, design: str = "memfs", mounts_per_node: int = 1, memfs_opts: dict | None = None,
            network: dict | None = None, workdir: str | os.PathLike | None = None,
            rendezvous: str | os.PathLike | None = None, launcher: str = "auto",
            memcached: dict | None = None, image: str | None = None, memfs_bin: str | None = None,
            fuse_opts: list[str] | None = None, start_timeout: float = 60, keep_workdir: bool = False,
            logs_on_failure: str | os.PathLike | None = None):
    """Start ``nodes`` agents and yield a :class:`Cluster`; always torn down on exit. When the body
    (or the start) raises, the agents', memcached's and MemFS's logs are first copied to
    ``logs_on_failure`` (a directory; e.g. ``repro.rawio.logs_path(raw)``): teardown removes them."""
    c = Cluster(nodes, design, mounts_per_node, memfs_opts, network, workdir, rendezvous, launcher,
                memcached, image, memfs_bin, fuse_opts, start_timeout, keep_workdir)
    try:
        c.start()
        yield c
    except BaseException:
        if logs_on_failure:
            c.keep_logs(Path(logs_on_failure))
        raise
    finally:
        c.close()


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description="MTC launcher utilities")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("cleanup", help="remove namespaces of clusters whose owner process is gone")
    sub.add_parser("leftovers", help="print namespaces, links and registry entries that exist")
    up = sub.add_parser("up", help="start a cluster, print it, keep it until Ctrl-C (debugging)")
    up.add_argument("--nodes", type=int, default=2)
    up.add_argument("--design", default="memfs", choices=DESIGNS)
    up.add_argument("--mounts", type=int, default=1)
    up.add_argument("--rate-mbit", type=float, default=0)
    up.add_argument("--no-emulate", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "cleanup":
        print(json.dumps({"removed": netns.cleanup_stale(verbose=True)}))
    elif a.cmd == "leftovers":
        print(json.dumps(netns.leftovers()))
    else:
        net = {"name": "cli", "emulate": not a.no_emulate, "rate_mbit": a.rate_mbit or None}
        with cluster(a.nodes, a.design, a.mounts, network=net) as c:
            print(json.dumps(c.describe(), indent=1), flush=True)
            try:
                signal.pause()
            except KeyboardInterrupt:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
