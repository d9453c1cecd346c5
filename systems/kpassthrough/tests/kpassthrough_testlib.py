"""Helpers of the kpassthrough tests: the built binary, a source tree, and a mount that is
always unmounted (fusermount3 -u) with its server process gone afterwards."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

SYS = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, SYS)
from hostinfo import alive, kernel_has_passthrough, mounted  # noqa: E402,F401 -- the tests import them from here
# KPASSTHROUGH_BIN: another build of the binary (e.g. a deliberately broken one, to see a test fail)
BIN = os.environ.get("KPASSTHROUGH_BIN", os.path.join(SYS, "build", "kpassthrough"))
MIB = 1 << 20
# name -> size; the 8 MiB file is random bytes, the small ones too
SIZES = {"empty": 0, "one": 1, "page_plus_one": 4097, "random_8m": 8 * MIB}


def missing_prereq():
    if os.geteuid() != 0:
        return "needs root (mounts, FUSE_DEV_IOC_BACKING_OPEN needs CAP_SYS_ADMIN)"
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing"
    if not shutil.which("fusermount3"):
        return "fusermount3 is not installed"
    return None


def make_source(root):
    """A source tree: the SIZES files at the top, a sub-directory with one more, a symlink."""
    rng = __import__("random").Random(13)
    os.makedirs(os.path.join(root, "sub", "deeper"))
    data = {}
    for name, size in SIZES.items():
        b = rng.randbytes(size)
        with open(os.path.join(root, name), "wb") as f:
            f.write(b)
        data[name] = b
    data["sub/nested.bin"] = rng.randbytes(70000)
    with open(os.path.join(root, "sub", "nested.bin"), "wb") as f:
        f.write(data["sub/nested.bin"])
    os.symlink("random_8m", os.path.join(root, "link_to_big"))
    return data


class Mount:
    """`kpassthrough SOURCE MP ...` in the background, ready when its stats file says so."""

    def __init__(self, source, mp, stats, *args, env=None):
        self.source, self.mp, self.stats = source, mp, stats
        os.makedirs(mp, exist_ok=True)
        self.log = stats + ".log"
        self.logf = open(self.log, "wb")
        self.proc = subprocess.Popen([BIN, source, mp, "--stats", stats, *args],
                                     stdout=self.logf, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, **(env or {})))
        deadline = time.time() + 20
        while True:
            st = self.read_stats() if os.path.exists(stats) else None
            if st and st["state"] == "ready" and mounted(mp):
                break
            if self.proc.poll() is not None or time.time() > deadline:
                self.close()
                pytest.fail(f"kpassthrough did not come up (rc={self.proc.returncode}): {self.output()}")
            time.sleep(0.02)

    def read_stats(self):
        with open(self.stats) as f:
            return json.load(f)

    def ops(self):
        """Counters now: SIGUSR1 makes the server rewrite the stats file."""
        before = os.stat(self.stats).st_mtime_ns
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.time() + 10
        while time.time() < deadline:
            st = self.read_stats()
            if st["state"] == "running" and os.stat(self.stats).st_mtime_ns != before:
                return st["ops"]
            time.sleep(0.02)
        pytest.fail("no stats after SIGUSR1")

    def wait_ops(self, cond, timeout=10):
        """RELEASE is asynchronous: poll the counters until cond(ops) holds."""
        deadline = time.time() + timeout
        while True:
            ops = self.ops()
            if cond(ops) or time.time() > deadline:
                return ops
            time.sleep(0.05)

    def output(self):
        self.logf.flush()
        with open(self.log, errors="replace") as f:
            return f.read()

    def close(self):
        """fusermount3 -u, then the server must exit by itself; SIGKILL only as a last resort
        (and then the test fails)."""
        if mounted(self.mp):
            subprocess.run(["fusermount3", "-u", self.mp], check=False)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            if mounted(self.mp):
                subprocess.run(["fusermount3", "-uz", self.mp], check=False)
            pytest.fail("kpassthrough did not exit after fusermount3 -u")
        finally:
            self.logf.close()
        assert not mounted(self.mp), "mount left behind"
        assert not alive(self.proc.pid)
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
