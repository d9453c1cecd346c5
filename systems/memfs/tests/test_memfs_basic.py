"""MemFS (symmetric policy): data round trips, cross-mount visibility,
striping balance, write-once semantics, directories, stats, xattrs, tools."""
import errno
import json
import os
import subprocess
import threading
import time

import pytest

from memfs_testlib import LOCATE, MCBENCH, is_mounted, layout, stripe_counts
from memfs_helpers import (MiB, STRIPE, check_random_preads, file_sha, payload,
                           read_file, sha, write_file)

SIZES = [0, 1, STRIPE - 1, STRIPE, STRIPE + 1, 7 * STRIPE + 12345]


def wait_for(cond, timeout=5.0):
    """release() runs asynchronously after close(): poll for its effects."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


@pytest.fixture
def two_mounts(cluster):
    srv = cluster.servers(2)
    a = cluster.mount(srv, name="A")
    b = cluster.mount(srv, name="B")
    return srv, a, b


@pytest.mark.parametrize("size", SIZES)
def test_roundtrip_sizes(two_mounts, size):
    srv, a, b = two_mounts
    data = payload(size, seed=size)
    write_file(a.p(f"f{size}"), data)
    for m in (a, b):  # written through A, read through A and through B
        assert os.path.getsize(m.p(f"f{size}")) == size
        got = read_file(m.p(f"f{size}"))
        assert len(got) == size and sha(got) == sha(data)
        check_random_preads(m.p(f"f{size}"), data)
    st = a.stats()
    assert st["io"]["bytes_written"] == size
    assert st["stripes"]["set"] == (size + STRIPE - 1) // STRIPE
    assert st["errors"]["eio"] == 0


def test_roundtrip_128mib_balanced_over_servers(cluster):
    """128 MiB file: exact bytes through a second mount, and its 256 stripes
    spread over all three servers (memcached's own item counts)."""
    srv = cluster.servers(3)
    a = cluster.mount(srv, name="A")
    b = cluster.mount(srv, name="B")
    size = 128 * MiB
    data = payload(size, seed=128)
    write_file(a.p("big"), data)
    assert file_sha(b.p("big")) == sha(data)
    check_random_preads(b.p("big"), data, n=30)
    lay = layout(b.p("big"))
    counts = stripe_counts(srv, lay)
    assert sum(counts) == size // STRIPE
    mean = sum(counts) / len(counts)
    # modula + fnv1_32 (default hash): near round-robin over the servers
    assert all(abs(c - mean) <= 0.15 * mean for c in counts), counts
    byts = [s.stats()["bytes"] for s in srv]
    assert all(x > 0.6 * (size / 3) for x in byts), byts
    # the mount's own per-server counters agree with memcached
    per = [p["stripes_set"] for p in a.stats()["per_server"]]
    assert per == counts
    # xattr / locate report every server as holding part of the file
    assert os.getxattr(a.p("big"), "user.memfs.owners") == b"0,1,2"
    assert lay["stripes_per_server"] == counts and lay["placement"] == "symmetric"


def test_small_writes_and_reads(two_mounts):
    """Montage/BLAST-like 4 KiB I/O, plus odd chunk sizes crossing stripes."""
    srv, a, b = two_mounts
    data = payload(3 * STRIPE + 777, seed=4)
    write_file(a.p("small_io"), data, chunk=4096)
    assert read_file(b.p("small_io"), chunk=4096) == data
    write_file(a.p("odd_io"), data, chunk=100003)
    assert read_file(b.p("odd_io"), chunk=65537) == data


def test_shell_redirection_and_cp(two_mounts, tmp_path):
    """`cmd > file` flushes the new file before writing (dup2 + close)."""
    srv, a, b = two_mounts
    src = tmp_path / "src.bin"
    data = payload(2 * STRIPE + 5, seed=9)
    src.write_bytes(data)
    subprocess.run(f"cat {src} > {a.p('redir')}", shell=True, check=True)
    subprocess.run(f"(echo one; echo two) > {a.p('echo')}", shell=True, check=True)
    subprocess.run(["cp", str(src), a.p("copied")], check=True)
    assert read_file(b.p("redir")) == data
    assert read_file(b.p("copied")) == data
    assert read_file(b.p("echo")) == b"one\ntwo\n"


def test_cross_mount_visibility_immediately_after_close(two_mounts):
    srv, a, b = two_mounts
    for i in range(20):
        data = payload(1000 + i * 50000, seed=i)
        write_file(a.p(f"x{i}"), data)
        assert read_file(b.p(f"x{i}")) == data  # no sleeps: close() published it


def test_stat_while_writing_then_read_elsewhere(two_mounts):
    """B looks at the file while A still writes; after A's close, B must read
    the full content (no stale cached size -> no silent truncation)."""
    srv, a, b = two_mounts
    data = payload(3 * STRIPE, seed=3)
    f = open(a.p("growing"), "wb")
    f.write(data[:1000])
    f.flush()
    st_b = os.stat(b.p("growing"))
    assert st_b.st_size <= 1000
    assert os.stat(a.p("growing")).st_size == 1000  # the writer's mount sees its own writes
    f.write(data[1000:])
    f.close()
    assert read_file(b.p("growing")) == data


def test_write_once_errors(two_mounts):
    srv, a, b = two_mounts
    write_file(a.p("once"), b"hello world")

    def expect(err, fn):
        with pytest.raises(OSError) as ei:
            fn()
        assert ei.value.errno == err, (ei.value, os.strerror(err))

    for m in (a, b):  # second open for writing / overwrite / append / truncate
        expect(errno.EROFS, lambda: open(m.p("once"), "wb"))
        expect(errno.EROFS, lambda: open(m.p("once"), "ab"))
        expect(errno.EROFS, lambda: open(m.p("once"), "r+b"))
        expect(errno.EROFS, lambda: os.open(m.p("once"), os.O_WRONLY))
        expect(errno.EROFS, lambda: os.truncate(m.p("once"), 3))
        expect(errno.EROFS, lambda: os.truncate(m.p("once"), 0))
        expect(errno.EEXIST, lambda: os.open(m.p("once"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    os.truncate(a.p("once"), 11)  # truncating to the current size is a no-op
    # non-sequential writes while writing a new file
    fd = os.open(a.p("seq"), os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.write(fd, b"a" * 100)
        expect(errno.EROFS, lambda: os.pwrite(fd, b"b", 10))        # backwards
        expect(errno.EROFS, lambda: os.pwrite(fd, b"b", 10 ** 6))   # hole
        expect(errno.EROFS, lambda: os.ftruncate(fd, 50))
        os.write(fd, b"c" * 10)                                      # append still fine
    finally:
        os.close(fd)
    assert read_file(b.p("seq")) == b"a" * 100 + b"c" * 10
    assert read_file(b.p("once")) == b"hello world"
    assert "write-once" in a.log() and "EROFS" in a.log()
    assert a.stats()["errors"]["write_once"] >= 7
    # rename is refused with EXDEV (so mv copies + unlinks)
    expect(errno.EXDEV, lambda: os.rename(a.p("once"), a.p("once2")))
    subprocess.run(["mv", a.p("once"), a.p("moved")], check=True)
    assert read_file(b.p("moved")) == b"hello world"
    assert not os.path.exists(b.p("once"))


def test_read_back_through_rdwr_handle(two_mounts):
    srv, a, b = two_mounts
    data = payload(2 * STRIPE + 100, seed=5)
    fd = os.open(a.p("rw"), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.write(fd, data)
        assert os.pread(fd, 300, STRIPE - 100) == data[STRIPE - 100:STRIPE + 200]
        assert os.pread(fd, 50, 2 * STRIPE + 80) == data[2 * STRIPE + 80:]
    finally:
        os.close(fd)
    assert read_file(b.p("rw")) == data


def test_directories_and_deletion_markers(two_mounts):
    srv, a, b = two_mounts
    os.mkdir(a.p("d"))
    os.mkdir(a.p("d/sub"))
    for n in ("f1", "f2", "f3"):
        write_file(a.p(f"d/{n}"), n.encode())
    assert sorted(os.listdir(b.p("d"))) == ["f1", "f2", "f3", "sub"]
    assert os.path.isdir(b.p("d/sub")) and os.path.isfile(b.p("d/f1"))
    os.unlink(b.p("d/f2"))  # unlink through the other mount
    assert sorted(os.listdir(a.p("d"))) == ["f1", "f3", "sub"]
    assert not os.path.exists(a.p("d/f2"))
    # the directory value is an append-only log with a deletion marker
    raw = [s.get("D/d") for s in srv]
    log = next(v for v in raw if v is not None)
    assert log.split(b"\0")[:-1] == [b"dsub", b"ff1", b"ff2", b"ff3", b"xf2"]
    # re-create the same name: listed once, new content
    write_file(a.p("d/f2"), b"new")
    assert sorted(os.listdir(b.p("d"))) == ["f1", "f2", "f3", "sub"]
    assert read_file(b.p("d/f2")) == b"new"
    with pytest.raises(OSError) as ei:
        os.rmdir(a.p("d"))
    assert ei.value.errno == errno.ENOTEMPTY
    with pytest.raises(OSError) as ei:
        os.mkdir(b.p("d/sub"))
    assert ei.value.errno == errno.EEXIST
    with pytest.raises(OSError) as ei:
        os.listdir(a.p("d/f1"))
    assert ei.value.errno == errno.ENOTDIR
    with pytest.raises(OSError) as ei:
        open(a.p("nodir/x"), "wb")
    assert ei.value.errno == errno.ENOENT
    os.rmdir(b.p("d/sub"))
    for n in ("f1", "f2", "f3"):
        os.unlink(a.p(f"d/{n}"))
    assert os.listdir(b.p("d")) == []
    os.rmdir(a.p("d"))
    assert not os.path.exists(b.p("d"))
    assert ".memfs-stats" not in os.listdir(a.path)
    # names with spaces/unicode and paths longer than memcached's key limit
    deep = a.p("sp ace/" + "/".join(["ü" * 40 + str(i) for i in range(4)]))
    os.makedirs(deep)
    rel = os.path.relpath(deep, a.path)
    assert len(("/" + rel).encode()) > 250
    data = payload(STRIPE + 3, seed=8)
    write_file(os.path.join(deep, "long name.bin"), data)
    assert read_file(b.p(rel + "/long name.bin")) == data
    assert os.listdir(b.p(rel)) == ["long name.bin"]


def test_unlink_frees_stripes_and_defers_while_open(two_mounts):
    srv, a, b = two_mounts
    data = payload(8 * STRIPE, seed=6)
    write_file(a.p("tmp"), data)
    lay = layout(a.p("tmp"))
    assert sum(stripe_counts(srv, lay)) == 8
    os.unlink(b.p("tmp"))
    assert sum(stripe_counts(srv, lay)) == 0
    assert a.stats()["stripes"]["deleted"] + b.stats()["stripes"]["deleted"] == 8
    # unlink while open on the same mount: the reader keeps its data
    write_file(a.p("tmp2"), data)
    lay = layout(a.p("tmp2"))
    with open(a.p("tmp2"), "rb") as f:
        head = f.read(100)
        os.unlink(a.p("tmp2"))
        rest = f.read()
        assert sum(stripe_counts(srv, lay)) == 8
    assert head + rest == data
    assert wait_for(lambda: sum(stripe_counts(srv, lay)) == 0)


def test_stats_json_schema_and_reset(two_mounts):
    srv, a, b = two_mounts
    data = payload(3 * STRIPE, seed=7)
    write_file(a.p("s"), data)
    read_file(a.p("s"))
    st = a.stats()
    assert st["schema"] == "memfs-stats/1" and st["policy"] == "symmetric"
    for group in ("io", "stripes", "locality", "meta_ops", "memcached_meta", "errors"):
        assert all(isinstance(v, int) for v in st[group].values()), group
    assert st["io"]["bytes_written"] == len(data) and st["io"]["bytes_read"] >= len(data)
    assert st["stripes"]["set"] == 3 and st["stripes"]["get"] >= 3
    assert st["stripes"]["prefetch_issued"] >= 1
    assert st["meta_ops"]["create"] == 1 and st["meta_ops"]["open"] >= 1
    assert st["memcached_meta"]["add"] >= 1 and st["memcached_meta"]["append"] >= 1
    assert len(st["per_server"]) == 2
    assert sum(p["bytes_set"] for p in st["per_server"]) == len(data)
    assert wait_for(lambda: a.stats()["open_files"] == {"read": 0, "write": 0})
    a.reset_stats()
    st2 = a.stats()
    assert st2["io"]["bytes_written"] == 0 and st2["stripes"]["set"] == 0
    assert b.stats()["io"]["bytes_written"] == 0  # counters are per mount
    os.statvfs(a.path)
    assert a.stats()["meta_ops"]["statfs"] >= 1
    sv = os.statvfs(a.path)
    assert sv.f_blocks * sv.f_frsize >= 2 * 500 * MiB  # sum of memcached -m limits


def test_locate_cli_and_xattrs(two_mounts):
    srv, a, b = two_mounts
    write_file(a.p("loc"), payload(5 * STRIPE, seed=1))
    servers = ",".join(s.spec for s in srv)
    r = subprocess.run([str(LOCATE), "--servers", servers, "/loc", "/missing"],
                       capture_output=True, text=True)
    assert r.returncode == 1
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert lines[0]["size"] == 5 * STRIPE and lines[0]["stripes"] == 5
    assert sum(lines[0]["stripes_per_server"]) == 5
    assert lines[1] == {"path": "/missing", "error": "ENOENT"}
    counts = stripe_counts(srv, lines[0])
    assert lines[0]["stripes_per_server"] == counts
    r = subprocess.run([str(LOCATE), "--servers", servers, "--format", "owners", "loc"],
                       capture_output=True, text=True, check=True)
    owners = os.getxattr(b.p("loc"), "user.memfs.owners").decode()
    assert r.stdout == f"/loc\t{owners}\n"
    assert set(os.listxattr(a.p("loc"))) == {"user.memfs.owners", "user.memfs.servers",
                                             "user.memfs.layout"}
    with pytest.raises(OSError) as ei:
        os.getxattr(a.p("loc"), "user.other")
    assert ei.value.errno == errno.ENODATA


def test_consistent_distribution(cluster):
    srv = cluster.servers(3)
    a = cluster.mount(srv, "--distribution", "consistent", "--stripe-size", "131072")
    b = cluster.mount(srv, "--distribution", "consistent", "--stripe-size", "131072")
    data = payload(64 * 131072 + 1, seed=11)
    write_file(a.p("c"), data)
    assert file_sha(b.p("c")) == sha(data)
    counts = stripe_counts(srv, layout(a.p("c")))
    assert sum(counts) == 65 and all(c > 0 for c in counts), counts
    r = subprocess.run([str(LOCATE), "--servers", ",".join(s.spec for s in srv),
                        "--distribution", "consistent", "/c"],
                       capture_output=True, text=True, check=True)
    assert json.loads(r.stdout)["stripes_per_server"] == counts


def test_concurrent_readers_two_mounts(two_mounts):
    srv, a, b = two_mounts
    data = payload(16 * MiB + 3, seed=12)
    write_file(a.p("shared"), data)
    want = sha(data)
    results = []

    def reader(m, chunk):
        try:
            results.append(sha(read_file(m.p("shared"), chunk=chunk)) == want)
        except Exception as e:  # pragma: no cover - reported below
            results.append(repr(e))

    ts = [threading.Thread(target=reader, args=(m, c))
          for m in (a, b) for c in (4096, 65536, 1 << 20)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert results == [True] * len(ts)


def test_many_mounts_write_and_read_concurrently(cluster):
    """The paper's one-mount-per-process deployment: 4 mounts against the
    same servers, each writing concurrently, each reading everyone's files."""
    srv = cluster.servers(3)
    mounts = [cluster.mount(srv) for _ in range(4)]
    files = {}
    errors = []

    def writer(i, m):
        try:
            for j in range(3):
                data = payload(STRIPE * (j + 1) + i, seed=100 * i + j)
                write_file(m.p(f"m{i}_{j}"), data, chunk=65536)
                files[f"m{i}_{j}"] = sha(data)
        except Exception as e:  # pragma: no cover
            errors.append(repr(e))

    ts = [threading.Thread(target=writer, args=(i, m)) for i, m in enumerate(mounts)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors
    for m in mounts:
        assert sorted(os.listdir(m.path)) == sorted(files)
        for name, h in files.items():
            assert file_sha(m.p(name)) == h


def test_mcbench_prints_json(cluster):
    srv = cluster.servers(2)
    r = subprocess.run([str(MCBENCH), "--servers", ",".join(s.spec for s in srv),
                        "--op", "both", "--value-size", "65536", "--threads", "2",
                        "--ops", "64"], capture_output=True, text=True, timeout=60, check=True)
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["op"] for x in lines] == ["set", "get"]
    for x in lines:
        assert x["value_size"] == 65536 and x["threads"] == 2 and x["errors"] == 0
        assert x["ops"] == 64 and x["seconds"] > 0 and x["bytes_per_s"] > 0
        assert x["bytes"] == 64 * 65536


def test_mount_message_and_sigterm_unmount(cluster):
    srv = cluster.servers(2)
    m = cluster.mount(srv)
    assert f"memfs: mounted symmetric at {m.path} (servers=2)" in m.log()
    m.proc.terminate()
    m.proc.wait(10)
    assert m.proc.returncode == 0 and not is_mounted(m.path)


def test_unreachable_server_refuses_to_mount(cluster, tmp_path):
    from memfs_testlib import MEMFS, free_port
    srv = cluster.servers(1)
    mnt = tmp_path / "never"
    mnt.mkdir()
    r = subprocess.run([str(MEMFS), "--servers", f"{srv[0].spec},127.0.0.1:{free_port()}",
                        "--timeout-ms", "500", "-f", str(mnt)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "unreachable" in r.stderr
    assert not is_mounted(mnt)


def test_fuse_options_pass_through(cluster):
    """FUSE -o options reach libfuse (max_read also needs conn->max_read in
    init() with libfuse 3.14, which memfs sets)."""
    srv = cluster.servers(2)
    a = cluster.mount(srv, "-o", "max_read=65536,attr_timeout=0.5", "--threads", "2")
    b = cluster.mount(srv, "-omax_read=131072")
    data = payload(3 * STRIPE + 1, seed=77)
    write_file(a.p("mr"), data)
    assert read_file(b.p("mr"), chunk=1 << 20) == data
    assert read_file(a.p("mr")) == data
    assert "error" not in a.log() + b.log()


def test_request_breakdown_counters_are_consistent(two_mounts):
    """The per-request counters (fuse_read/fuse_write/copy/mc_rtt/pool/wait/
    lock) add up: bytes through the request counters are the file's size,
    the size histogram sums to the request count, every stripe set/get is
    one memcached round trip, every get ran in the read pool or inline."""
    srv, a, b = two_mounts
    size = 9 * STRIPE + 777
    nstripes = 10
    data = payload(size, seed=2024)
    a.reset_stats()
    write_file(a.p("bd"), data, chunk=300000)
    assert wait_for(lambda: a.stats()["open_files"]["write"] == 0)
    b.reset_stats()
    assert read_file(b.p("bd"), chunk=MiB) == data
    assert wait_for(lambda: b.stats()["open_files"]["read"] == 0)
    sa, sb = a.stats(), b.stats()
    for st, d in ((sa, "fuse_write"), (sb, "fuse_read")):
        h = st[d]
        assert h["bytes"] == size, (d, h)
        assert h["count"] >= 1
        assert h["le_128k"] + h["le_512k"] + h["le_1m"] + h["gt_1m"] == h["count"], h
    assert sa["fuse_read"]["count"] == 0 and sb["fuse_write"]["count"] == 0
    assert sa["copy"]["write_bytes"] == size and sa["copy"]["read_bytes"] == 0
    assert sb["copy"]["read_bytes"] + sb["copy"]["read_zero_copy_bytes"] == size
    assert sb["copy"]["write_bytes"] == 0
    assert sb["fuse_read"]["zero_copy"] <= sb["fuse_read"]["count"]
    assert sb["copy"]["read_zero_copy_bytes"] <= size
    fz = sb["fuse"]
    assert fz["max_write"] >= STRIPE and isinstance(fz["read_ahead_kb"], int)
    assert sa["mc_rtt"]["set_count"] == sa["stripes"]["set"] == nstripes
    assert sa["pool"]["write_jobs"] == nstripes and sa["mc_rtt"]["get_count"] == 0
    assert sb["mc_rtt"]["get_count"] == sb["stripes"]["get"] == nstripes
    assert sb["pool"]["read_jobs"] + sb["wait"]["inline_fetch_count"] == nstripes
    assert sb["mc_rtt"]["set_count"] == 0 and sb["pool"]["write_jobs"] == 0
    assert sa["wait"]["flush_count"] >= 1 and sb["wait"]["release_read_count"] == 1
    for st in (sa, sb):
        assert st["lock"]["acquisitions"] > 0
        for g in ("mc_rtt", "pool", "wait", "lock"):
            assert all(isinstance(v, int) and v >= 0 for v in st[g].values()), g
    # a reset zeroes the new groups too
    a.reset_stats()
    z = a.stats()
    assert all(v == 0 for g in ("fuse_write", "copy", "mc_rtt", "pool", "lock")
               for v in z[g].values())


def test_direct_io_variant_roundtrip(cluster):
    """--direct-io (our variant, not the paper's): no page cache, FUSE
    requests at the application's offsets; bytes must be the same, whole
    aligned stripe requests go zero-copy, shared mmap is refused (ENODEV)."""
    import mmap
    srv = cluster.servers(2)
    a = cluster.mount(srv, "--direct-io", name="DA")
    b = cluster.mount(srv, "--direct-io", name="DB")
    size = 9 * STRIPE + 777
    data = payload(size, seed=99)
    write_file(a.p("d"), data, chunk=MiB)
    b.reset_stats()
    assert read_file(b.p("d"), chunk=MiB) == data
    check_random_preads(b.p("d"), data, n=20)
    st = b.stats()
    assert st["fuse"]["direct_io"] == 1 and a.stats()["fuse"]["direct_io"] == 1
    assert st["fuse_read"]["zero_copy"] >= 9
    assert read_file(a.p("d")) == data  # the writer's mount reads it back too
    with open(b.p("d"), "rb") as f:
        with pytest.raises(OSError) as e:
            mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        assert e.value.errno == errno.ENODEV
