"""The AMFS-style comparator (--policy locality): local-only writes,
replicate-on-read, owners in metadata, owner lookup for a scheduler."""
import json
import os
import subprocess

from memfs_testlib import LOCATE, layout, stripe_counts, stripes_on
from memfs_helpers import STRIPE, file_sha, payload, read_file, sha, write_file


def test_local_write_replicate_on_read(cluster):
    srv = cluster.servers(2)
    n0 = cluster.mount(srv, "--policy", "locality", "--local-server", "0", name="node0")
    n1 = cluster.mount(srv, "--policy", "locality", "--local-server", "1", name="node1")
    assert "memfs: mounted locality at" in n0.log()
    size = 9 * STRIPE + 123
    data = payload(size, seed=21)
    write_file(n0.p("f"), data)
    lay = layout(n0.p("f"))
    # all 10 stripes live on node 0's server only
    assert stripe_counts(srv, lay) == [10, 0]
    assert os.getxattr(n1.p("f"), "user.memfs.owners") == b"0"
    assert os.getxattr(n1.p("f"), "user.memfs.servers") == srv[0].spec.encode()
    st0 = n0.stats()
    assert st0["per_server"][0]["stripes_set"] == 10 and st0["per_server"][1]["stripes_set"] == 0

    # first read on node 1: remote copy -> replicated into server 1
    n1.reset_stats()
    assert read_file(n1.p("f")) == data
    st = n1.stats()["locality"]
    assert st["replications"] == 1 and st["replicated_stripes"] == 10
    assert st["replicated_bytes"] == size
    assert st["gets_remote"] == 10 and st["gets_local"] == 10
    assert stripe_counts(srv, lay) == [10, 10]
    assert os.getxattr(n0.p("f"), "user.memfs.owners") == b"0,1"
    lay = json.loads(os.getxattr(n1.p("f"), "user.memfs.layout"))
    assert lay["placement"] == "locality" and lay["owners"] == [0, 1]

    # second read on node 1 is local only; node 0 reads locally too
    n1.reset_stats()
    check = file_sha(n1.p("f"))
    assert check == sha(data)
    st = n1.stats()["locality"]
    assert st["replications"] == 0 and st["gets_remote"] == 0 and st["gets_local"] == 10
    n0.reset_stats()
    assert read_file(n0.p("f")) == data
    st = n0.stats()["locality"]
    assert st["gets_remote"] == 0 and st["gets_local"] == 10 and st["replications"] == 0

    # a scheduler asks where the input lives
    r = subprocess.run([str(LOCATE), "--servers", ",".join(s.spec for s in srv),
                        "--format", "owners", "/f"], capture_output=True, text=True, check=True)
    assert r.stdout == "/f\t0,1\n"

    # unlink removes every replica
    os.unlink(n1.p("f"))
    assert stripe_counts(srv, lay) == [0, 0]


def test_locality_imbalance_vs_symmetric(cluster):
    """What the paper measures: one producer under locality puts everything
    on its own server; the symmetric policy spreads the same data."""
    srv = cluster.servers(3)
    loc = cluster.mount(srv, "--policy", "locality", "--local-server", "2")
    sym = cluster.mount(srv)
    for i in range(4):
        write_file(loc.p(f"l{i}"), payload(4 * STRIPE, seed=i))
        write_file(sym.p(f"s{i}"), payload(4 * STRIPE, seed=i))
    lcount = [sum(x) for x in zip(*(stripe_counts(srv, layout(loc.p(f"l{i}"))) for i in range(4)))]
    scount = [sum(x) for x in zip(*(stripe_counts(srv, layout(sym.p(f"s{i}"))) for i in range(4)))]
    assert lcount == [0, 0, 16]
    # symmetric: each 4-stripe file is spread 2/1/1 over the 3 servers
    assert sum(scount) == 16 and min(scount) >= 4 and max(scount) <= 8, scount


def test_symmetric_mount_reads_locality_file_without_replicating(cluster):
    srv = cluster.servers(2)
    loc = cluster.mount(srv, "--policy", "locality", "--local-server", "0")
    sym = cluster.mount(srv, "--local-server", "1")
    data = payload(3 * STRIPE, seed=5)
    write_file(loc.p("x"), data)
    assert read_file(sym.p("x")) == data
    st = sym.stats()["locality"]
    assert st["replications"] == 0 and st["gets_remote"] == 3
    assert stripes_on(srv[1], layout(loc.p("x"))) == set()
    # and a locality mount reads a symmetric file through the hash
    write_file(sym.p("y"), data)
    assert read_file(loc.p("y")) == data
    assert loc.stats()["locality"]["replications"] == 0
