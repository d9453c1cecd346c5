"""Ceph: a real loopback cluster (mon, mgr, OSDs, radosgw, MDS + ceph-fuse) brought up by stack.py.

One cluster serves the S3, FUSE and health checks, then loses an OSD and must say so; a second
`up` fails on a taken radosgw port and must clean up what it had started.
"""

import json
import os
import subprocess

import pytest

from systems.ceph.stack import ceph_conf
from tools.common import free_port
from systems.storage_common import testing as st

SCRIPT = "ceph/stack.py"


def ports():
    return ["--mon-port", str(free_port()), "--rgw-port", str(free_port())]


def nearly_full_fs(where, size_gb=80, free_gb=3.2):
    """A real ext4 file system (a sparse image on a loop device) with `free_gb` of `size_gb` free: 4%,
    under Ceph's own 5% floor for a monitor's disk, yet room enough; None where loop devices are not
    usable. The image stays a few MB: fallocate writes no data blocks."""
    img, mnt = where / "disk.img", where / "mnt"
    mnt.mkdir()
    try:
        subprocess.run(["truncate", "-s", f"{size_gb}G", str(img)], check=True)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1",
                        str(img)], check=True, capture_output=True)
        subprocess.run(["mount", "-o", "loop", str(img), str(mnt)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    stv = os.statvfs(mnt)
    fill = stv.f_bavail * stv.f_frsize - int(free_gb * 2**30)
    subprocess.run(["fallocate", "-l", str(fill), str(mnt / "fill")], check=True)
    return mnt


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    state = tmp_path_factory.mktemp("ceph")
    # the daemons' data on a disk Ceph would call nearly full (4% free): CI's and a busy machine's
    # disks were (2026-11-29), and mon.a refused to start by its percentage
    disk = nearly_full_fs(tmp_path_factory.mktemp("disk"))
    data = ["--data", str(disk / "data")] if disk else []
    # one OSD: with two on 2 busy cores, PGs were seen stuck "laggy" (read leases) for minutes
    try:
        info = st.up_ok(SCRIPT, state, "--osd-size-gb", "4", "--health-timeout", "150", *data, *ports())
        yield state, info, disk
        res = st.stack_cli(SCRIPT, "down", state)
        assert res.returncode == 0, res.stderr
    finally:
        if disk:
            subprocess.run(["umount", "-l", str(disk)], check=False)


def test_daemons_run_on_a_disk_ceph_calls_nearly_full(cluster):
    """Ceph refuses a monitor whose disk has under 5% free, whatever its size; the stack sets an
    absolute floor instead (MIN_FREE_GB). Fails without it: mon.a dies at once."""
    state, info, disk = cluster
    if disk is None:
        pytest.skip("no loop device here: the cluster ran on the test's own disk")
    stv = os.statvfs(disk)
    assert stv.f_bavail / stv.f_blocks < 0.05
    assert "mon.a" in json.loads(st.stack_cli(SCRIPT, "status", state).stdout)["live"]
    assert (disk / "data" / "mon.a" / "store.db").is_dir()


def test_a_disk_under_the_floor_is_refused_by_name_before_anything_starts(tmp_path):
    disk = nearly_full_fs(tmp_path, size_gb=4, free_gb=0.5)
    if disk is None:
        pytest.skip("no loop device here")
    try:
        res = st.stack_cli(SCRIPT, "up", tmp_path / "state", "--data", str(disk / "data"), *ports())
        assert res.returncode != 0
        assert f"not enough free disk for {disk / 'data'}: 0.5 GiB free, 1 GiB needed" in res.stderr
        assert not list((tmp_path / "state" / "run").glob("*.pid"))
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_up_reports_running_versions_and_health(cluster):
    state, info, _ = cluster
    assert info["system_kind"] == "real"
    assert info["versions"]["ceph-osd"].startswith("ceph version 16.2.")
    assert sum(info["versions"]["running"]["osd"].values()) == 1
    res = st.stack_cli(SCRIPT, "status", state)
    assert res.returncode == 0, res.stderr
    status = json.loads(res.stdout)
    assert status["health"].startswith("HEALTH_OK") and status["healthy"] is True
    assert {"mon.a", "mgr.a", "osd.0", "mds.a", "rgw.a", "fuse"} == set(status["live"])
    for name in status["live"]:
        assert (state / "log" / f"{name}.log").stat().st_size > 0, f"{name} has an empty log"
    # the S3 user's keys are stored in the state dir
    assert json.loads((state / "s3-user.json").read_text())["access_key"].startswith("REPRO")


def test_s3_objects_read_back_byte_for_byte(cluster):
    state, _, _ = cluster
    st.s3_roundtrip(st.s3_client(state), "repro-ceph")


def test_cephfs_files_read_back_and_live_in_rados(cluster):
    state, info, _ = cluster
    mnt = info["endpoints"]["mount"]
    with open("/proc/self/mountinfo") as f:
        assert any(line.split()[4] == mnt and "ceph-fuse" in line for line in f), "not a ceph-fuse mount"
    files = st.fuse_roundtrip(mnt)
    # the bytes went into the CephFS data pool, not a local directory
    objs = subprocess.run(["rados", "-c", info["conf"], "-p", "cephfs_data", "ls"], capture_output=True,
                          text=True, timeout=60, check=True).stdout.split()
    assert len(objs) >= sum(1 for b in files.values() if b), objs


def test_killed_osd_makes_status_fail_and_down_leaves_nothing(cluster):
    state, info, _ = cluster
    st.kill_daemon(state, "osd.0")
    res = st.stack_cli(SCRIPT, "status", state)
    assert res.returncode != 0
    assert "DEAD: osd.0" in res.stderr and "last lines of" in res.stderr and "osd.0.log" in res.stderr
    pids = st.recorded_pids(state)
    res = st.stack_cli(SCRIPT, "down", state)
    assert res.returncode == 0, res.stderr
    st.assert_nothing_left(state, pids)
    assert st.stack_cli(SCRIPT, "status", state).returncode != 0


def test_failed_up_cleans_up(tmp_path):
    sock, port = st.occupy_port()
    try:
        res = st.stack_cli(SCRIPT, "up", tmp_path, "--mon-port", str(free_port()), "--rgw-port", str(port))
    finally:
        sock.close()
    assert res.returncode != 0
    assert f"rgw.a: port 127.0.0.1:{port} is already in use" in res.stderr
    assert "cleaning up" in res.stderr
    assert not (tmp_path / "stack.json").exists()
    st.assert_nothing_left(tmp_path, {})


def test_bad_arguments_start_nothing(tmp_path):
    res = st.stack_cli(SCRIPT, "up", tmp_path, "--osds", "0")
    assert res.returncode != 0 and "--osds must be 1..8" in res.stderr
    res = st.stack_cli(SCRIPT, "up", tmp_path, "--hosts", "n1,n2")
    assert res.returncode != 0 and "--public-network is required" in res.stderr
    assert not list((tmp_path / "run").glob("*.pid"))


def test_cluster_config_spreads_over_hosts(tmp_path):
    """The multi-host path (not runnable here): ceph's own parser reads the generated config."""
    conf = ceph_conf(fsid="9d7a0a55-1111-4222-8333-444455556666", state=tmp_path, data=tmp_path / "local",
                     hosts=["node1", "node2", "node3"], mon_ip="10.0.0.1", mon_port=3300, rgw_ip="10.0.0.1",
                     rgw_port=7480, objectstore="bluestore", osd_size_gb=100, pool_size=1,
                     public_network="10.0.0.0/24")
    f = tmp_path / "ceph.conf"
    f.write_text(conf)

    def lookup(name, key):
        return subprocess.run(["ceph-conf", "-c", str(f), "--name", name, "--lookup", key], capture_output=True,
                              text=True, check=True).stdout.strip()

    assert lookup("osd.4", "osd_data") == f"{tmp_path}/local/osd.4"
    assert lookup("osd.4", "osd_crush_chooseleaf_type") == "1"
    assert lookup("mon.a", "public_network") == "10.0.0.0/24"
    assert lookup("mon.a", "mon_host") == "v2:10.0.0.1:3300"
    assert lookup("client.rgw.a", "rgw_frontends") == "beast endpoint=10.0.0.1:7480"
    assert lookup("client.admin", "auth_client_required") == "cephx"


def test_down_after_up_was_killed_midway(tmp_path):
    """`up` killed (SIGKILL, no chance to clean up) after starting some daemons: `down` finds them all."""
    import os
    import signal
    import sys
    import time

    from systems.storage_common.testing import REPO

    proc = subprocess.Popen([sys.executable, str(REPO / "systems" / SCRIPT), "up", "--state", str(tmp_path), *ports()],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (tmp_path / "run" / "osd.0.pid").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (tmp_path / "run" / "osd.0.pid").exists(), "up never started osd.0"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    pids = st.recorded_pids(tmp_path)
    assert {"mon.a", "mgr.a", "osd.0"} <= set(pids)
    res = st.stack_cli(SCRIPT, "down", tmp_path)
    assert res.returncode == 0, res.stderr
    st.assert_nothing_left(tmp_path, pids)


def test_pool_size_is_cephs_default_capped_by_crush(tmp_path):
    """Ceph's default pool size 3 (the paper: default replication), capped by what CRUSH can place:
    replicas on distinct hosts across hosts, on distinct OSDs on one host; min_size Ceph's own rule."""
    from systems.ceph.stack import default_pool_size

    assert default_pool_size(4, 1) == 3 and default_pool_size(2, 4) == 2 and default_pool_size(1, 1) == 1
    assert default_pool_size(1, 5) == 3
    conf = ceph_conf(fsid="9d7a0a55-1111-4222-8333-444455556666", state=tmp_path, data=tmp_path / "d",
                     hosts=["n1", "n2", "n3", "n4"], mon_ip="10.0.0.2", mon_port=3300, rgw_ip="10.0.0.2",
                     rgw_port=7480, objectstore="bluestore", osd_size_gb=8, pool_size=3,
                     public_network="10.0.0.0/22")
    assert "osd_pool_default_size = 3" in conf and "osd_pool_default_min_size = 2" in conf
    assert "public_network = 10.0.0.0/22" in conf and "public_addr" not in conf
    res = st.stack_cli(SCRIPT, "up", tmp_path, "--hosts", "n1,n2", "--addresses", "10.9.0.1,10.9.0.2",
                       "--public-network", "10.9.0.0/24", "--pool-size", "3", "--launcher", "false {host}")
    assert res.returncode != 0 and "CRUSH can place at most 2 replicas" in res.stderr
    assert not list((tmp_path / "run").glob("*.pid"))


def test_daemons_on_another_host_use_the_public_network_and_record_where_they_ran(tmp_path):
    """The multi-host path on one machine: --hosts n1 behind a launcher that only names the node (env
    SLURMD_NODENAME={host}, as srun sets it), its address 127.0.0.1 on --public-network 127.0.0.0/8:
    mon, mgr, OSD, MDS and radosgw start through it (placement node n1, serving n1's address), the
    ceph-fuse client mounts here; the cluster reaches HEALTH_OK and serves S3."""
    import socket

    info = st.up_ok(SCRIPT, tmp_path, *ports(), "--hosts", "n1", "--addresses", "127.0.0.1", "--public-network",
                    "127.0.0.0/8", "--launcher", "env SLURMD_NODENAME={host}", "--data", str(tmp_path / "local"),
                    "--osd-size-gb", "4", "--health-timeout", "150")
    try:
        pl = info["placement"]
        assert {pl[d]["node"] for d in ("mon.a", "mgr.a", "osd.0", "mds.a", "rgw.a")} == {"n1"}
        assert all(pl[d]["serves"] == "127.0.0.1" for d in ("mgr.a", "osd.0", "mds.a"))
        assert pl["fuse"]["node"] == socket.gethostname()
        assert info["public_network"] == "127.0.0.0/8" and info["pool_size"] == 1
        st.s3_roundtrip(st.s3_client(tmp_path), "placed", sizes=(1, 4096))
    finally:
        pids = st.recorded_pids(tmp_path)
        assert st.stack_cli(SCRIPT, "down", tmp_path).returncode == 0
    st.assert_nothing_left(tmp_path, pids)
