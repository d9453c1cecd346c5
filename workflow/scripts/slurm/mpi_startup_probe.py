"""One MPI start-up as a benchmark rank makes it (run by mpi-startup-loop.sh under srun, in an image
or on the host): what ``python3 -m studies.mpifuse.run`` does before its first use case.

  MPI_Init_thread(MULTIPLE) via mpi4py -> COMM_WORLD.Split -> allgather -> Barrier
  -> fork/exec sha256sum (the hash probe) -> Ibarrier polled with sleeps -> MPI_Win_allocate
  (osc ucx) + a passive-target MPI_Get from the next rank -> Win free -> Finalize

Each rank prints one line ``PROBE {json}``: its rank, node, pid, and the UCX_* / OMPI_MCA_* /
SLURM_PMIX_* variables the rank itself sees (inside the image, if it runs in one), so the caller can
check that the cluster's transport settings reach the rank. Standard library and mpi4py only.

  --fence-check S   after the start-up, rank 0 sleeps S seconds and every rank then calls
                    PMIx_Fence without data (what Open MPI's second fence in MPI_Init is); each
                    rank reports how long it waited in "fence_wait_s". Under a fence that is a
                    barrier every other rank waits about S; under Slurm 22.05's tree fence on
                    fewer nodes than TreeWidth they return at once (workflow/scripts/mpi-env.sh).
  MPI_STARTUP_PROBE_FAULT=segv   (tests only) rank 1 dereferences NULL after MPI_Init: a real crash
                    for the loop to count.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import socket
import subprocess
import sys
import time

SEEN = ("UCX_", "OMPI_MCA_", "PMIX_MCA_", "SLURM_PMIX_")


def fence_wait(sleep_s: float, rank: int) -> float:
    """Seconds this rank spent in PMIx_Fence(all procs, no data) after rank 0 slept sleep_s."""
    pmix = ctypes.CDLL("libpmix.so.2", mode=ctypes.RTLD_GLOBAL)
    if rank == 0:
        time.sleep(sleep_s)
    t = time.monotonic()
    rc = pmix.PMIx_Fence(None, ctypes.c_size_t(0), None, ctypes.c_size_t(0))
    if rc != 0:
        raise SystemExit(f"rank {rank}: PMIx_Fence returned {rc}")
    return round(time.monotonic() - t, 3)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fence-check", type=float, default=0.0, metavar="S")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    from mpi4py import MPI  # MPI_Init_thread(MPI_THREAD_MULTIPLE), as the benchmark

    t_init = time.monotonic() - t0
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    if os.environ.get("MPI_STARTUP_PROBE_FAULT") == "segv" and rank == 1:
        ctypes.string_at(0)  # SIGSEGV: the injected crash
    sub = world.Split(1 if rank > 0 else MPI.UNDEFINED, rank)
    me = {"rank": rank, "size": size, "node": os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
          "pid": os.getpid()}
    ranks = world.allgather(me)
    world.Barrier()
    # the hash probe's child process (a fork of a process that has UCX's threads and hooks)
    subprocess.run(["sha256sum", "/dev/null"], check=True, capture_output=True)
    req = world.Ibarrier()
    while not req.Test():
        time.sleep(0.001)
    # one-sided: what the file systems do (osc ucx; MPI_Win_allocate + MPI_Get from another node)
    win = MPI.Win.Allocate(1 << 16, comm=world)
    mem = memoryview(win.tomemory()).cast("B")
    mem[:8] = rank.to_bytes(8, "little")
    world.Barrier()
    buf = bytearray(8)
    peer = (rank + 1) % size
    win.Lock(peer, MPI.LOCK_SHARED)
    win.Get(buf, peer, (0, 8, MPI.BYTE))
    win.Unlock(peer)
    got = int.from_bytes(buf, "little")
    world.Barrier()
    win.Free()
    if sub != MPI.COMM_NULL:
        sub.Free()
    waited = fence_wait(args.fence_check, rank) if args.fence_check > 0 else None
    world.Barrier()
    env = {k: v for k, v in sorted(os.environ.items()) if k.startswith(SEEN)}
    out = dict(me, nodes=sorted({r["node"] for r in ranks}), get_from=peer, got=got, ok=got == peer,
               init_s=round(t_init, 3), fence_wait_s=waited,
               in_image=bool(os.environ.get("APPTAINER_CONTAINER")), env=env,
               mpi=MPI.Get_library_version().splitlines()[0].strip().rstrip("\x00"))
    print("PROBE " + json.dumps(out, sort_keys=True), flush=True)
    MPI.Finalize()
    return 0 if got == peer else 3


if __name__ == "__main__":
    sys.exit(main())
