"""Library mode (libmpifuse.so + the ctypes wrapper) from an mpi4py program laid
out like the benchmarker: rank 0 generates, ranks 1..n mount and hash in-process."""
import os
import shutil
import subprocess
import sys

import pytest

from mpifuse_testlib import SYS, mpi_env
from mpifuse_testlib import built, fsjob, source  # noqa: F401  (pytest fixtures)

CHECK = os.path.join(SYS, "tests", "lib_mode_check.py")


def python_with_mpi4py():
    cands = [os.environ.get("MPIFUSE_TEST_PYTHON"), sys.executable, shutil.which("python3")]
    for c in cands:
        if c and subprocess.run([c, "-c", "import mpi4py.MPI"], capture_output=True).returncode == 0:
            return c
    return None


@pytest.fixture(scope="module")
def py(built):
    p = python_with_mpi4py()
    if not p:
        pytest.skip("no Python interpreter with mpi4py (set MPIFUSE_TEST_PYTHON)")
    return p


def run_check(py, tmp_path, mode, ranks=3, opts="", tcp_only=True):
    cmd = ["mpirun", "-n", str(ranks), "--oversubscribe", py, CHECK, mode, str(tmp_path)]
    if opts:
        cmd.append(opts)
    r = subprocess.run(cmd, env=mpi_env(tcp_only), capture_output=True, text=True, timeout=180)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "LIBCHECK OK" in out, out
    with open("/proc/self/mounts") as f:
        assert str(tmp_path) not in f.read()


def test_library_osr_refined(py, tmp_path):
    run_check(py, tmp_path, "osr-refined")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["osr", "bcast", "passthrough"])
def test_library_other_modes(py, tmp_path, mode):
    run_check(py, tmp_path, mode)


def test_library_bcast_on_demand(py, tmp_path):
    """the benchmarker's broadcast configuration: on-demand lockstep, 128 KiB blocks and
    requests, single threaded FUSE, options passed as Python keywords"""
    run_check(py, tmp_path, "bcast", opts="bcast_on_demand=1,bcast_depth=1,block=128K,max_read=131072,"
                                          "readahead_kb=128,threads=off")


@pytest.mark.slow
def test_library_four_ranks_single_threaded(py, tmp_path):
    run_check(py, tmp_path, "osr", ranks=4, opts="threads=off")


def test_python_wrapper_without_mpi_comm_handle_misuse(py):
    """the wrapper finds the library and maps comm handles for this MPI"""
    code = (f"import sys; sys.path.insert(0, {os.path.join(SYS, 'python')!r}); import mpifuse; from mpi4py import MPI;"
            "mpifuse.load_library(); v, t = mpifuse.comm_handle(MPI.COMM_WORLD); print(t.__name__)")
    r = subprocess.run([py, "-c", code], env=mpi_env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() in ("c_void_p", "c_int")
