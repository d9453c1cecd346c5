"""Helpers of the tests that need the emulated home NFS (this folder's and the mpifuse study's):
prerequisites, building a system, the `homefs_ready` fixture. Imported as ``homefs_testlib``
here and as ``systems.homefs.tests.homefs_testlib`` from the study's tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PY = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv" / "bin" / "python").exists() else sys.executable


def missing_prereq(what: str) -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, tc, FUSE mounts)"
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing"
    for tool in ("fusermount3", "mpirun", "ip", "tc", "nsenter") + (("ganesha.nfsd",) if what == "home" else ()):
        if not shutil.which(tool):
            return f"{tool} is not installed (./repro setup)"
    return None


def build_system(dirname: str, target: str) -> Path:
    out = REPO / "systems" / dirname / "build" / target
    if not out.exists():
        p = subprocess.run(["make", "-C", str(REPO / "systems" / dirname)], capture_output=True, text=True)
        if p.returncode != 0:
            pytest.fail(f"make -C systems/{dirname} failed:\n{p.stderr[-3000:]}")
    return out


@pytest.fixture(scope="session")
def homefs_ready():
    why = missing_prereq("home")
    if why:
        pytest.skip(why)
    build_system("homefs", "nfsfuse")
    from systems.homefs import homefs

    return homefs


