#!/usr/bin/env python3
"""One run of the montage-memlimit experiment (paper 004, Section 2.4.2: AMFS's scheduler node
runs out of memory on Montage 12x12, MemFS completes).

    python3 -m studies.memfs.wf_memlimit_run workflow_montage --config CFG --rep 0 --out RAW
        --params '{"workflow": "montage", "design": D, "nodes": N, "tasks_per_node": K, "memcached_mb": MB}'
        --input manifest=results/memfs/wf_inputs/montage/manifest.json [--input image=SIF]

Runs ``studies.memfs.wf_run``'s measurement (``mtcwf.run``) unchanged (same cluster, same scheduler,
same verification, same record: its params without memcached_mb, the raw path says the limit); each
node's memcached gets ``-m <memcached_mb> -M``, so a full node answers "SERVER_ERROR out of memory"
instead of evicting, and MemFS turns that answer into ENOSPC and counts it (errors.enospc).
Montage's tools only print "could not close the file", so when the run fails this experiment
snapshots every node's store before the cluster is torn down -- memcached's bytes and
limit_maxbytes and the sum over the node's mounts of MemFS's errors.enospc / errors.eio -- and
adds it to the record the runner writes as the failure record, as ``extra.at_failure``. That is
the evidence the claim reads (wf_memlimit.py): which node's store refused, and that it refused for
memory.
"""

from __future__ import annotations

import json
import sys

from repro import runner
from studies.memfs import wf_run

RUN = runner.Experiments(wf_run.STUDY)


def node_snapshot(rows: list[dict]) -> list[dict]:
    """Per system node (1-based, node 1 = scheduler node): the store's state."""
    out = []
    for row in rows:
        mc = row.get("memcached") or {}
        enospc = eio = 0
        for m in row.get("mounts") or []:
            err = (m.get("memfs") or {}).get("errors") or {}
            enospc += int(err.get("enospc") or 0)
            eio += int(err.get("eio") or 0)
        out.append({"node": int(row["node"]) + 1, "memcached_bytes": mc.get("bytes"),
                    "memcached_limit_bytes": mc.get("limit_maxbytes"), "memcached_items": mc.get("curr_items"),
                    "memfs_enospc": enospc, "memfs_eio": eio})
    return out


class _Snap:
    """Wraps the cluster context: on an exception, snapshot the stores into ``snap`` before tear-down."""

    def __init__(self, ctx, snap: dict):
        self.ctx, self.snap, self.c = ctx, snap, None

    def __enter__(self):
        self.c = self.ctx.__enter__()
        return self.c

    def __exit__(self, et, ev, tb):
        if et is not None and self.c is not None:
            try:
                self.snap["nodes"] = node_snapshot(self.c.raw.stats())
            except Exception as exc:  # noqa: BLE001 - recorded, the run's own error still wins
                self.snap["error"] = f"{type(exc).__name__}: {exc}"
        return self.ctx.__exit__(et, ev, tb)


@RUN.experiment("workflow_montage", system_kind="stand-in:network-namespaces")
def workflow_montage(ctx: runner.Context) -> dict:
    """wf_run's Montage run under the memory limit; a failure's record carries the stores' state."""
    from mtcwf import cluster_api  # systems/mtc-workflows: the project's Python path (workflow/pythonpath.txt)

    args = wf_run.mtcwf_args(ctx)
    rec = wf_run.new_record(ctx, args)
    snap: dict = {}
    orig = cluster_api.open_cluster
    cluster_api.open_cluster = lambda *a, **k: _Snap(orig(*a, **k), snap)
    try:
        return wf_run.measure(ctx, args, rec)
    except Exception:  # RunFailed, SIGTERM, a crash: the runner records rec, with the stores' state
        rec.setdefault("extra", {})["at_failure"] = snap or {"error": "no snapshot (failed before the cluster)"}
        print(f"store at failure: {json.dumps(snap)}", file=sys.stderr, flush=True)
        raise
    finally:
        cluster_api.open_cluster = orig


if __name__ == "__main__":
    sys.exit(RUN.main())
