"""The serverless study's placement (issue 19): in a Slurm job of n+1 nodes the director stays on
the driver, the stand-in platform's front on the first system node bound to its address, the
instances spread over every system node (srun steps); on one host everything on loopback, no step."""

from __future__ import annotations

import pytest
import serverless_testlib as tl
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


def _ends(director_host, server_host, to, frm):
    return {"director": {"node": director_host, "hostname": director_host, "connected_to": to,
                         "connected_from": frm},
            "platform": {"node": server_host, "hostname": server_host}}


@pytest.mark.parametrize("where, one", [
    (_ends("vm", "vm", "http://127.0.0.1:5/", "127.0.0.1"), True),              # locally: one host
    (_ends("node0", "node0", "http://10.0.0.10:5/", "10.0.0.10"), True),        # a one-node job
    (_ends("node0", "node1", "http://10.0.0.11:5/", "10.0.0.10"), False),       # n+1: the server on node1
    (_ends("node0", None, "tcp://10.0.0.11/", "10.0.0.10"), False),             # no server side: the route
    (_ends("node0", None, "tcp://127.0.0.1/", "127.0.0.1"), True),
    (_ends("node0", None, "tcp://10.0.0.10/", "10.0.0.10"), True),              # one of the director's own
    (_ends("node0", None, "http://node1:8080/", "10.0.0.10"), False),           # limit.echo_url by name
    (_ends("node0", None, "http://localhost:8080/", "127.0.0.1"), True),
])
def test_limit_label_follows_the_measured_placement(where, one):
    """stand-in:<what>-loopback only where both ends of the limit's path ran on one host; between nodes
    (the n+1 layout on a cluster) it says so; with the real platforms (mode kubernetes) it is real."""
    assert place.one_host(where) is one
    for what in ("echo", "iperf3"):
        kind = place.limit_kind("standin", what, where)
        assert kind == (f"stand-in:{what}-loopback" if one else f"stand-in:{what}-between-nodes")
        assert place.limit_kind("kubernetes", what, where) == "real"


@pytest.mark.parametrize("fails", [False, True])
def test_an_iperf3_limit_between_nodes_is_not_labelled_loopback(tmp_path, monkeypatch, fails):
    """run.py's iperf3 limit in a job of 2 nodes (the server started on node1 through an srun step;
    iperf3 itself faked here): the record, and the failure record, carry the between-nodes label and
    the measured placement. Fails with the label taken from the config alone (always loopback)."""
    from repro import rawio
    from studies.serverless import run
    from tools.fdirector import iperf

    def fake_iperf3(host, port, seconds, start_server, server_prefix):
        assert start_server and server_prefix[0] == "srun" and host == "10.0.0.11"
        if fails:
            raise iperf.IperfError("no route")
        return {"mib_per_s": 900.0, "server_node": "node1", "server_hostname": "node1"}, "{}"

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(iperf, "run_iperf3", fake_iperf3)
    monkeypatch.setattr(allocation, "current", lambda: _alloc(2))
    cfg = tl.section(limit={"iperf_host": "127.0.0.1"})
    assert run.RUN.main(tl.run_argv(cfg, "limit", variant="iperf3")) == (1 if fails else 0)
    raw = tmp_path / run.layout.raw_path(run.layout.limit_iperf_params(), 0)
    rec = rawio.read(rawio.failure_path(raw) if fails else raw)
    assert rec["system_kind"] == "stand-in:iperf3-between-nodes", rec["system_kind"]
    assert rec["extra"]["placement"]["director"]["connected_to"] == "tcp://10.0.0.11/"
    if not fails:
        assert rec["extra"]["placement"]["platform"]["hostname"] == "node1"


def test_an_echo_limit_between_nodes_is_not_labelled_loopback(tmp_path, monkeypatch):
    """run.py's echo limit in a job of 2 nodes: the echo server reported node1 (faked here, as is the
    director, which fails every size): each size's record carries the between-nodes label."""
    from repro import rawio
    from studies.serverless import run
    from tools.fdirector import director as fd
    from tools.fdirector import standin

    class Echo:
        def __init__(self, state_dir, launch, listen):
            assert launch[0] == "srun" and listen == "10.0.0.11"
            self.url = f"http://{listen}:5/"

        def start(self):
            return self

        def where(self):
            return {"node": "node1", "hostname": "node1", "listen": self.url}

        def stop(self):
            pass

    def no_answer(spec, workload):
        raise fd.DirectorError("timeout")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(standin, "EchoServer", Echo)
    monkeypatch.setattr(fd, "run", no_answer)
    monkeypatch.setattr(allocation, "current", lambda: _alloc(2))
    cfg = tl.section(limit={"exponents": [10, 20]})
    assert run.RUN.main(tl.run_argv(cfg, "limit", variant="echo")) == 1
    recs = [rawio.read(p) for p in (tmp_path / "results/serverless/failed").rglob("*.json")]
    assert len(recs) == 2 and {r["system_kind"] for r in recs} == {"stand-in:echo-between-nodes"}
