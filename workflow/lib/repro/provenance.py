"""Who, where and when a measurement was taken."""

from __future__ import annotations

import datetime as _dt
import functools
import os
import platform
import shutil
import socket
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


@functools.lru_cache(maxsize=1)
def git_sha() -> str:
    """The commit the run was made from, with ``-dirty`` for uncommitted changes."""
    env_sha = os.environ.get("REPRO_GIT_SHA")
    if env_sha:
        return env_sha
    try:
        sha = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short=12", "HEAD"],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def host() -> str:
    """The node name: Slurm's node name where set (virtual nodes share one host)."""
    node = os.environ.get("SLURMD_NODENAME")
    name = socket.gethostname()
    return f"{name}/{node}" if node and node != name else name


def tool_version(cmd: list[str], timeout: float = 10) -> str:
    """First line of a tool's version output, or 'absent'."""
    if not shutil.which(cmd[0]):
        return "absent"
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0].strip() if text else "unknown"


def base_versions() -> dict[str, str]:
    return {
        "python": platform.python_version(),
        "kernel": platform.release(),
        "container": os.environ.get("APPTAINER_NAME", "") or "none",
    }


def loadavg() -> list[float]:
    """The host's 1/5/15-minute load averages: a timed job records them at its start and end, so
    that a reader can see whether it really ran alone."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def record(tool_versions: dict[str, str] | None = None) -> dict:
    """Provenance block stored in every raw file."""
    versions = base_versions()
    versions.update(tool_versions or {})
    return {
        "host": host(),
        "git_sha": git_sha(),
        "tool_versions": versions,
    }
