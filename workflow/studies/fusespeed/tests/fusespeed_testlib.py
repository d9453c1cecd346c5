"""Helpers of the fusespeed tests: the speed benchmark under mpirun on this host, its file systems
mpifuse's (systems/mpifuse/build/libmpifuse.so), set up as mpifuse's tests set them up (its fixture
and config helper, imported). Real systems, no mocks."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from repro import config as repro_config
from studies.mpifuse.tests.mpifuse_study_testlib import PY, REPO, mpi_env, mpifuse_ready, study_config  # noqa: F401

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PUBLISHED = REPO / "workflow" / "studies" / "mpifuse" / "published.csv"  # paper 001's values (Table I)


def fusespeed_config(over: dict) -> dict:
    """A validated fusespeed section: config/config.yaml + config/local.yaml + `over`."""
    import yaml

    full = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    local = yaml.safe_load((REPO / "config" / "local.yaml").read_text())
    cfg = repro_config.deep_merge(full, local)
    cfg["fusespeed"] = repro_config.deep_merge(cfg["fusespeed"], over)
    return repro_config.validate(cfg)["fusespeed"]


def run_speed(tmp: Path, speed: dict, name: str) -> tuple[dict, dict, str]:
    """The speed benchmark under mpirun (max(nodes)+1 ranks, 240 s at most) as fusespeed_run runs it:
    --config the fusespeed section with `speed` merged in, --uses mpifuse= mpifuse's section (paths under
    tmp): (its raw record, the job's view of both (mpifuse's section, `speed` = fusespeed's), the tag)."""
    from repro import rawio

    mf = study_config(tmp)
    sp = fusespeed_config(speed)
    (tmp / "fusespeed.json").write_text(json.dumps(sp))
    (tmp / "mpifuse.json").write_text(json.dumps(mf))
    out = tmp / "results" / "fusespeed" / "raw" / f"source~{sp['source']}" / f"size~{sp['size']}" / "rep~0.json"
    tag = f"rmf-t{os.getpid()}-{name}"
    p = subprocess.run(["timeout", "-k", "10", "240", "mpirun", "--oversubscribe", "--bind-to", "none", "-n",
                        str(max(sp["nodes"]) + 1), PY, "-m", "studies.fusespeed.run", "speed",
                        "--config", f"@{tmp / 'fusespeed.json'}", "--uses", f"mpifuse=@{tmp / 'mpifuse.json'}",
                        "--tag", tag, "--out", str(out)],
                       capture_output=True, text=True, env=mpi_env(), cwd=REPO)
    assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return rawio.read(out), {**mf, "speed": sp}, tag
