#!/usr/bin/env python3
"""One run of the montage-memlimit experiment (paper 004, Section 2.4.2: AMFS's scheduler node
runs out of memory on Montage 12x12, MemFS completes).

    python3 -m studies.memfs.wf_memlimit_run workflow_montage --config CFG --rep 0 --out RAW
        --params '{"workflow": "montage", "design": D, "nodes": N, "tasks_per_node": K, "memcached_mb": MB}'
        --input manifest=results/memfs/wf_inputs/montage/manifest.json [--input image=SIF]

Runs ``studies.memfs.wf_run``'s measurement (``mtcwf.run``) unchanged (same cluster, same scheduler,
same verification, same record: its params without memcached_mb, the raw path says the limit);
memcached_mb is every node's memory for data (``mtcwf.run --data-limit-mb``, the record's
``extra.store``): memcached ``-M`` (a full node answers "SERVER_ERROR out of memory" instead of
evicting; MemFS turns that answer into ENOSPC and counts it, errors.enospc), 16 KiB chunks, every slab
class's first page preallocated and ``-m`` the limit plus those pages (mtcwf.cluster_api.
data_limited_store: with plain ``-m`` the per-class pages, not the data, filled a small store).
Montage's tools only print "could not close the file", so before the cluster is torn down this
experiment snapshots every node's store -- memcached's bytes, limit_maxbytes and items, its slab
classes (``stats slabs``: chunk size, pages, used chunks; total_malloced) and the sum over the node's
mounts of MemFS's errors.enospc / errors.eio -- into the record: ``extra.at_failure`` when the run
fails (the record the runner writes as the failure record), ``extra.at_end`` when it completes.
That is the evidence the claim reads (wf_memlimit.py): which node's store refused, and that it
refused for memory.
"""

from __future__ import annotations

import json
import sys

from repro import runner
from studies.memfs import wf_run

RUN = runner.Experiments(wf_run.STUDY)


def slab_snapshot(server: str) -> dict:
    """memcached's ``stats slabs`` of one server (host:port): per slab class in use its chunk size,
    pages, used and total chunks; total_malloced (the pages taken, of -m) and active_slabs."""
    from systems.mtc import mcproto  # the project's Python path (workflow/pythonpath.txt)

    host, _, port = server.rpartition(":")
    classes: dict[str, dict] = {}
    out: dict = {"classes": classes}
    for ln in mcproto.command(host, int(port), "stats slabs").decode().splitlines():
        parts = ln.split()
        if len(parts) != 3 or parts[0] != "STAT":
            continue
        cls, sep, name = parts[1].partition(":")
        if sep and name in ("chunk_size", "total_pages", "used_chunks", "total_chunks"):
            classes.setdefault(cls, {})[name] = int(parts[2])
        elif not sep and cls in ("total_malloced", "active_slabs"):
            out[cls] = int(parts[2])
    return out


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
    """Wraps the cluster context: snapshot the stores into ``snap`` before tear-down (failed or not)."""

    def __init__(self, ctx, snap: dict):
        self.ctx, self.snap, self.c = ctx, snap, None

    def __enter__(self):
        self.c = self.ctx.__enter__()
        return self.c

    def __exit__(self, et, ev, tb):
        if self.c is not None:
            try:
                self.snap["nodes"] = node_snapshot(self.c.raw.stats())
                servers = getattr(self.c.raw, "servers", None) or []
                servers = servers.split(",") if isinstance(servers, str) else list(servers)
                for row, server in zip(self.snap["nodes"], servers):
                    try:
                        row["slabs"] = slab_snapshot(server)
                    except (OSError, ValueError) as exc:
                        row["slabs"] = {"error": f"{type(exc).__name__}: {exc}"}
            except Exception as exc:  # noqa: BLE001 - recorded, the run's own error still wins
                self.snap["error"] = f"{type(exc).__name__}: {exc}"
        return self.ctx.__exit__(et, ev, tb)


@RUN.experiment("workflow_montage", system_kind="stand-in:network-namespaces")
def workflow_montage(ctx: runner.Context) -> dict:
    """wf_run's Montage run under the memory limit; its record carries the stores' state (at_end or
    at_failure)."""
    from mtcwf import cluster_api  # systems/mtc-workflows: the project's Python path (workflow/pythonpath.txt)

    args = wf_run.mtcwf_args(ctx)
    rec = wf_run.new_record(ctx, args)
    snap: dict = {}
    orig = cluster_api.open_cluster
    cluster_api.open_cluster = lambda *a, **k: _Snap(orig(*a, **k), snap)
    try:
        rec = wf_run.measure(ctx, args, rec)
        rec["extra"]["at_end"] = snap
        return rec
    except Exception:  # RunFailed, SIGTERM, a crash: the runner records rec, with the stores' state
        rec.setdefault("extra", {})["at_failure"] = snap or {"error": "no snapshot (failed before the cluster)"}
        print(f"store at failure: {json.dumps(snap)}", file=sys.stderr, flush=True)
        raise
    finally:
        cluster_api.open_cluster = orig


if __name__ == "__main__":
    sys.exit(RUN.main())
