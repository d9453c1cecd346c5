"""Fallback to MPI_THREAD_SERIALIZED with one global MPI lock (osc=pt2pt refuses
MPI_THREAD_MULTIPLE)."""
import os

import pytest

from mpifuse_testlib import MIB, sha256_file
from mpifuse_testlib import built, fsjob, source  # noqa: F401  (pytest fixtures)


@pytest.mark.parametrize("mode", ["osr-refined", "bcast"])
def test_serialized_global_lock(fsjob, source, mode):
    job = fsjob(mode, 2, source, tcp_only=True, extra_args=["--mpi-thread", "serialized"],
                env={"OMPI_MCA_osc": "pt2pt"})
    name = f"f{17 * MIB + 5}"
    want = sha256_file(os.path.join(source, name))
    for m in job.mounts:
        assert sha256_file(os.path.join(m, name)) == want
    st = job.stats(0)
    assert st["mpi_thread_level"] == "MPI_THREAD_SERIALIZED" and st["global_mpi_lock"] is True
    assert "one global MPI lock" in job.log()
    assert job.stop() == 0
