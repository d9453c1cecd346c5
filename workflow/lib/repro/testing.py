"""What the tests share (imported by the root conftest.py and by test modules as ``repro.testing``):
a scratch copy of the repository to run Snakemake in, the project's environment, and the config
overlay that keeps only some studies on."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

# generated or heavy paths never copied into a test workspace
_SKIP_TOP = {".git", ".snakemake", "results", ".pytest_cache"}
_SKIP_PAPER = {"index.html", "claims.csv", "report.pdf"}


def only_studies(*keep: str) -> str:
    """A config overlay (YAML text) that switches off every study but `keep`: the list of studies is
    derived from the study folders, so a study added later never runs silently inside a test."""
    from repro import config as rc

    off = [s for s in rc.study_names() if s not in keep and "enabled" in rc.study_schema(s).get("properties", {})]
    return "".join(f"{s}: {{enabled: false}}\n" for s in off)


def build_or_skip(why_not: str | None, cmd: list[str], what: str = "build", tail: int = 3000) -> None:
    """Skip the tests with the reason where a prerequisite is missing; else run the build command
    and fail them with the end of its output if it fails."""
    import pytest

    if why_not:
        pytest.skip(why_not)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"{what} failed:\n" + r.stdout[-tail:] + r.stderr[-tail:])


def file_sha256(path, bs: int = 1 << 20) -> str:
    """SHA-256 of a file read sequentially in ``bs``-byte reads (the tests compare what a mount returns)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(bs)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def claims_table(ws: Path, study: str):
    """results/<study>/claims.csv of a workspace, every cell as text."""
    import pandas as pd

    return pd.read_csv(ws / f"results/{study}/claims.csv", dtype=str, keep_default_na=False)


def raw_metric(raw: dict, metric: str, **labels):
    """The one value of ``metric`` with ``labels`` in a raw record (fails if there is none or more than one)."""
    from repro import rawio

    vals = rawio.values(raw, metric, **labels)
    assert len(vals) == 1, (metric, labels, vals)
    return vals[0]


def project_env() -> dict:
    """The environment ./repro gives commands (venv and apptainer on PATH)."""
    out = subprocess.run([str(REPO / "repro"), "env"], capture_output=True, text=True, check=True).stdout
    exported = dict(line[len("export "):].split("=", 1) for line in out.strip().splitlines())
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1")
    env.update({k: v.strip('"') for k, v in exported.items()})
    env.pop("SLURM_CONF", None)
    return env


def copy_repo(dst: Path) -> None:
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
    # no history is copied: the copy names its code by a stamp (commit, tree of the copied working
    # tree) that repro.provenance reads; `git init` keeps git commands inside the copy from climbing
    # to an enclosing repository
    subprocess.run(["git", "init", "-q", str(dst)], check=True)
    from repro import provenance

    provenance.write_stamp(dst, REPO)


class Snake:
    def __init__(self, cwd: Path):
        self.cwd = cwd
        self.env = project_env()
        from repro import pythonpath

        if (Path(cwd) / pythonpath.LIST).is_file():  # a scratch copy runs its own code, nothing of REPO's
            self.env["PYTHONPATH"] = pythonpath.value(cwd, "")

    def __call__(self, *args: str, timeout: int = 600, check: bool = True) -> subprocess.CompletedProcess:
        cmd = ["timeout", "-k", "10", str(timeout), "snakemake", *args]
        proc = subprocess.run(cmd, cwd=self.cwd, env=self.env, capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n"
                                 f"{proc.stderr[-6000:]}")
        return proc
