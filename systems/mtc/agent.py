#!/usr/bin/env python3
"""Per-node agent of the multi-node launcher (see README.md).

One agent runs on each system node (in its network namespace locally, as a
Slurm task on a cluster).  It

1. starts the node's memcached (memory limit, ``-I`` item size, port,
   PID-tracked),
2. serves a small RPC (``multiprocessing.connection`` with an authkey from the
   rendezvous directory) and registers itself in ``<rendezvous>/node-<i>.json``,
3. on ``mount(...)`` mounts k FUSE clients of MemFS (``memfs``: symmetric
   striping), of the locality-based design (``locality``: ``--policy locality
   --local-server <i>``), k node-local directories (``local-disk``) or nothing
   (``none``: raw memcached only),
4. runs commands for the driver and reports stats,
5. tears everything down -- unmount, stop memcached, kill what it started --
   on ``shutdown()``, SIGTERM/SIGINT/SIGHUP, when its parent (the launcher)
   dies, or when the launcher's heartbeat file goes stale.

Standard library only: it runs with any python3 >= 3.8 on a compute node.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import ctypes
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from multiprocessing import AuthenticationError
from multiprocessing.connection import Listener, answer_challenge, deliver_challenge
from pathlib import Path

# run as `python3 -m systems.mtc.agent` by the launcher, with the launcher's PYTHONPATH (the
# project's Python path, workflow/pythonpath.txt), which srun and nsenter pass on
from systems.mtc import mcproto, netns
from tools.common import free_port, port_taken_by_another

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEFAULT_MEMFS = REPO / "systems" / "memfs" / "build" / "memfs"
OUT_LIMIT = 4 << 20  # bytes of stdout/stderr returned by run()


def log(msg: str) -> None:
    print(f"[agent {ARGS.index if 'ARGS' in globals() else '?'} {time.strftime('%H:%M:%S')}] {msg}",
          file=sys.stderr, flush=True)


def _set_pdeathsig(sig=signal.SIGTERM) -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, int(sig), 0, 0, 0)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _rss_bytes(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _du_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_blocks * 512
            except OSError:
                pass
    return total


def _is_mount(path: str) -> bool:
    return netns.in_mountinfo(path, fallback=os.path.ismount)


def _clip(text: str) -> str:
    return text if len(text) <= OUT_LIMIT else "[... clipped ...]\n" + text[-OUT_LIMIT:]


def _where() -> dict:
    """This node's host name and load when a command ended (repro.procs.failure_message says them)."""
    try:
        la = round(os.getloadavg()[0], 2)
    except OSError:
        la = None
    return {"host": socket.gethostname(), "load": {"loadavg_1m": la, "ncpu": os.cpu_count() or 1}}


class Agent:
    def __init__(self, args):
        self.a = args
        self.index = args.index
        self.rdv = Path(args.rendezvous)
        self.workdir = Path(args.workdir) / f"node-{args.index}"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.prefix = json.loads(args.exec_prefix) if args.exec_prefix else []
        self.instance = args.in_instance or ""  # container mode: we run inside this instance
        self.ip = args.ip or self._pick_ip()
        self.mc_port = args.mc_port or self._free_port()
        self.mc = None
        self.mounts: list[dict] = []  # {path, proc, log}
        self.design = "none"
        self.servers: list[str] = []
        self.bg: dict[str, dict] = {}
        self._bg_seq = 0
        self._running: set = set()
        self._lock = threading.RLock()
        self._closed = False
        self.listener = None
        # Every child is started from this one long-lived thread: PR_SET_PDEATHSIG
        # fires when the *thread* that forked a child exits, and RPC threads are short-lived.
        self._spawner = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="spawner")

    def _popen(self, argv, **kw) -> subprocess.Popen:
        kw.setdefault("preexec_fn", _set_pdeathsig)
        return self._spawner.submit(subprocess.Popen, argv, **kw).result()

    # ---------------------------------------------------------------- setup
    def _pick_ip(self) -> str:
        if self.a.interface:
            out = subprocess.run(["ip", "-4", "-o", "addr", "show", "dev", self.a.interface],
                                 capture_output=True, text=True).stdout.split()
            if "inet" in out:
                return out[out.index("inet") + 1].split("/")[0]
            raise SystemExit(f"agent on {socket.gethostname()}: no IPv4 address on interface {self.a.interface}"
                             " (memfs.networks[...].interface; the memfs_site_check job checks it on a cluster)")
        try:
            return socket.gethostbyname(socket.gethostname())
        except OSError:
            return "127.0.0.1"

    def _free_port(self) -> int:
        return free_port(self.ip)

    def _cmd(self, argv: list[str]) -> list[str]:
        return self.prefix + argv

    def start_memcached(self) -> None:
        pidfile = self.workdir / "memcached.pid"
        for attempt in range(5):
            cmd = ["memcached", "-l", self.ip, "-p", str(self.mc_port), "-U", "0",
                   "-m", str(self.a.mem_mb), "-I", self.a.item_size, "-M",
                   "-t", str(self.a.mc_threads), "-c", "8192", "-P", str(pidfile)] + list(self.a.mc_opt or [])
            if os.geteuid() == 0:
                cmd += ["-u", "root"]
            logf = open(self.workdir / "memcached.log", "ab")
            proc = self._popen(self._cmd(cmd), stdout=logf, stderr=subprocess.STDOUT)
            logf.close()
            deadline = time.time() + 10
            while time.time() < deadline and proc.poll() is None:
                try:
                    socket.create_connection((self.ip, self.mc_port), 0.2).close()
                except OSError:
                    time.sleep(0.02)
                    continue
                # another job's memcached on a port taken since free_port(): never use it as ours
                why = port_taken_by_another(self.ip, self.mc_port, proc)
                if why:
                    log(f"memcached on {self.ip}:{self.mc_port} not ours: {why}; another port")
                    break
                self.mc = proc
                log(f"memcached pid {proc.pid} on {self.ip}:{self.mc_port} "
                    f"(-m {self.a.mem_mb} -I {self.a.item_size}{''.join(' ' + o for o in self.a.mc_opt or [])})")
                return
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            self.mc_port = self._free_port()
        try:
            said = (self.workdir / "memcached.log").read_text(errors="replace").strip()[-1500:]
        except OSError:
            said = ""
        la = _where()["load"]
        raise SystemExit(f"agent: memcached did not start in 5 attempts of 10 s (load {la['loadavg_1m']} on "
                         f"{la['ncpu']} CPUs); its log {self.workdir / 'memcached.log'}: "
                         + (said or "no output at all"))

    def register(self, rpc_port: int) -> None:
        info = {
            "index": self.index, "ip": self.ip, "server": f"{self.ip}:{self.mc_port}",
            "rpc": f"{self.ip}:{rpc_port}", "pid": os.getpid(),
            "memcached_pid": self.mc.pid if self.mc else None,
            "hostname": socket.gethostname(),
            "slurm_node": os.environ.get("SLURMD_NODENAME", ""),
            "workdir": str(self.workdir), "netns": self.a.netns or "",
            "instance": self.instance,
        }
        tmp = self.rdv / f".node-{self.index}.json.tmp"
        tmp.write_text(json.dumps(info))
        os.replace(tmp, self.rdv / f"node-{self.index}.json")

    def _record_state(self) -> None:
        """PIDs and mountpoints, so the launcher can clean up even if we are killed."""
        state = {"pid": os.getpid(), "memcached_pid": self.mc.pid if self.mc else None,
                 "mounts": [m["path"] for m in self.mounts],
                 "fuse_pids": [m["proc"].pid for m in self.mounts if m.get("proc")],
                 "bg_pids": [b["proc"].pid for b in self.bg.values()]}
        tmp = self.rdv / f".state-{self.index}.json.tmp"
        tmp.write_text(json.dumps(state))
        os.replace(tmp, self.rdv / f"state-{self.index}.json")

    # ---------------------------------------------------------------- mounts
    def mount(self, design: str, servers: list[str], mounts_per_node: int = 1,
              memfs_opts: dict | None = None, memfs_bin: str | None = None,
              fuse_opts: list[str] | None = None, timeout: float = 30) -> list[str]:
        with self._lock:
            if self.mounts:
                self.unmount()
            self.design, self.servers = design, list(servers)
            opts = dict(memfs_opts or {})
            paths = []
            if design in ("memfs", "locality"):
                image_memfs = "/usr/local/bin/memfs" if self.instance and os.path.exists("/usr/local/bin/memfs") else ""
                binary = memfs_bin or self.a.memfs or image_memfs or str(DEFAULT_MEMFS)
                for j in range(mounts_per_node):
                    mnt = self.workdir / f"mnt-{j}"
                    mnt.mkdir(parents=True, exist_ok=True)
                    cmd = [binary, "--servers", ",".join(servers),
                           "--policy", "locality" if design == "locality" else "symmetric"]
                    if design == "locality":
                        cmd += ["--local-server", str(self.index)]
                    for key, flag in (("stripe_size", "--stripe-size"), ("buffer_size", "--buffer-size"),
                                      ("threads", "--threads"), ("distribution", "--distribution"),
                                      ("timeout_ms", "--timeout-ms")):
                        if opts.get(key) is not None:
                            cmd += [flag, str(opts[key])]
                    cmd += list(opts.get("extra_args", []))
                    for fo in (fuse_opts or []) + list(opts.get("fuse_opts", [])):
                        cmd += ["-o", fo]
                    cmd += ["-f", str(mnt)]
                    logpath = self.workdir / f"memfs-{j}.log"
                    logf = open(logpath, "wb")
                    proc = self._popen(self._cmd(cmd), stdout=logf, stderr=subprocess.STDOUT)
                    logf.close()
                    m = {"path": str(mnt), "proc": proc, "log": str(logpath), "cmd": cmd}
                    self.mounts.append(m)
                    self._record_state()
                    deadline = time.time() + timeout
                    while True:
                        text = logpath.read_text(errors="replace")
                        if "memfs: mounted" in text and _is_mount(str(mnt)):
                            break
                        if proc.poll() is not None:
                            raise RuntimeError(f"memfs exited with {proc.returncode}: {text[-2000:]}")
                        if time.time() > deadline:
                            raise RuntimeError(f"memfs did not mount {mnt} in {timeout} s: {text[-2000:]}")
                        time.sleep(0.02)
                    paths.append(str(mnt))
                log(f"mounted {len(paths)} x {design} "
                    f"({' '.join(shlex.quote(c) for c in self.mounts[0]['cmd'][1:-2])})")
            elif design == "local-disk":
                for j in range(mounts_per_node):
                    d = self.workdir / "disk" / f"mnt-{j}"
                    d.mkdir(parents=True, exist_ok=True)
                    self.mounts.append({"path": str(d), "proc": None, "log": None, "cmd": None})
                    paths.append(str(d))
            elif design != "none":
                raise ValueError(f"unknown design {design!r} (memfs, locality, local-disk, none)")
            self._record_state()
            return paths

    def unmount(self) -> None:
        with self._lock:
            for m in reversed(self.mounts):
                if m.get("proc") is None:
                    shutil.rmtree(m["path"], ignore_errors=True)
                    continue
                path, proc = m["path"], m["proc"]
                if _is_mount(path):
                    r = subprocess.run(["fusermount3", "-u", path], capture_output=True)
                    if r.returncode != 0:
                        subprocess.run(["fusermount3", "-u", "-z", path], capture_output=True)
                netns.wait_or_kill(proc, 10)
                if _is_mount(path):
                    subprocess.run(["umount", "-l", path], capture_output=True)
                try:
                    os.rmdir(path)
                except OSError:
                    pass
            self.mounts = []
            self._record_state()

    # ------------------------------------------------------------------- RPC
    def rpc_ping(self):
        return {"index": self.index, "pid": os.getpid(), "server": f"{self.ip}:{self.mc_port}",
                "design": self.design, "mounts": self.mountpoints_()}

    def mountpoints_(self):
        return [m["path"] for m in self.mounts]

    def rpc_mountpoints(self):
        return self.mountpoints_()

    def rpc_mount(self, **kw):
        return self.mount(**kw)

    def rpc_unmount(self):
        self.unmount()
        return True

    def _env(self, env):
        e = dict(os.environ)
        e.update({k: str(v) for k, v in (env or {}).items()})
        return e

    def rpc_run(self, cmd, cwd=None, env=None, timeout=None, shell=False, prefix=True):
        argv = cmd if shell else list(cmd)
        if prefix and self.prefix:
            argv = self.prefix + (["sh", "-c", cmd] if shell else argv)
            shell = False
        t0w, t0 = time.time(), time.perf_counter()
        proc = self._popen(argv, cwd=cwd, env=self._env(env), shell=shell, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, start_new_session=True)
        with self._lock:
            self._running.add(proc)
        try:
            out, err = proc.communicate(timeout=timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, err = proc.communicate()
            rc, err = 124, (err or b"") + f"\ntimeout after {timeout} s (killed)".encode()
        finally:
            with self._lock:
                self._running.discard(proc)
        t1 = time.perf_counter()
        return {"rc": rc, "stdout": _clip(out.decode(errors="replace")),
                "stderr": _clip(err.decode(errors="replace")),
                "t_start": t0w, "t_end": t0w + (t1 - t0), "elapsed": t1 - t0, "node": self.index,
                "timed_out": rc == 124 and err.endswith(b"s (killed)"), **_where()}

    def rpc_start(self, cmd, cwd=None, env=None, shell=False, name=None):
        argv = cmd if shell else list(cmd)
        if self.prefix:
            argv = self.prefix + (["sh", "-c", cmd] if shell else argv)
            shell = False
        with self._lock:
            self._bg_seq += 1
            hid = name or f"bg{self._bg_seq}"
            out = open(self.workdir / f"{hid}.out", "wb")
            err = open(self.workdir / f"{hid}.err", "wb")
            proc = self._popen(argv, cwd=cwd, env=self._env(env), shell=shell, stdout=out, stderr=err,
                               start_new_session=True)
            out.close()
            err.close()
            self.bg[hid] = {"proc": proc, "t_start": time.time(), "t0": time.perf_counter()}
            self._record_state()
        return hid

    def _bg_result(self, hid):
        b = self.bg[hid]
        proc = b["proc"]
        t1 = b.setdefault("t1", time.perf_counter())
        return {"rc": proc.returncode, "stdout": _clip((self.workdir / f"{hid}.out").read_text(errors="replace")),
                "stderr": _clip((self.workdir / f"{hid}.err").read_text(errors="replace")),
                "t_start": b["t_start"], "t_end": b["t_start"] + (t1 - b["t0"]),
                "elapsed": t1 - b["t0"], "node": self.index, **_where()}

    def rpc_wait(self, handle, timeout=None):
        proc = self.bg[handle]["proc"]
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        res = self._bg_result(handle)
        with self._lock:
            self.bg.pop(handle, None)
            self._record_state()
        return res

    def rpc_poll(self, handle):
        return self.bg[handle]["proc"].poll()

    def rpc_kill(self, handle, sig=signal.SIGTERM):
        b = self.bg.get(handle)
        if b and b["proc"].poll() is None:
            try:
                os.killpg(b["proc"].pid, sig)
            except ProcessLookupError:
                pass
        return True

    def rpc_timed_open(self, paths, read=False, bufsize=1 << 20):
        """Open (and optionally read to the end) each path, close it; time it in-process.

        With the locality-based design an open of a file that is not on this
        node replicates it here (replicate-on-read): this is how a benchmark
        times that transfer without any process start-up in the measurement.
        """
        per = []
        nbytes = 0
        t0w, t0 = time.time(), time.perf_counter()
        for p in paths:
            t = time.perf_counter()
            with open(p, "rb", buffering=0) as fh:
                if read:
                    while True:
                        b = fh.read(bufsize)
                        if not b:
                            break
                        nbytes += len(b)
            per.append(time.perf_counter() - t)
        t1 = time.perf_counter()
        return {"elapsed": t1 - t0, "per_path": per, "bytes": nbytes, "t_start": t0w,
                "t_end": t0w + (t1 - t0), "node": self.index}

    def rpc_getxattr(self, path, name):
        try:
            return os.getxattr(path, name).decode()
        except OSError as exc:
            return {"errno": exc.errno, "error": str(exc)}

    def rpc_stat(self, paths):
        out = []
        for p in paths:
            try:
                out.append(os.stat(p).st_size)
            except OSError:
                out.append(None)
        return out

    def mc_command(self, line: str, end: bytes = b"END\r\n") -> bytes:
        return mcproto.command(self.ip, self.mc_port, line, end)

    def memcached_stats(self) -> dict:
        out = {}
        for ln in self.mc_command("stats").decode().splitlines():
            parts = ln.split()
            if len(parts) == 3 and parts[0] == "STAT":
                v = parts[2]
                try:
                    out[parts[1]] = int(v)
                except ValueError:
                    try:
                        out[parts[1]] = float(v)
                    except ValueError:
                        out[parts[1]] = v
        return out

    def rpc_flush(self):
        return self.mc_command("flush_all", end=b"OK\r\n").decode().strip()

    def rpc_reset_stats(self):
        for m in self.mounts:
            if m.get("proc") is not None:
                with open(os.path.join(m["path"], ".memfs-stats"), "w") as fh:
                    fh.write("reset\n")
        return True

    def rpc_stats(self):
        keys = ("bytes", "curr_items", "total_items", "limit_maxbytes", "cmd_get", "cmd_set",
                "get_hits", "get_misses", "bytes_read", "bytes_written", "evictions",
                "curr_connections")
        try:
            mc_all = self.memcached_stats()
            mc = {k: mc_all.get(k) for k in keys}
        except OSError as exc:
            mc = {"error": str(exc)}
        mounts = []
        for m in self.mounts:
            ent = {"path": m["path"]}
            if m.get("proc") is not None:
                try:
                    with open(os.path.join(m["path"], ".memfs-stats")) as fh:
                        ent["memfs"] = json.load(fh)
                except (OSError, ValueError) as exc:
                    ent["error"] = str(exc)
                ent["rss_bytes"] = _rss_bytes(m["proc"].pid)
            mounts.append(ent)
        disk = self.workdir / "disk"
        return {"node": self.index, "server": f"{self.ip}:{self.mc_port}", "design": self.design,
                "memcached": mc,
                "memcached_rss_bytes": _rss_bytes(self.mc.pid) if self.mc else None,
                "fuse_rss_bytes": [m.get("rss_bytes") for m in mounts if "rss_bytes" in m],
                "mounts": mounts,
                "disk_bytes": _du_bytes(disk) if disk.exists() else 0,
                "time": time.time()}

    def rpc_shutdown(self):
        self.cleanup("shutdown requested")
        threading.Timer(0.2, lambda: os._exit(0)).start()
        return True

    # --------------------------------------------------------------- serving
    def serve_conn(self, conn):
        try:
            try:
                deliver_challenge(conn, self._key)
                answer_challenge(conn, self._key)
            except (EOFError, OSError, AuthenticationError) as exc:  # refused or gone: this thread only
                log(f"rejected a connection: {exc!r}")
                return
            while True:
                try:
                    method, kw = conn.recv()
                except (EOFError, OSError):
                    return
                fn = getattr(self, f"rpc_{method}", None)
                try:
                    if fn is None:
                        raise AttributeError(f"no RPC method {method!r}")
                    res = ("ok", fn(**(kw or {})))
                except Exception as exc:  # reported to the caller
                    res = ("err", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
                try:
                    conn.send(res)
                except (OSError, ValueError):
                    return
        finally:
            conn.close()

    def watchdog(self):
        hb = self.rdv / "heartbeat"
        while not self._closed:
            time.sleep(1.0)
            why = None
            if self.a.parent_pid and not netns.pid_alive(self.a.parent_pid):
                why = f"launcher pid {self.a.parent_pid} is gone"
            elif self.a.heartbeat_timeout > 0:
                try:
                    age = time.time() - hb.stat().st_mtime
                    if age > self.a.heartbeat_timeout:
                        why = f"heartbeat stale for {age:.0f} s"
                except FileNotFoundError:
                    if not self.rdv.exists():
                        why = "rendezvous directory removed"
            if why:
                log(f"watchdog: {why}; tearing down")
                self.cleanup(why)
                os._exit(3)

    def cleanup(self, why: str = "") -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        log(f"teardown ({why})")
        for proc in list(self._running) + [b["proc"] for b in self.bg.values()]:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        try:
            self.unmount()
        except Exception as exc:  # keep going: memcached must stop too
            log(f"unmount failed: {exc}")
        if self.mc and self.mc.poll() is None:
            self.mc.terminate()
            netns.wait_or_kill(self.mc, 5)
        try:
            (self.rdv / f"state-{self.index}.json").unlink()
        except OSError:
            pass
        if self.listener is not None:
            try:
                self.listener.close()
            except OSError:
                pass

    def serve(self):
        key = (self.rdv / "authkey").read_bytes()
        # no authkey here: the handshake runs in each connection's own thread (serve_conn), so a client
        # that stalls in it (one stopped by a signal mid-handshake, its socket left open) cannot block
        # the accept loop -- that hung every later RPC of the driver (its teardown included) for ever
        self._key = key
        self.listener = Listener((self.ip, self.a.rpc_port), backlog=64)
        port = self.listener.address[1]
        self.start_memcached()
        self._record_state()
        self.register(port)
        log(f"serving RPC on {self.ip}:{port}")
        threading.Thread(target=self.watchdog, daemon=True).start()
        while not self._closed:
            try:
                conn = self.listener.accept()
            except (OSError, EOFError):
                if self._closed:
                    break
                continue
            except Exception as exc:  # failed authentication and the like
                log(f"rejected a connection: {exc}")
                continue
            threading.Thread(target=self.serve_conn, args=(conn,), daemon=True).start()


class _Stop(BaseException):
    pass


def run_in_instance(args, argv: list[str]) -> int:
    """Container mode: start an Apptainer instance of the image, run the agent inside
    it (so memcached, the FUSE mounts and every command share its mount namespace),
    forward signals to it, and stop the instance when it ends."""
    name = args.instance or f"rmc-{Path(args.rendezvous).name}-{args.index}"
    # (no --bind /dev/fuse: a bound device node is mounted nodev and cannot be opened;
    #  the host /dev, which Apptainer provides by default, has it)
    # the workdir is node-local (the launcher named it on the driver node, whose /tmp another node
    # does not see): create it here before binding it (the container rehearsal found every agent
    # on a system node failing "mount source /tmp/rmc-... doesn't exist")
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    binds = ["--bind", str(REPO), "--bind", str(Path(args.workdir).resolve()),
             "--bind", str(Path(args.rendezvous).resolve())]
    r = subprocess.run(["apptainer", "instance", "start", *binds, args.image, name], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"agent: apptainer instance start failed: {r.stderr.strip()}", file=sys.stderr)
        return 1
    inner_argv, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        # --parent-pid: the instance has a PID namespace of its own, where the launcher's PID does not
        # exist (the inner agent's watchdog took it for gone and tore down at once: the local launcher
        # with --image never worked); this outer process watches it instead (pdeathsig, forward()).
        if a in ("--image", "--instance", "--parent-pid"):
            skip = True
            continue
        if a.startswith(("--image=", "--instance=", "--parent-pid=")):
            continue
        inner_argv.append(a)
    # an image's python3 does not see the caller's PYTHONPATH: the project's image entry point puts the
    # project's Python path (of the bound checkout) behind the image's own
    cmd = ["apptainer", "exec", f"instance://{name}", str(REPO / "workflow" / "scripts" / "in-image.sh"),
           "python3", "-m", "systems.mtc.agent", *inner_argv, "--in-instance", name]
    inner = subprocess.Popen(cmd, preexec_fn=_set_pdeathsig)

    def forward(signum, _frame):
        if inner.poll() is None:
            inner.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    try:
        while True:
            try:
                rc = inner.wait()
                break
            except InterruptedError:
                continue
    finally:
        subprocess.run(["apptainer", "instance", "stop", name], capture_output=True)
    return rc


def main(argv=None) -> int:
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", type=int, required=True, help="node index = memcached server index")
    ap.add_argument("--rendezvous", required=True, help="shared directory (authkey, node-<i>.json)")
    ap.add_argument("--workdir", required=True, help="node-local base directory (node-<i>/ is created)")
    ap.add_argument("--ip", default="", help="address to bind (default: --interface's or the hostname's)")
    ap.add_argument("--interface", default="", help="take the address of this interface (e.g. ib0)")
    ap.add_argument("--rpc-port", type=int, default=0)
    ap.add_argument("--mc-port", type=int, default=0, help="memcached port (0: a free one)")
    ap.add_argument("--mem-mb", type=int, default=1024, help="memcached -m")
    ap.add_argument("--item-size", default="8m", help="memcached -I (larger than the largest stripe)")
    ap.add_argument("--mc-threads", type=int, default=2, help="memcached -t")
    ap.add_argument("--mc-opt", action="append", default=[],
                    help="one more memcached argument, as it is (repeatable; --mc-opt=-L for a leading dash)")
    ap.add_argument("--memfs", default="", help="MemFS binary (default systems/memfs/build/memfs)")
    ap.add_argument("--exec-prefix", default="", help="JSON list prefixed to every command (containers)")
    ap.add_argument("--image", default="", help="Apptainer image: run the agent and everything it starts "
                    "inside an instance of it (started and stopped by this process)")
    ap.add_argument("--instance", default="", help="instance name (default rmc-<rendezvous name>-<index>)")
    ap.add_argument("--in-instance", default="", help=argparse.SUPPRESS)
    ap.add_argument("--netns", default="", help="name of the namespace we run in (informational)")
    ap.add_argument("--parent-pid", type=int, default=0, help="exit when this process is gone")
    ap.add_argument("--heartbeat-timeout", type=float, default=0,
                    help="exit when <rendezvous>/heartbeat is older than this (0: off)")
    ARGS = ap.parse_args(argv)
    if ARGS.image and not ARGS.in_instance:
        return run_in_instance(ARGS, list(sys.argv[1:] if argv is None else argv))
    agent = Agent(ARGS)

    def on_signal(signum, _frame):
        raise _Stop(signal.Signals(signum).name)

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    try:
        agent.serve()
    except _Stop as exc:
        agent.cleanup(f"signal {exc}")
        return 0
    except SystemExit:
        agent.cleanup("error")
        raise
    except BaseException:
        traceback.print_exc()
        agent.cleanup("error")
        return 1
    agent.cleanup("listener closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
