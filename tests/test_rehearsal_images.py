"""The rehearsal's image step builds layered images too (issue 27): Snakemake's `--until build_container
storage_layer_image` run stops "Out of jobs ready ... Remaining jobs: - storage_layer_image: ..." (exit 1)
once the base images are built, because a layer is downstream of its base's build job. The first full
rehearsal with the mdbench layer read that as a failed image step and ran storage from host builds.
Checked with a stand-in `snakemake` on PATH that answers as Snakemake 9 did (its output copied from
that run), pass by pass."""

from __future__ import annotations

import os
from pathlib import Path

from repro import rehearsal as rh

STOPPED = """2 of 25 steps (8%) done
BUG: Out of jobs ready to be started, but not all files built yet. Please check https://github.com/snakemake/snakemake/issues/823 for more information.
Remaining jobs:
 - storage_layer_image: containers/sif/juicefs-mdbench.sif
 - storage_layer_image: containers/sif/ceph-mdbench.sif
Complete log(s): /var/tmp/repro-rehearsal/repro/.snakemake/log/x.snakemake.log
WorkflowError:
At least one job did not complete successfully.
"""  # noqa: E501 (Snakemake's own message, quoted)


def _fake_snakemake(tmp_path: Path, answers: list[tuple[int, str]]) -> Path:
    """A `snakemake` that gives answer i on its i-th call (the last one again after that) and counts calls."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for i, (rc, text) in enumerate(answers):
        (tmp_path / f"answer{i}").write_text(text)
        (tmp_path / f"rc{i}").write_text(str(rc))
    script = bindir / "snakemake"
    script.write_text(f"""#!/bin/sh
d={tmp_path}
n=$(cat $d/calls 2>/dev/null || echo 0); echo $((n + 1)) > $d/calls
i=$n; [ -e $d/answer$i ] || i={len(answers) - 1}
cat $d/answer$i >&2
exit $(cat $d/rc$i)
""")
    script.chmod(0o755)
    return bindir


def _calls(tmp_path: Path) -> int:
    return int((tmp_path / "calls").read_text())


def test_a_layer_left_by_until_is_built_in_a_second_pass(tmp_path, monkeypatch):
    bindir = _fake_snakemake(tmp_path, [(1, STOPPED), (0, "2 of 2 steps (100%) done\n")])
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    r = rh.build_images(tmp_path, "storage", 60)
    assert _calls(tmp_path) == 2 and r.returncode == 0
    assert "Remaining jobs" in r.stderr and "100%" in r.stderr  # both passes' output kept
    assert rh.failed_images(r.stdout + r.stderr) == []


def test_the_passes_stop_when_nothing_moves_or_a_rule_fails(tmp_path, monkeypatch):
    bindir = _fake_snakemake(tmp_path, [(1, STOPPED)])  # the same images remain pass after pass
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    r = rh.build_images(tmp_path, "storage", 60)
    assert _calls(tmp_path) == 2 and r.returncode == 1
    failed = ("Error in rule storage_layer_image:\n    jobid: 2\n    output: containers/sif/ceph-mdbench.sif\n"
              + STOPPED)
    other = tmp_path / "other"
    other.mkdir()
    bindir = _fake_snakemake(other, [(1, failed), (0, "")])
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    r = rh.build_images(other, "storage", 60)
    assert _calls(other) == 1 and r.returncode == 1  # a failed build is not retried: it falls back, named
    assert rh.failed_images(r.stdout + r.stderr) == ["ceph-mdbench.sif"]
