#!/usr/bin/env python3
"""One run of the montage-memlimit experiment (paper 004, Section 2.4.2: AMFS's scheduler node
runs out of memory on Montage 12x12, MemFS completes).

    python3 -m studies.memfs.wf_memlimit_run <the arguments of mtcwf.run (studies.memfs.wf_run)>

Runs ``studies.memfs.wf_run`` (``mtcwf.run``) unchanged (same cluster, same scheduler, same verification); each node's
memcached gets ``-m <--memcached-mb> -M``, so a full node answers "SERVER_ERROR out of memory"
instead of evicting, and MemFS turns that answer into ENOSPC and counts it (errors.enospc).
Montage's tools only print "could not close the file", so when the run fails this wrapper
snapshots every node's store before the cluster is torn down -- memcached's bytes and
limit_maxbytes and the sum over the node's mounts of MemFS's errors.enospc / errors.eio -- and
adds it to the failure record as ``extra.at_failure``. That is the evidence the claim reads
(wf_memlimit.py): which node's store refused, and that it refused for memory.
"""

from __future__ import annotations

import json
import sys

from repro import rawio

SNAPSHOT: dict = {}


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
    """Wraps the cluster context: on an exception, snapshot the stores before tear-down."""

    def __init__(self, ctx):
        self.ctx, self.c = ctx, None

    def __enter__(self):
        self.c = self.ctx.__enter__()
        return self.c

    def __exit__(self, et, ev, tb):
        if et is not None and self.c is not None:
            try:
                SNAPSHOT["nodes"] = node_snapshot(self.c.raw.stats())
            except Exception as exc:  # noqa: BLE001 - recorded, the run's own error still wins
                SNAPSHOT["error"] = f"{type(exc).__name__}: {exc}"
        return self.ctx.__exit__(et, ev, tb)


def main(argv=None) -> int:
    from mtcwf import cluster_api  # systems/mtc-workflows: the project's Python path (workflow/pythonpath.txt)
    from studies.memfs import wf_run

    argv = list(sys.argv[1:] if argv is None else argv)
    raw = argv[argv.index("--raw") + 1]
    orig = cluster_api.open_cluster
    cluster_api.open_cluster = lambda *a, **k: _Snap(orig(*a, **k))
    try:
        rc = wf_run.main(argv)
    finally:
        cluster_api.open_cluster = orig
    if rc != 0:
        path = rawio.failure_path(raw)
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError):
            return rc
        rec.setdefault("extra", {})["at_failure"] = SNAPSHOT or {"error": "no snapshot (failed before the cluster)"}
        rawio.write_json_atomic(path, rec)
        print(f"store at failure: {json.dumps(SNAPSHOT)}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
