"""systems/mtc: agents in network namespaces with real memcached and real MemFS mounts."""

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from mtc_testlib import REPO, assert_clean, leftovers_of

pytestmark = pytest.mark.usefixtures("built")

EMU = {"name": "test", "emulate": True, "rate_mbit": None}


def test_write_on_node1_reads_back_on_node2(clusters):
    c = clusters(nodes=2, design="memfs", network=EMU)
    assert [nd.index for nd in c.nodes] == [0, 1]
    assert len(set(c.servers)) == 2 and all(s.startswith("10.78.0.") for s in c.servers)
    assert all(nd.netns == f"rmc-{c.cid}-{nd.index}" for nd in c.nodes)
    data = random.Random(7).randbytes(3 * 1024 * 1024 + 12345)  # several stripes plus a tail
    with open(c.nodes[0].path("/d.bin"), "wb") as fh:  # mounts are visible to the driver
        fh.write(data)
    r = c.nodes[1].run(["sha256sum", c.nodes[1].path("/d.bin")])
    assert r["rc"] == 0, r["stderr"]
    assert r["stdout"].split()[0] == hashlib.sha256(data).hexdigest()
    with open(c.nodes[1].path("/d.bin"), "rb") as fh:
        assert fh.read() == data
    assert sorted(c.locate("/d.bin")) == [0, 1]  # symmetric: stripes on both servers
    st = c.stats()
    assert all(s["memcached"]["curr_items"] > 0 for s in st)
    assert all(s["mounts"][0]["memfs"]["policy"] == "symmetric" for s in st)
    assert st[0]["fuse_rss_bytes"][0] > 0 and st[0]["memcached_rss_bytes"] > 0


def test_run_start_wait_and_k_mounts(clusters):
    c = clusters(nodes=1, design="memfs", mounts_per_node=2, network=EMU)
    nd = c.nodes[0]
    assert len(nd.mountpoints) == 2 and nd.mountpoints == nd.call("mountpoints")
    h = nd.start("sleep 0.2; echo done", shell=True)
    res = nd.wait(h, timeout=10)
    assert res["rc"] == 0 and res["stdout"].strip() == "done" and res["elapsed"] >= 0.2
    r = nd.run(["sh", "-c", "echo x > " + nd.path("/a", 0) + " && cat " + nd.path("/a", 1)])
    assert r["rc"] == 0 and r["stdout"].strip() == "x"
    r = nd.run(["sleep", "5"], timeout=0.5)
    assert r["rc"] == 124
    with pytest.raises(Exception):
        nd.call("no_such_method")


def test_tc_rate_limit_is_enforced(clusters):
    import shutil

    if not shutil.which("iperf3"):
        pytest.skip("iperf3 missing")
    rate = 200
    c = clusters(nodes=2, design="none", network={"name": "slow", "emulate": True, "rate_mbit": rate,
                                                  "burst": "64k"})
    srv = c.nodes[1].start(["iperf3", "-s", "-1", "-B", c.nodes[1].ip, "-p", "5299"])
    time.sleep(0.5)
    r = c.nodes[0].run(["iperf3", "-c", c.nodes[1].ip, "-p", "5299", "-t", "2", "-J"], timeout=30)
    c.nodes[1].wait(srv, timeout=10)
    assert r["rc"] == 0, r["stdout"][-500:]
    got = json.loads(r["stdout"])["end"]["sum_received"]["bits_per_second"] / 1e6
    assert 0.75 * rate <= got <= 1.05 * rate, f"{got:.0f} Mbit/s through a {rate} Mbit/s link"


def test_locality_keeps_file_on_writer_and_replicates_on_remote_read(clusters):
    c = clusters(nodes=2, design="locality", network=EMU)
    before = [s["memcached"]["bytes"] for s in c.stats()]
    data = os.urandom(4 * 1024 * 1024)
    with open(c.nodes[0].path("/l.bin"), "wb") as fh:
        fh.write(data)
    st = c.stats()
    grew = [s["memcached"]["bytes"] - b for s, b in zip(st, before)]
    assert grew[0] >= len(data) and grew[1] < 64 * 1024, grew  # only the writer's server holds the data
    assert c.locate("/l.bin") == [0]
    assert st[0]["mounts"][0]["memfs"]["policy"] == "locality"
    assert st[0]["mounts"][0]["memfs"]["local_server"] == 0
    r = c.nodes[1].run(["sha256sum", c.nodes[1].path("/l.bin")])  # a remote read on node 1
    assert r["stdout"].split()[0] == hashlib.sha256(data).hexdigest()
    st2 = c.stats()
    assert st2[1]["memcached"]["bytes"] - st[1]["memcached"]["bytes"] >= len(data)  # replicated to node 1
    assert sorted(c.locate("/l.bin")) == [0, 1]
    assert st2[1]["mounts"][0]["memfs"]["locality"]["replications"] >= 1
    t = c.nodes[1].timed_open([c.nodes[1].path("/l.bin")])  # now local: no new replication
    assert t["elapsed"] >= 0
    assert c.stats()[1]["mounts"][0]["memfs"]["locality"]["replications"] == \
        st2[1]["mounts"][0]["memfs"]["locality"]["replications"]


def test_local_disk_design(clusters):
    c = clusters(nodes=2, design="local-disk", network=EMU)
    for nd in c.nodes:
        assert all(os.path.isdir(m) and not os.path.ismount(m) for m in nd.mountpoints)
    r = c.nodes[1].run(["sh", "-c", f"head -c 100000 /dev/zero > {c.nodes[1].path('/x')}"])
    assert r["rc"] == 0
    assert c.locate("/x") == [1]
    assert c.stats()[1]["disk_bytes"] >= 100000


def test_mpi_paths_map_ranks_to_nodes(clusters):
    c = clusters(nodes=2, design="memfs", mounts_per_node=2, network=EMU)
    paths = c.mpi_paths("/md/n{node}", ranks_per_node=3)
    assert paths == [
        c.nodes[0].mountpoints[0] + "/md/n0", c.nodes[0].mountpoints[1] + "/md/n0",
        c.nodes[0].mountpoints[0] + "/md/n0", c.nodes[1].mountpoints[0] + "/md/n1",
        c.nodes[1].mountpoints[1] + "/md/n1", c.nodes[1].mountpoints[0] + "/md/n1",
    ]
    cmd = c.mpi_command(["true"], ranks_per_node=3)
    assert cmd[0] == "mpirun" and cmd[cmd.index("-n") + 1] == "6"


def test_teardown_when_the_body_raises(tmp_path):
    from systems.mtc import launch

    cid = None
    with pytest.raises(RuntimeError, match="boom"):
        with launch.cluster(nodes=2, design="memfs", network=EMU, workdir=tmp_path / "w",
                            memcached={"mem_mb": 128}) as c:
            cid = c.cid
            assert os.path.ismount(c.nodes[0].mountpoints[0])
            raise RuntimeError("boom")
    assert_clean(cid, str(tmp_path / "w"))


def test_teardown_after_an_agent_is_killed(tmp_path):
    from systems.mtc import launch

    with launch.cluster(nodes=2, design="memfs", network=EMU, workdir=tmp_path / "w",
                        memcached={"mem_mb": 128}) as c:
        cid = c.cid
        os.kill(c.nodes[1].info["pid"], signal.SIGKILL)  # the agent dies without cleaning up
        time.sleep(0.5)
    assert_clean(cid, str(tmp_path / "w"))


def _driver_script(tmp_path) -> str:
    """A driver that starts a 2-node cluster, prints its id and sleeps inside it."""
    return textwrap.dedent(f"""
        import time
        from systems.mtc import launch  # the project's Python path: PYTHONPATH (conftest.py)
        with launch.cluster(nodes=2, design="memfs", network={EMU!r}, workdir={str(tmp_path / 'w')!r},
                            memcached={{"mem_mb": 128}}) as c:
            print(c.cid, flush=True)
            time.sleep(60)
    """)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_teardown_when_the_driver_is_signalled(tmp_path, sig):
    script = _driver_script(tmp_path)
    # a driver started from a background job inherits SIGINT ignored (and Python then installs no
    # KeyboardInterrupt handler); give it the disposition of an interactive driver, where Ctrl-C counts
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    cid = p.stdout.readline().strip()
    assert cid and leftovers_of(cid)["netns"]
    p.send_signal(sig)
    p.wait(30)
    assert_clean(cid, str(tmp_path / "w"))


def test_agents_exit_when_the_driver_is_killed(tmp_path):
    """SIGKILL of the driver: agents see their parent gone and tear down; cleanup_stale removes the namespaces."""
    from systems.mtc import netns

    script = _driver_script(tmp_path)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    cid = p.stdout.readline().strip()
    p.kill()
    p.wait(10)
    deadline = time.time() + 20
    while time.time() < deadline:
        left = leftovers_of(cid, str(tmp_path / "w"))
        if not left["mounts"] and not left["processes"]:
            break
        time.sleep(0.5)
    netns.cleanup_stale()  # (a concurrent cluster start may already have removed them)
    assert_clean(cid, str(tmp_path / "w"))


def test_cleanup_stale_removes_dead_owners_namespaces():
    from systems.mtc import netns

    ips = netns.create("zz9t", 1, rate_mbit=100, owner_pid=2 ** 22 + 12345)  # no such process
    assert ips and netns.leftovers("zz9t")["netns"] == ["rmc-zz9t-0"]
    assert "zz9t" in netns.cleanup_stale()
    assert not any(netns.leftovers("zz9t").values())


def test_launch_cli_leftovers_runs():
    r = subprocess.run([sys.executable, "-m", "systems.mtc.launch", "leftovers"], capture_output=True, text=True)
    assert r.returncode == 0 and set(json.loads(r.stdout)) == {"netns", "links", "registry"}
    assert (REPO / "systems" / "mtc" / "README.md").exists()
