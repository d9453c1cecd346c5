"""MinIO on a POSIX directory (the local stand-in for Lustre + MinIO), brought up by stack.py."""

import json
from pathlib import Path

import pytest

from systems.minio.stack import STAND_IN, pins
from tools.common import free_port
from systems.storage_common import testing as st

SCRIPT = "minio/stack.py"


@pytest.fixture
def minio(tmp_path, minio_built):
    state = tmp_path / "state"
    info = st.up_ok(SCRIPT, state, "--data", str(tmp_path / "data"), "--port", str(free_port()))
    yield state, info, tmp_path / "data"
    st.stack_cli(SCRIPT, "down", state)


def test_warm_setup_is_a_noop(minio_built):
    assert "cached:" in minio_built or "built" in minio_built


def test_up_is_labelled_a_stand_in_and_reports_the_pinned_build(minio):
    state, info, _ = minio
    assert info["system_kind"] == STAND_IN == "stand-in:minio-on-posix-dir (for Lustre+MinIO)"
    commit = pins()["MINIO_VERSION"].rsplit("-", 1)[1]
    assert f"commit-id={commit}" in info["versions"]["minio"]
    assert info["versions"]["minio_runtime"].startswith(pins()["GO_TOOLCHAIN"] + " ")
    res = st.stack_cli(SCRIPT, "status", state)
    assert res.returncode == 0, res.stderr
    status = json.loads(res.stdout)
    assert status["healthy"] and status["system_kind"] == STAND_IN and status["live"]["minio"]["alive"]


def test_objects_read_back_and_live_in_the_data_directory(minio):
    state, _, data = minio
    client = st.s3_client(state)
    st.s3_roundtrip(client, "repro-minio")
    client.put_object("repro-minio", "kept", b"x" * 1000)
    # the directory MinIO serves (Lustre on a cluster) holds the object
    assert (data / "repro-minio" / "kept").exists()
    assert client.get_object("repro-minio", "kept") == b"x" * 1000


def test_killed_minio_makes_status_fail_and_down_leaves_nothing(minio, tmp_path):
    state, _, _ = minio
    st.s3_client(state).create_bucket("before-kill")
    st.kill_daemon(state, "minio")
    res = st.stack_cli(SCRIPT, "status", state)
    assert res.returncode != 0
    assert "DEAD: minio" in res.stderr and "minio.log" in res.stderr
    pids = st.recorded_pids(state)
    assert st.stack_cli(SCRIPT, "down", state).returncode == 0
    st.assert_nothing_left(state, pids, tmp_path / "data")


def test_failed_up_cleans_up(tmp_path, minio_built):
    sock, port = st.occupy_port()
    try:
        res = st.stack_cli(SCRIPT, "up", tmp_path / "s", "--data", str(tmp_path / "d"), "--port", str(port))
    finally:
        sock.close()
    assert res.returncode != 0 and f"port 127.0.0.1:{port} is already in use" in res.stderr
    st.assert_nothing_left(tmp_path / "s", {})


def test_up_without_data_is_refused(tmp_path):
    res = st.stack_cli(SCRIPT, "up", tmp_path, "--port", "1")
    assert res.returncode != 0 and "up needs --data DIR" in res.stderr
    assert not Path(tmp_path / "stack.json").exists()


def test_several_hosts_form_one_distributed_pool():
    """The cluster path (cannot run here: inside Docker, MinIO refuses endpoints that resolve to
    loopback addresses, and this machine has no other): one server per host, each bound to its own
    address, all listing the same per-host drives under --data, launched through --launcher."""
    import argparse

    from systems.minio.stack import MinioStack, server_argv

    argvs = server_argv("/bin/minio", Path("/lustre/proj/s3"), 9000, ["127.0.0.2", "127.0.0.3"])
    drives = ["http://127.0.0.2:9000/lustre/proj/s3/127.0.0.2", "http://127.0.0.3:9000/lustre/proj/s3/127.0.0.3"]
    assert argvs["127.0.0.2"] == ["/bin/minio", "server", "--quiet", "--address", "127.0.0.2:9000", *drives]
    assert argvs["127.0.0.3"][4] == "127.0.0.3:9000" and argvs["127.0.0.3"][5:] == drives
    stack = MinioStack(Path("/nonexistent"), argparse.Namespace(hosts="node1,node2", launcher="srun -w {host}"))
    assert stack.hosts() == ["node1", "node2"]
    assert stack.on_host("node2", ["minio", "server"]) == ["srun", "-w", "node2", "minio", "server"]
    assert stack.on_host("localhost", ["minio"]) == ["minio"]
