"""JuiceFS + MinIO + Redis brought up by stack.py: files through the FUSE mount, objects through the
S3 gateway, data blocks in MinIO, metadata in Redis; Redis killed mid-use; a failed up."""

import json
import subprocess

import pytest

from tools.common import free_port
from systems.storage_common import testing as st

SCRIPT = "juicefs/stack.py"


def ports(gateway=None):
    return ["--redis-port", str(free_port()), "--minio-port", str(free_port()),
            "--gateway-port", str(gateway or free_port())]


@pytest.fixture(scope="module")
def jfs(tmp_path_factory, minio_built):
    state = tmp_path_factory.mktemp("juicefs")
    info = st.up_ok(SCRIPT, state, *ports())
    yield state, info
    st.stack_cli(SCRIPT, "down", state)


def test_up_reports_versions_of_all_three(jfs):
    state, info = jfs
    v = info["versions"]
    assert v["juicefs"].startswith("juicefs version 1.4.2")
    assert v["redis running"].startswith("redis_version:7.")
    assert v["minio"].startswith("minio version ")
    res = st.stack_cli(SCRIPT, "status", state)
    assert res.returncode == 0, res.stderr
    live = json.loads(res.stdout)["live"]
    assert {"redis", "minio", "jfs-mount", "jfs-gateway"} == set(live) and all(d["alive"] for d in live.values())


def test_files_through_the_mount_read_back_and_land_in_minio(jfs):
    state, info = jfs
    mnt = info["endpoints"]["mount"]
    with open("/proc/self/mountinfo") as f:
        assert any(line.split()[4] == mnt and "juicefs" in line for line in f), "not a JuiceFS mount"
    st.fuse_roundtrip(mnt)
    # data blocks are objects in MinIO's bucket, metadata keys in Redis
    chunks = list((state / "minio-data" / "jfs" / "repro" / "chunks").rglob("*"))
    assert chunks, "no JuiceFS chunks in MinIO's data directory"
    port = info["endpoints"]["meta"].split(":")[2].split("/")[0]
    keys = subprocess.run(["redis-cli", "-p", port, "-n", "1", "DBSIZE"], capture_output=True, text=True,
                          check=True).stdout
    assert int(keys) > 0


def test_objects_through_the_gateway_read_back_and_are_files(jfs):
    state, info = jfs
    client = st.s3_client(state)
    st.s3_roundtrip(client, "repro-jfs")
    client.put_object("repro-jfs", "seen-as-file", b"z" * 12345)
    # --multi-buckets: a bucket is a top-level directory of the same file system
    from pathlib import Path

    assert (Path(info["endpoints"]["mount"]) / "repro-jfs" / "seen-as-file").read_bytes() == b"z" * 12345


def test_killed_redis_makes_status_fail_and_down_leaves_nothing(jfs):
    state, info = jfs
    st.kill_daemon(state, "redis")
    res = st.stack_cli(SCRIPT, "status", state)
    assert res.returncode != 0
    assert "DEAD: redis" in res.stderr and "redis.log" in res.stderr
    pids = st.recorded_pids(state)
    res = st.stack_cli(SCRIPT, "down", state)
    assert res.returncode == 0, res.stderr
    st.assert_nothing_left(state, pids)


def test_failed_up_cleans_up(tmp_path, minio_built):
    sock, port = st.occupy_port()
    try:
        res = st.stack_cli(SCRIPT, "up", tmp_path, *ports(gateway=port))
    finally:
        sock.close()
    assert res.returncode != 0
    assert f"jfs-gateway: port 127.0.0.1:{port} is already in use" in res.stderr
    # Redis, MinIO and the mount had started: all gone
    assert "cleaning up" in res.stderr
    st.assert_nothing_left(tmp_path, {})


def test_daemons_on_another_host_record_where_they_ran(tmp_path, minio_built):
    """The multi-host path on one machine: --hosts n1 with a launcher that only names the node
    (env SLURMD_NODENAME={host}, as srun sets it) -- Redis, MinIO and the S3 gateway are started
    through it and bound to n1's address, the FUSE mount stays on this host (mdtest's tasks run
    here); stack.json's placement is what each daemon measured (repro.allocation.here())."""
    import socket

    info = st.up_ok(SCRIPT, tmp_path, *ports(), "--hosts", "n1", "--addresses", "127.0.0.1",
                    "--launcher", "env SLURMD_NODENAME={host}", "--cache-dir", str(tmp_path / "localcache"))
    try:
        pl = info["placement"]
        assert {pl[d]["node"] for d in ("redis", "minio", "jfs-gateway")} == {"n1"}
        assert pl["jfs-mount"]["node"] == socket.gethostname() and pl["jfs-mount"]["serves"].startswith("mount ")
        assert pl["jfs-gateway"]["serves"] == info["endpoints"]["s3"].split("//")[1]
        assert "127.0.0.1" in pl["redis"]["addresses"]
        st.s3_roundtrip(st.s3_client(tmp_path), "placed", sizes=(1, 4096))
    finally:
        pids = st.recorded_pids(tmp_path)
        assert st.stack_cli(SCRIPT, "down", tmp_path).returncode == 0
    st.assert_nothing_left(tmp_path, pids)
