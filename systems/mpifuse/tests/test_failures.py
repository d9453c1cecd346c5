"""Failure behaviour: a lost rank makes the job fail loudly and leave nothing hung;
signals stop every rank cleanly."""
import os
import signal
import subprocess
import sys
import time

import pytest

from mpifuse_testlib import MIB, alive, mounted_fuse, read_bytes
from mpifuse_testlib import built, fsjob, source  # noqa: F401  (pytest fixtures)

READER = r"""
import os, sys, time
path, deadline = sys.argv[1], time.time() + float(sys.argv[2])
n = 0
try:
    while time.time() < deadline:
        with open(path, 'rb', buffering=0) as f:
            while f.read(1 << 20):
                n += 1
except OSError as e:
    print('reader error', e.errno, flush=True)
    sys.exit(3)
print('reader done', n, flush=True)
"""


def _kill_one_rank(fsjob, source, mode, victim, tcp_only):
    name = "kill-victim.bin"
    with open(os.path.join(source, name), "wb") as f:
        f.write(os.urandom(64 * MIB))
    job = fsjob(mode, 3, source, opts="chunk=1M" if mode == "osr-refined" else "", tcp_only=tcp_only,
                timeout=20)
    assert len(job.pids) == 3, job.pids
    reader = subprocess.Popen([sys.executable, "-c", READER, os.path.join(job.mount(0), name), "60"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(1.0)  # the reader is in the middle of the file
        os.kill(job.pids[victim], signal.SIGKILL)
        t0 = time.time()
        try:
            rc = job.proc.wait(60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"mpirun still running 60 s after rank {victim} was killed:\n{job.log()}")
        elapsed = time.time() - t0
        assert rc != 0, job.log()
        # the reader must not hang either: it gets an error (or finishes)
        try:
            reader.wait(30)
        except subprocess.TimeoutExpired:
            pytest.fail("reader hung after the file system died")
        # no rank process left behind (a busy machine may take a few seconds to reap them)
        deadline = time.time() + 15
        while [p for p in job.pids.values() if alive(p)] and time.time() < deadline:
            time.sleep(0.2)
        left = [p for p in job.pids.values() if alive(p)]
        assert not left, (left, job.log())
        return elapsed
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
        reader.stdout.close()
        job.cleanup()
        assert not any(m in mounted_fuse() for m in job.mounts)
        os.unlink(os.path.join(source, name))


def test_killed_rank_fails_job(fsjob, source):
    elapsed = _kill_one_rank(fsjob, source, "osr-refined", victim=2, tcp_only=True)
    assert elapsed < 60


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["osr", "bcast", "passthrough"])
def test_killed_rank_fails_job_other_modes(fsjob, source, mode):
    _kill_one_rank(fsjob, source, mode, victim=1, tcp_only=True)


def test_sigterm_to_one_rank_stops_all(fsjob, source):
    job = fsjob("bcast", 2, source)
    assert read_bytes(os.path.join(job.mount(1), "f4097")) == read_bytes(os.path.join(source, "f4097"))
    os.kill(job.pids[1], signal.SIGTERM)
    rc = job.proc.wait(60)
    assert rc == 0, job.log()
    assert not any(m in mounted_fuse() for m in job.mounts)
    assert job.log().count("unmounted") == 2


def test_bad_mode_and_source(built, tmp_path):
    from mpifuse_testlib import BIN, mpi_env
    env = mpi_env()
    r = subprocess.run(["mpirun", "-n", "2", BIN, "--mode", "nope", str(tmp_path), str(tmp_path / "m{rank}")],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "unknown mode" in r.stdout + r.stderr
    r = subprocess.run(["mpirun", "-n", "2", BIN, "--mode", "osr", str(tmp_path / "missing"),
                        str(tmp_path / "m{rank}")], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "source" in r.stdout + r.stderr
    r = subprocess.run(["mpirun", "-n", "2", BIN, "--mode", "osr", str(tmp_path), str(tmp_path / "same")],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "{rank}" in r.stdout + r.stderr
    assert not any(str(tmp_path) in m for m in mounted_fuse())


def test_hung_rank_times_out_loudly(fsjob, source):
    """a rank that stops responding (SIGSTOP, so the launcher sees nothing)
    makes the others abort after `timeout` with a message naming the wait"""
    name = "hung-victim.bin"
    with open(os.path.join(source, name), "wb") as f:
        f.write(os.urandom(8 * MIB))
    try:
        job = fsjob("osr-refined", 3, source, tcp_only=True, timeout=5)
        os.kill(job.pids[2], signal.SIGSTOP)
        reader = subprocess.Popen(["cat", os.path.join(job.mount(0), name)], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE)
        try:
            rc = job.proc.wait(60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"job still running 60 s after a rank hung:\n{job.log()}")
        finally:
            try:
                os.kill(job.pids[2], signal.SIGCONT)
            except OSError:
                pass
        assert rc != 0
        assert "FATAL: timeout" in job.log(), job.log()
        reader.communicate(timeout=30)
        assert reader.returncode != 0
    finally:
        os.unlink(os.path.join(source, name))
