"""mpifuse over FUSE-over-io_uring (-o io_uring=on, issue 30; tools/fuseuring): n ranks on this host,
each rank's mount served through its own per-CPU io_uring queues while its FUSE callbacks wait on MPI
(osr-refined fetches other ranks' parts): every file read through every mount, two readers at once,
equals the source byte for byte; each rank's stats say the READs came through the ring (ring_reqs > 0,
dev_rw_reqs == 0); without the option the transport is /dev/fuse (ring_reqs 0)."""
import os
import threading

import pytest
from mpifuse_testlib import LIB, SIZES, read_bytes
from mpifuse_testlib import built, fsjob, source  # noqa: F401  (pytest fixtures)

from tools.fuseceiling.ceiling import URING_PARAM, uring_offered


def _uring_or_skip():
    on, _ = uring_offered()  # root: what ./repro setup does
    if not on:
        pytest.skip(f"{URING_PARAM} is not Y here: the kernel does not offer FUSE over io_uring")
    with open(LIB, "rb") as f:
        if b"transport=io_uring" not in f.read():
            pytest.skip("libmpifuse built without liburing (Debian: liburing-dev)")


def _read_all_twice_at_once(job, src):
    """Every rank's mount, every file, two readers at once (different CPUs' queues): (mismatches)."""
    bad = []

    def reader(r, names):
        for name in names:
            got = read_bytes(os.path.join(job.mount(r), name))
            want = read_bytes(os.path.join(src, name))
            if got != want:
                bad.append(f"rank {r} {name}: {len(got)} of {len(want)} bytes, equal={got == want}")

    names = [f"f{s}" for s in SIZES] + ["sub/nested.bin"]
    ts = [threading.Thread(target=reader, args=(r, names if k == 0 else names[::-1]))
          for r in range(job.n) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return bad


@pytest.mark.parametrize("mode,n,opts", [
    ("osr-refined", 3, "chunk=1M,cache=2M"),                 # remote parts fetched over MPI in the callback
    ("osr-refined", 2, "map_source=on,splice=on,chunk=1M"),  # fd replies (splice dropped over the ring)
    ("passthrough", 1, ""),
])
def test_reads_back_equal_through_the_ring(fsjob, source, mode, n, opts):
    _uring_or_skip()
    job = fsjob(mode, n, source, opts=",".join(x for x in ("io_uring=on", opts) if x))
    assert "transport=io_uring" in job.log(), job.log()
    assert not _read_all_twice_at_once(job, source)
    for r in range(n):
        tr = job.stats(r)["transport"]
        assert tr["transport"] == "io_uring" and tr["requested"] == 1, (r, tr)
        assert tr["ring_reqs"] > 0 and tr["dev_rw_reqs"] == 0, (r, tr)
    assert job.stop() == 0, job.log()


def test_default_is_dev_fuse(fsjob, source):
    job = fsjob("osr-refined", 2, source)
    assert not _read_all_twice_at_once(job, source)
    tr = job.stats(1)["transport"]
    assert tr["transport"] == "dev-fuse" and tr["ring_reqs"] == 0 and tr["requested"] == 0, tr
    assert "transport=io_uring" not in job.log()
    assert job.stop() == 0
