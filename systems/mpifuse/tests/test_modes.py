"""Real mounts, every mode, 1-3 ranks: content, random access, concurrency,
read-only semantics, stats and source-traffic accounting."""
import concurrent.futures as cf
import errno
import filecmp
import json
import os
import random
import subprocess

import pytest

from mpifuse_testlib import MIB, SIZES, FsJob, alive, mounted_fuse, read_bytes, sha256_file
from mpifuse_testlib import built, fsjob, source  # noqa: F401  (pytest fixtures)

# (mode, ranks, extra options, UCX over TCP only)
CONFIGS = [
    ("osr", 1, "", False),
    ("osr", 2, "", False),
    ("osr", 3, "", True),
    ("osr-refined", 1, "", False),
    ("osr-refined", 2, "", False),
    ("osr-refined", 3, "", True),
    ("bcast", 1, "", False),
    ("bcast", 2, "", False),
    ("bcast", 3, "bcast_root=rr,block=1M", True),
    ("passthrough", 1, "", False),
    ("passthrough", 2, "", False),
    ("passthrough", 3, "splice=on", True),
    # more data than the per-file memory: small chunk cache (evictions), file backed buffers
    ("osr-refined", 3, "chunk=1M,cache=2M,mem_cap=2M", True),
    ("osr", 2, "mem_cap=1M", False),
    # the paper's Figure 5 variant: osr without the metadata buffer (every read fetches again)
    ("osr", 2, "meta_buffer=off", False),
    ("osr", 3, "meta_buffer=off,threads=off,max_read=131072,readahead_kb=-1", True),
    ("bcast", 2, "mem_cap=1M,block=1M,bcast_depth=2", False),
    # single threaded FUSE, small max_read
    ("osr-refined", 2, "threads=off,max_read=131072,chunk=0", True),
    # on-demand broadcast (paced by the readers; test_on_demand.py tests the pacing itself):
    # lockstep with a barrier per 128 KiB block, the paper's FUSE request size over TCP, and a
    # look-ahead of 3 blocks without the barrier, round-robin roots, file backed buffers
    ("bcast", 2, "bcast_on_demand=1,block=128K,bcast_depth=1", False),
    ("bcast", 3, "bcast_on_demand=1,block=128K,bcast_depth=1,max_read=131072,readahead_kb=128", True),
    ("bcast", 3, "bcast_on_demand=1,bcast_depth=3,bcast_sync=none,bcast_root=rr,block=256K,mem_cap=1M", True),
    # ours: zero_copy, reads handed to libfuse as the buffer's fd (memfd; spool file above mem_cap)
    ("bcast", 2, "zero_copy=on", False),
    ("bcast", 3, "zero_copy=on,mem_cap=1M,bcast_on_demand=1,block=128K,bcast_depth=1", True),
    # ours: osr-refined's own-part window as a private mapping of the source file (no load copy);
    # with splice, own-part reads handed to libfuse as the source fd, the rest copied
    ("osr-refined", 1, "map_source=on", False),
    ("osr-refined", 2, "map_source=on,threads=off", False),
    ("osr-refined", 3, "map_source=on,splice=on,chunk=1M,cache=2M", True),
]


def cfg_id(c):
    mode, n, opts, tcp = c
    return f"{mode}-n{n}" + ("-tcp" if tcp else "") + (f"-{opts}" if opts else "")


@pytest.fixture(scope="class", params=CONFIGS, ids=cfg_id)
def job(request, built, source, tmp_path_factory):
    mode, n, opts, tcp = request.param
    j = FsJob(mode, n, source, tmp_path_factory.mktemp("job"), opts=opts, tcp_only=tcp)
    request.addfinalizer(j.cleanup)
    j.start()
    return j


def source_hashes(source):
    return {f"f{s}": sha256_file(os.path.join(source, f"f{s}")) for s in SIZES}


class TestMode:
    def test_sha256sum_every_size_every_rank(self, job, source):
        """whole-file sequential reads with sha256sum through every mount at once"""
        want = source_hashes(source)
        names = sorted(want)
        procs = [subprocess.Popen(["sha256sum"] + names, cwd=m, stdout=subprocess.PIPE, text=True)
                 for m in job.mounts]
        for r, p in enumerate(procs):
            out, _ = p.communicate(timeout=120)
            assert p.returncode == 0, job.log()
            got = {line.split()[1]: line.split()[0] for line in out.splitlines()}
            assert got == want, f"rank {r}"

    def test_python_hash_and_sizes(self, job, source):
        want = source_hashes(source)
        for m in job.mounts:
            for name, digest in want.items():
                p = os.path.join(m, name)
                assert os.path.getsize(p) == os.path.getsize(os.path.join(source, name))
                assert sha256_file(p, bs=77777) == digest, (m, name)

    def test_random_ranges(self, job, source):
        rnd = random.Random(1234 + job.n)
        name = f"f{17 * MIB + 5}"
        data = read_bytes(os.path.join(source, name))
        size = len(data)
        part = -(-size // job.n)
        part = -(-part // 4096) * 4096
        offs = [0, size - 1, size, size + 10, part - 1, part, part + 1, 2 * part - 3, MIB - 1, MIB]
        ranges = [(o, rnd.choice([1, 2, 4095, 4096, 4097, 65536, MIB + 1, 3 * MIB])) for o in offs]
        ranges += [(rnd.randrange(size), rnd.randrange(1, 2 * MIB)) for _ in range(60)]
        for m in job.mounts:
            fd = os.open(os.path.join(m, name), os.O_RDONLY)
            try:
                for off, ln in ranges:
                    got = os.pread(fd, ln, off)
                    assert got == data[off:off + ln], (m, off, ln)
            finally:
                os.close(fd)

    def test_two_files_and_same_file_twice(self, job, source):
        a, b = f"f{17 * MIB + 5}", f"f{MIB + 3}"
        da = read_bytes(os.path.join(source, a))
        db = read_bytes(os.path.join(source, b))
        m = job.mounts[-1]
        f1 = open(os.path.join(m, a), "rb", buffering=0)
        f2 = open(os.path.join(m, b), "rb", buffering=0)
        f3 = open(os.path.join(m, a), "rb", buffering=0)  # same file, second descriptor
        f3.seek(len(da) // 2)
        got1, got2, got3 = [], [], []
        while True:
            x, y, z = f1.read(100000), f2.read(70000), f3.read(130000)
            got1.append(x)
            got2.append(y)
            got3.append(z)
            if not (x or y or z):
                break
        for f in (f1, f2, f3):
            f.close()
        assert b"".join(got1) == da
        assert b"".join(got2) == db
        assert b"".join(got3) == da[len(da) // 2:]

    def test_concurrent_readers(self, job, source):
        name = f"f{17 * MIB + 5}"
        data = read_bytes(os.path.join(source, name))

        def worker(seed):
            rnd = random.Random(seed)
            m = job.mounts[seed % job.n]
            with open(os.path.join(m, name), "rb", buffering=0) as f:
                for _ in range(20):
                    off = rnd.randrange(len(data))
                    ln = rnd.randrange(1, MIB)
                    f.seek(off)
                    if f.read(ln) != data[off:off + ln]:
                        return (m, off, ln)
            return None

        with cf.ThreadPoolExecutor(6) as ex:
            bad = [r for r in ex.map(worker, range(12)) if r]
        assert not bad

    def test_cp_and_cat(self, job, source, tmp_path):
        name = f"f{MIB + 3}"
        for r, m in enumerate(job.mounts):
            dst = tmp_path / f"copy{r}"
            subprocess.run(["cp", os.path.join(m, name), str(dst)], check=True, timeout=60)
            assert filecmp.cmp(dst, os.path.join(source, name), shallow=False)
            out = subprocess.run(f"cat {m}/{name} {m}/f4097 | sha256sum", shell=True, check=True,
                                 capture_output=True, text=True, timeout=60).stdout.split()[0]
            import hashlib
            h = hashlib.sha256(read_bytes(os.path.join(source, name))
                               + read_bytes(os.path.join(source, "f4097"))).hexdigest()
            assert out == h

    def test_metadata_passthrough(self, job, source):
        m = job.mounts[0]
        listing = sorted(os.listdir(m))
        assert listing == sorted(os.listdir(source))
        assert ".mpifuse-stats" not in listing
        assert sorted(os.listdir(os.path.join(m, "sub"))) == ["nested.bin"]
        assert os.readlink(os.path.join(m, "link")) == "f4097"
        assert read_bytes(os.path.join(m, "link")) == read_bytes(os.path.join(source, "f4097"))
        assert read_bytes(os.path.join(m, "sub", "nested.bin")) == \
            read_bytes(os.path.join(source, "sub", "nested.bin"))
        with pytest.raises(FileNotFoundError):
            os.stat(os.path.join(m, "does-not-exist"))

    def test_read_only(self, job):
        m = job.mounts[0]
        cases = [
            lambda: open(os.path.join(m, "f4097"), "r+b"),
            lambda: open(os.path.join(m, "f4097"), "ab"),
            lambda: open(os.path.join(m, "new-file"), "wb"),
            lambda: os.open(os.path.join(m, "new2"), os.O_CREAT | os.O_WRONLY, 0o644),
            lambda: os.unlink(os.path.join(m, "f4097")),
            lambda: os.mkdir(os.path.join(m, "newdir")),
            lambda: os.rmdir(os.path.join(m, "sub")),
            lambda: os.truncate(os.path.join(m, "f4097"), 0),
            lambda: os.rename(os.path.join(m, "f1"), os.path.join(m, "f1x")),
            lambda: os.symlink("x", os.path.join(m, "sl")),
            lambda: os.chmod(os.path.join(m, "f1"), 0o600),
        ]
        for i, c in enumerate(cases):
            with pytest.raises(OSError) as ei:
                c()
            assert ei.value.errno == errno.EROFS, (i, ei.value)

    def test_stats_json(self, job):
        keys = {"rank", "nranks", "mode", "bytes_read_source", "read_calls", "read_time_s", "open_time_s",
                "open_calls", "mpi_get_time_s", "mpi_get_calls", "bytes_fetched_remote", "source_read_time_s",
                "bcast_time_s", "bcast_calls", "meta_time_s", "read_wait_time_s", "since_reset_s"}
        if "cache=2M" in job.opts:  # the chunk cache is smaller than the file: it evicted
            assert sum(job.stats(r)["cache_evictions"] for r in range(job.n)) > 0
        for r in range(job.n):
            st = job.stats(r)
            assert keys <= set(st), set(st) ^ keys
            assert st["rank"] == r and st["nranks"] == job.n and st["mode"] == job.mode
            assert st["read_calls"] > 0  # earlier tests read through every mount
            old = job.stats(r, reset=True)  # returns the values before the reset
            assert old["read_calls"] >= st["read_calls"]
            assert job.stats(r)["read_calls"] == 0

    def test_source_traffic_accounting(self, job, source):
        """bytes read from the source summed over ranks: 1x (osr, osr-refined,
        bcast) or Nx (passthrough) after every rank hashed a fresh file"""
        name = f"acct-{job.mode}-{job.n}-{abs(hash(job.opts)) % 10000}.bin"
        size = 3 * MIB + 4097
        path = os.path.join(source, name)
        with open(path, "wb") as f:
            f.write(os.urandom(size))
        try:
            want = sha256_file(path)
            for r in range(job.n):
                job.stats(r, reset=True)
            for m in job.mounts:  # one after the other (within linger)
                assert sha256_file(os.path.join(m, name)) == want
            stats = [job.stats(r) for r in range(job.n)]
            total = sum(s["bytes_read_source"] for s in stats)
            factor = job.n if job.mode == "passthrough" else 1
            assert total == factor * size, json.dumps(stats, indent=1)
            if job.mode in ("osr", "osr-refined") and job.n > 1:
                assert all(s["mpi_get_calls"] > 0 for s in stats)
                assert sum(s["bytes_fetched_remote"] for s in stats) >= (job.n - 1) * size * 0.5
            if job.mode == "bcast":
                assert all(s["bcast_bytes"] >= size for s in stats)
        finally:
            os.unlink(path)

    def test_rank_that_never_opens(self, job, source):
        """only rank n-1 reads a fresh file; the others never open it"""
        name = f"lonely-{job.mode}-{job.n}-{abs(hash(job.opts)) % 10000}.bin"
        path = os.path.join(source, name)
        with open(path, "wb") as f:
            f.write(os.urandom(2 * MIB + 1))
        try:
            assert sha256_file(os.path.join(job.mounts[-1], name)) == sha256_file(path)
        finally:
            os.unlink(path)

    def test_z_clean_stop(self, job):
        rc = job.stop(timeout=60)
        assert rc == 0, job.log()
        mounted = mounted_fuse()
        assert not any(m in mounted for m in job.mounts)
        assert not [p for p in job.pids.values() if alive(p)]
