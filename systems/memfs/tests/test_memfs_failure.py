"""MemFS under server failure: a dead (kill -9) or hung (SIGSTOP) memcached
server makes I/O fail with EIO within a bounded time; no hang, and never
wrong bytes (a missing stripe is EIO, not zeros, not a short file)."""
import errno
import json
import signal
import subprocess
import sys
import time

import pytest

from memfs_testlib import Memcached, layout, stripes_on
from memfs_helpers import STRIPE, payload, write_file

# Runs in a child process so that a hang would fail the test (timeout), not
# hang it.  Reads every stripe with readahead disabled (POSIX_FADV_RANDOM: no
# request straddles two stripes), then the whole file sequentially.
READER = r"""
import errno, json, os, sys, time
path, ref, ss = sys.argv[1], open(sys.argv[2], "rb").read(), int(sys.argv[3])
out = {"stripes": {}, "t0": time.time()}
fd = os.open(path, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
for n in range((len(ref) + ss - 1) // ss):
    t = time.time()
    try:
        d = os.pread(fd, ss, n * ss)
        res = "ok" if d == ref[n * ss:(n + 1) * ss] else "WRONG(%d bytes)" % len(d)
    except OSError as e:
        res = errno.errorcode[e.errno]
    out["stripes"][n] = [res, time.time() - t]
os.close(fd)
t = time.time()
try:
    with open(path, "rb") as f:
        d = f.read()
    out["full"] = "ok" if d == ref else "WRONG(%d bytes)" % len(d)
except OSError as e:
    out["full"] = errno.errorcode[e.errno]
out["full_s"] = time.time() - t
out["total_s"] = time.time() - out["t0"]
print(json.dumps(out))
"""


def _file_with_meta_on(srv, mount, idx, tmp_path, nfiles=8, size=12 * STRIPE + 99):
    """Write files and return one whose metadata key lives on server idx
    (so that it can still be opened when the other server is gone)."""
    datas = {}
    for i in range(nfiles):
        datas[f"k{i}"] = payload(size, seed=i)
        write_file(mount.p(f"k{i}"), datas[f"k{i}"])
    present = srv[idx].has(f"M/{n}" for n in datas)
    name = next(n for n, ok in zip(datas, present) if ok)
    ref = tmp_path / "ref.bin"
    ref.write_bytes(datas[name])
    return name, ref


def _run_reader(path, ref, timeout=60):
    r = subprocess.run([sys.executable, "-c", READER, path, str(ref), str(STRIPE)],
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("how", ["kill9", "sigstop"])
def test_dead_server_gives_eio_in_bounded_time(cluster, tmp_path, how):
    srv = cluster.servers(2)
    a = cluster.mount(srv, "--timeout-ms", "1000", name="A")
    b = cluster.mount(srv, "--timeout-ms", "1000", name="B")
    name, ref = _file_with_meta_on(srv, a, 0, tmp_path)
    on_dead = stripes_on(srv[1], layout(a.p(name)))
    assert 0 < len(on_dead) < 13
    if how == "kill9":
        srv[1].kill()
    else:
        srv[1].signal(signal.SIGSTOP)
    out = _run_reader(b.p(name), ref)
    for n, (res, secs) in out["stripes"].items():
        want = "EIO" if int(n) in on_dead else "ok"
        assert res == want, (n, res, sorted(on_dead))
    assert out["full"] == "EIO"          # never a short or zero-filled file
    assert out["total_s"] < 10 + (len(on_dead) * 2.5 if how == "sigstop" else 0), out
    assert max(secs for _, secs in out["stripes"].values()) < 10
    st = b.stats()
    assert st["errors"]["eio"] >= 1 and st["errors"]["storage"] >= 1
    assert "EIO" in b.log() or "failed" in b.log()


def test_write_to_dead_server_reports_eio(cluster):
    srv = cluster.servers(2)
    a = cluster.mount(srv, "--timeout-ms", "1000")
    srv[1].kill()
    failures = 0
    t0 = time.time()
    for i in range(6):  # some creates fail at once (metadata on the dead server)
        try:
            write_file(a.p(f"w{i}"), payload(16 * STRIPE, seed=i))
        except OSError as e:
            assert e.errno == errno.EIO, e
            failures += 1
    assert failures == 6  # 16 stripes each: some always hash to the dead server
    assert time.time() - t0 < 30
    assert a.stats()["errors"]["storage"] >= 1


def test_full_server_reports_enospc(cluster):
    """memcached -M (no eviction): a full server makes close() fail, it never
    silently evicts older stripes."""
    srv = [Memcached(mem_mb=8, item_max="1m")]
    cluster.servers_started += srv
    a = cluster.mount(srv)
    with pytest.raises(OSError) as ei:
        write_file(a.p("toobig"), payload(64 * STRIPE, seed=1))
    assert ei.value.errno in (errno.ENOSPC, errno.EIO)
    assert a.stats()["errors"]["enospc"] + a.stats()["errors"]["storage"] >= 1


def test_item_limit_too_small_reports_enospc(cluster):
    """memcached -I must exceed the stripe size (+ key and item header):
    a 1 MiB stripe does not fit into -I 1m, and the writer is told so."""
    srv = [Memcached(mem_mb=64, item_max="1m")]
    cluster.servers_started += srv
    a = cluster.mount(srv, "--stripe-size", "1m")
    with pytest.raises(OSError) as ei:
        write_file(a.p("big"), payload(3 * (1 << 20), seed=2))
    assert ei.value.errno == errno.ENOSPC
    assert a.stats()["errors"]["enospc"] >= 1
    write_file(a.p("fits"), payload(1000, seed=3))  # partial stripes still fit


def test_close_with_pending_prefetch_does_not_wait(cluster):
    """close() of a read handle drops its queued prefetches and detaches the
    running ones (the last to finish frees the handle) instead of waiting
    for them.  A SIGSTOPped server keeps the prefetches of its stripes
    running (--timeout-ms 30 s): the release must complete while it is
    still stopped, and afterwards every byte reads back right."""
    import os
    srv = cluster.servers(2)
    a = cluster.mount(srv)
    b = cluster.mount(srv, "--timeout-ms", "30000")
    data = payload(32 * STRIPE + 99, seed=4242)
    write_file(a.p("pf"), data)
    lay = layout(b.p("pf"))
    on = [stripes_on(s, lay) for s in srv]
    live = next(i for i in (0, 1) if 0 in on[i])
    hung = srv[1 - live]
    assert on[1 - live] & set(range(1, 15)), on  # some prefetched stripes are on the hung server
    b.reset_stats()
    fd = os.open(b.p("pf"), os.O_RDONLY)  # the record is read now, before the stop
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # one FUSE request, no kernel readahead
        hung.signal(signal.SIGSTOP)
        try:
            # stripe 0 lives on the live server: fetched inline; stripes 1..14 prefetched
            assert os.pread(fd, 4096, 0) == data[:4096]
        finally:
            os.close(fd)
        released = False
        try:
            deadline = time.time() + 10
            while time.time() < deadline and not released:
                released = b.stats()["wait"]["release_read_count"] == 1
                time.sleep(0.05)
            st = b.stats()
        finally:
            hung.signal(signal.SIGCONT)
    except BaseException:
        hung.signal(signal.SIGCONT)
        raise
    assert released, "release of the read handle waited for prefetches of a stopped server"
    assert st["open_files"]["read"] == 0
    # a prefetch of a stripe on the stopped server cannot have finished: it
    # was either still queued (dropped) or running (its handle detached)
    assert st["pool"]["read_cancelled"] + st["pool"]["read_detached"] >= 1, st["pool"]
    assert st["pool"]["read_detached"] <= 1
    assert st["stripes"]["prefetch_issued"] == 14 and st["wait"]["inline_fetch_count"] == 1
    # the detached jobs finish after SIGCONT; reads on the same mount are right
    with open(b.p("pf"), "rb") as f:
        assert f.read() == data
    with open(b.p("pf"), "rb") as f:  # and open/read/close again, with prefetches in flight
        assert f.read(3 * STRIPE) == data[:3 * STRIPE]
    with open(b.p("pf"), "rb") as f:
        f.seek(20 * STRIPE + 5)
        assert f.read(STRIPE) == data[20 * STRIPE + 5:21 * STRIPE + 5]
