"""Helpers and fixtures of the mpifuse tests: build, MPI environment, launching
and always cleaning up mpirun jobs and their FUSE mounts. The test modules
import the fixtures from here (`built`, `source`, `fsjob`)."""
import os
import shutil
import signal
import subprocess
import threading
import time

import pytest
from repro import procs
from systems.kpassthrough.hostinfo import alive  # noqa: F401 -- the tests import it from here
from repro.testing import file_sha256 as sha256_file  # noqa: F401 -- the tests import it from here


ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SYS = os.path.join(ROOT, "systems", "mpifuse")
BIN = os.path.join(SYS, "build", "mpifuse")
LIB = os.path.join(SYS, "build", "libmpifuse.so")

MIB = 1 << 20
SIZES = [0, 1, 4095, 4096, 4097, 131071, MIB + 3, 17 * MIB + 5]


def missing_prereq():
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing"
    for tool in ("mpirun", "fusermount3", "mpicc", "pkg-config"):
        if not shutil.which(tool):
            return f"{tool} is not installed"
    return None


def mpi_env(tcp_only=False):
    """workflow/scripts/mpi-env.sh for one host: UCX over TCP only when tcp_only (as between
    separate nodes), else UCX may use shared memory."""
    return procs.mpi_env(shm=not tcp_only)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def mounted_fuse():
    with open("/proc/self/mounts") as f:
        return [line.split()[1] for line in f if " fuse" in line]


class FsJob:
    """One `mpirun -n N mpifuse ...` job with a mount per rank."""

    def __init__(self, mode, n, source, workdir, opts="", tcp_only=False, threads=None, timeout=30,
                 extra_args=(), env=None):
        self.mode, self.n, self.source = mode, n, str(source)
        self.workdir = str(workdir)
        os.makedirs(self.workdir, exist_ok=True)
        self.opts = ",".join(x for x in (f"timeout={timeout}", "linger=60", opts) if x)
        self.tcp_only = tcp_only
        self.threads = threads
        self.extra_args = list(extra_args)
        self.env_extra = dict(env or {})
        self.proc = None
        self.lines = []
        self.pids = {}
        self._reader = None

    def mount(self, r):
        return os.path.join(self.workdir, f"mnt{r}")

    @property
    def mounts(self):
        return [self.mount(r) for r in range(self.n)]

    def start(self, wait=60):
        cmd = ["mpirun", "-n", str(self.n), "--oversubscribe", BIN, "--mode", self.mode,
               "--mount-template", os.path.join(self.workdir, "mnt{rank}"), "-o", self.opts]
        if self.threads is not None:
            cmd += ["--threads", self.threads]
        cmd += self.extra_args
        cmd.append(self.source)
        env = mpi_env(self.tcp_only)
        env.update(self.env_extra)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env=env, start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.time() + wait
        while time.time() < deadline:
            if sum("mounted" in line for line in self.lines) >= self.n:
                break
            if self.proc.poll() is not None:
                raise RuntimeError(f"mpirun exited early ({self.proc.returncode}):\n{self.log()}")
            time.sleep(0.05)
        else:
            raise RuntimeError(f"mounts did not come up in {wait}s:\n{self.log()}")
        self.pids = self._rank_pids()
        for m in self.mounts:
            assert os.path.ismount(m), m
        return self

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def log(self):
        return "".join(self.lines)

    def _rank_pids(self):
        """rank -> pid of the mpifuse processes (children of mpirun)."""
        pids = {}
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.proc.pid)], capture_output=True,
                             text=True).stdout
        for p in out.split():
            try:
                with open(f"/proc/{p}/environ", "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            for kv in env:
                if kv.startswith(b"OMPI_COMM_WORLD_RANK="):
                    pids[int(kv.split(b"=")[1])] = int(p)
        return pids

    def stats(self, r, reset=False):
        import json
        name = ".mpifuse-stats-reset" if reset else ".mpifuse-stats"
        with open(os.path.join(self.mount(r), name)) as f:
            return json.load(f)

    def stop(self, timeout=60):
        """Clean stop: unmount rank 0's mount, every rank follows."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        subprocess.run(["fusermount3", "-u", self.mount(0)], capture_output=True)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"mpirun did not exit {timeout}s after unmount:\n{self.log()}")

    def cleanup(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in self.pids.values():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        mounted = mounted_fuse()
        for m in self.mounts:
            if m in mounted:
                subprocess.run(["fusermount3", "-u", "-z", m], capture_output=True)
        if self.proc is not None:
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
            if self._reader is not None:
                self._reader.join(5)
            if self.proc.stdout is not None and not self._reader.is_alive():
                self.proc.stdout.close()


# ---- fixtures (imported by the test modules: no conftest.py here, so that the
# repository's `from conftest import ...` in other test directories is not shadowed)

@pytest.fixture(scope="session")
def built():
    why = missing_prereq()
    if why:
        pytest.skip(f"mpifuse tests need FUSE and MPI: {why}")
    r = subprocess.run(["make", "-C", SYS, "-j2"], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"build failed:\n{r.stdout}\n{r.stderr}")
    return BIN


@pytest.fixture(scope="session")
def source(tmp_path_factory):
    """Source directory with the test files (random content)."""
    d = tmp_path_factory.mktemp("mpifuse-src")
    for s in SIZES:
        (d / f"f{s}").write_bytes(os.urandom(s))
    (d / "sub").mkdir()
    (d / "sub" / "nested.bin").write_bytes(os.urandom(300000))
    os.symlink("f4097", d / "link")
    return d


@pytest.fixture
def fsjob(built, tmp_path):
    """Factory: fsjob(mode, n, source, **kw) -> started FsJob, always cleaned up."""
    jobs = []

    def make(mode, n, source, **kw):
        job = FsJob(mode, n, source, tmp_path / f"job{len(jobs)}", **kw)
        jobs.append(job)
        return job.start()

    yield make
    for j in jobs:
        j.cleanup()
