"""One distributed copy per file even where the ranks' own fstat disagree.

A file is keyed by path + size + mtime; the coordinator (rank 0) decides the key
from its own stat, so ranks whose clients see different mtimes (the attribute
caches of a network file system) still share one copy. The test hook
MPIFUSE_TEST_MTIME_SKEW_NS adds rank x skew to the mtime each rank sends with
its open; with the key taken from each rank's own fstat (the old behaviour) every
rank would get its own copy: files_created 3 and the file read 3 times from the
source."""
import os

import pytest

from mpifuse_testlib import MIB, sha256_file
from mpifuse_testlib import built, fsjob  # noqa: F401  (pytest fixtures)

MODES = [("osr", ""), ("osr", "meta_buffer=off"), ("osr-refined", ""), ("bcast", ""),
         ("bcast", "bcast_on_demand=1,block=128K,bcast_depth=1")]


@pytest.mark.parametrize("mode,opts", MODES, ids=[f"{m}-{o}" if o else m for m, o in MODES])
def test_ranks_with_different_mtimes_share_one_copy(fsjob, tmp_path, mode, opts):
    src = tmp_path / "src"
    src.mkdir()
    size = 3 * MIB + 17
    (src / "f.bin").write_bytes(os.urandom(size))
    want = sha256_file(src / "f.bin")
    job = fsjob(mode, 3, src, opts=opts, env={"MPIFUSE_TEST_MTIME_SKEW_NS": "1000000000"})
    for r in range(3):  # one rank after the other: the copy lingers (linger=60) between them
        assert sha256_file(os.path.join(job.mount(r), "f.bin")) == want
    st = [job.stats(r) for r in range(3)]
    assert [s["files_created"] for s in st] == [1, 1, 1], st
    assert sum(s["bytes_read_source"] for s in st) == size
    assert job.stop() == 0, job.log()


def test_a_changed_file_gets_a_new_copy(fsjob, tmp_path):
    """The coordinator's key still follows the source: rewritten -> a second copy, new content."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "f.bin").write_bytes(os.urandom(MIB))
    job = fsjob("osr", 2, src, opts="attr_timeout=0")
    first = sha256_file(src / "f.bin")
    assert sha256_file(os.path.join(job.mount(1), "f.bin")) == first
    (src / "f.bin").write_bytes(os.urandom(MIB))
    os.utime(src / "f.bin", ns=(1, 10**18))
    second = sha256_file(src / "f.bin")
    assert second != first
    assert sha256_file(os.path.join(job.mount(1), "f.bin")) == second
    assert job.stats(0)["files_created"] == 2
    assert job.stop() == 0, job.log()


def test_meta_buffer_off_is_osr_without_the_buffer(fsjob, built, tmp_path):
    """meta_buffer=off: no metadata work, no cache (a second read fetches the remote bytes again),
    the same bytes; with the buffer the second read is local. Only osr has the option."""
    import subprocess

    from mpifuse_testlib import BIN, mpi_env
    src = tmp_path / "src"
    src.mkdir()
    size = 4 * MIB
    (src / "f.bin").write_bytes(os.urandom(size))
    want = sha256_file(src / "f.bin")
    got = {}
    for opts in ("", "meta_buffer=off"):
        job = fsjob("osr", 2, src, opts=opts)
        p = os.path.join(job.mount(1), "f.bin")
        assert sha256_file(p) == want
        first = job.stats(1)
        assert sha256_file(p) == want
        second = job.stats(1)
        got[opts] = (first, second)
        assert first["meta_buffer"] is (opts == "")
        assert job.stop() == 0, job.log()
    on, off = got[""], got["meta_buffer=off"]
    remote = size - size // 2  # rank 1 owns the second half; the first half is remote
    assert on[0]["bytes_fetched_remote"] == remote and on[1]["bytes_fetched_remote"] == remote
    assert off[0]["bytes_fetched_remote"] == remote and off[1]["bytes_fetched_remote"] == 2 * remote
    assert on[0]["meta_time_s"] > 0 and off[1]["meta_time_s"] == 0
    r = subprocess.run(["mpirun", "-n", "1", BIN, "--mode", "osr-refined", "-o", "meta_buffer=off", str(src),
                        str(tmp_path / "m{rank}")], env=mpi_env(), capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "meta_buffer=off is an osr option" in r.stdout + r.stderr


def refused_elsewhere(tmp_path, modes, opt: str, why: str):
    """Every mode in `modes` refuses `-o opt` at start-up, saying `why`; returns an empty source
    directory (tmp_path/src) for the mode that takes the option."""
    import subprocess

    from mpifuse_testlib import BIN, mpi_env
    src = tmp_path / "src"
    src.mkdir()
    for mode in modes:
        r = subprocess.run(["mpirun", "-n", "1", BIN, "--mode", mode, "-o", opt, str(src),
                            str(tmp_path / "m{rank}")], env=mpi_env(), capture_output=True, text=True, timeout=60)
        assert r.returncode != 0 and why in r.stdout + r.stderr, (mode, r.stderr)
    return src


def test_zero_copy_only_where_a_buffer_has_an_fd(fsjob, tmp_path):
    """zero_copy (ours) exists for bcast only: the other modes refuse it at start-up, naming it; with
    it, bcast hands out every byte by its buffer's fd"""
    src = refused_elsewhere(tmp_path, ("osr", "osr-refined", "passthrough"), "zero_copy=on",
                            "zero_copy is a bcast option")
    # bcast: every byte read went out by fd (not through a copy), and the bytes are right
    (src / "z.bin").write_bytes(os.urandom(3 * MIB + 7))
    want = sha256_file(src / "z.bin")
    for opts, by_fd in (("zero_copy=on", True), ("", False)):
        job = fsjob("bcast", 2, src, opts=opts)
        assert all(sha256_file(f"{m}/z.bin") == want for m in job.mounts)
        for r in range(2):
            st = job.stats(r)
            assert st["zero_copy"] is by_fd and st["read_bytes"] >= 3 * MIB + 7, st
            assert st["zero_copy_read_bytes"] == (st["read_bytes"] if by_fd else 0), st
        assert job.stop() == 0


def test_map_source_own_part_by_mapping_and_fd(fsjob, tmp_path):
    """map_source (ours) is an osr-refined option: the other modes refuse it at start-up, naming it.
    With it every rank still reads its own part from the source once (populating the mapping: 1x
    summed over ranks), the bytes are right on every rank, and with splice the reads of a rank's own
    part (and only those) go out by the source file's fd: at n=1 every byte, at n=2 at most the
    rank's half plus the requests straddling nothing else."""
    import time

    src = refused_elsewhere(tmp_path, ("osr", "bcast", "passthrough"), "map_source=on",
                            "map_source is an osr-refined option")
    size = 6 * MIB + 5
    (src / "z.bin").write_bytes(os.urandom(size))
    want = sha256_file(src / "z.bin")
    for n, opts in ((1, "map_source=on,splice=on"), (2, "map_source=on,splice=on"), (1, "map_source=on"),
                    (1, "")):
        job = fsjob("osr-refined", n, src, opts=opts)
        assert all(sha256_file(f"{m}/z.bin") == want for m in job.mounts), (n, opts)
        for _ in range(100):  # map_source: the open does not wait for the loader's populate
            sts = [job.stats(r) for r in range(n)]
            if sum(st["bytes_read_source"] for st in sts) >= size:
                break
            time.sleep(0.05)
        assert sum(st["bytes_read_source"] for st in sts) == size, (n, opts, sts)
        for st in sts:
            assert st["map_source"] is ("map_source" in opts) and st["read_bytes"] >= size, st
            by_fd = st["zero_copy_read_bytes"]
            if "splice" not in opts:
                assert by_fd == 0, st
            elif n == 1:
                assert by_fd == st["read_bytes"], st  # the whole file is the rank's own part
            else:
                part = (size + n - 1) // n
                assert 0 < by_fd <= part + 4096 and by_fd < st["read_bytes"], st  # own part only
        assert job.stop() == 0
