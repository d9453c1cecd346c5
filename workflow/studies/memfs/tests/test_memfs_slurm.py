"""The n+1 rules on the local Slurm cluster (started by the slurm_cluster fixture): memfs_kick through
profiles/slurm, in a scratch copy of the repository (results stay out of the tree).

Slow (about 2 minutes): skipped with --quick.
"""

import json
import subprocess

import pytest

from repro.testing import copy_repo
from systems.mtc.tests.mtc_testlib import assert_clean

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("built")]


def test_memfs_kick_runs_as_n_plus_1_jobs_on_slurm(tmp_path, slurm_cluster):
    work = tmp_path / "repo"
    copy_repo(work)
    (work / "overlay.yaml").write_text(
        "memfs:\n  kick: {network: IPoIB, nodes: [2], size: 1MiB}\n")
    cmd = ["timeout", "-k", "10", "600", "./repro", "snakemake", "memfs_kick", "--profile", "profiles/slurm",
           "--configfile", "config/local.yaml", "overlay.yaml"]
    r = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=660)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    raw = work / "results/memfs/raw/envelope/network~IPoIB/design~memfs/nodes~2/size~1MiB/rep~0.json"
    rec = json.loads(raw.read_text())
    cl = rec["extra"]["cluster"]
    assert rec["status"] == "ok" and cl["launcher"] == "slurm"
    driver = rec["host"].split("/")[-1]  # the Slurm node the driver ran on
    assert len(cl["slurm_nodes"]) == 2 and driver not in cl["slurm_nodes"]  # n+1 distinct nodes
    md = json.loads((work / "results/memfs/raw/metadata/network~IPoIB/design~memfs/nodes~2/rep~0.json").read_text())
    assert md["extra"]["command"][0] == "srun" and "--overlap" in md["extra"]["command"]
    assert (work / "results/memfs/kick/measurements.csv").exists()
    for f in (work / "results/memfs/raw").rglob("*.json"):
        assert_clean(json.loads(f.read_text())["extra"]["cluster"]["cid"])
