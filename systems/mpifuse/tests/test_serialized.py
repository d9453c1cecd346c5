"""Fallback to MPI_THREAD_SERIALIZED with one global MPI lock (osc=pt2pt refuses
MPI_THREAD_MULTIPLE)."""
import os
import subprocess

import pytest

from mpifuse_testlib import MIB, sha256_file
from mpifuse_testlib import built, fsjob, source  # noqa: F401  (pytest fixtures)


@pytest.mark.parametrize("mode,opts", [("osr-refined", ""), ("bcast", ""),
                                       ("bcast", "bcast_on_demand=1,block=128K,bcast_depth=1")])
def test_serialized_global_lock(fsjob, source, mode, opts):
    job = fsjob(mode, 2, source, opts=opts, tcp_only=True, extra_args=["--mpi-thread", "serialized"],
                env={"OMPI_MCA_osc": "pt2pt"})
    name = f"f{17 * MIB + 5}"
    want = sha256_file(os.path.join(source, name))
    # every rank at once (on demand: in lockstep, barrier and broadcasts under the global lock)
    procs = [subprocess.Popen(["sha256sum", os.path.join(m, name)], stdout=subprocess.PIPE, text=True)
             for m in job.mounts]
    assert [p.communicate(timeout=120)[0].split()[0] for p in procs] == [want] * len(procs)
    st = job.stats(0)
    assert st["mpi_thread_level"] == "MPI_THREAD_SERIALIZED" and st["global_mpi_lock"] is True
    assert "one global MPI lock" in job.log()
    assert job.stop() == 0
