"""Stop (unmount) while a file is still open on some rank, or while the kernel's
asynchronous RELEASE of the last close has not reached the daemon yet.

The project's rule: every rank completes the stop (or fails loudly), never a
hang. Before the fix, a handle whose RELEASE never came (the FUSE session ended
first) kept its reference on the distributed entry, so that rank's MPI thread
waited for it in the teardown while the others sat in the final barrier: the
job stayed up until the timeouts aborted it (the speed benchmark's hang).
"""
import os
import signal
import subprocess
import sys
import time

import pytest

from mpifuse_testlib import MIB, alive, mounted_fuse
from mpifuse_testlib import built, fsjob, source  # noqa: F401  (pytest fixtures)

MODES = ["osr-refined", "osr", "bcast", "passthrough"]

# opens, reads 1 MiB, says so, keeps the descriptor; after "again" on stdin tries one more read
HOLDER = r"""
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
n = len(os.pread(fd, 1 << 20, 0))
print('holding', n, flush=True)
sys.stdin.readline()
try:
    os.pread(fd, 4096, 0)
    print('read ok', flush=True)
except OSError as e:
    print('read error', e.errno, flush=True)
"""


def _wait_stopped(job, limit=60):
    try:
        return job.proc.wait(limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"mpirun still running {limit} s after the stop was requested (hang):\n{job.log()}")


def _assert_all_gone(job):
    deadline = time.time() + 15
    while [p for p in job.pids.values() if alive(p)] and time.time() < deadline:
        time.sleep(0.2)
    assert not [p for p in job.pids.values() if alive(p)], job.log()
    mounted = mounted_fuse()
    assert not [m for m in job.mounts if m in mounted], (mounted, job.log())
    for r in range(job.n):
        assert f"rank {r} unmounted" in job.log(), job.log()


def _file(source, name, size):
    p = os.path.join(source, name)
    if not os.path.exists(p):
        with open(p, "wb") as f:
            f.write(os.urandom(size))
    return name


# 3 ranks for the modes with the most per-entry state (chunk cache, broadcast stream); the
# single-threaded FUSE loop once
@pytest.mark.parametrize("mode,n,threads", [(m, 2, None) for m in MODES] + [
    ("osr-refined", 3, None), ("bcast", 3, None), ("osr-refined", 2, "off")])
def test_stop_with_file_held_open(fsjob, source, mode, n, threads):
    """A process on the last rank keeps the file open (and is SIGSTOPped) while rank 0 is
    unmounted: every rank waits the grace, releases the handle itself with a warning
    naming the file, and exits 0; the holder's next read fails instead of hanging."""
    name = _file(source, "held-open.bin", 8 * MIB + 7)
    opts = "stop_grace=2" + (",chunk=1M" if mode == "osr-refined" else "")
    job = fsjob(mode, n, source, opts=opts, threads=threads)
    victim = n - 1
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, os.path.join(job.mount(victim), name)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        assert holder.stdout.readline().split() == ["holding", str(MIB)]
        os.kill(holder.pid, signal.SIGSTOP)
        subprocess.run(["fusermount3", "-u", job.mount(0)], capture_output=True)
        rc = _wait_stopped(job)
        log = job.log()
        assert rc == 0, log
        _assert_all_gone(job)
        assert (f"mpifuse: rank {victim}: warning: 1 file(s) still open at unmount after the "
                f"2 s grace, released by the file system: {name}") in log, log
        assert "with 1 local opens" not in log, log
        os.kill(holder.pid, signal.SIGCONT)
        out, _ = holder.communicate("again\n", timeout=30)
        assert out.startswith("read error"), out
    finally:
        if holder.poll() is None:
            os.kill(holder.pid, signal.SIGCONT)
            holder.kill()
            holder.wait(10)


def _assert_clean_stop(job):
    """Every rank exits 0 and unmounts, and no handle had to be released by force or was left
    holding an entry (the two warnings of the old hang)."""
    rc = _wait_stopped(job)
    log = job.log()
    assert rc == 0, log
    _assert_all_gone(job)
    assert "still open at unmount" not in log, log
    assert "local opens" not in log, log


@pytest.mark.parametrize("mode", MODES)
def test_stop_right_after_last_close(fsjob, source, mode):
    """The last close returns before the daemon got the RELEASE (FUSE sends it
    asynchronously); the stop starts at once on that very rank (SIGTERM). The grace
    waits for the release: every rank exits 0, no handle is force-released."""
    name = _file(source, "closed-late.bin", 8 * MIB + 7)
    job = fsjob(mode, 2, source, opts="chunk=1M" if mode == "osr-refined" else "")
    fd = os.open(os.path.join(job.mount(1), name), os.O_RDONLY)
    assert len(os.pread(fd, MIB, 3 * MIB)) == MIB
    os.close(fd)
    os.kill(job.pids[1], signal.SIGTERM)
    _assert_clean_stop(job)


@pytest.mark.parametrize("mode", MODES)
def test_stop_while_last_close_in_flight(fsjob, source, mode):
    """The holder closes its file 0.5 s after the stop was requested: the close's FLUSH
    reaches a FUSE loop that is asked to exit, and its RELEASE follows asynchronously.
    (Before the fix the loop ended after the FLUSH, the RELEASE was lost, the rank warned
    "freeing ... with 1 local opens" and its teardown waited for that handle while the
    others sat in the final barrier: the speed benchmark's hang.) Now the stop waits
    (stop_grace, default 5 s) for the RELEASE: every rank exits 0, nothing is force-released."""
    name = _file(source, "closed-in-stop.bin", 8 * MIB + 7)
    job = fsjob(mode, 2, source, opts="chunk=1M" if mode == "osr-refined" else "")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, os.path.join(job.mount(1), name)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        assert holder.stdout.readline().split() == ["holding", str(MIB)]
        subprocess.run(["fusermount3", "-u", job.mount(0)], capture_output=True)
        time.sleep(0.5)
        holder.stdin.write("again\n")
        holder.stdin.close()  # one more read (served or refused), then the holder exits: close
        holder.wait(30)
        _assert_clean_stop(job)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)


def test_bad_stop_grace_fails_at_start(fsjob, source):
    """stop_grace beyond timeout/2 (the peers' shutdown timeout would fire first) is refused
    at start-up, naming the key, on every rank."""
    with pytest.raises(RuntimeError) as err:
        fsjob("osr-refined", 2, source, opts="stop_grace=20", timeout=30)
    assert "stop_grace must be between 0 and timeout/2 (15 s)" in str(err.value)
