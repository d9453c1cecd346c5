"""The MPI start-up loop (workflow/scripts/slurm/mpi-startup-loop.sh) and the fix it measures.

Issue 27: 1 of 16 mpifuse jobs of a rehearsal died at start-up ("Caught signal 11 ... address
(nil)" in libucs). The cause: Slurm 22.05's PMIx plugin runs a fence without data as a tree
collective whose tree, on fewer nodes than TreeWidth, has no edges, so Open MPI's second fence in
MPI_Init synchronises nothing; a fast rank then sends MPI_Comm_split's allgather to a rank still in
the modex fence, whose TCP BTL calls a NULL handler. workflow/scripts/mpi-env.sh sets
SLURM_PMIX_FENCE=ring (a real barrier). These tests run the loop on the multi-host cluster (from
the host's Open MPI, and from the mpifuse image when it is built) and check what the ranks see,
that the fence is a barrier with the project's environment and is not without it, and that the
loop counts a crash.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from repro import procs
from repro.testing import REPO

LOOP = REPO / "workflow" / "scripts" / "slurm" / "mpi-startup-loop.sh"
SIF = REPO / "containers" / "sif" / "mpifuse.sif"
APPTAINER = shutil.which("apptainer") or str(Path.home() / ".cache/repro/apptainer-1.4.2/bin/apptainer")


def test_mpi_env_holds_every_slurm_fence_to_a_barrier_and_a_preset_value_wins():
    for single_host in (False, True):
        assert procs.mpi_env({}, single_host=single_host)["SLURM_PMIX_FENCE"] == "ring"
    # a site that chose its own collective keeps it (and the loop measures Slurm's default this way)
    assert procs.mpi_env({"SLURM_PMIX_FENCE": "mixed"}, single_host=False)["SLURM_PMIX_FENCE"] == "mixed"


def loop(cluster, n: int, image: str, **env) -> tuple[subprocess.CompletedProcess, dict]:
    """Run the loop; return the process and its summary lines (RESULT, RANKS, ENV, FENCE_WAIT_S)."""
    loop_dir = Path("/var/tmp/repro-mh-tests") / f"loop-{uuid.uuid4().hex[:8]}"
    run_env = {k: v for k, v in cluster.env.items() if k != "SLURM_PMIX_FENCE"}
    run_env.update(REPRO_PYTHON=sys.executable, NODES="4", LOOP_DIR=str(loop_dir),
                   PATH=os.pathsep.join([os.path.dirname(APPTAINER), os.environ["PATH"]]), **env)
    try:
        r = subprocess.run([str(LOOP), str(n), image], env=run_env, capture_output=True, text=True, timeout=600)
    finally:
        shutil.rmtree(loop_dir, ignore_errors=True)
    lines = {ln.split(" ", 1)[0]: ln.split(" ", 1)[1] for ln in r.stdout.splitlines()
             if ln.split(" ", 1)[0] in ("RESULT", "RANKS", "ENV", "FENCE_WAIT_S")}
    return r, lines


def waits(line: str) -> dict[int, float]:
    return {int(k): float(v) for k, v in (kv.split("=") for kv in line.split())}


@pytest.mark.parametrize("where", ["host", "image"])
def test_loop_starts_ranks_as_the_rules_do_and_the_fix_reaches_them(slurm_multihost, where):
    image = "host"
    if where == "image":
        if not (SIF.is_file() and os.access(APPTAINER, os.X_OK)):
            pytest.skip("the mpifuse image is not built (./repro snakemake containers/sif/mpifuse.sif --cores 2)")
        image = str(SIF)
    r, out = loop(slurm_multihost, 3, image, PROBE_ARGS="--fence-check 1.5")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert out["RESULT"].startswith("startups=3 ok=3 crashes=0 "), out
    assert out["RANKS"] == f"4 in_image={4 if where == 'image' else 0} nodes=node0,node1,node2,node3"
    env = dict(kv.split("=", 1) for kv in out["ENV"].split())
    # what the rank itself sees (inside the image too): the project's fence, the TaskProlog's transports
    assert env["SLURM_PMIX_FENCE"] == "ring"
    assert (env["UCX_TLS"], env["UCX_NET_DEVICES"], env["OMPI_MCA_osc"]) == ("tcp,self", "eth0", "ucx")
    # ... and it works: the fence without data waits for rank 0, which slept 1.5 s before it
    w = waits(out["FENCE_WAIT_S"])
    assert all(w[k] > 1.0 for k in (1, 2, 3)), w


def test_without_the_fix_slurms_fence_without_data_synchronises_nothing(slurm_multihost):
    """The cause, on this machine's Slurm: its own default collective (what a step gets when
    SLURM_PMIX_FENCE is not set) lets every rank out of a fence without data at once."""
    version = slurm_multihost.run("srun", "--version").stdout.split()
    if len(version) < 2 or not version[1].startswith("22.05."):
        pytest.skip(f"the tree fence without edges was seen in Slurm 22.05; this is {' '.join(version)}")
    r, out = loop(slurm_multihost, 1, "host", SLURM_PMIX_FENCE="mixed", PROBE_ARGS="--fence-check 2")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "SLURM_PMIX_FENCE=mixed" in out["ENV"]
    w = waits(out["FENCE_WAIT_S"])
    assert all(w[k] < 1.0 for k in (1, 2, 3)), (
        f"ranks waited for rank 0 under Slurm's default fence {w}: this Slurm synchronises a fence without "
        "data, and SLURM_PMIX_FENCE=ring in mpi-env.sh is no longer what prevents the start-up crash")


def test_the_loop_counts_a_crashed_rank_and_shows_its_backtrace(slurm_multihost):
    r, out = loop(slurm_multihost, 2, "host", MPI_STARTUP_PROBE_FAULT="segv")
    assert r.returncode == 1, r.stdout[-3000:]
    assert re.match(r"startups=2 ok=0 crashes=2 \(signal=2 ucx_caught=2 srun_failed=2 missing_rank=2\)",
                    out["RESULT"]), out
    assert r.stdout.count("CRASH") == 2 and "Caught signal 11" in r.stdout
    if shutil.which("gdb"):  # the faulting frame from the core, past UCX's handler
        assert "string_at" in r.stdout, r.stdout[-3000:]


def test_the_fix_reaches_ranks_that_snakemakes_slurm_executor_launches(slurm_multihost):
    """The rules' real path: a job submitted by Snakemake's Slurm executor (whose job step strips
    SLURM_* variables) sources mpi-env.sh and starts its ranks with srun; the fence is a barrier there
    too, and the ranks run in the image when it is built (system_exec's line)."""
    shared = Path("/var/tmp/repro-mh-tests") / f"sm-{uuid.uuid4().hex[:8]}"
    shared.mkdir(parents=True)
    exec_ = "{repo}/workflow/scripts/in-image.sh python3"
    if SIF.is_file() and os.access(APPTAINER, os.X_OK):
        exec_ = f"apptainer exec --bind {REPO} {SIF} {REPO}/workflow/scripts/in-image.sh python3"
    (shared / "Snakefile").write_text(f'''
rule probe:
    output: "probe.txt"
    resources: nodes=4, tasks=4, mpi="srun", runtime=5, slurm_extra="--exclusive"
    shell:
        "export REPRO_SINGLE_HOST=0; source {REPO}/workflow/scripts/mpi-env.sh; "
        "{{resources.mpi}} --mpi=pmix --nodes=4 --ntasks=4 --ntasks-per-node=1 --kill-on-bad-exit=1 "
        "{exec_.format(repo=REPO)} {REPO}/workflow/scripts/slurm/mpi_startup_probe.py --fence-check 1.5 "
        "> {{output}}"
''')
    env = {k: v for k, v in slurm_multihost.env.items() if k != "SLURM_PMIX_FENCE"}
    env["PATH"] = os.pathsep.join([f"{REPO}/.venv/bin", os.path.dirname(APPTAINER), env["PATH"]])
    try:
        r = subprocess.run(["timeout", "-k", "10", "300", "snakemake", "-s", "Snakefile", "--profile",
                            str(REPO / "profiles" / "slurm"), "--jobs", "1"],
                           cwd=shared, env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        rows = [json.loads(ln[len("PROBE "):]) for ln in (shared / "probe.txt").read_text().splitlines()
                if ln.startswith("PROBE ")]
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    assert sorted(r["node"] for r in rows) == ["node0", "node1", "node2", "node3"] and all(r["ok"] for r in rows)
    assert all(r["env"]["SLURM_PMIX_FENCE"] == "ring" for r in rows)
    assert all(r["fence_wait_s"] > 1.0 for r in rows if r["rank"] != 0), rows
