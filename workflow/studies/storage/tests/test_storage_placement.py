"""The storage study's placement (issue 19): the allocation from repro.allocation (a fake one here:
the multi-host cluster is not needed to check the plan), the stack's arguments on several hosts,
mdtest's tasks on the node that mounts the file system, the paper's mdtest options, Ceph's public
network and pool size, the measured-placement checks failing on contradicting records, and
Lustre+MinIO not run on a cluster without a Lustre directory."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from repro.allocation import Allocation, Node

from studies.storage import aggregate, layout, placement
from studies.storage import run as srun

from .storage_testlib import REPO, job_argv, section


def cluster(addrs=("10.1.0.11", "10.1.0.12", "10.1.0.13", "10.1.0.14", "10.1.0.15")) -> Allocation:
    nodes = tuple(Node(name=f"c{i}", hostname=f"c{i}.site", address=a, cpus=20) for i, a in enumerate(addrs))
    return Allocation(launcher="slurm", job_id="77", nodes=nodes, exclusive=True)


IP_OUT = ("1: lo    inet 127.0.0.1/8 scope host lo\n"
          "2: eth0    inet 10.1.0.11/22 brd 10.1.3.255 scope global eth0\n")


def test_plan_puts_the_stack_on_the_system_nodes_with_their_addresses():
    pl = placement.plan(cluster(), ip_output=IP_OUT)
    assert pl.hosts == ["c1", "c2", "c3", "c4"] and pl.addresses == ["10.1.0.12", "10.1.0.13", "10.1.0.14", "10.1.0.15"]
    assert pl.launcher.startswith("srun --overlap --nodes=1 --ntasks=1 --nodelist={host}")
    assert pl.launcher.format(host="c2").split()[4] == "--nodelist=c2"
    assert pl.public_network == "10.1.0.0/22"  # the interface's CIDR holding the nodes' addresses


def test_public_network_without_a_matching_interface_covers_every_address():
    assert placement.public_network(["10.1.0.11", "10.1.0.200"]) == "10.1.0.0/24"
    assert placement.public_network(["10.1.0.11", "10.1.1.12"]) == "10.1.0.0/23"
    # an interface that does not hold all addresses is not taken
    assert placement.public_network(["10.1.0.11", "10.2.0.1"], IP_OUT) == "10.0.0.0/14"


def test_one_host_plans_loopback():
    local = Allocation(launcher="local", job_id=None, nodes=(Node("h", "h", "127.0.0.1", 2),))
    assert placement.plan(local).hosts is None
    same = cluster(("127.0.0.1",) * 3)  # the one-host local Slurm cluster: every node at one address
    pl = placement.plan(same)
    assert pl.hosts is None and "one host" in pl.why


def test_stack_arguments_on_several_hosts(tmp_path):
    cfg = section(local=False)
    pl = placement.plan(cluster(), ip_output=IP_OUT)
    local = tmp_path / "local"
    ceph = srun.stack_args(cfg, "ceph", tmp_path / "state", local, pl)
    opt = dict(zip(ceph[::2], ceph[1::2]))
    assert opt["--hosts"] == "c1,c2,c3,c4" and opt["--addresses"] == "10.1.0.12,10.1.0.13,10.1.0.14,10.1.0.15"
    assert opt["--public-network"] == "10.1.0.0/22" and opt["--data"] == str(local / "data")
    assert opt["--mount"] == str(local / "mnt") and "{host}" in opt["--launcher"]
    assert "--pool-size" not in opt  # Ceph's default (3 on 4 hosts), decided by stack.py
    jfs = srun.stack_args(cfg, "juicefs", tmp_path / "state", local, pl)
    assert "--cache-dir" in jfs and jfs[jfs.index("--mount") + 1] == str(local / "mnt")
    one = srun.stack_args(cfg, "ceph", tmp_path / "state", local, placement.plan(cluster(("127.0.0.1",) * 2)))
    assert "--hosts" not in one and "--public-network" not in one


def test_mdtest_tasks_run_on_the_driver_where_the_mount_is():
    pre = placement.mdtest_prefix(cluster(), 16)
    assert pre[0] == "srun" and "--nodelist=c0" in pre and "--ntasks=16" in pre and "--nodes=1" in pre
    assert "--overcommit" in pre and "--mpi=pmix" in pre
    local = Allocation(launcher="local", job_id=None, nodes=(Node("h", "h", "127.0.0.1", 2),))
    assert placement.mdtest_prefix(local, 2)[:1] == ["mpirun"]


@pytest.mark.parametrize("kind", ["mdtest", "mdbench"])
def test_mdtest_options_are_the_papers(kind):
    cfg = section(local=False)
    argv = srun.mdtest_argv(cfg, "/bin/" + kind, kind, Path("/mnt/x"))
    opts = dict(zip(argv[1::2], argv[2::2]))
    assert opts["-n"] == "1000000" and opts["-w"] == "3901" and opts["-e"] == "3901"
    assert int(opts["-i"]) >= 3 and opts["-d"] == "/mnt/x"
    assert "-u" not in argv and "-F" not in argv  # the paper used neither
    assert ("--dirs" in argv) == (kind == "mdbench")
    assert len(cfg["mdtest"]["tasks"]) > 1  # Section 6: "more noticeable with higher workloads"
    files_only = section(local=False, mdtest={"files_only": True})
    assert "-F" in srun.mdtest_argv(files_only, "/bin/mdtest", "mdtest", Path("/m"))


def test_placement_checks_fail_on_contradicting_records():
    alloc = cluster()
    pl = placement.plan(alloc, ip_output=IP_OUT)
    driver = {"node": "c0", "hostname": "c0"}
    good = {f"osd.{i}": {"node": h, "serves": a} for i, (h, a) in enumerate(zip(pl.hosts, pl.addresses))}
    good["fuse"] = {"node": "c0", "serves": "mount /tmp/x (client of mon 10.1.0.12:3300)"}
    tasks = placement.summarise_tasks([{"node": "c0", "hostname": "c0", "mount": {"exists": True,
                                                                                   "mount_point": "/tmp/x"}}] * 2, 2)
    c = placement.checks(alloc, pl, driver, good, tasks)
    assert c == {"one_host": False, "driver_apart_from_daemons": True, "daemons_on_planned_nodes": True,
                 "no_loopback_service": True, "mdtest_tasks_see_the_mount": True}
    bad = dict(good, rgw={"node": "c0", "serves": "127.0.0.1:7480"})  # on the driver, on loopback
    c = placement.checks(alloc, pl, driver, bad, placement.summarise_tasks(
        [{"node": "c1", "mount": {"exists": False}}], 2))
    assert not c["driver_apart_from_daemons"] and not c["daemons_on_planned_nodes"]
    assert not c["no_loopback_service"] and not c["mdtest_tasks_see_the_mount"]
    assert placement.checks(alloc, pl, driver, {}, tasks) == {"one_host": False, "mdtest_tasks_see_the_mount": True}
    squeezed = {k: dict(v, node="c1") for k, v in good.items() if k != "fuse"}  # all on one system node
    assert not placement.checks(alloc, pl, driver, squeezed)["daemons_on_planned_nodes"]


def test_no_study_code_reads_slurm_variables():
    for f in (REPO / "workflow/studies/storage").glob("*.py"):
        assert not re.search(r"SLURM_[A-Z_]+", f.read_text()), f


def test_lustre_is_not_run_on_a_cluster_without_a_lustre_directory(tmp_path, monkeypatch):
    cfg = section(local=False)
    assert cfg["paths"]["lustre_dir"] is None
    why = layout.lustre_not_run(cfg, "slurm")
    assert why and "lustre_dir" in why
    assert layout.lustre_not_run(cfg, "local") is None  # locally: the labelled stand-in
    assert "lustre-minio" not in layout.stacks_run(cfg, "slurm")
    planned = layout.expected_raw(cfg, launcher="slurm")
    assert planned and not any("lustre-minio" in p for p in planned)
    named = section(local=False, paths={"lustre_dir": "/lustre/proj"})
    assert layout.lustre_not_run(named, "slurm") is None and "lustre-minio" in layout.stacks_run(named, "slurm")
    assert layout.system_kind(named, "lustre-minio", "mdtest") == "real"
    # the tidy table shows the rows as not run, with the reason
    small = section(local=True, repeats=1)
    df = aggregate.measurements(small, root=tmp_path, launcher="slurm")
    lm = df[df["stack"] == "lustre-minio"]
    assert len(lm) and set(lm["status"]) == {"not-run"} and lm["failure"].str.contains("lustre_dir").all()
    # and run.py refuses to run it there (before any stack or allocation is touched)
    monkeypatch.chdir(tmp_path)
    assert srun.RUN.main(job_argv(section(local=False), "stack", "lustre-minio", "mdtest", launcher="slurm")) == 2
    assert not (tmp_path / "results").exists()


def test_cosbench_metrics_from_a_cosbench_042_archive_csv(tmp_path):
    """The study's reduction of COSBench's workload CSV (main stage: op/s and B/s summed, Avg-ResTime
    weighted by Op-Count) on a COSBench 0.4.2-format file (tools/cosbench/fixtures/archive)."""
    import shutil

    from repro import rawio

    shutil.copy(REPO / "tools/cosbench/fixtures/archive/w3-p002-1MB-w4.csv", tmp_path)
    rec = {"metrics": srun.cosbench_metrics(tmp_path)}
    assert rawio.value(rec, "throughput", op="all") == pytest.approx(166.66)
    assert rawio.value(rec, "avg_res_time", op="all") == pytest.approx((8000 * 20 + 2000 * 50) / 10000)
    assert rawio.value(rec, "op_count", op="all") == 10000
    assert rawio.value(rec, "bandwidth", op="write") == 33330000


def test_fio_measures_where_the_stacks_data_sit():
    """fio, the limit: on several hosts on the first system node's node-local work_dir (an srun step
    there), on the Lustre directory where one is named, else here."""
    cfg = section(local=False)
    base, prefix, node = srun.fio_place(cfg, cluster())
    assert node == "c1" and "--nodelist=c1" in prefix and base == Path(cfg["paths"]["work_dir"])
    argv = srun.fio_argv(cfg, base / "fio-1", Path("out"), prefix)
    assert argv[:len(prefix)] == prefix and argv[len(prefix) + 1:len(prefix) + 3] == ["-m", "tools.fio.runner"]
    assert "--sizes" in argv and argv[argv.index("--sizes") + 1] == ",".join(cfg["limit"]["fio_sizes"])
    lustre = section(local=False, paths={"lustre_dir": "/lustre/p"})
    assert srun.fio_place(lustre, cluster())[:2] == (Path("/lustre/p"), [])
    local = Allocation(launcher="local", job_id=None, nodes=(Node("h", "h", "127.0.0.1", 2),))
    assert srun.fio_place(cfg, local) == (Path(cfg["paths"]["work_dir"]), [], "h")


def test_a_named_lustre_dir_that_is_not_lustre_is_refused_at_job_start(tmp_path, monkeypatch):
    """paths.lustre_dir pointing at a directory that is not on Lustre (here: this machine's disk): the
    job refuses before any tool runs (issue 28: the statfs magic decides, studies/storage/lustre.py),
    naming the key; it once ran and labelled the records stand-in (the mount table deciding)."""
    import json

    from repro import procs, rawio

    monkeypatch.chdir(tmp_path)
    for k, v in procs.mpi_env().items():
        monkeypatch.setenv(k, v)
    (tmp_path / "lustre").mkdir()
    cfg = section(repeats=1, mdtest={"tasks": [1], "files": 10, "iterations": 1, "tool": "mdbench"},
                  paths={"work_dir": str(tmp_path / "work"), "lustre_dir": str(tmp_path / "lustre")})
    assert srun.RUN.main(job_argv(cfg, "stack", "lustre-minio", "mdtest")) == 1
    raw = layout.raw_path("lustre-minio", "mdtest", "3901B", 1, 0)
    assert not (tmp_path / raw).exists()
    rec = json.loads(rawio.failure_path(tmp_path / raw).read_text())
    assert rec["failure"].startswith(f"storage.paths.lustre_dir = '{tmp_path / 'lustre'}': not on Lustre")
    assert list((tmp_path / "lustre").iterdir()) == []   # mdtest never ran in it
