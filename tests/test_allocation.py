"""repro.allocation: the job's nodes, roles and addresses read from scontrol output, the srun step
prefix, and the local description (unit level; the real-Slurm case runs in test_slurm.py)."""

import pytest

from repro import allocation

JOB = ("JobId=42 JobName=x UserId=root(0) JobState=RUNNING NumNodes=3 NumCPUs=6 NumTasks=3 "
       "OverSubscribe=NO NodeList=node[0-2] BatchHost=node0 TresPerNode=gres:gpu:1 Command=(null)")
NODES = {
    "node0": "NodeName=node0 Arch=x86_64 CPUTot=2 NodeAddr=10.77.0.10 NodeHostName=node0 Version=22.05.8",
    "node1": "NodeName=node1 Arch=x86_64 CPUTot=2 NodeAddr=10.77.0.11 NodeHostName=node1 Version=22.05.8",
    "node2": "NodeName=node2 Arch=x86_64 CPUTot=2 NodeAddr=10.77.0.12 NodeHostName=node2 Version=22.05.8",
}


def fake_scontrol(job=JOB, nodes=NODES):
    calls = []

    def run(*args):
        calls.append(args)
        if args[:2] == ("show", "job"):
            return job
        if args[:2] == ("show", "hostnames"):
            assert args[2] == "node[0-2]"
            return "node0\nnode1\nnode2\n"
        if args[:2] == ("show", "node"):
            return nodes[args[-1]]
        raise AssertionError(args)

    return run, calls


def test_roles_addresses_and_request():
    run, calls = fake_scontrol()
    a = allocation.from_scontrol("42", run=run)
    assert [n.name for n in a.nodes] == ["node0", "node1", "node2"]
    assert a.driver.name == "node0" and [n.name for n in a.system_nodes] == ["node1", "node2"]
    assert [n.address for n in a.nodes] == ["10.77.0.10", "10.77.0.11", "10.77.0.12"]
    assert all(n.cpus == 2 for n in a.nodes)
    assert a.gres == "gpu:1" and a.exclusive and a.multi_host and not a.shared_node
    assert a.bind_address(a.system_nodes[1]) == "10.77.0.12"  # never loopback on several hosts
    d = a.as_dict()
    assert d["driver"] == "node0" and d["system_nodes"] == ["node1", "node2"] and d["job_id"] == "42"


def test_step_prefix_names_the_node_and_its_cpus():
    run, _ = fake_scontrol()
    a = allocation.from_scontrol("42", run=run)
    cmd = a.step("node2", name="srv")
    assert cmd[0] == "srun" and "--overlap" in cmd and "--nodelist=node2" in cmd and "--cpus-per-task=2" in cmd
    with pytest.raises(allocation.AllocationError, match="node9"):
        a.step("node9", name="x")


def test_single_node_job_shares_the_node():
    job = JOB.replace("NumNodes=3 NumCPUs=6", "NumNodes=1 NumCPUs=2").replace("node[0-2]", "node0")

    def run(*args):
        if args[:2] == ("show", "hostnames"):
            return "node0"
        return job if args[1] == "job" else NODES[args[-1]]

    a = allocation.from_scontrol("42", run=run)
    assert a.shared_node and a.system_nodes == a.nodes and not a.multi_host


def test_pending_job_and_missing_address_fail_loudly():
    run, _ = fake_scontrol(job=JOB.replace("NodeList=node[0-2]", "NodeList=(null)").replace("RUNNING", "PENDING"))
    with pytest.raises(allocation.AllocationError, match="PENDING"):
        allocation.from_scontrol("42", run=run)
    bad = dict(NODES, node1=NODES["node1"].replace("NodeAddr=10.77.0.11 ", ""))
    run, _ = fake_scontrol(nodes=bad)
    with pytest.raises(allocation.AllocationError, match="node1.*NodeAddr"):
        allocation.from_scontrol("42", run=run)


def test_not_exclusive_and_no_gres():
    job = JOB.replace("OverSubscribe=NO", "OverSubscribe=OK").replace(" TresPerNode=gres:gpu:1", "")
    run, _ = fake_scontrol(job=job)
    a = allocation.from_scontrol("42", run=run)
    assert not a.exclusive and a.gres == ""


def test_local_outside_slurm(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    a = allocation.current()
    assert a.launcher == "local" and a.shared_node and a.bind_address() == "127.0.0.1"
    assert a.step(a.driver, name="x") == []
    h = allocation.here()
    assert h["hostname"] and h["node"]
    assert allocation.source_address("127.0.0.1") == "127.0.0.1"


def test_inside_a_slurm_job_without_scontrol_fails_loudly(monkeypatch, tmp_path):
    """A process inside a Slurm job that cannot read the job's nodes (no scontrol: an image without
    Slurm's client) refuses instead of taking the job for one host with services on 127.0.0.1 (what
    storage's driver did inside its stack image on the multi-host cluster)."""
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol here
    with pytest.raises(allocation.AllocationError, match=r"inside Slurm job 4242 but scontrol is not on PATH"):
        allocation.current()
