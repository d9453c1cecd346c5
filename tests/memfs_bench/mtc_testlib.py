"""Helpers of the MemFS benchmark tests (imported as memfs_bench.mtc_testlib)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
SCRIPTS = REPO / "workflow" / "scripts"
MTC = REPO / "systems" / "mtc"
for p in (str(SCRIPTS), str(MTC)):
    if p not in sys.path:
        sys.path.insert(0, p)

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
    import netns

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
    schema = rc.load_schema(rc.SCHEMA_DIR / "memfs.schema.yaml")
    return rc.validate(cfg, schema=schema, source="test memfs section")


def mpi_env() -> dict:
    env = dict(os.environ)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_osc": "ucx",
                "OMPI_MCA_btl": "self,tcp", "OMPI_MCA_btl_tcp_if_include": "lo",
                "OMPI_MCA_oob_tcp_if_include": "lo", "UCX_TLS": "tcp,self", "UCX_NET_DEVICES": "lo"})
    return env
