"""MemFS --writeback-cache (our variant, not the paper's; off by default):
the kernel's FUSE writeback cache batches small write() calls into large
WRITE requests.  Checked here: bytes written with 4 KiB syscalls read back
exactly from a second mount right after close(); the request counters show the
batching; rewrites of cached pages read back right; a rewrite of data already
stored fails loudly (close() errors, the file is not sealed), never silently."""
import errno
import os

import pytest

from memfs_testlib import layout
from memfs_helpers import MiB, STRIPE, check_random_preads, payload, read_file

KiB = 1024


def write_syscalls(path, data, chunk, flags=0):
    """One os.write() per chunk (no Python buffering): chunk-sized syscalls."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | flags, 0o644)
    try:
        for i in range(0, len(data), chunk):
            assert os.write(fd, data[i:i + chunk]) == len(data[i:i + chunk])
    finally:
        os.close(fd)


@pytest.fixture
def wb(cluster):
    srv = cluster.servers(2)
    a = cluster.mount(srv, "--writeback-cache", name="WA")   # writer
    b = cluster.mount(srv, name="WB")                        # default reader
    c = cluster.mount(srv, "--writeback-cache", name="WC")   # writeback reader
    return srv, a, b, c


def test_writeback_4k_writes_batched_and_read_elsewhere(wb):
    srv, a, b, c = wb
    size = 16 * MiB + 777
    data = payload(size, seed=4)
    assert a.stats()["fuse"]["writeback_cache"] == 1
    assert b.stats()["fuse"]["writeback_cache"] == 0
    a.reset_stats()
    fd = os.open(a.p("w4k"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    half = size // 2 // 4096 * 4096
    for i in range(0, half, 4096):
        os.write(fd, data[i:i + 4096])
    # mount C caches the inode (size of a file still being written) now
    st_c = os.stat(c.p("w4k"))
    assert st_c.st_size <= half
    for i in range(half, size, 4096):
        os.write(fd, data[i:i + 4096])
    os.close(fd)  # the durability point: everything stored when it returns
    assert read_file(b.p("w4k"), chunk=MiB) == data
    assert read_file(c.p("w4k"), chunk=MiB) == data   # not cut at C's cached size
    check_random_preads(b.p("w4k"), data, n=10)
    assert layout(b.p("w4k"))["state"] == "complete"
    sa = a.stats()
    syscalls = (size + 4095) // 4096
    fw = sa["fuse_write"]
    assert fw["bytes"] >= size          # every byte arrived (rewrites may add a page)
    assert fw["count"] <= size // (64 * KiB), (fw, syscalls)   # batched, not 4 KiB each
    assert sa["stripes"]["set"] >= (size + STRIPE - 1) // STRIPE
    assert "non-sequential" not in a.log() and "never arrived" not in a.log()


def test_default_mount_sends_one_request_per_4k_write(cluster):
    """The contrast the variant exists for (a counter, not a timing)."""
    srv = cluster.servers(1)
    d = cluster.mount(srv, name="WD")
    size = MiB
    d.reset_stats()
    write_syscalls(d.p("d4k"), payload(size, seed=5), 4096)
    assert d.stats()["fuse_write"]["count"] == size // 4096
    assert d.stats()["fuse"]["writeback_cache"] == 0


def test_writeback_unaligned_appends_and_o_append(wb):
    """1000-byte writes leave partial pages that the kernel writes back again
    once re-dirtied; O_APPEND writes go at the kernel's size."""
    srv, a, b, c = wb
    data = payload(3 * STRIPE + 4321, seed=6)
    write_syscalls(a.p("odd"), data, 1000)
    assert read_file(b.p("odd")) == data
    fd = os.open(a.p("app"), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
    for i in range(0, len(data), 3000):
        os.write(fd, data[i:i + 3000])
        if i % (200 * 3000) == 0:
            os.fsync(fd)   # store the tail mid-way: later rewrites of it are sent again
    os.close(fd)
    assert read_file(b.p("app")) == data
    assert read_file(c.p("app")) == data
    assert os.stat(b.p("app")).st_size == len(data)


def test_writeback_rewrite_of_cached_page_reads_back_right(wb):
    """Overwriting bytes still in the kernel's cache (and memfs's unsent tail):
    the new bytes are what a second mount reads."""
    srv, a, b, c = wb
    data = bytearray(payload(300 * KiB, seed=7))
    fd = os.open(a.p("rw"), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, bytes(data))
    patch = b"X" * 5000
    os.pwrite(fd, patch, 123)
    data[123:123 + len(patch)] = patch
    os.write(fd, b"tail")   # file position: after the first write
    data += b"tail"
    assert os.pread(fd, 10, 120) == bytes(data[120:130])
    os.close(fd)
    assert read_file(b.p("rw")) == bytes(data)


def test_writeback_rewrite_of_stored_data_fails_loudly(wb):
    """Once fsync() stored a stripe, a rewrite of it cannot be honoured
    (write-once stripes): close() must fail and the file must not be sealed
    with the old bytes."""
    srv, a, b, c = wb
    data = payload(2 * STRIPE + 10, seed=8)
    fd = os.open(a.p("bad"), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, data)
    os.fsync(fd)
    os.pwrite(fd, b"Y" * 4096, 0)   # stripe 0: already in memcached
    with pytest.raises(OSError) as e:
        os.close(fd)
    assert e.value.errno in (errno.EIO, errno.EROFS)
    assert "non-sequential write at offset 0" in a.log()
    assert layout(b.p("bad"))["state"] != "complete"


def test_writeback_reader_with_old_cached_size(wb):
    """A --writeback-cache kernel keeps its own cached size of a regular file
    (getattr's size is ignored) for as long as the inode stays cached, not just
    attr_timeout: a mount that saw the file while it was being written must
    still read all of it later."""
    import time
    srv, a, b, c = wb
    data = payload(2 * STRIPE + 99, seed=9)
    fd = os.open(a.p("late"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, data[:4096])
    os.fsync(fd)
    seen = os.stat(c.p("late")).st_size
    assert seen <= 4096
    os.write(fd, data[4096:])
    os.close(fd)
    time.sleep(3.0)   # past attr_timeout (1 s) + memfs's own 1 s stale-size window
    with open(c.p("late"), "rb") as f:
        assert f.read() == data


def test_splice_variant_reads_back_exactly(cluster):
    """--splice (our variant): replies vmspliced from the stripe buffers, writes through a pipe; the bytes
    written on one mount read back exactly on another with it, whole and by random preads."""
    srv = cluster.servers(2)
    a = cluster.mount(srv, "--splice", name="SA")
    b = cluster.mount(srv, "--splice", "--direct-io", name="SB")
    size = 5 * MiB + 4321
    data = payload(size, seed=7)
    write_syscalls(a.p("s"), data, MiB)
    assert read_file(b.p("s")) == data and read_file(a.p("s")) == data
    check_random_preads(b.p("s"), data)
    assert a.stats()["fuse"]["splice"] == 1 and b.stats()["fuse"]["splice"] == 1


def test_keep_buffers_variant_reads_back_exactly(cluster):
    """--keep-buffers (our variant): glibc keeps freed stripe buffers; the bytes are unchanged."""
    srv = cluster.servers(2)
    a = cluster.mount(srv, "--keep-buffers", "--stripe-size", "1m", name="KA")
    b = cluster.mount(srv, "--keep-buffers", "--direct-io", "--stripe-size", "1m", name="KB")
    size = 6 * MiB + 99
    data = payload(size, seed=8)
    write_syscalls(a.p("k"), data, MiB)
    assert read_file(b.p("k")) == data and read_file(a.p("k")) == data
    check_random_preads(b.p("k"), data)
    assert a.stats()["fuse"]["keep_buffers"] == 1
