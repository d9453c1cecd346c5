"""Files larger than what a rank keeps in memory, and a larger file for every
mode (slow)."""
import os
import subprocess

import pytest

from mpifuse_testlib import MIB, sha256_file
from mpifuse_testlib import built, fsjob, source  # noqa: F401  (pytest fixtures)


@pytest.fixture(scope="module")
def big_source(tmp_path_factory):
    d = tmp_path_factory.mktemp("mpifuse-big")
    with open(d / "big.bin", "wb") as f:
        for _ in range(96):
            f.write(os.urandom(MIB))
        f.write(os.urandom(12345))
    return d


def hash_all(job, name):
    procs = [subprocess.Popen(["sha256sum", name], cwd=m, stdout=subprocess.PIPE, text=True) for m in job.mounts]
    return [p.communicate(timeout=300)[0].split()[0] for p in procs]


@pytest.mark.parametrize("mode,opts", [
    ("osr-refined", "chunk=2M,cache=4M,mem_cap=8M"),
    ("bcast", "mem_cap=8M,block=2M"),
])
def test_larger_than_memory_cap(fsjob, big_source, mode, opts):
    want = sha256_file(big_source / "big.bin")
    job = fsjob(mode, 3, big_source, opts=opts, tcp_only=True)
    assert hash_all(job, "big.bin") == [want] * 3
    st = [job.stats(r) for r in range(3)]
    assert sum(s["bytes_read_source"] for s in st) == os.path.getsize(big_source / "big.bin")
    if mode == "osr-refined":
        assert sum(s["cache_evictions"] for s in st) > 0
    assert job.stop() == 0


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["osr", "osr-refined", "bcast", "passthrough"])
def test_big_file_every_mode(fsjob, big_source, mode):
    want = sha256_file(big_source / "big.bin")
    job = fsjob(mode, 3, big_source, tcp_only=True, timeout=60)
    assert hash_all(job, "big.bin") == [want] * 3
    assert job.stop() == 0
