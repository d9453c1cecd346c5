"""Issue 28 part 4: with storage.paths.lustre_dir set, every job that uses it checks the file system
type (statfs magic) first and refuses a directory that is not Lustre, naming the key and the magic
it found; the check accepts Lustre's magic (0x0BD00BD0) when fed it (there is no Lustre here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from repro import rawio

from studies.storage import layout, lustre
from systems.minio.stack import LUSTRE_MAGIC

from .storage_testlib import job_argv, section


def stat_magic(path) -> int:
    """The file system type as coreutils' stat reads it (independent of lustre.fs_magic)."""
    return int(subprocess.run(["stat", "-f", "-c", "%t", str(path)], capture_output=True, text=True,
                              check=True).stdout.strip(), 16)


def test_the_magic_is_lustres_and_statfs_reads_this_file_system(tmp_path):
    assert LUSTRE_MAGIC == 0x0BD00BD0   # lustre_user.h: LL_SUPER_MAGIC
    assert lustre.fs_magic(str(tmp_path)) == stat_magic(tmp_path)
    with pytest.raises(OSError):
        lustre.fs_magic(str(tmp_path / "missing"))


def test_a_directory_that_is_not_lustre_is_refused_naming_the_key_and_its_magic(tmp_path):
    found = stat_magic(tmp_path)
    assert found != LUSTRE_MAGIC
    why = lustre.refusal(str(tmp_path))
    assert why.startswith(f"storage.paths.lustre_dir = '{tmp_path}': not on Lustre")
    assert f"statfs magic {found:#010x}" in why and "0x0bd00bd0" in why
    assert "not a directory" in lustre.refusal(str(tmp_path / "missing"))
    assert lustre.refusal(None) is None and lustre.refusal("") is None   # null: Lustre+MinIO not run


def test_the_check_accepts_the_lustre_magic_and_nothing_else(tmp_path):
    assert lustre.refusal(str(tmp_path), magic=LUSTRE_MAGIC) is None
    assert "0x00006969 (nfs)" in lustre.refusal(str(tmp_path), magic=0x6969)
    assert "0x0bd00bd1 (unknown)" in lustre.refusal(str(tmp_path), magic=LUSTRE_MAGIC + 1)


def _job(cwd, cfg, *args):
    (cwd / "cfg.json").write_text(json.dumps(cfg))
    env = {**os.environ, "REPRO_SINGLE_HOST": "1"}
    argv = job_argv(cfg, *args, config=f"@{cwd}/cfg.json")
    return subprocess.run([sys.executable, "-m", "studies.storage.run", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env=env)


@pytest.mark.parametrize("benchmark", ["cosbench", "mdtest"])
def test_a_lustre_minio_job_refuses_at_start_with_a_failure_record_per_configuration(tmp_path, benchmark):
    not_lustre = tmp_path / "scratch"
    not_lustre.mkdir()
    cfg = section(cosbench={"sizes": ["4KB"], "workers": [1, 2]}, mdtest={"tasks": [1]},
                  paths={"work_dir": str(tmp_path / "work"), "lustre_dir": str(not_lustre)})
    r = _job(tmp_path, cfg, "stack", "lustre-minio", benchmark)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "storage.paths.lustre_dir" in r.stderr and f"{stat_magic(not_lustre):#010x}" in r.stderr
    assert not list(not_lustre.iterdir())            # nothing was written into it: no MinIO, no mdtest
    assert "up (" not in r.stdout + r.stderr           # no stack was started
    confs = layout.configurations(cfg, "lustre-minio", benchmark)
    for c in confs:
        raw = tmp_path / layout.raw_path("lustre-minio", benchmark, c["size"], c["workers"], 0)
        assert not raw.exists()
        rec = json.loads(rawio.failure_path(raw).read_text())
        assert "storage.paths.lustre_dir" in rec["failure"] and rec["failure_kind"] == "error"


def test_the_fio_limit_refuses_a_lustre_dir_that_is_not_lustre(tmp_path):
    not_lustre = tmp_path / "scratch"
    not_lustre.mkdir()
    cfg = section(paths={"work_dir": str(tmp_path / "work"), "lustre_dir": str(not_lustre)})
    r = _job(tmp_path, cfg, "limit", "fio")
    assert r.returncode == 1, r.stdout + r.stderr
    rec = json.loads(rawio.failure_path(tmp_path / layout.limit_path("fio", 0)).read_text())
    assert "storage.paths.lustre_dir" in rec["failure"] and "not on Lustre" in rec["failure"]
    assert not list(not_lustre.iterdir())



def test_a_stack_job_that_cannot_read_its_slurm_allocation_refuses_with_records(tmp_path, monkeypatch):
    """Inside a Slurm job without scontrol (the driver in an image without Slurm's client), a stack job
    writes a failure record per configuration saying so, instead of running as one host on 127.0.0.1."""
    from repro import rawio
    from studies.storage import layout, run

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SLURM_JOB_ID", "4243")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    cfg = section(paths={"work_dir": str(tmp_path / "work"), "shared_dir": str(tmp_path / "shared")})
    assert run.RUN.main(job_argv(cfg, "stack", "juicefs", "cosbench", launcher="slurm")) == 1
    confs = layout.configurations(cfg, "juicefs", "cosbench")
    assert confs
    for c in confs:
        rec = json.loads(rawio.failure_path(layout.raw_path("juicefs", "cosbench", c["size"], c["workers"], 0))
                         .read_text())
        assert "inside Slurm job 4243 but scontrol is not on PATH" in rec["failure"] and rec["failure_kind"] == "error"
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").iterdir())  # nothing started
