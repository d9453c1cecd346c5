"""Kernel FUSE passthrough (systems/kpassthrough; ours, beyond the paper) as a file system of the
FUSE speed benchmark (studies.fusespeed), and the CPU clocks the benchmark reads from /proc.

A rank starts one kpassthrough server (its own process) over the rank's source directory with
``--passthrough kernel``: the server registers every opened file as a backing file and the kernel
serves the reads itself, so the server should see no READ request (``read_requests`` must be 0;
the benchmark records the count and the report shows a non-zero count as a failed measurement).
A kernel without FUSE passthrough (< 6.9) or a missing capability fails the mount with the
server's own message (raised here as OSError, recorded by the benchmark as failed, never as a
number).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from systems.kpassthrough.hostinfo import cpu_s, mounted, unmount  # noqa: F401 -- run.py reads kpt.cpu_s

REPO = Path(__file__).resolve().parents[3]
BIN_DEFAULT = REPO / "systems" / "kpassthrough" / "build" / "kpassthrough"
VARIANT = "kpassthrough"  # the speed benchmark's variant name
LABEL = "Kernel FUSE passthrough"  # shown with plotting.variant_label(..., ours=True)


def binary() -> str:
    """The server binary: $KPASSTHROUGH_BIN (another build), else systems/kpassthrough/build/."""
    return os.environ.get("KPASSTHROUGH_BIN") or str(BIN_DEFAULT)


class KMount:
    """``kpassthrough SOURCE MNT --passthrough kernel --stats STATS`` in the background; ready
    when its stats file says ``"state": "ready"`` and the mount is in the mount table."""

    def __init__(self, source: str, mnt: str, stats: str, mode: str = "kernel", timeout: float = 30):
        self.mnt, self.stats_path, self.mode = mnt, stats, mode
        os.makedirs(mnt, exist_ok=True)
        exe = binary()
        if not os.access(exe, os.X_OK):
            raise OSError(2, f"kpassthrough binary {exe} is missing: build it with "
                             "`make -C systems/kpassthrough` (./repro setup does)")
        self.log_path = stats + ".log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([exe, source, mnt, "--passthrough", mode, "--stats", stats],
                                     stdout=self._log, stderr=subprocess.STDOUT)
        self.pid = self.proc.pid
        deadline = time.monotonic() + timeout
        while True:
            st = self._read()
            if st and st.get("state") == "ready" and mounted(mnt):
                self.ready = st
                return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                rc = self.proc.poll()
                self.stop()
                raise OSError(5, f"kpassthrough --passthrough {mode} did not mount (rc {rc}): "
                                 f"{self.output()[-400:].strip()}")
            time.sleep(0.02)

    def _read(self) -> dict | None:
        try:
            with open(self.stats_path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def output(self) -> str:
        try:
            self._log.flush()
        except ValueError:
            pass
        try:
            return Path(self.log_path).read_text(errors="replace")
        except OSError:
            return ""

    def cpu(self) -> float | None:
        """The server process's CPU seconds so far (utime + stime of all its threads)."""
        return cpu_s(self.pid)

    def stats(self, timeout: float = 10) -> dict:
        """The server's counters now: SIGUSR1 makes it rewrite its stats file."""
        before = os.stat(self.stats_path).st_mtime_ns
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = self._read()
            if st and st.get("state") == "running" and os.stat(self.stats_path).st_mtime_ns != before:
                return st
            time.sleep(0.01)
        raise OSError(62, "kpassthrough wrote no stats after SIGUSR1")

    def stop(self) -> int | None:
        """fusermount3 -u, then the server exits by itself (SIGKILL after 15 s, lazy unmount)."""
        unmount(self.proc, self.mnt, grace=15, capture_output=True)
        try:
            self._log.close()
        except ValueError:
            pass
        return self.proc.returncode


def read_requests(st: dict) -> int:
    """READ requests the server answered (0 when the kernel passed every read through)."""
    return int(st.get("ops", {}).get("read", 0))
