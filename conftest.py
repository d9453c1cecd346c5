"""The one root conftest of every test in the repository (tests/, workflow/studies/*/tests,
systems/*/tests, tools/*/tests): a scratch copy of the repository to run the workflow in, the
project's environment, the local Slurm cluster, and the --quick switch."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from repro import pythonpath
from repro.testing import REPO, Snake, copy_repo, only_studies, project_env  # noqa: F401

# the project's Python path (workflow/pythonpath.txt; pytest.ini's `pythonpath` puts the engine's
# folders on this process's path, ./repro test all of them on PYTHONPATH): every subprocess a test
# starts -- `python -m studies.<study>.<script>`, MPI ranks, a system's agents -- gets it, also
# under a bare `pytest`
os.environ["PYTHONPATH"] = pythonpath.value(Path(__file__).resolve().parent)


def pytest_addoption(parser):
    parser.addoption("--quick", action="store_true", default=False,
                     help="skip the tests marked slow (or set REPRO_QUICK=1); CI runs everything")


def pytest_collection_modifyitems(config, items):
    if not (config.getoption("--quick") or os.environ.get("REPRO_QUICK") == "1"):
        return
    skip = pytest.mark.skip(reason="slow test skipped (--quick / REPRO_QUICK=1)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    """A fresh copy of the repository (no results) in which tests run Snakemake."""
    ws = tmp_path / "repro"
    copy_repo(ws)
    return ws


@pytest.fixture()
def snake(workspace: Path) -> Snake:
    return Snake(workspace)


@pytest.fixture(scope="session")
def slurm_cluster():
    """The local 8-node Slurm cluster, started if needed (and stopped if we started it)."""
    script = REPO / "workflow" / "scripts" / "slurm" / "local-cluster.sh"
    if shutil.which("slurmctld") is None:
        pytest.skip("Slurm is not installed (./repro setup installs it)")
    was_up = subprocess.run([str(script), "status"], capture_output=True).returncode == 0
    subprocess.run([str(script), "up", "8"], check=True, capture_output=True, timeout=120)
    yield
    if not was_up:
        subprocess.run([str(script), "down"], capture_output=True, timeout=120)


class MultihostCluster:
    """The multi-host Slurm cluster of ``multihost-cluster.sh``: nodes that are hosts (own network
    namespace, address, hostname, /tmp and /dev/shm). Its clients need ``env`` (SLURM_CONF)."""

    script = REPO / "workflow" / "scripts" / "slurm" / "multihost-cluster.sh"

    def __init__(self, nodes: int, state_dir: str = "/var/tmp/repro-slurm-mh"):
        self.nodes = nodes
        self.conf = f"{state_dir}/slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=self.conf)

    def run(self, *args, check=True, timeout=300, **kw) -> subprocess.CompletedProcess:
        """A Slurm client (srun, sbatch, scontrol ...) or a script subcommand against this cluster."""
        cmd = [str(self.script), *args[1:]] if args[0] == "script" else list(args)
        r = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout, **kw)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        return r


@pytest.fixture(scope="session")
def slurm_multihost():
    """A 4-node multi-host Slurm cluster (node0..node3 on 10.79.0.10-13), started if needed and
    stopped at the end of the session if this session started it (also after a failure)."""
    if shutil.which("slurmctld") is None:
        pytest.skip("Slurm is not installed (./repro setup installs it)")
    if os.geteuid() != 0:
        pytest.skip("the multi-host cluster needs root (namespaces)")
    from repro.rehearsal import cluster_lock

    c = MultihostCluster(4)
    with cluster_lock():  # a rehearsal (or another test session) holding the cluster is waited for
        was_up = c.run("script", "status", check=False).returncode == 0
        try:
            c.run("script", "up", "4", timeout=180)
            yield c
        finally:
            if not was_up:
                c.run("script", "down", check=False, timeout=180)
