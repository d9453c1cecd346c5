"""What the host says about a FUSE server, read from /proc and the kernel release: is a path
mounted, is a process alive, how much CPU it used, can the kernel pass reads through (FUSE
passthrough, Linux >= 6.9); and the one way to unmount a server (unmount). Standard library only:
bench.py, the tests and the mpifuse speed benchmark (workflow/studies/fusespeed/kpt.py) import it
(as systems.kpassthrough.hostinfo; the tests by plain name)."""

from __future__ import annotations

import os
import platform
import subprocess


def mounted(mp: str) -> bool:
    """True if `mp` (resolved) is a mount point now."""
    mp = os.path.realpath(mp)
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == mp for line in f)


def alive(pid) -> bool:
    """True if pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cpu_s(pid: int | str = "self") -> float | None:
    """utime + stime of a process (all its threads), seconds; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kernel_has_passthrough() -> bool:
    """Linux >= 6.9 (FUSE passthrough); on such a kernel the kernel-mode tests must pass."""
    rel = platform.release().split("-")[0].split(".")
    try:
        return (int(rel[0]), int(rel[1])) >= (6, 9)
    except (ValueError, IndexError):
        return False


def unmount(proc, mp: str, grace: float = 15, **run) -> bool:
    """fusermount3 -u, then wait up to `grace` s for the server process to exit by itself (True);
    else SIGKILL it (False). A mount still there afterwards is unmounted lazily (-uz). `run`: more
    arguments of subprocess.run for fusermount3 (capture_output=True to keep its messages)."""
    if mounted(mp):
        subprocess.run(["fusermount3", "-u", mp], check=False, **run)
    try:
        proc.wait(timeout=grace)
        exited = True
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        exited = False
    if mounted(mp):
        subprocess.run(["fusermount3", "-uz", mp], check=False, **run)
    return exited
