"""MemFS over FUSE-over-io_uring (--transport=io_uring, issue 30; tools/fuseuring): data written through
the ring reads back byte for byte, every READ/WRITE went through the ring (/.memfs-stats' transport:
ring_reqs > 0, dev_rw_reqs == 0), and the default (the paper's /dev/fuse) never touches a ring."""
import json
import subprocess
import threading
import time

import pytest
from memfs_helpers import payload, read_file, write_file
from memfs_testlib import MEMFS

from tools.fuseceiling.ceiling import URING_PARAM, uring_offered


def _built_with_uring() -> bool:
    return b"FUSE over io_uring" in MEMFS.read_bytes()


def _uring_or_skip():
    on, msg = uring_offered()  # root: switch the kernel's parameter on (what ./repro setup does)
    print(msg)
    if not on:
        pytest.skip(f"{URING_PARAM} is not Y here: the kernel does not offer FUSE over io_uring")
    if not _built_with_uring():
        pytest.skip("memfs built without liburing (Debian: liburing-dev)")


def test_io_uring_reads_back_what_was_written(cluster):
    _uring_or_skip()
    servers = cluster.servers(2)
    m = cluster.mount(servers, "--transport", "io_uring", "--stripe-size", "256k")
    deadline = time.time() + 10  # "mounted" is printed at INIT, the queues come up right after
    while "transport=" not in m.log() and time.time() < deadline:
        time.sleep(0.02)
    assert "transport=io_uring" in m.log(), m.log()
    sizes = [5 * (1 << 20) + 77, 3 * (1 << 20) + 4099]
    datas = [payload(n, seed=i + 3) for i, n in enumerate(sizes)]
    errs = []

    def one(i):  # two writers at once, odd request sizes (the last request short)
        try:
            write_file(m.p(f"f{i}"), datas[i], chunk=65543)
        except Exception as exc:  # noqa: BLE001 -- reported below
            errs.append(exc)

    ts = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs
    for i, d in enumerate(datas):
        got = read_file(m.p(f"f{i}"), chunk=131072)
        assert len(got) == len(d) and got == d, f"f{i}: {len(got)} of {len(d)} bytes, equal={got == d}"
    st = m.stats()
    tr = st["transport"]
    assert tr["transport"] == "io_uring" and tr["requested"] == 1, tr
    assert tr["ring_reqs"] > 0 and tr["dev_rw_reqs"] == 0, tr
    assert st["io"]["bytes_written"] >= sum(sizes)
    m.unmount()
    # at unmount the daemon prints the transport's counters: the same story
    last = [json.loads(x.split("memfs: ", 1)[1]) for x in m.log().splitlines() if '"ring_reqs"' in x][-1]
    assert last["ring_reqs"] >= tr["ring_reqs"] and last["dev_rw_reqs"] == 0


def test_default_transport_is_dev_fuse(cluster):
    servers = cluster.servers(1)
    m = cluster.mount(servers)
    data = payload(1 << 20, seed=9)
    write_file(m.p("x"), data)
    assert read_file(m.p("x")) == data
    tr = m.stats()["transport"]
    assert tr["transport"] == "dev-fuse" and tr["ring_reqs"] == 0, tr
    assert "transport=io_uring" not in m.log()


@pytest.mark.parametrize("args,why", [(["--transport=io_uring", "--splice"], "--splice needs --transport=dev-fuse"),
                                      (["--transport", "ring"], "--transport must be dev-fuse or io_uring")])
def test_refused_combinations(tmp_path, args, why):
    r = subprocess.run([str(MEMFS), "--servers", "127.0.0.1:1", *args, str(tmp_path)], capture_output=True,
                       text=True, timeout=10)
    assert r.returncode == 2 and why in r.stderr, r.stderr
