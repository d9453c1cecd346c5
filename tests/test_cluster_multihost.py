"""The multi-host Slurm cluster (workflow/scripts/slurm/multihost-cluster.sh): every node a host of
its own (network namespace with its own address, hostname, private /tmp and /dev/shm); job steps
inherit it; Open MPI across nodes over TCP; repro.allocation read inside a real 3-node job; bad
machines refused at once; `down` leaves nothing behind."""

from __future__ import annotations

import json
import re
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from repro import config as rconfig
from repro.testing import REPO

SCRIPT = REPO / "workflow" / "scripts" / "slurm" / "multihost-cluster.sh"
NODES = [f"node{i}" for i in range(4)]
ADDRS = [f"10.79.0.{10 + i}" for i in range(4)]


@pytest.fixture()
def shared(tmp_path_factory) -> Path:
    """A directory every node sees (the nodes' /tmp is private, so pytest's tmp_path is not)."""
    d = Path("/var/tmp/repro-mh-tests") / uuid.uuid4().hex[:10]
    d.mkdir(parents=True)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_nodes_are_hosts(slurm_multihost):
    c = slurm_multihost
    out = c.run("srun", "-N4", "--ntasks-per-node=1", "bash", "-c",
                "echo $SLURMD_NODENAME $(hostname) $(ip -4 -o addr show eth0 | awk '{print $4}')",
                timeout=120).stdout
    rows = sorted(line.split() for line in out.splitlines())
    assert rows == [[n, n, f"{a}/24"] for n, a in zip(NODES, ADDRS)]
    # what Slurm says the addresses are is what the nodes have
    for n, a in zip(NODES, ADDRS):
        assert f"NodeAddr={a} " in c.run("scontrol", "show", "node", "-o", n).stdout


def test_tmp_and_shm_are_private_and_the_shared_dir_is_shared(slurm_multihost, shared):
    c = slurm_multihost
    mark = uuid.uuid4().hex
    c.run("srun", "-N1", "-w", "node1", "bash", "-c",
          f"echo x > /tmp/{mark}; echo x > /dev/shm/{mark}; echo x > {shared}/{mark}", timeout=120)
    out = c.run("srun", "-N4", "--ntasks-per-node=1", "bash", "-c",
                f"echo $(hostname) $(test -e /tmp/{mark} && echo tmp) $(test -e /dev/shm/{mark} && echo shm) "
                f"$(test -e {shared}/{mark} && echo shared) $(stat -f -c %T /tmp)", timeout=120).stdout
    seen = {line.split()[0]: line.split()[1:] for line in out.splitlines()}
    assert seen["node1"] == ["tmp", "shm", "shared", "tmpfs"]
    for n in ("node0", "node2", "node3"):
        assert seen[n] == ["shared", "tmpfs"], (n, seen[n])
    assert not Path(f"/tmp/{mark}").exists() and not Path(f"/dev/shm/{mark}").exists()  # nor on the head


def test_open_mpi_across_nodes_over_tcp(slurm_multihost, shared):
    if shutil.which("mpicc") is None:
        pytest.skip("mpicc (Debian libopenmpi-dev) is not installed")
    c = slurm_multihost
    src = shared / "hello.c"
    src.write_text(r"""
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char host[256];
    int rank, size, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("%d %d %s %d\n", rank, size, host, sum);
    MPI_Finalize();
    return 0;
}
""")
    subprocess.run(["mpicc", "-Wall", "-Werror", "-o", str(shared / "hello"), str(src)], check=True)
    mpi_env = REPO / "workflow" / "scripts" / "mpi-env.sh"
    for btl in ("self,tcp", ""):  # the project's TCP setting, then Open MPI's own choice
        pre = f"export OMPI_MCA_btl={btl}; " if btl else ""
        out = c.run("bash", "-c", f"{pre}source {mpi_env}; srun -N3 -n6 --mpi=pmix {shared}/hello",
                    timeout=180).stdout
        rows = [line.split() for line in out.splitlines()]
        assert len(rows) == 6 and all(r[1] == "6" and r[3] == "15" for r in rows), out
        by_host = {}
        for r in rows:
            by_host.setdefault(r[2], []).append(int(r[0]))
        assert sorted(by_host) == ["node0", "node1", "node2"] and all(len(v) == 2 for v in by_host.values())


def test_ucx_carries_one_sided_mpi_between_nodes_over_their_links(slurm_multihost):
    """The nodes share one kernel (one boot_id), so UCX took them for one machine and moved MPI
    data between node0 and node1 through shared memory; the cluster's TaskProlog holds UCX to TCP on
    each node's eth0, as a real network would carry it (an MPI_Get across two nodes, UCX's own log)."""
    c = slurm_multihost
    mpi_env = REPO / "workflow" / "scripts" / "mpi-env.sh"
    prog = ("from mpi4py import MPI\nc = MPI.COMM_WORLD\nw = MPI.Win.Allocate(1 << 16, comm=c)\n"
            "w.Lock_all(); b = bytearray(8); w.Get(b, (c.rank + 1) % c.size, (0, 8, MPI.BYTE)); "
            "w.Flush_all(); w.Unlock_all(); c.Barrier(); w.Free()\n")
    out = c.run("bash", "-c", f"export REPRO_SINGLE_HOST=0 UCX_LOG_LEVEL=info; source {mpi_env}; "
                f"srun -N2 -n2 --ntasks-per-node=1 --mpi=pmix {sys.executable} -c {shlex.quote(prog)} 2>&1",
                timeout=180).stdout
    remote = [ln for ln in out.splitlines() if "ep_cfg" in ln and "self/memory0" not in ln]
    assert remote and all("tcp/eth0" in ln for ln in remote), out[-3000:]
    assert "sysv/memory" not in out and "posix/memory" not in out, out[-3000:]


def test_allocation_inside_a_real_3_node_job(slurm_multihost, shared):
    """repro.allocation.current() in every task of a 3-node sbatch job: 3 distinct nodes whose
    names, hostnames and addresses are what here() measures on each of them."""
    c = slurm_multihost
    prog = (
        "import json, os, sys\n"
        "from repro import allocation\n"
        "a = allocation.current(); h = allocation.here()\n"
        f"open('{shared}/' + h['node'] + '.json', 'w').write(json.dumps("
        "{'alloc': a.as_dict(), 'here': h, 'bind': a.bind_address(a.node(h['node']))}))\n")
    (shared / "probe.py").write_text(prog)
    job = shared / "job.sh"
    job.write_text("#!/bin/bash\n"
                   f"export PYTHONPATH={REPO}/workflow/lib\n"
                   f"srun -N3 --ntasks-per-node=1 python3 {shared}/probe.py\n")
    c.run("sbatch", "--wait", "-N3", "--exclusive", f"--output={shared}/job.out", str(job), timeout=180)
    recs = {p.stem: json.loads(p.read_text()) for p in shared.glob("node*.json")}
    assert len(recs) == 3, (shared / "job.out").read_text()
    first = next(iter(recs.values()))["alloc"]
    assert first["launcher"] == "slurm" and len(first["nodes"]) == 3 and first["exclusive"]
    assert all(r["alloc"] == first for r in recs.values())  # one answer, wherever it is asked
    names = [n["name"] for n in first["nodes"]]
    assert len(set(names)) == 3 and sorted(recs) == sorted(names)
    assert first["driver"] == names[0] and first["system_nodes"] == names[1:]
    for n in first["nodes"]:
        h = recs[n["name"]]["here"]
        assert h["hostname"] == n["hostname"] == n["name"]  # measured on the node = what Slurm says
        assert n["address"] in h["addresses"] and not n["address"].startswith("127.")
        assert recs[n["name"]]["bind"] == n["address"]  # services bind the node's address, not loopback
    assert len({n["address"] for n in first["nodes"]}) == 3


def test_apptainer_exec_inside_a_step(slurm_multihost):
    c = slurm_multihost
    app = shutil.which("apptainer") or str(Path.home() / ".cache/repro/apptainer-1.4.2/bin/apptainer")
    # a built image: the project's, else one from the build cache (~/.cache/repro/sif, shared by the nodes)
    sifs = [p for d in (REPO / "containers" / "sif", Path.home() / ".cache/repro/sif") for p in sorted(d.glob("*.sif"))]
    if not os.access(app, os.X_OK) or not sifs:
        pytest.skip("no apptainer or no built image (containers/sif/*.sif)")
    out = c.run("srun", "-N2", "--ntasks-per-node=1", app, "exec", str(sifs[0]), "hostname",
                timeout=300).stdout
    assert sorted(out.split()) == ["node0", "node1"]


def test_plan_refuses_more_nodes_than_the_cluster_has():
    """The cluster's size given as cluster.partition_nodes: an n+1 layout that needs more nodes
    is refused when the configuration is read (before anything is queued), naming the key."""
    cfg = rconfig.load(REPO / "config" / "config.yaml",
                       {"cluster": {"partition_nodes": 4}, "smoke": {"nodes": [3]}, **_all_small()})
    assert cfg["smoke"]["nodes"] == [3]
    with pytest.raises(rconfig.ConfigError, match=r"smoke\.nodes.*4 system nodes \+ 1 driver node = 5 exceeds "
                                                  r"cluster\.partition_nodes = 4"):
        rconfig.load(REPO / "config" / "config.yaml",
                     {"cluster": {"partition_nodes": 4}, "smoke": {"nodes": [4]}, **_all_small()})


def _all_small() -> dict:
    """config/config.yaml with every other layout shrunk to fit 4 nodes (only smoke is examined)."""
    overlay = REPO / "config" / "rehearsal.yaml"
    if overlay.exists():
        import yaml
        data = yaml.safe_load(overlay.read_text()) or {}
        data.pop("cluster", None)
        data.pop("smoke", None)
        return data
    pytest.skip("config/rehearsal.yaml not written yet")


# ------------------------------------------------------------------------ lifecycle (own instance)
LC = {"REPRO_MH_TAG": "rst", "REPRO_MH_NET": "10.79.1", "REPRO_MH_DIR": "/var/tmp/repro-slurm-mh-lifecycle",
      "REPRO_MH_CTLD_PORT": "16837", "REPRO_MH_SLURMD_PORT": "16838", "REPRO_MH_SLURMD_TIMEOUT": "10"}


def _lc(*args, check=True, timeout=180, **extra):
    env = dict(os.environ, **LC, **extra, SLURM_CONF=LC["REPRO_MH_DIR"] + "/slurm.conf")
    return subprocess.run(list(args), env=env, capture_output=True, text=True, check=check, timeout=timeout)


def test_bad_machine_is_refused_at_once():
    t0 = time.monotonic()
    r = _lc(str(SCRIPT), "up", "2", check=False, REPRO_MH_FUSE_DEV="/nonexistent/fuse")
    assert r.returncode != 0 and "no FUSE" in r.stderr and "/nonexistent/fuse" in r.stderr
    r = _lc(str(SCRIPT), "up", "300", check=False)
    assert r.returncode != 0 and "too few addresses" in r.stderr and "300 nodes" in r.stderr
    assert time.monotonic() - t0 < 30
    assert _lc(str(SCRIPT), "leftovers").stdout == ""  # a refusal creates nothing


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("slurmctld") is None, reason="needs root and Slurm")
def test_up_is_idempotent_a_killed_node_fails_its_job_and_down_leaves_nothing(shared):
    try:
        _lc(str(SCRIPT), "up", "2")
        first = Path(LC["REPRO_MH_DIR"], "pids", "slurmctld.pid").read_text()
        r = _lc(str(SCRIPT), "up", "2")
        assert "already up" in r.stdout
        assert Path(LC["REPRO_MH_DIR"], "pids", "slurmctld.pid").read_text() == first
        # a node dies mid-job: the job fails loudly (not left running, not COMPLETED)
        job = _lc("sbatch", "--parsable", "-N2", f"--output={shared}/fault.out",
                  "--wrap", "srun -N2 --ntasks-per-node=1 sleep 120").stdout.strip()
        for _ in range(300):
            if "JobState=RUNNING" in _lc("scontrol", "show", "job", "-o", job).stdout:
                break
            time.sleep(0.2)
        assert "JobState=RUNNING" in _lc("scontrol", "show", "job", "-o", job).stdout
        time.sleep(3)  # the step's tasks are up on both nodes
        _lc(str(SCRIPT), "kill", "node1")
        state = ""
        for _ in range(400):
            state = _lc("scontrol", "show", "job", "-o", job).stdout
            if "JobState=RUNNING" not in state:
                break
            time.sleep(0.4)
        assert "JobState=NODE_FAIL" in state or "JobState=FAILED" in state, state  # not requeued, not done
    finally:
        _lc(str(SCRIPT), "down", check=False)
    assert _lc(str(SCRIPT), "leftovers").stdout == ""
    assert "rst-br0" not in subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout


def test_allocation_under_snakemakes_slurm_executor(slurm_multihost, shared):
    """The job step of Snakemake's Slurm executor strips SLURM_JOB_NODELIST (MACHINE-FACTS): the
    allocation must still come out whole from scontrol, equal to what each node measures."""
    (shared / "Snakefile").write_text(f'''
rule probe:
    output: "alloc.json"
    resources: nodes=3, tasks=3, mpi="srun", runtime=5, slurm_extra="--exclusive"
    shell:
        "export PYTHONPATH={REPO}/workflow/lib; "
        "env | grep -c '^SLURM_JOB_NODELIST=' > stripped.txt || true; "
        "{{resources.mpi}} --nodes=3 --ntasks=3 --ntasks-per-node=1 python3 here.py; "
        "python3 -c 'import json; from repro import allocation; "
        "print(json.dumps(allocation.current().as_dict()))' > {{output}}"
''')
    (shared / "here.py").write_text("import json\nfrom repro import allocation\nh = allocation.here()\n"
                                    "open('here-' + h['node'] + '.json', 'w').write(json.dumps(h))\n")
    env = dict(c_env := slurm_multihost.env, PATH=f"{REPO}/.venv/bin:" + c_env["PATH"])
    r = subprocess.run(["timeout", "-k", "10", "300", "snakemake", "-s", "Snakefile", "--profile",
                        str(REPO / "profiles" / "slurm"), "--jobs", "1"],
                       cwd=shared, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert (shared / "stripped.txt").read_text().strip() == "0"  # the variable really is gone in the step
    alloc = json.loads((shared / "alloc.json").read_text())
    assert alloc["launcher"] == "slurm" and len(alloc["nodes"]) == 3 and alloc["exclusive"]
    for n in alloc["nodes"]:
        h = json.loads((shared / f"here-{n['name']}.json").read_text())
        assert h["hostname"] == n["hostname"] and n["address"] in h["addresses"]
    assert len({n["address"] for n in alloc["nodes"]}) == 3


def test_a_node_killed_mid_job_fails_that_job_and_a_rerun_resumes_only_it(slurm_multihost, shared):
    """Under Snakemake's Slurm executor (keep-going, as profiles/slurm): a node dies while a 4-node job
    runs; that job fails loudly, the other job's output stays, and after the node is back
    (`up` restarts only the dead node) a re-run runs only the failed job."""
    c = slurm_multihost
    (shared / "Snakefile").write_text('''
rule all:
    input: "small.txt", "big.txt"
rule small:
    output: "small.txt"
    resources: nodes=2, tasks=2, mpi="srun", runtime=5
    shell: "{resources.mpi} --nodes=2 --ntasks=2 hostname > {output}"
rule big:
    input: "small.txt"
    output: "big.txt"
    resources: nodes=4, tasks=4, mpi="srun", runtime=5
    shell: "touch started-big; {resources.mpi} --nodes=4 --ntasks=4 sleep $(cat big-seconds); hostname > {output}"
''')
    (shared / "big-seconds").write_text("40\n")  # long enough to kill a node under it; the re-run need not wait
    env = dict(c.env, PATH=f"{REPO}/.venv/bin:" + c.env["PATH"])
    cmd = ["timeout", "-k", "10", "400", "snakemake", "-s", "Snakefile", "--profile", str(REPO / "profiles" / "slurm"),
           "--jobs", "2", "--latency-wait", "5"]
    proc = subprocess.Popen(cmd, cwd=shared, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(600):
            if (shared / "started-big").exists() or proc.poll() is not None:
                break
            time.sleep(0.25)
        assert (shared / "started-big").exists(), "the 4-node job never started"
        time.sleep(3)
        c.run("script", "kill", "node3")
        out, _ = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0, out[-3000:]
    assert (shared / "small.txt").exists() and not (shared / "big.txt").exists()
    assert "Error in rule big" in out, out[-3000:]
    small_mtime = (shared / "small.txt").stat().st_mtime_ns
    r = c.run("script", "up", "4", timeout=180)
    assert "restarting it" in r.stdout and "node3" in r.stdout
    (shared / "started-big").unlink()
    (shared / "big-seconds").write_text("1\n")
    r = subprocess.run(cmd, cwd=shared, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    stats = r.stdout + r.stderr
    assert re.search(r"^big\s+1$", stats, re.M) and not re.search(r"^small\s+1$", stats, re.M)
    assert (shared / "big.txt").exists() and (shared / "small.txt").stat().st_mtime_ns == small_mtime
