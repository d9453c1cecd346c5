"""Helpers of the mpifuse benchmark tests: real systems, no mocks.

The benchmarker runs under mpirun with n+1 ranks on this host, the file systems
through systems/mpifuse/build/libmpifuse.so, home through systems/homefs (real
namespaces, nfs-ganesha, tc). Tests skip, saying why, only when a prerequisite
is truly absent (not root, no /dev/fuse, a package not installed).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from repro import config as repro_config
from repro import procs
from studies.mpifuse import layout
from systems.homefs.tests.homefs_testlib import PY, build_system, homefs_ready, missing_prereq  # noqa: F401

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="session")
def mpifuse_ready():
    why = missing_prereq("mpifuse")
    if why:
        pytest.skip(why)
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py is not installed in the project venv (./repro setup)")
    return build_system("mpifuse", "libmpifuse.so")


def mpi_env() -> dict:
    """What workflow/scripts/mpi-env.sh exports for a single host (MPI_ENV of the rules)."""
    env = procs.mpi_env()
    env["PATH"] = f"{REPO / '.venv' / 'bin'}:{env.get('PATH', '')}"
    return env


def study_config(tmp: Path, scale: str = "local", **over) -> dict:
    """A validated mpifuse section: config/config.yaml + config/local.yaml + overrides, paths under tmp,
    judged at `scale` (its `judging_scale`, as study_json hands it to the analysis scripts)."""
    import yaml

    full = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    local = yaml.safe_load((REPO / "config" / "local.yaml").read_text())
    cfg = repro_config.deep_merge(full, local)
    sec = repro_config.deep_merge(cfg["mpifuse"], {
        "scratch": {"path": str(tmp / "scratch")}, "local_dir": str(tmp / "local"),
        "mount_dir": str(tmp / "mnt"), "shm_dir": "/dev/shm",
        "home": {"state_dir": str(tmp / "home")}, "timeout": {"base_s": 30, "per_gb_node_s": 120},
    })
    sec = repro_config.deep_merge(sec, over)
    cfg["mpifuse"] = sec
    return {**repro_config.validate(cfg)["mpifuse"], "judging_scale": scale}


def run_bench(cfg: dict, tmp: Path, source: str, nodes: int, size: str, rep: int = 0, variants=None,
              faults=(), timeout: int = 300, raw_dir: Path | None = None) -> subprocess.CompletedProcess:
    """The rule's command line: [homefs run --] mpirun -n n+1 python3 -m studies.mpifuse.run read_scaling
    ... --out <one raw file per use case>; then the same arguments with --after rc --log (p.finish)."""
    cfgfile = tmp / "mpifuse.json"
    cfgfile.write_text(json.dumps(cfg))
    raw_dir = raw_dir or tmp / "results" / "mpifuse" / "raw"
    tag = f"rmf-t{os.getpid()}-{nodes}-{rep}"
    params = {"source": source, "nodes": nodes, "size": size, "launcher": "local"}
    if faults:
        params["inject_fault"] = list(faults)
    outs = [layout.raw_path(source, v, nodes, size, rep, str(raw_dir)) for v in (variants or cfg["variants"])]
    common = ["read_scaling", "--config", f"@{cfgfile}", "--params", json.dumps(params), "--rep", str(rep),
              "--tag", tag, "--out", *outs]
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-n", str(nodes + 1), PY,
           "-m", "studies.mpifuse.run", *common]
    if source == "home" and cfg["home"]["kind"] == "emulated":
        h = cfg["home"]
        cmd = [PY, str(REPO / "systems" / "homefs" / "homefs.py"), "run", "--state", f"{h['state_dir']}/{tag}",
               "--nodes", str(nodes), "--rate-mbit", str(h["rate_mbit"]), "--burst", h["burst"], "--"] + cmd
    env = mpi_env()
    p = subprocess.run(["timeout", "-k", "10", str(timeout), *cmd], capture_output=True, text=True, env=env,
                       cwd=REPO)
    log = tmp / f"{tag}.log"  # the rule's log: the launcher's output, which --after reads for why it ended
    log.write_text(p.stdout + p.stderr)
    fin = subprocess.run([PY, "-m", "studies.mpifuse.run", *common, "--after", str(p.returncode),
                          "--log", str(log)], capture_output=True, text=True, env=env, cwd=REPO)
    p.finish = fin
    return p


def leftovers(tag_prefix: str = "rmf-") -> dict:
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    mounts = Path("/proc/self/mounts").read_text()
    return {"netns": [line.split()[0] for line in ns.splitlines() if line.startswith(tag_prefix)],
            "mounts": [line.split()[1] for line in mounts.splitlines() if "/rmf-t" in line.split()[1]]}

