"""The five run rules are made by one function (rules.smk: _memfs_run_rule): each job must run its
own experiment. Snakemake evaluates a rule's shell expression again when the job runs; a bare loop
made every job run the last experiment (run.py limit) while `snakemake -n` printed the right
commands. Here every kick job really runs, with a `python3` on PATH that only writes its arguments
to the job's --out file, and each file must name its own experiment."""

import os
import subprocess

from repro.testing import copy_repo

from studies.memfs import layout

SHIM = """#!/bin/sh
out=""; prev=""
for a in "$@"; do [ "$prev" = "--out" ] && out="$a"; prev="$a"; done
mkdir -p "$(dirname "$out")" && printf '%s\\n' "$*" > "$out"
"""


def test_each_run_rule_runs_its_own_experiment(tmp_path):
    work = tmp_path / "repo"
    copy_repo(work)
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "python3").write_text(SHIM)
    (shim / "python3").chmod(0o755)
    kick = {"network": "IPoIB", "nodes": [2], "size": "1MiB"}
    cfg = {"kick": kick, "memfs": {"threads": 8}}
    paths = layout.kick_paths(cfg)
    env = dict(os.environ, PATH=f"{shim}:{os.environ['PATH']}")
    r = subprocess.run(["snakemake", *paths, "--profile", "profiles/local", "-F"], cwd=work, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    for p in paths:
        exp = p.split("/")[3]  # results/memfs/raw/<experiment>/...
        args = (work / p).read_text().split()
        assert args[:3] == ["-m", "studies.memfs.run", exp], (p, args[:6])
