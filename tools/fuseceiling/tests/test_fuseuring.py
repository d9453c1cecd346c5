"""FUSE over io_uring (tools/fuseuring) under the ceiling, on real mounts: bytes written through the
ring are the bytes read back and every READ/WRITE went through the ring (none read from /dev/fuse);
with the kernel's enable_uring off, `--transport io_uring` says why and serves through /dev/fuse;
the driver's records carry the data check and the summary is recomputed from them. Skips say the
exact reason (no FUSE, a kernel without the parameter, not root, the kernel's refusal with its
errno). No speed is asserted."""

import os
import subprocess
import threading
import time

import pytest

from tools.fuseceiling import transports
from tools.fuseceiling.ceiling import BIN, HERE, URING_PARAM, MiB, Mount, enable_uring, fuse_available, uring_offered

why = fuse_available()
pytestmark = pytest.mark.skipif(why is not None, reason=why or "")

# the parameter is global to the kernel: the fallback test turns it off for a moment
_param_lock = threading.Lock()


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", str(HERE)], check=True)
    assert BIN.exists()


def _built_with_uring() -> bool:
    return b"FUSE_IO_URING_CMD_REGISTER" in BIN.read_bytes()


@pytest.fixture
def uring_on():
    """enable_uring=Y where this process may, else skip with what was found."""
    if not _built_with_uring():
        pytest.skip("fuseceiling built without liburing (Debian: liburing-dev)")
    on, msg = uring_offered()
    if not on:
        pytest.skip(msg)
    return msg


def _require_ring(m: Mount) -> dict:
    s = m.stats()
    t = s["transport"]
    if t["transport"] != "io_uring":
        pytest.skip(f"the kernel refused FUSE over io_uring: {t['message']}")
    return s


def _possible_cpus() -> int:
    n = 0
    for part in open("/sys/devices/system/cpu/possible").read().strip().split(","):
        lo, _, hi = part.partition("-")
        n = max(n, int(hi or lo) + 1)
    return n


def _write_odd(path, data, step=65536 + 7):
    with open(path, "wb") as w:
        for i in range(0, len(data), step):
            w.write(data[i:i + step])


@pytest.mark.parametrize("opts", [[], ["--direct-io"], ["--writeback-cache"], ["-s"],
                                  ["--max-write", "128k", "--max-read", "128k"], ["--uring-depth", "1"]])
def test_uring_written_bytes_read_back(tmp_path, uring_on, opts):
    data = os.urandom(3 * MiB + 123)
    with Mount(tmp_path / "m", ["--transport", "io_uring", *opts]) as m:
        _require_ring(m)
        f = m.mountpoint / "a"
        _write_odd(f, data)
        assert f.stat().st_size == len(data)
        # a new open drops the page cache (no keep_cache): the bytes come back through FUSE
        assert f.read_bytes() == data
        s = m.stats()
        t = s["transport"]
        assert s["write_bytes"] >= len(data) and s["read_bytes"] >= len(data)
        assert t["dev_rw_reqs"] == 0, t  # no READ/WRITE came through /dev/fuse
        assert t["ring_reqs"] >= s["read_reqs"] + s["write_reqs"] > 0
        assert t["ring_errors"] == 0
        assert t["queues"] == _possible_cpus()  # the kernel's queue count: one per possible CPU
        assert t["depth"] == (1 if "--uring-depth" in opts else 4)
        assert s["fuse"]["max_write"] == (128 << 10 if "--max-write" in opts else MiB)
        os.unlink(f)
        assert not f.exists() and m.stats()["files"] == 0


def test_uring_concurrent_streams_and_preload(tmp_path, uring_on):
    """8 threads write and read back their own files at once (requests from both CPUs, several
    entries per queue in use); a preloaded file reads back as the pattern."""
    from tools.fuseceiling.ceiling import pattern
    size = MiB + 5
    with Mount(tmp_path / "m", ["--transport", "io_uring"], preload=[("p", size)]) as m:
        _require_ring(m)
        datas = [os.urandom(2 * MiB + i) for i in range(8)]
        errs = []

        def work(i):
            try:
                f = m.mountpoint / f"t{i}"
                _write_odd(f, datas[i], 4096 * (i + 1) + 1)
                if f.read_bytes() != datas[i]:
                    errs.append(f"t{i}: bytes differ")
            except Exception as e:  # noqa: BLE001 -- reported below
                errs.append(f"t{i}: {e!r}")

        th = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in th:
            t.start()
        for t in th:
            t.join()
        assert errs == []
        assert (m.mountpoint / "p").read_bytes() == pattern(size)
        assert "fuseceiling: transport=io_uring: " in m.stderr()
        t = m.stats()["transport"]
        assert t["dev_rw_reqs"] == 0 and t["ring_errors"] == 0


def test_uring_splice_all_is_refused(tmp_path):
    r = subprocess.run([str(BIN), "-f", "--transport", "io_uring", "--splice", "all", str(tmp_path)],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and "--splice all needs --transport dev-fuse" in r.stderr
    r = subprocess.run([str(BIN), "-f", "--transport", "carrier-pigeon", str(tmp_path)],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and "--transport must be" in r.stderr


def test_fallback_message_when_enable_uring_off(tmp_path):
    """With enable_uring=N the kernel does not offer FUSE_OVER_IO_URING at INIT: fuseceiling says so,
    names the parameter, and serves through /dev/fuse (bytes still read back). The parameter is
    restored afterwards."""
    if not _built_with_uring():
        pytest.skip("fuseceiling built without liburing (Debian: liburing-dev)")
    if not URING_PARAM.exists():
        pytest.skip(f"no {URING_PARAM}: a kernel without CONFIG_FUSE_IO_URING")
    if not os.access(URING_PARAM, os.W_OK):
        pytest.skip(f"{URING_PARAM} not writable (root only)")
    with _param_lock:
        before = URING_PARAM.read_text().strip()
        try:
            URING_PARAM.write_text("N\n")
            data = os.urandom(MiB + 3)
            with Mount(tmp_path / "m", ["--transport", "io_uring"]) as m:
                f = m.mountpoint / "a"
                _write_odd(f, data)
                assert f.read_bytes() == data
                s = m.stats()
                err = m.stderr()
            assert "did not offer FUSE_OVER_IO_URING" in err and "enable_uring=N" in err, err
            assert "serving through /dev/fuse reads" in err
            t = s["transport"]
            assert t["transport"] == "dev-fuse" and t["requested"] == 1 and t["offered"] == 0
            assert t["ring_reqs"] == 0 and t["dev_rw_reqs"] >= s["read_reqs"] + s["write_reqs"] > 0
        finally:
            URING_PARAM.write_text(before + "\n")
        assert URING_PARAM.read_text().strip() == before


def test_enable_uring_on_a_parameter_file(tmp_path):
    p = tmp_path / "enable_uring"
    p.write_text("N\n")
    assert enable_uring(p) == f"enable_uring: set to Y (was N) in {p}"
    assert p.read_text().strip() == "Y"
    assert enable_uring(p).startswith("enable_uring: already Y")
    assert "not readable" in enable_uring(tmp_path / "missing")


def test_driver_records_and_summary(tmp_path, uring_on):
    recs = []
    for t in ("dev-fuse", "io_uring"):
        for op in ("write", "read"):
            r = transports.measure(tmp_path / "m", t, op, 128 << 10, 2, 2 * MiB, [])
            if t == "io_uring" and r["transport"]["transport"] != "io_uring":
                pytest.skip(f"the kernel refused FUSE over io_uring: {r['transport']['message']}")
            assert r["bytes"] == 2 * 2 * MiB and r["ok"] and r["check"]["equal"]
            assert r["check"]["bytes"] == transports.CHECK_BYTES
            if op == "read":
                assert r["check"]["pattern_sha256_equal"]
            assert r["ctxsw"]["fuse_requests"] == (r["fs"]["read_reqs"] if op == "read" else r["fs"]["write_reqs"])
            assert r["cpu"]["daemon_s"] >= 0 and r["cpu"]["clients_s"] > 0
            recs.append(r)
    bad = dict(recs[0], ok=False, mib_s=1e9)  # a failed check is never summarized
    rows = transports.summarize([*recs, bad])
    assert len(rows) == 4 and all(row["n"] == 1 for row in rows)
    by = {(row["transport"], row["op"]): row for row in rows}
    for r in recs:
        row = by[(r["transport_requested"], r["op"])]
        assert row["mib_s"] == r["mib_s"]
        assert row["daemon_cpu_s_per_gib"] == r["cpu"]["daemon_s"] / (r["bytes"] / transports.GiB)


def test_refused_register_names_step_and_errno(tmp_path, uring_on, monkeypatch):
    """A REGISTER the kernel refuses (here: a payload buffer smaller than max_write, which the kernel
    rejects with EINVAL) is reported with its step and errno, and the mount serves through /dev/fuse."""
    monkeypatch.setenv("FUSEURING_TEST_PAYLOAD", "4096")
    data = os.urandom(MiB + 11)
    with Mount(tmp_path / "m", ["--transport", "io_uring"]) as m:
        f = m.mountpoint / "a"
        _write_odd(f, data)
        assert f.read_bytes() == data
        s = m.stats()
        err = m.stderr()
    t = s["transport"]
    if not t["offered"]:  # enable_uring switched off meanwhile (the fallback test does, for a moment)
        pytest.skip(f"the kernel did not offer FUSE over io_uring: {t['message']}")
    assert t["transport"] == "dev-fuse" and t["ring_reqs"] == 0
    want = "io_uring refused: queue 0 of "
    assert want in err and "step FUSE_IO_URING_CMD_REGISTER: errno 22 (Invalid argument); serving through " \
        "/dev/fuse reads" in err, err
    assert t["dev_rw_reqs"] >= s["read_reqs"] + s["write_reqs"] > 0


def test_two_threads_per_queue(tmp_path, uring_on, monkeypatch):
    """FUSEURING_THREADS_PER_QUEUE=2: two rings register entries on each kernel queue (the second
    thread unpinned); bytes from 4 concurrent writers read back equal, all through the ring."""
    monkeypatch.setenv("FUSEURING_THREADS_PER_QUEUE", "2")
    with Mount(tmp_path / "m", ["--transport", "io_uring"]) as m:
        s = _require_ring(m)
        assert s["transport"]["threads_per_queue"] == 2
        datas = [os.urandom(MiB + 17 * i) for i in range(4)]
        th = [threading.Thread(target=_write_odd, args=(m.mountpoint / f"x{i}", datas[i])) for i in range(4)]
        for t in th:
            t.start()
        for t in th:
            t.join()
        assert [(m.mountpoint / f"x{i}").read_bytes() == datas[i] for i in range(4)] == [True] * 4
        t = m.stats()["transport"]
        assert t["dev_rw_reqs"] == 0 and t["ring_errors"] == 0 and t["ring_reqs"] > 0
        # the message is written once fuseuring_start has heard from every queue thread, which can be
        # after the first requests went through the ring (seen at load 6 on 2 cores: still the initial one)
        deadline = time.time() + 10
        while t["message"] == "transport=dev-fuse" and time.time() < deadline:
            time.sleep(0.05)
            t = m.stats()["transport"]
        assert f"{_possible_cpus()} queues x 2 threads x 4 entries" in t["message"]
