#!/usr/bin/env python3
"""n+1 layout probe: which node did every rank run on, and how fast is a collective.

Run with one rank per node (mpirun locally, srun on Slurm). Rank 0 is the
driver node, ranks 1..n the system nodes. Writes one repro.raw/1 record.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

from mpi4py import MPI

from repro import rawio


def node_name() -> str:
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, required=True, help="system nodes n (ranks = n+1)")
    ap.add_argument("--bcast-mib", type=int, default=8)
    ap.add_argument("--out", required=True)
    ap.add_argument("--launcher", choices=["local", "slurm"], required=True)
    ap.add_argument("--fail-if-exists", default="", help="fault injection for tests")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    me = {"rank": comm.rank, "node": node_name(), "host": socket.gethostname(), "pid": os.getpid(),
          "slurm_job_id": os.environ.get("SLURM_JOB_ID", ""), "slurm_step_id": os.environ.get("SLURM_STEP_ID", "")}
    everyone = comm.gather(me, root=0)
    comm.Barrier()
    t0 = MPI.Wtime()
    for _ in range(200):
        comm.allreduce(1)
    t_allreduce = (MPI.Wtime() - t0) / 200
    buf = bytearray(args.bcast_mib << 20) if comm.rank == 0 else bytearray(args.bcast_mib << 20)
    comm.Barrier()
    t0 = MPI.Wtime()
    comm.Bcast(buf, root=0)
    comm.Barrier()
    t_bcast = MPI.Wtime() - t0
    if comm.rank != 0:
        return 0
    rec = rawio.new_record("smoke", "layout_probe", {"nodes": args.nodes}, 0, "real",
                           {"mpi": MPI.Get_library_version().splitlines()[0].strip()})
    nodes = [r["node"] for r in everyone]
    distinct = len(set(nodes))
    rec["metrics"] = [
        rawio.metric("ranks", comm.size, "count"),
        rawio.metric("distinct_nodes", distinct, "count"),
        rawio.metric("allreduce_latency", t_allreduce * 1e6, "us"),
        rawio.metric("bcast_bandwidth", (args.bcast_mib << 20) / t_bcast / 1e6, "MB/s"),
    ]
    rec["sanity"] = {"ranks_match": comm.size == args.nodes + 1,
                     "one_rank_per_node": distinct == comm.size if args.launcher == "slurm" else None,
                     "driver_rank0_first_node": everyone[0]["node"] == sorted(nodes, key=_natural)[0]
                     if args.launcher == "slurm" else None}
    if args.fail_if_exists and os.path.exists(args.fail_if_exists):
        rec["sanity"]["no_injected_fault"] = False
    rec["extra"] = {"ranks": everyone, "slurm_job_nodelist": os.environ.get("SLURM_JOB_NODELIST", "")}
    bad = [k for k, v in rec["sanity"].items() if v is False]
    print(f"layout_probe: {comm.size} ranks on {distinct} distinct nodes: {nodes}", flush=True)
    if bad:
        rawio.write_failure(args.out, rawio.finish(rec), f"sanity failed: {bad} (nodes {nodes})")
        print(f"layout_probe: FAILED {bad}", file=sys.stderr)
        comm.Abort(3)
    rawio.clear_failure(args.out)
    rawio.write_json_atomic(args.out, rawio.finish(rec))
    return 0


def _natural(name: str):
    import re
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


if __name__ == "__main__":
    time.sleep(0)
    sys.exit(main())
