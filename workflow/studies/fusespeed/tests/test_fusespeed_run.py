"""The speed benchmark on the run contract (repro.runner) when it cannot finish: a job that dies on a
rank leaves a failure record at the raw file's failed/ path (before the runner, it left nothing), the
--after step leaves that record alone and removes the job's directories, and a job killed before it
could record anything gets one from --after that quotes the launcher's log."""

from __future__ import annotations

import json
import subprocess

import pytest
from repro import rawio

from fusespeed_testlib import PY, REPO, fusespeed_config, mpi_env, study_config


def _speed(tmp, mf, extra=(), timeout=120, ranks=2):
    sp = fusespeed_config({"size": "1MB", "nodes": [1], "repeats": 1, "idle_s": 0, "variants": ["native"]})
    (tmp / "fs.json").write_text(json.dumps(sp))
    (tmp / "mf.json").write_text(json.dumps(mf))
    out = tmp / f"results/fusespeed/raw/source~{sp['source']}/size~{sp['size']}/rep~0.json"
    args = ["speed", "--config", f"@{tmp / 'fs.json'}", "--uses", f"mpifuse=@{tmp / 'mf.json'}",
            "--tag", "rmf-tspeed", "--out", str(out)]
    p = subprocess.run(["timeout", "-k", "5", str(timeout), "mpirun", "--oversubscribe", "--bind-to", "none", "-n",
                        str(ranks), PY, "-m", "studies.fusespeed.run", *args, *extra],
                       capture_output=True, text=True, env=mpi_env(), cwd=REPO)
    log = tmp / "run.log"
    log.write_text(p.stdout + p.stderr)
    after = subprocess.run([PY, "-m", "studies.fusespeed.run", *args, "--after", str(p.returncode), "--log", str(log)],
                           capture_output=True, text=True, env=mpi_env(), cwd=REPO)
    return p, after, out


@pytest.mark.usefixtures("mpifuse_ready")
def test_a_job_that_dies_leaves_a_failure_record(tmp_path):
    mf = study_config(tmp_path)
    (tmp_path / "not-a-dir").write_text("")
    mf["scratch"]["path"] = str(tmp_path / "not-a-dir")  # rank 0 cannot make the job's directory there
    p, after, out = _speed(tmp_path, mf)
    assert p.returncode != 0 and not out.exists()
    rec = json.loads(rawio.failure_path(out).read_text())
    assert rec["status"] == "failed" and "NotADirectoryError" in rec["failure"], rec["failure"]
    assert rec["params"] == {"source": "scratch", "size": "1MB"} and rec["study"] == "fusespeed"
    assert "0 failure record(s) written" in after.stderr, after.stderr[-2000:]  # the job's own record stays
    assert not (tmp_path / "mnt" / "rmf-tspeed").exists()


@pytest.mark.usefixtures("mpifuse_ready")
def test_a_launcher_that_cannot_start_the_job_is_recorded_by_after(tmp_path):
    mf = study_config(tmp_path)
    p, after, out = _speed(tmp_path, mf, ranks=3)  # nodes [1] needs 2 ranks: every rank aborts, none records
    assert p.returncode != 0 and not out.exists()
    rec = json.loads(rawio.failure_path(out).read_text())
    assert f"exit status {p.returncode}" in rec["failure"] and "needs 2 ranks, got 3" in rec["failure"]
    assert rec["extra"]["job_tag"] == "rmf-tspeed" and rec["params"] == {"source": "scratch", "size": "1MB"}
