"""The memory-limited stores of montage-memlimit (mtcwf.cluster_api.data_limited_store), against a real
memcached: the limit is the node's memory for data, whatever the mix of item sizes.

With a plain ``-m`` every slab class that holds anything takes at least one 1 MiB page of its own, so a
small store full of many size classes refused new items with only part of its limit in data (Montage
5x5 at -m 22: 8.6 MB of items, 12 of the 22 pages each a different small class)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time

import pytest
from mtcwf import cluster_api
from tools.common import free_port

pytestmark = pytest.mark.skipif(not shutil.which("memcached"), reason="memcached not installed")

MIB = 1 << 20
# many size classes, as MemFS stores them: metadata records, tail stripes, whole small files, stripes
MIX = [100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 102400, 204800, 267840, 409600, 524288]


def _memcached(mem_mb: int, options: list[str], item_size: str = "1m") -> tuple[subprocess.Popen, int]:
    port = free_port()
    cmd = ["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", str(mem_mb), "-I", item_size, "-M",
           "-t", "2", *options]
    if os.geteuid() == 0:
        cmd += ["-u", "root"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 10
    while time.time() < deadline:
        if p.poll() is not None:
            raise RuntimeError(f"memcached exited {p.returncode}: {p.stdout.read().decode(errors='replace')}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return p, port
        except OSError:
            time.sleep(0.05)
    p.kill()
    raise RuntimeError("memcached did not answer in 10 s")


def _fill(port: int, sizes: list[int]) -> tuple[int, str, dict]:
    """Set items of the given sizes (cycled) until the store refuses; (bytes stored, refusal, stats slabs)."""
    stored, n = 0, 0
    with socket.create_connection(("127.0.0.1", port), 10) as s:
        f = s.makefile("rwb")
        while n < 100_000:
            size = sizes[n % len(sizes)]
            f.write(b"set k%d 0 0 %d\r\n" % (n, size) + b"x" * size + b"\r\n")
            f.flush()
            answer = f.readline().decode().strip()
            if answer != "STORED":
                break
            stored += size
            n += 1
        f.write(b"stats slabs\r\n")
        f.flush()
        slabs = {}
        while (ln := f.readline().decode().strip()) != "END":
            _, key, val = ln.split()
            slabs[key] = int(val)
    return stored, answer, slabs


def test_the_reserve_is_one_page_per_slab_class_of_the_real_memcached():
    """slab_classes() is memcached's own count: -L with too little memory says how many pages it needs."""
    for chunk_max in (8192, 16384, 65536):
        opts = cluster_api.data_limited_store(1, chunk_max)["options"]
        p = subprocess.run(["memcached", "-p", "0", "-U", "0", "-m", "2", "-I", "1m", "-M", "-u", "root", *opts],
                           capture_output=True, text=True, timeout=20)
        m = re.search(r"must be at least (\d+) megabytes", p.stdout + p.stderr)
        assert p.returncode != 0 and m, p.stdout + p.stderr
        assert cluster_api.slab_classes(chunk_max) == int(m.group(1)), chunk_max
    assert cluster_api.slab_classes() == 23 and cluster_api.data_limited_store(22)["mem_mb"] == 45


@pytest.mark.parametrize("sizes", [[267840], [524288, 600], MIX], ids=["small-files", "stripes", "mix"])
def test_a_data_limit_holds_its_mebibytes_of_data_whatever_the_sizes(sizes):
    limit = 8
    st = cluster_api.data_limited_store(limit)
    p, port = _memcached(st["mem_mb"], st["options"])
    try:
        stored, answer, slabs = _fill(port, sizes)
    finally:
        p.kill()
        p.wait()
    assert answer.startswith("SERVER_ERROR") and "out of memory" in answer.lower(), answer
    assert slabs["total_malloced"] == st["mem_mb"] * MIB  # every page taken: the store is full
    # the limit, plus what the classes' first pages hold -- never less than the limit, never much more
    assert limit * MIB <= stored <= (limit + 2.5) * MIB, (stored / MIB, slabs)


def test_a_plain_limit_of_the_same_size_fills_with_class_pages_not_data():
    """Why: the same mix under a plain -m of the same limit stores under half of it (each class its page)."""
    limit = 8
    p, port = _memcached(limit, [])
    try:
        stored, answer, slabs = _fill(port, MIX)
    finally:
        p.kill()
        p.wait()
    assert "out of memory" in answer.lower(), answer
    assert stored < 0.5 * limit * MIB, (stored / MIB, slabs["total_malloced"] / MIB)
    # memcached gives a class its first page even past -m, so the pages taken reach the limit or more
    assert slabs["total_malloced"] >= limit * MIB and slabs["active_slabs"] >= limit // 2, slabs
