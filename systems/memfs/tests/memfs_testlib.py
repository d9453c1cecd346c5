"""Harness for the MemFS integration tests: real memcached servers on free
127.0.0.1 ports and real FUSE mounts of systems/memfs/build/memfs.

Every server and mount is PID-tracked and torn down in finalizers (and again
at session end), even when a test fails.  Tests are skipped, with a reason,
only if /dev/fuse, fusermount3 or memcached is missing.
"""
import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from repro.testing import build_or_skip
from systems.mtc import mcproto, netns
from tools.common import free_port  # noqa: F401 (the tests import it from here)

REPO = Path(__file__).resolve().parents[3]
MEMFS_DIR = REPO / "systems" / "memfs"
BUILD = MEMFS_DIR / "build"
# MEMFS_BIN: run the suite against another build (e.g. a sanitizer build)
MEMFS = Path(os.environ.get("MEMFS_BIN", BUILD / "memfs"))
LOCATE = BUILD / "memfs-locate"
MCBENCH = BUILD / "mcbench"

STRIPE = 512 * 1024

_LIVE_PROCS = []   # every process we started: killed at session end
_LIVE_MOUNTS = []  # every mount point we created


HERE = Path(__file__).resolve().parent


def is_mounted(path):
    """True if path is a mount point (from the mount table: os.path.ismount
    stats the root, which fails when its metadata server is down)."""
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for ln in f:
            mp = ln.split()[4].encode().decode("unicode_escape")
            if mp == path:
                return True
    return False


def _missing_prereq():
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing"
    if not shutil.which("memcached"):
        return "memcached is not installed"
    if not shutil.which("fusermount3"):
        return "fusermount3 (fuse3) is not installed"
    return None


@pytest.fixture(scope="session", autouse=True)
def built():
    build_or_skip(_missing_prereq(), ["make", "-C", str(MEMFS_DIR), "-j2", "all"])
    yield
    # last-resort cleanup of anything a crashed test left behind
    for mnt in list(_LIVE_MOUNTS):
        if is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
    for p in list(_LIVE_PROCS):
        if p.poll() is None:
            p.kill()
            p.wait()


def pytest_sessionfinish(session, exitstatus):
    base = str(session.config.option.basetemp or "")
    if base.startswith("/tmp/memfs-pytest-") and exitstatus == 0 and not _LIVE_MOUNTS:
        shutil.rmtree(base, ignore_errors=True)




class Memcached:
    """One memcached process.  -M: refuse writes when full instead of evicting
    (a runtime FS must not silently lose stripes); -I: item size limit, must
    exceed the stripe size (+ key and item header)."""

    def __init__(self, mem_mb=512, item_max="8m"):
        for _attempt in range(5):
            self.port = free_port()
            cmd = ["memcached", "-l", "127.0.0.1", "-p", str(self.port), "-U", "0",
                   "-m", str(mem_mb), "-I", item_max, "-M", "-t", "2", "-c", "4096"]
            if os.geteuid() == 0:
                cmd += ["-u", "root"]
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE)
            _LIVE_PROCS.append(self.proc)
            deadline = time.time() + 5
            while time.time() < deadline:
                if self.proc.poll() is not None:
                    break
                try:
                    socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                    return
                except OSError:
                    time.sleep(0.02)
            self.stop()
        raise RuntimeError("could not start memcached")

    @property
    def spec(self):
        return f"127.0.0.1:{self.port}"

    def _cmd(self, line, end=b"END\r\n"):
        return mcproto.command("127.0.0.1", self.port, line, end)

    def stats(self):
        out = {}
        for ln in self._cmd("stats").decode().splitlines():
            parts = ln.split()
            if len(parts) == 3 and parts[0] == "STAT":
                out[parts[1]] = int(parts[2]) if parts[2].isdigit() else parts[2]
        return out

    def keys(self):
        """All keys stored on this server (lru_crawler metadump), URL-decoded."""
        from urllib.parse import unquote
        keys = []
        for ln in self._cmd("lru_crawler metadump all").decode(errors="replace").splitlines():
            if ln.startswith("key="):
                keys.append(unquote(ln.split()[0][4:]))
        return keys

    def has(self, keys):
        """Exact presence of each key (pipelined meta-get without value;
        unlike metadump, which may skip items while they move between LRUs)."""
        keys = list(keys)
        if not keys:
            return []
        req = "".join(f"mg {k}\r\n" for k in keys) + "mn\r\n"
        raw = self._cmd_raw(req.encode(), b"MN\r\n")
        lines = raw.decode().split("\r\n")[:len(keys)]
        assert all(ln in ("HD", "EN") or ln.startswith("HD ") for ln in lines), lines[:3]
        return [ln.startswith("HD") for ln in lines]

    def _cmd_raw(self, data, end):
        return mcproto.request("127.0.0.1", self.port, data, end)

    def get(self, key):
        raw = self._cmd("get " + key)
        if not raw.startswith(b"VALUE"):
            return None
        hdr, rest = raw.split(b"\r\n", 1)
        n = int(hdr.split()[3])
        return rest[:n]

    def signal(self, sig):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self):
        # SIGKILL: nothing to persist, and memcached's SIGTERM shutdown takes
        # ~0.3 s per server (works on a SIGSTOPped server too)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc in _LIVE_PROCS:
            _LIVE_PROCS.remove(self.proc)


def layout(path):
    """The file's placement as reported by MemFS (user.memfs.layout xattr)."""
    return json.loads(os.getxattr(path, "user.memfs.layout"))


def stripes_on(server, lay):
    """Stripe numbers of the file described by lay that this server holds."""
    keys = [f"{lay['key_base']}.{n}" for n in range(lay["stripes"])]
    return {n for n, ok in enumerate(server.has(keys)) if ok}


def stripe_counts(servers, lay):
    return [len(stripes_on(s, lay)) for s in servers]


class Mount:
    def __init__(self, servers, path, *extra):
        self.path = str(path)
        os.makedirs(self.path, exist_ok=True)
        self.logfile = self.path.rstrip("/") + ".log"
        self.servers = servers
        cmd = [str(MEMFS), "--servers", ",".join(s.spec for s in servers), *extra,
               "-f", self.path]
        self.cmd = cmd
        self._log = open(self.logfile, "w")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT)
        _LIVE_PROCS.append(self.proc)
        _LIVE_MOUNTS.append(self.path)
        deadline = time.time() + 15
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"memfs exited ({self.proc.returncode}): {self.log()}")
            if "memfs: mounted" in self.log() and is_mounted(self.path):
                return
            time.sleep(0.02)
        self.unmount()
        raise RuntimeError("memfs did not mount: " + self.log())

    def log(self):
        with open(self.logfile) as f:
            return f.read()

    def p(self, rel):
        return os.path.join(self.path, rel.lstrip("/"))

    def stats(self):
        with open(self.p(".memfs-stats")) as f:
            return json.load(f)

    def reset_stats(self):
        with open(self.p(".memfs-stats"), "w") as f:
            f.write("reset\n")

    def unmount(self):
        if is_mounted(self.path):
            r = subprocess.run(["fusermount3", "-u", self.path], capture_output=True)
            if r.returncode != 0 or is_mounted(self.path):
                subprocess.run(["fusermount3", "-u", "-z", self.path], capture_output=True)
        netns.wait_or_kill(self.proc, 10)
        if is_mounted(self.path):  # daemon killed: drop the dead mount
            subprocess.run(["fusermount3", "-u", "-z", self.path], capture_output=True)
        self._log.close()
        if self.proc in _LIVE_PROCS:
            _LIVE_PROCS.remove(self.proc)
        if self.path in _LIVE_MOUNTS:
            _LIVE_MOUNTS.remove(self.path)
        try:
            os.rmdir(self.path)
        except OSError:
            pass


class Cluster:
    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.servers_started = []
        self.mounts = []
        self._n = 0

    def servers(self, n, **kw):
        out = [Memcached(**kw) for _ in range(n)]
        self.servers_started += out
        return out

    def mount(self, servers, *extra, name=None):
        self._n += 1
        m = Mount(servers, self.tmp / (name or f"mnt{self._n}"), *extra)
        self.mounts.append(m)
        return m

    def close(self):
        for m in reversed(self.mounts):
            try:
                m.unmount()
            except Exception:  # keep cleaning up
                pass
        for s in self.servers_started:
            try:
                s.stop()
            except Exception:
                pass


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    try:
        yield c
    finally:
        c.close()
