"""Fixtures for the Montage/BLAST workflow tests (systems/mtc-workflows).

Real programs throughout: astropy-made FITS tiles through the real Montage
tools, fastasplit + makeblastdb + blastn, real memcached servers and MemFS FUSE
mounts (systems/memfs/build).  Clusters are started by the tests and always
torn down (context managers); generated inputs live in pytest's tmp dirs.

Slow tests (marked ``slow``) run by default; ``--quick`` (REPRO_QUICK=1) skips them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repro.testing import build_or_skip

REPO = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
WF = REPO / "systems" / "mtc-workflows"

TOOLS = ("mProjectPP", "mDiffFit", "mConcatFit", "mBgModel", "mBackground", "mAdd", "mImgtbl", "mExamine",
         "makeblastdb", "blastn", "fastasplit", "memcached", "fusermount3")


def missing_prereq() -> str | None:
    for t in TOOLS:
        if not shutil.which(t):
            return f"{t} is not installed (Debian: montage montage-gridtools ncbi-blast+ exonerate memcached fuse3)"
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing"
    try:
        import astropy  # noqa: F401
    except ImportError:
        return "astropy is not installed in this Python (pip install astropy)"
    return None


@pytest.fixture(scope="session", autouse=True)
def prereqs():
    build_or_skip(missing_prereq(), ["make", "-s", "-C", str(REPO / "systems" / "memfs"), "-j2", "all"], "MemFS build",
                  2000)


@pytest.fixture(scope="session")
def montage_inputs(tmp_path_factory):
    from mtcwf import gen_montage

    d = tmp_path_factory.mktemp("montage_in")
    gen_montage.generate(d, grid=3, npix=128, overlap=0.3, seed=3)
    return d


@pytest.fixture(scope="session")
def blast_inputs(tmp_path_factory):
    from mtcwf import gen_blast

    d = tmp_path_factory.mktemp("blast_in")
    gen_blast.generate(d, db_bp=400_000, fragments=4, queries=2, seqs_per_query=3, query_bp=300,
                       contig_bp=10_000, seed=11)
    return d


def run_workflow(tmp: Path, workflow: str, inputs: Path, design: str, nodes: int = 2, k: int = 1,
                 launcher: str = "standin", rep: int = 0, cfg: dict | None = None,
                 module: str = "studies.memfs.wf_run", params: dict | None = None,
                 raw: Path | None = None):
    """Run one configuration and record it (the run contract: ``module``'s experiment workflow_<workflow>,
    studies.memfs.wf_run over mtcwf.run) in a subprocess, its scratch directories under ``tmp``
    ($TMPDIR); ``cfg`` replaces keys of the config, ``params`` adds to --params. Returns (rc, raw path,
    output)."""
    raw = raw or tmp / "results" / "memfs" / "raw" / f"workflow~{workflow}" / f"design~{design}" / \
        f"nodes~{nodes}" / f"tasks_per_node~{k}" / f"rep~{rep}.json"
    config = {"launcher": launcher, "memcached_mb": 128, "task_timeout_s": 120, **(cfg or {})}
    run = {"workflow": workflow, "design": design, "nodes": nodes, "tasks_per_node": k, **(params or {})}
    cmd = [sys.executable, "-m", module, f"workflow_{workflow}", "--config", json.dumps(config),
           "--params", json.dumps(run), "--rep", str(rep), "--input", f"manifest={inputs / 'manifest.json'}",
           "--out", str(raw)]
    tmp.mkdir(parents=True, exist_ok=True)
    # mtcwf: the project's Python path (workflow/pythonpath.txt; conftest.py puts it on PYTHONPATH)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "TMPDIR": str(tmp)})
    return p.returncode, raw, p.stdout + p.stderr
