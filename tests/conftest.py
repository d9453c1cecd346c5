"""Shared fixtures: a scratch copy of the repository to run the workflow in,
the project's environment, and the local Slurm cluster."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

# generated or heavy paths never copied into a test workspace
_SKIP_TOP = {".git", ".snakemake", "results", ".pytest_cache"}
_SKIP_PAPER = {"index.html", "claims.csv", "report.pdf"}


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


def project_env() -> dict:
    """The environment ./repro gives commands (venv and apptainer on PATH)."""
    out = subprocess.run([str(REPO / "repro"), "env"], capture_output=True, text=True, check=True).stdout
    path = out.strip().split("=", 1)[1].strip('"')
    env = dict(os.environ, PATH=path, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1")
    env.pop("SLURM_CONF", None)
    return env


def _copy_repo(dst: Path) -> None:
    def ignore(dirpath, names):
        rel = Path(dirpath).relative_to(REPO)
        skip = set()
        if rel == Path("."):
            skip |= _SKIP_TOP & set(names)
        if rel == Path("paper"):
            skip |= _SKIP_PAPER & set(names)
        skip |= {n for n in names if n == "__pycache__"}
        if rel == Path("containers") and "sif" in names:
            skip.add("sif")
        return skip

    shutil.copytree(REPO, dst, symlinks=True, ignore=ignore)
    sif = REPO / "containers" / "sif"
    if sif.is_dir():  # images are large and immutable: hard links
        (dst / "containers" / "sif").mkdir(parents=True, exist_ok=True)
        for f in sif.glob("*.sif"):
            os.link(f, dst / "containers" / "sif" / f.name)
    # git metadata for provenance (git_sha) without copying history
    subprocess.run(["git", "init", "-q", str(dst)], check=True)


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    """A fresh copy of the repository (no results) in which tests run Snakemake."""
    ws = tmp_path / "repro"
    _copy_repo(ws)
    return ws


class Snake:
    def __init__(self, cwd: Path):
        self.cwd = cwd
        self.env = project_env()

    def __call__(self, *args: str, timeout: int = 600, check: bool = True) -> subprocess.CompletedProcess:
        cmd = ["timeout", "-k", "10", str(timeout), "snakemake", *args]
        proc = subprocess.run(cmd, cwd=self.cwd, env=self.env, capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n"
                                 f"{proc.stderr[-6000:]}")
        return proc


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
