"""The one root conftest of every test in the repository (tests/, workflow/studies/*/tests,
systems/*/tests, tools/*/tests): a scratch copy of the repository to run the workflow in, the
project's environment, the local Slurm cluster, and the --quick switch."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from repro.testing import REPO, Snake, copy_repo, only_studies, project_env  # noqa: F401

# the project's Python path (pytest.ini's `pythonpath` sets it for this process; subprocesses the
# tests start -- scripts run as `python -m studies.<study>.<script>`, MPI ranks -- need it too)
PYTHONPATH = [str(Path(__file__).resolve().parent / d) for d in ("workflow/lib", "workflow", ".")]
os.environ["PYTHONPATH"] = os.pathsep.join(
    PYTHONPATH + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p not in PYTHONPATH])


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
