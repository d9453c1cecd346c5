"""The serverless study's placement (issue 19): in a Slurm job of n+1 nodes the director stays on
the driver, the stand-in platform's front on the first system node bound to its address, the
instances spread over every system node (srun steps); on one host everything on loopback, no step."""

from __future__ import annotations

import pytest
from repro import allocation
from studies.serverless import placement as place


def _alloc(n: int, launcher: str = "slurm") -> allocation.Allocation:
    nodes = tuple(allocation.Node(f"node{i}", f"node{i}", f"10.0.0.{10 + i}", 2) for i in range(n))
    return allocation.Allocation(launcher=launcher, job_id="7", nodes=nodes, exclusive=True)


def test_n_plus_1_job_puts_the_platform_on_the_system_nodes():
    pl = place.plan(_alloc(4), "standin")
    assert pl["multi_host"] and pl["driver"] == "node0"
    assert pl["platform_node"] == "node1" and pl["listen"] == "10.0.0.11"
    assert pl["launch"][0] == "srun" and "--nodelist=node1" in pl["launch"]
    hosts = pl["instance_hosts"]
    assert [h["node"] for h in hosts] == ["node1", "node2", "node3"]
    assert [h["listen"] for h in hosts] == ["10.0.0.11", "10.0.0.12", "10.0.0.13"]
    assert all(f"--nodelist={h['node']}" in h["launch"] for h in hosts)
    assert not any(a.startswith("127.") for h in hosts for a in [h["listen"]])


@pytest.mark.parametrize("alloc", [_alloc(1), _alloc(1, "local"), _alloc(3, "local")])
def test_one_host_keeps_everything_on_loopback(alloc):
    pl = place.plan(alloc, "standin")
    assert not pl["multi_host"] and pl["listen"] == "127.0.0.1"
    assert pl["launch"] == [] and pl["instance_hosts"] is None
    assert pl["platform_node"] == alloc.driver.name


def test_kubernetes_mode_never_starts_a_platform_on_slurm_nodes():
    pl = place.plan(_alloc(4), "kubernetes")
    assert not pl["multi_host"] and pl["platform_node"] == "kubernetes" and pl["launch"] == []


def test_measured_placement_names_both_sides():
    m = place.measured(_alloc(1, "local"), "http://127.0.0.1:9/f",
                       place.platform_side({"node": "n1", "hostname": "h1",
                                            "instances": [{"node": "n2", "hostname": "h2", "url": "http://a:1"}]},
                                           "http://10.0.0.11:5"))
    assert m["director"]["node"] and m["director"]["connected_to"] == "http://127.0.0.1:9/f"
    assert m["director"]["connected_from"] == "127.0.0.1"
    assert m["platform"]["node"] == "n1" and m["platform"]["listen"] == "http://10.0.0.11:5"
    assert m["platform"]["instances"] == [{"node": "n2", "hostname": "h2", "url": "http://a:1"}]
    # the planned allocation names no node under a key of its own: only what a side measured does
    assert m["planned"]["nodes"] == ["node0=10.0.0.10"] and m["planned"]["launcher"] == "local"
    m = place.measured(_alloc(3), "http://10.0.0.11:5/f", {"node": "node1"})
    assert m["planned"] == {"launcher": "slurm", "job_id": "7", "exclusive": True,
                            "nodes": ["node0=10.0.0.10", "node1=10.0.0.11", "node2=10.0.0.12"]}


def test_the_rehearsal_reads_only_measured_nodes_from_a_record():
    """The planned allocation names every node of the job; the rehearsal's judge must see only the nodes
    a side measured (here: the platform's front and one instance on node1), so that a platform left on
    one node cannot pass the 'apart' check through the plan."""
    from repro import rehearsal

    side = place.platform_side({"node": "node1", "hostname": "node1",
                                "instances": [{"node": "node1", "hostname": "node1", "url": "http://10.0.0.11:7"}]},
                               "http://10.0.0.11:5")
    rec = {"extra": {"placement": place.measured(_alloc(4), "http://10.0.0.11:5/f", side)}}
    seen = rehearsal.measured_placement(rec, {f"node{i}" for i in range(4)})
    assert seen["nodes"] == ["node1"] and not seen["loopback"]
