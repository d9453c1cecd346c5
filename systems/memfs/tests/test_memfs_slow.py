"""Slow MemFS tests (skipped with --quick): stripe-size
sweep with odd buffer/thread settings, and 128 MiB files through 4 mounts."""
import threading

import pytest

from memfs_testlib import layout, stripe_counts
from memfs_helpers import MiB, check_random_preads, file_sha, payload, read_file, sha, write_file


@pytest.mark.slow
@pytest.mark.parametrize("stripe", [4096, 65536, 262144, 1 << 20, 2 << 20, 4 << 20])
def test_stripe_size_sweep(cluster, stripe):
    srv = cluster.servers(3)  # -I 8m: fits 4 MiB stripes
    opts = ["--stripe-size", str(stripe)]
    a = cluster.mount(srv, *opts)
    b = cluster.mount(srv, *opts, "--threads", "2", "--buffer-size", str(stripe))
    for size in (0, 1, stripe - 1, stripe, stripe + 1, 5 * stripe + 13, 24 * MiB + 7):
        data = payload(size, seed=size ^ stripe)
        name = f"s{size}"
        write_file(b.p(name), data, chunk=100000)   # 2 slots, 2 threads
        assert read_file(a.p(name)) == data
        assert file_sha(b.p(name)) == sha(data)
        check_random_preads(a.p(name), data, n=10)
        lay = layout(a.p(name))
        assert lay["stripe_size"] == stripe and sum(stripe_counts(srv, lay)) == lay["stripes"]


@pytest.mark.slow
def test_four_mounts_128mib_n_to_1_and_1_to_1(cluster):
    srv = cluster.servers(4, mem_mb=1024)
    mounts = [cluster.mount(srv) for _ in range(4)]
    datas = [payload(128 * MiB, seed=i) for i in range(4)]
    errs = []

    def run(fn, *args):
        try:
            fn(*args)
        except Exception as e:  # pragma: no cover
            errs.append(repr(e))

    ts = [threading.Thread(target=run, args=(write_file, m.p(f"b{i}"), d))
          for i, (m, d) in enumerate(zip(mounts, datas))]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert not errs
    want = [sha(d) for d in datas]
    # 1-1 read: every mount reads another mount's file; N-1: all read b0
    got = {}

    def read_next(i, m):
        got[("11", i)] = file_sha(m.p(f"b{(i + 1) % 4}"))

    ts = [threading.Thread(target=run, args=(read_next, i, m))
          for i, m in enumerate(mounts)]
    ts += [threading.Thread(target=run, args=(lambda i, m: got.__setitem__(("n1", i), file_sha(m.p("b0"))), i, m))
           for i, m in enumerate(mounts)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert not errs
    for i in range(4):
        assert got[("11", i)] == want[(i + 1) % 4] and got[("n1", i)] == want[0]
    check_random_preads(mounts[3].p("b1"), datas[1], n=20)
    for i in range(4):
        counts = stripe_counts(srv, layout(mounts[0].p(f"b{i}")))
        assert sum(counts) == 256 and max(counts) - min(counts) <= 16, counts
