#!/usr/bin/env python3
"""n+1 layout probe: which node did every rank run on, and how fast is a collective.

Run with one rank per node (mpirun locally, srun on Slurm). Rank 0 is the
driver node, ranks 1..n the system nodes. Writes one repro.raw/1 record.
The run contract (repro.runner):
    python3 -m studies.smoke.run layout_probe --config '<smoke JSON>' --params '{"nodes": n}' --out PATH
"""

from __future__ import annotations

import os
import socket
import sys

from repro import rawio, runner


def node_name() -> str:
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


RUN = runner.Experiments("smoke")


@RUN.experiment("layout_probe", system_kind="real")
def layout_probe(ctx: runner.Context):
    """params: nodes (system nodes n; ranks = n+1). Config: bcast_mib, fail_if_exists ({n}: n).
    On Slurm (SLURM_JOB_ID set) every rank must be on a node of its own, rank 0 on the first."""
    from mpi4py import MPI  # here: the --after step (no launcher) must not start MPI

    nodes_n = int(ctx.params["nodes"])
    bcast_mib = int(ctx.cfg.get("bcast_mib", 8))
    fault = str(ctx.cfg.get("fail_if_exists", "")).replace("{n}", str(nodes_n))
    on_slurm = bool(os.environ.get("SLURM_JOB_ID"))
    comm = MPI.COMM_WORLD
    me = {"rank": comm.rank, "node": node_name(), "host": socket.gethostname(), "pid": os.getpid(),
          "slurm_job_id": os.environ.get("SLURM_JOB_ID", ""), "slurm_step_id": os.environ.get("SLURM_STEP_ID", "")}
    everyone = comm.gather(me, root=0)
    comm.Barrier()
    t0 = MPI.Wtime()
    for _ in range(200):
        comm.allreduce(1)
    t_allreduce = (MPI.Wtime() - t0) / 200
    buf = bytearray(bcast_mib << 20)
    comm.Barrier()
    t0 = MPI.Wtime()
    comm.Bcast(buf, root=0)
    comm.Barrier()
    t_bcast = MPI.Wtime() - t0
    if comm.rank != 0:
        return None  # rank 0 records
    rec = ctx.record({"mpi": MPI.Get_library_version().splitlines()[0].strip()})
    nodes = [r["node"] for r in everyone]
    distinct = len(set(nodes))
    rec["metrics"] = [
        rawio.metric("ranks", comm.size, "count"),
        rawio.metric("distinct_nodes", distinct, "count"),
        rawio.metric("allreduce_latency", t_allreduce * 1e6, "us"),
        rawio.metric("bcast_bandwidth", (bcast_mib << 20) / t_bcast / 1e6, "MB/s"),
    ]
    rec["sanity"] = {"ranks_match": comm.size == nodes_n + 1,
                     "one_rank_per_node": distinct == comm.size if on_slurm else None,
                     "driver_rank0_first_node": everyone[0]["node"] == sorted(nodes, key=_natural)[0]
                     if on_slurm else None}
    if fault and os.path.exists(fault):
        rec["sanity"]["no_injected_fault"] = False
    rec["extra"] = {"ranks": everyone, "slurm_job_nodelist": os.environ.get("SLURM_JOB_NODELIST", "")}
    ctx.progress(f"{comm.size} ranks on {distinct} distinct nodes: {nodes}")
    bad = [k for k, v in rec["sanity"].items() if v is False]
    if bad:
        raise runner.RunFailed(f"sanity failed: {bad} (nodes {nodes})", rec)
    return rec


def _natural(name: str):
    import re
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


if __name__ == "__main__":
    sys.exit(RUN.main())
