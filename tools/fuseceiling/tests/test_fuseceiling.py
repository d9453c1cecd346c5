"""tools/fuseceiling on a real FUSE mount: bytes written are the bytes read back (page cache, direct I/O,
writeback cache, splice), a preloaded file reads back as the documented pattern, the counters count the
requests, the stream driver moves the bytes it says. No speed is asserted."""

import hashlib
import os
import subprocess

import pytest

from tools.fuseceiling.ceiling import BIN, HERE, MiB, Mount, fuse_available, measure_ceiling, pattern, \
    pattern_sha256, run_streams

why = fuse_available()
pytestmark = pytest.mark.skipif(why is not None, reason=why or "")


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", str(HERE)], check=True)
    assert BIN.exists()


def test_pattern_is_splitmix64():
    # the first two words, computed by hand from splitmix64(1), splitmix64(2)
    assert pattern(16).hex() == "c15c0289ec2d0a91ce56971cde355897"
    assert len(pattern(13)) == 13 and pattern(13) == pattern(16)[:13]


@pytest.mark.parametrize("opts", [[], ["--direct-io"], ["--writeback-cache"], ["--splice", "all"],
                                  ["--splice", "none", "-s"], ["--max-write", "128k", "--max-read", "128k"]])
def test_written_bytes_read_back(tmp_path, opts):
    data = os.urandom(3 * MiB + 123)
    with Mount(tmp_path / "m", opts) as m:
        f = m.mountpoint / "a"
        with open(f, "wb") as w:
            for i in range(0, len(data), 65536 + 7):  # odd request sizes
                w.write(data[i:i + 65536 + 7])
        assert f.stat().st_size == len(data)
        assert f.read_bytes() == data
        s = m.stats()
        assert s["write_bytes"] >= len(data) and s["read_bytes"] >= len(data)
        assert s["fuse"]["max_write"] == (128 << 10 if "--max-write" in opts else MiB)
        if "--writeback-cache" in opts:
            assert s["fuse"]["writeback_cache"] == 1
        if "--direct-io" in opts:
            assert s["fuse"]["direct_io"] == 1
        if opts[:2] == ["--splice", "all"]:
            assert s["fuse"]["splice_write"] == 1
        if opts[:2] == ["--splice", "none"]:
            assert s["fuse"]["splice_read"] == 0
        os.unlink(f)
        assert not f.exists() and m.stats()["files"] == 0


def test_preload_reads_back_as_pattern(tmp_path):
    size = MiB + 5
    with Mount(tmp_path / "m", [], preload=[("p", size)]) as m:
        got = (m.mountpoint / "p").read_bytes()
        assert len(got) == size
        assert hashlib.sha256(got).hexdigest() == pattern_sha256(size)
        assert m.stats()["write_reqs"] == 0  # no write was needed


def test_preload_many_and_bad_options(tmp_path):
    r = subprocess.run([str(BIN), "--max-write", "2m", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 2 and "--max-write" in r.stderr
    r = subprocess.run([str(BIN), "--splice", "sometimes", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 2
    with Mount(tmp_path / "m", ["--preload-many", "s:3:4k"]) as m:
        assert sorted(os.listdir(m.mountpoint)) == [".fuseceiling-stats", "s0", "s1", "s2"]
        assert (m.mountpoint / "s2").read_bytes() == pattern(4096)


def test_run_streams_counts_bytes(tmp_path):
    r = measure_ceiling(tmp_path / "m", "write", 256 << 10, 2, 2 * MiB)
    assert r["bytes"] == 4 * MiB and r["streams"] == 2 and len(r["stream_seconds"]) == 2
    assert r["fs"]["write_bytes"] == 4 * MiB and r["mib_s"] > 0 and len(r["loadavg"]) == 3
    r = measure_ceiling(tmp_path / "m", "read", MiB, 2, 2 * MiB, ["--direct-io"], direct=True)
    assert r["bytes"] == 4 * MiB and r["fs"]["read_bytes"] == 4 * MiB
    assert r["fs"]["read_max"] == MiB  # direct I/O: one request per dd block
    with pytest.raises(RuntimeError):
        run_streams([tmp_path / "missing"], "read", MiB, MiB)
