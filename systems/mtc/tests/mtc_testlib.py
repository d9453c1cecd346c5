"""Helpers of the tests that start systems/mtc clusters (this folder's tests, the MemFS study's, the
tools' that run on them): prerequisites, leftovers, a tiny memfs config, the MPI environment.
Imported as ``mtc_testlib`` here and as ``systems.mtc.tests.mtc_testlib`` elsewhere."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
MTC = REPO / "systems" / "mtc"
MDBENCH = REPO / "tools" / "mdtest" / "build" / "mdbench"

IOZONE_CACHE = Path(os.environ.get("REPRO_CACHE", Path.home() / ".cache" / "repro")) / "iozone/usr/bin/iozone"


def missing_cluster_prereq() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, FUSE)"
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing"
    for tool in ("memcached", "fusermount3", "ip", "tc", "nsenter"):
        if not shutil.which(tool):
            return f"{tool} is not installed"
    return None


def iozone_bin() -> str | None:
    return shutil.which("iozone") or (str(IOZONE_CACHE) if os.access(IOZONE_CACHE, os.X_OK) else None)


def leftovers_of(cid: str, workdir: str | None = None) -> dict:
    """What remains of cluster ``cid``: namespaces, links, registry, mounts, processes."""
    from systems.mtc import netns

    out = netns.leftovers(cid)
    mounts = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            mp = line.split()[4]
            if f"rmc-{cid}" in mp or (workdir and mp.startswith(str(workdir))):
                mounts.append(mp)
    out["mounts"] = mounts
    procs = subprocess.run(["pgrep", "-af", f"rmc-{cid}"], capture_output=True, text=True).stdout.splitlines()
    if workdir:
        procs += subprocess.run(["pgrep", "-af", str(workdir)], capture_output=True, text=True).stdout.splitlines()
    out["processes"] = [p for p in procs if "pgrep" not in p and "pytest" not in p]
    return out


def assert_clean(cid: str, workdir: str | None = None):
    left = leftovers_of(cid, workdir)
    assert not any(left.values()), f"cluster {cid} left behind: {json.dumps(left)}"


def memfs_cfg(**over) -> dict:
    """A tiny, validated memfs config section (the schema's defaults + local-like overrides)."""
    from repro import config as rc

    cfg = {
        "enabled": True,
        "networks": {"IPoIB": {"emulate": True, "rate_mbit": 8000, "burst": "1m"},
                     "1GbE": {"emulate": True, "rate_mbit": 1000, "burst": "256k"}},
        "memcached": {"mem_mb": 256, "threads": 1},
        "envelope": {"nodes": [1, 2], "sizes": ["1KiB", "1MiB"], "files_per_node": {"1KiB": 2, "1MiB": 2},
                     "procs_per_node": 1, "repeats": 1, "timeout_s": 120},
        "table": {"networks": ["IPoIB", "1GbE"], "nodes": [2], "size": "1MiB"},
        "metadata": {"nodes": [1, 2], "ranks_per_node": 1, "items_per_rank": 20, "repeats": 1, "timeout_s": 120},
        "sweeps": {"nodes": [2], "size": "1MiB", "files_per_node": 1, "procs_per_node": 1,
                   "stripe_sizes": ["256KiB", "512KiB"], "threads": [1, 8], "repeats": 1},
        "limit": {"networks": ["IPoIB"], "nodes": [2], "seconds": 0.5, "iperf_seconds": 1, "repeats": 1},
    }
    cfg.update(over)
    schema = rc.study_schema("memfs")
    return rc.validate(cfg, schema=schema, source="test memfs section")


def mpi_env() -> dict:
    """workflow/scripts/mpi-env.sh for one host (UCX over TCP between the virtual nodes)."""
    from repro import procs

    return procs.mpi_env()


# ---- fixtures (conftest.py here and in the MemFS study's tests import them)
@pytest.fixture(scope="session")
def built():
    """make -C systems/memfs, tools/mdtest, tools/iozone (fails the tests if a build fails)."""
    why = missing_cluster_prereq()
    if why:
        pytest.skip(why)
    for d in ("systems/memfs", "tools/mdtest", "tools/iozone"):
        r = subprocess.run(["make", "-C", str(REPO / d), "-j2", "all"], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.fail(f"make -C {d} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return True


@pytest.fixture
def iozone():
    b = iozone_bin()
    if not b:
        pytest.skip("iozone missing: run tools/iozone/setup.sh")
    return b


@pytest.fixture
def clusters(tmp_path):
    """Start clusters through this fixture: torn down and checked clean at the end."""
    from systems.mtc import launch

    started = []

    def start(**kw):
        kw.setdefault("workdir", tmp_path / f"c{len(started)}")
        kw.setdefault("memcached", {"mem_mb": 256, "threads": 1})
        cm = launch.cluster(**kw)
        c = cm.__enter__()
        started.append((cm, c))
        return c

    yield start
    errors = []
    for cm, c in reversed(started):
        try:
            cm.__exit__(None, None, None)
        except Exception as exc:  # keep cleaning the others
            errors.append(exc)
    for _cm, c in started:
        assert_clean(c.cid, str(c.workdir))
    if errors:
        raise errors[0]
