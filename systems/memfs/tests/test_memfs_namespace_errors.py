"""MemFS's own answers where the kernel cannot decide for it: a name-space change whose parent
vanished on another mount (the new record must be deleted again), a path whose type changed on
another mount (EISDIR / ENOTDIR from the record, not from the kernel's stale cache), and the
command line's errors (exit status 2, one "memfs: ..." line)."""
import errno
import os
import subprocess

import pytest

from memfs_helpers import write_file
from memfs_testlib import MEMFS

# the second mount trusts its cached entries and attributes for a minute: the kernel then sends
# the operation to MemFS instead of answering from a fresh lookup
CACHED = ("-o", "entry_timeout=60,attr_timeout=60")


def _errno(fn):
    with pytest.raises(OSError) as ei:
        fn()
    return ei.value.errno


@pytest.fixture
def stale_mounts(cluster):
    srv = cluster.servers(2)
    a = cluster.mount(srv, name="A")
    b = cluster.mount(srv, *CACHED, name="B")
    return srv, a, b


def test_parent_removed_elsewhere_leaves_no_record(stale_mounts):
    srv, a, b = stale_mounts
    os.mkdir(a.p("d"))
    assert os.path.isdir(b.p("d"))  # B caches d
    os.rmdir(a.p("d"))
    assert _errno(lambda: os.mkdir(b.p("d/sub"))) == errno.ENOENT
    assert _errno(lambda: open(b.p("d/f"), "wb")) == errno.ENOENT
    # the record (and the directory's entry log) written before the parent's log refused the
    # entry are gone again
    left = [k for s in srv for k, held in zip(("M/d/sub", "D/d/sub", "M/d/f"),
                                              s.has(["M/d/sub", "D/d/sub", "M/d/f"])) if held]
    assert left == []
    assert not os.path.exists(a.p("d"))


def test_type_changed_elsewhere_is_answered_from_the_record(stale_mounts):
    srv, a, b = stale_mounts
    write_file(a.p("x"), b"file")
    os.mkdir(a.p("y"))
    assert os.path.isfile(b.p("x")) and os.path.isdir(b.p("y"))  # B caches both types
    os.unlink(a.p("x"))
    os.mkdir(a.p("x"))
    os.rmdir(a.p("y"))
    write_file(a.p("y"), b"now a file")
    assert _errno(lambda: os.unlink(b.p("x"))) == errno.EISDIR
    assert _errno(lambda: os.open(b.p("x"), os.O_RDONLY)) == errno.EISDIR
    assert _errno(lambda: os.truncate(b.p("x"), 0)) == errno.EISDIR
    assert _errno(lambda: os.rmdir(b.p("y"))) == errno.ENOTDIR
    assert os.path.isdir(a.p("x")) and os.path.isfile(a.p("y"))  # nothing was removed


LOCAL_ERR = "memfs: --local-server must be an index into --servers (0..0)"
BAD_ARGS = [
    (["--stripe-size", "1k"], "memfs: --stripe-size must be 4k..64m"),
    (["--stripe-size=128m"], "memfs: --stripe-size must be 4k..64m"),
    (["--buffer-size", "0"], "memfs: bad --buffer-size"),
    (["--buffer-size", "8x"], "memfs: bad --buffer-size"),
    (["--threads", "257"], "memfs: --threads must be 1..256"),
    (["--threads", "0"], "memfs: --threads must be 1..256"),
    (["--hash", "sha1"], "memfs: unknown --hash sha1"),
    (["--readahead", "2g"], "memfs: bad --readahead (bytes, k/m suffixes; 0 = kernel default)"),
    (["--timeout-ms", "0"], "memfs: bad --timeout-ms"),
    (["--policy", "nearest"], "memfs: --policy must be symmetric or locality"),
    (["--distribution", "ring"], "memfs: --distribution must be modula or consistent"),
    (["--local-server", "1"], LOCAL_ERR),
    (["--policy", "locality"], LOCAL_ERR + " and is required for locality"),
]


@pytest.mark.parametrize("extra,message", BAD_ARGS, ids=[" ".join(a) for a, _ in BAD_ARGS])
def test_bad_option_exits_2_naming_it(tmp_path, extra, message):
    r = subprocess.run([str(MEMFS), "--servers", "127.0.0.1:1", *extra, "-f", str(tmp_path)],
                       capture_output=True, text=True, timeout=20)
    assert (r.returncode, r.stderr.splitlines()[-1:]) == (2, [message])


@pytest.mark.parametrize("argv,message", [
    (["--servers", "127.0.0.1:1", "-f", "{mnt}", "--threads"], "memfs: --threads needs a value"),
    (["-f", "{mnt}"], "memfs: --servers is required"),
    (["--servers", "127.0.0.1:1", "-f"], "memfs: no mount point"),
    (["--servers", "", "-f", "{mnt}"], "memfs: --servers: "),
], ids=["missing-value", "no-servers", "no-mountpoint", "empty-servers"])
def test_bad_command_line_exits_2(tmp_path, argv, message):
    r = subprocess.run([str(MEMFS), *(a.format(mnt=tmp_path) for a in argv)],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 2
    assert r.stderr.splitlines()[-1].startswith(message), r.stderr
