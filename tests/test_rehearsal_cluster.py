"""The rehearsal end to end on the multi-host cluster (./repro rehearse, small): an MPI study's cluster
path (smoke, and mpifuse's kick configuration: n+1 ranks one per node) through profiles/slurm with
config/config.yaml + config/rehearsal.yaml, and a client/server study's (storage's kick: daemons on
the system nodes, the driver apart), every check true and the summary written."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest
from repro import rehearsal as rh

pytestmark = pytest.mark.slow


@pytest.fixture()
def rehearsal_dirs():
    base = Path("/var/tmp/repro-rehearsal-tests") / uuid.uuid4().hex[:10]  # shared by the nodes
    base.mkdir(parents=True)
    yield base / "work", base / "out"
    shutil.rmtree(base, ignore_errors=True)


def test_rehearse_smoke_and_mpifuse_kick(slurm_multihost, rehearsal_dirs):
    work, out = rehearsal_dirs
    # no images here (a fresh machine would spend minutes building them): the systems run from the
    # host's builds, which the summary says
    summary = rh.rehearse(["smoke", "mpifuse:mpifuse_kick"], nodes=slurm_multihost.nodes, work=work,
                          out_dir=out, timeout=900, containers=False)
    assert summary["not_rehearsed"] and "containers" in summary["not_rehearsed"][0]
    on_disk = json.loads((out / "summary.json").read_text())
    assert set(on_disk["studies"]) == {"smoke", "mpifuse"}
    for study in ("smoke", "mpifuse"):
        res = json.loads((out / f"{study}.json").read_text())
        log = (out / f"{study}.log").read_text()
        assert res["snakemake_rc"] == 0, log[-4000:]
        for name in ("apart", "no_loopback", "asked_what_used", "raw_complete"):
            assert res["checks"][name]["ok"] is True, (study, name, res["checks"][name])
        assert "records_matched" not in res["checks"]
        multi = [j for j in res["jobs"] if j["nodes_asked"] >= 2]
        assert multi and all(len(set(j["measured_nodes"])) == j["nodes_asked"] for j in multi)
    assert summary["all_true"]


def test_rehearse_storage_kick(slurm_multihost, rehearsal_dirs):
    """A client/server study's cluster path: one storage stack's daemons on the system nodes, the
    benchmark driver on the first node, every address a real node address."""
    work, out = rehearsal_dirs
    summary = rh.rehearse(["storage:storage_kick"], nodes=slurm_multihost.nodes, work=work, out_dir=out,
                          timeout=900, containers=False)
    res = json.loads((out / "storage.json").read_text())
    assert res["snakemake_rc"] == 0, (out / "storage.log").read_text()[-4000:]
    for name in ("apart", "no_loopback", "asked_what_used", "raw_complete"):
        assert res["checks"][name]["ok"] is True, (name, res["checks"][name])
    multi = [j for j in res["jobs"] if j["nodes_asked"] >= 2]
    assert multi and all(len(set(j["measured_nodes"])) == j["nodes_asked"] for j in multi), res["jobs"]
    assert "Lustre" in res["not_rehearsed"]
    assert summary["all_true"]
