#!/usr/bin/env python3
"""The montage-memlimit experiment (paper 004, Section 2.4.2): the mechanism of "AMFS's scheduler
node runs out of memory on Montage 12x12, MemFS completes", at local scale.

Each node's memcached gets the same per-node limit for data (``-M``: a full store answers
"SERVER_ERROR out of memory", it never evicts; ``-m`` the limit plus one preallocated page per slab
class, mtcwf.cluster_api.data_limited_store). Montage runs on both designs at each limit of a
sweep, plus once at the study's normal memcached_mb (unlimited reference: the data per node).
From the raw records only (a successful run's raw file; a failed run's failure record with the
stores' state at failure, added by wf_memlimit_run.py):

  M1  at the configured limit: the locality design fails, its scheduler node's store out of
      memory (MemFS counted ENOSPC there: memcached's out-of-memory answer), AND MemFS completes
      with a verified mosaic.  Anything else (both complete, both fail, locality fails elsewhere
      or for another reason, MemFS fails) -> not reproduced; a missing record -> not run.
  M2  over the sweep: MemFS's smallest completing limit is below the locality design's.
Writes a per-run table and the claims.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from repro import claims as K
from repro import rawio, tidy

STUDY = "memfs"
TARGET = "memfs_wf_memlimit"
OUT_TABLE = "results/memfs/tables/memlimit_runs.csv"
OUT = "results/memfs/claims_workflows_memlimit.csv"
SCHED = 1  # the locality design's scheduler node (mtcwf.run: extra.scheduler_node)
PAPER = ("004 Section 2.4.2 ('AMFS is unable to run this workflow because the \"scheduler node\" crashes'), "
         "Table 2.3")
# Table 2.3 (Montage 6, AMFS): scheduler node vs other nodes, GB
TABLE23 = ("Table 2.3 (AMFS, Montage 6): scheduler node 19/17/16/16 GB vs other nodes 9.5/5.5/3.0/1.8 GB "
           "at 8/16/32/64 nodes")
OOM_SIGNS = ("enospc",)


def load_record(raw: str) -> dict | None:
    """The run's record: the raw file (ok), else its failure record (failed), else None (not run)."""
    for p in (Path(raw), rawio.failure_path(raw)):
        if p.exists():
            rec = json.loads(p.read_text())
            rec.setdefault("status", "ok" if p == Path(raw) else "failed")
            return rec
    return None


def run_row(raw: str, rec: dict | None) -> dict:
    p = rec.get("params", {}) if rec else {}
    row = {"raw": raw, "design": p.get("design", ""), "memcached_mb": None, "status": "not run",
           "failure": "", "oom_nodes": "", "scheduler_enospc": None, "other_enospc": None,
           "scheduler_data_MB": None, "other_data_MB": None, "mosaic_ok": None, "system_kind": ""}
    parts = dict(s.split("~", 1) for s in Path(raw).with_suffix("").parts if "~" in s)
    row["design"] = row["design"] or parts.get("design", "")
    row["memcached_mb"] = parts.get("memcached_mb", "")
    if rec is None:
        return row
    row["status"] = rec.get("status", "ok")
    row["system_kind"] = rec.get("system_kind", "")
    if row["status"] == "ok":
        stats = (rec.get("extra") or {}).get("node_stats") or []
        sched = [s["data_bytes"] for s in stats if s["node"] == SCHED]
        other = [s["data_bytes"] for s in stats if s["node"] != SCHED]
        row["scheduler_data_MB"] = sched[0] / 1e6 if sched else None
        row["other_data_MB"] = max(other) / 1e6 if other else None
        row["mosaic_ok"] = bool((rec.get("sanity") or {}).get("ok"))
        return row
    row["failure"] = str(rec.get("failure", ""))[:300]
    nodes = ((rec.get("extra") or {}).get("at_failure") or {}).get("nodes") or []
    row["oom_nodes"] = ";".join(str(n["node"]) for n in nodes if int(n.get("memfs_enospc") or 0) > 0)
    row["scheduler_enospc"] = (sum(int(n.get("memfs_enospc") or 0) for n in nodes if n["node"] == SCHED)
                               if nodes else None)
    row["other_enospc"] = sum(int(n.get("memfs_enospc") or 0) for n in nodes if n["node"] != SCHED) if nodes else None
    return row


def runs_table(raws: list[str]) -> pd.DataFrame:
    """One row per run (an experiment that is off: no rows, the claims say not run)."""
    return pd.DataFrame([run_row(r, load_record(r)) for r in raws], columns=list(run_row("x/design~memfs", None)))


def oom_on_scheduler(r) -> bool:
    """Failed, and the scheduler node's store refused for memory (MemFS's ENOSPC count > 0)."""
    return r.status == "failed" and (r.scheduler_enospc or 0) > 0


def _one(t: pd.DataFrame, design: str, mb) -> pd.Series | None:
    s = t[(t.design == design) & (t.memcached_mb.astype(str) == str(mb))]
    return None if s.empty else s.iloc[0]


def describe(r) -> str:
    if r is None or r.status == "not run":
        return "not run"
    if r.status == "ok":
        return (f"completed (mosaic {'verified' if r.mosaic_ok else 'NOT verified'}; data scheduler node "
                f"{r.scheduler_data_MB:.2f} MB, other {r.other_data_MB:.2f} MB)")
    where = f"store out of memory on node(s) {r.oom_nodes}" if r.oom_nodes else "no store refused for memory"
    return f"failed ({where}; {r.failure[:120]})"


def build(t: pd.DataFrame, limit_mb: int, ref_mb: int, node_count: int) -> list[K.Claim]:
    kinds = sorted(set(t.system_kind.dropna().astype(str)) - {""})
    kind = ",".join(kinds) or "stand-in:network-namespaces"
    loc, mem = _one(t, "locality", limit_mb), _one(t, "memfs", limit_mb)
    rl, rm = _one(t, "locality", ref_mb), _one(t, "memfs", ref_mb)
    # the smallest completing limit of each design over the sweep (the reference excluded)
    sweep = t[t.memcached_mb.astype(str) != str(ref_mb)].copy()
    sweep["mb"] = pd.to_numeric(sweep.memcached_mb, errors="coerce")
    need = {}
    for d in ("memfs", "locality"):
        s = sweep[(sweep.design == d) & (sweep.status == "ok") & (sweep.mosaic_ok == True)]  # noqa: E712
        need[d] = int(s.mb.min()) if len(s) else None
    tried = sorted(int(x) for x in sweep.mb.dropna().unique())
    ref = (f"unlimited reference ({ref_mb} MB): MemFS data per node "
           f"{rm.scheduler_data_MB:.2f}/{rm.other_data_MB:.2f} MB, "
           f"locality scheduler node {rl.scheduler_data_MB:.2f} MB vs other {rl.other_data_MB:.2f} MB"
           if rl is not None and rm is not None and rl.status == "ok" and rm.status == "ok"
           else f"unlimited reference ({ref_mb} MB): locality {describe(rl)}; MemFS {describe(rm)}")
    between = (need["memfs"] is not None and need["memfs"] <= limit_mb
               and (need["locality"] is None or limit_mb < need["locality"]))
    ratio = ""
    if need["memfs"] is not None and rm is not None and rm.status == "ok":
        biggest = max(rm.scheduler_data_MB, rm.other_data_MB)
        ratio = (f" (MemFS's smallest completing limit is {need['memfs'] / biggest:.1f}x"
                 " its largest per-node data)")
    margin = (f"limit {limit_mb} MB per node {'lies' if between else 'does NOT lie'} between MemFS's smallest "
              f"completing limit ({need['memfs']} MB) and the locality design's ({need['locality']} MB) over the "
              f"sweep {tried} MB; a limit is the node's memory for data in MiB (memcached -M, items in 16 KiB "
              f"chunks, -m the limit plus one preallocated 1 MiB page per slab class: mtcwf.cluster_api."
              f"data_limited_store){ratio}; " + ref)
    note = (f"the mechanism at local scale ({node_count} nodes, Montage 5x5 synthetic, the same memory limit for "
            "data on every node), not the 12x12 run itself; " + margin + "; " + TABLE23)
    out = []
    c = K.Claim(STUDY, "M1", "AMFS's scheduler node runs out of memory where MemFS completes (same per-node "
                "memory limit)", PAPER, TARGET, OUT_TABLE, unit="", system_kind=kind, note=note)
    if loc is None or mem is None or loc.status == "not run" or mem.status == "not run":
        holds = None
    else:
        holds = bool(oom_on_scheduler(loc) and mem.status == "ok" and mem.mosaic_ok)
    out.append(K.shape_claim(c, holds, f"at {limit_mb} MB per node: locality {describe(loc)}; MemFS {describe(mem)}",
                             "AMFS's scheduler node runs out of memory (crashes) on Montage 12x12; MemFS, which "
                             "spreads data evenly, completes"))
    c = K.Claim(STUDY, "M2", "MemFS needs a smaller per-node store than the locality design (smallest per-node "
                "memory limit at which Montage completes)", PAPER, TARGET, OUT_TABLE, unit="MB",
                system_kind=kind, note=note)
    if not tried or t[t.memcached_mb.astype(str) != str(ref_mb)].status.eq("not run").all():
        holds2 = None
    elif need["memfs"] is None:
        holds2 = False
    else:
        holds2 = need["locality"] is None or need["memfs"] < need["locality"]
    out.append(K.shape_claim(c, holds2, f"MemFS {need['memfs'] or 'none of'} MB, "
                             f"locality {need['locality'] or 'none of'} MB (sweep {tried} MB)",
                             "MemFS completes where AMFS's scheduler node is full"))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raws", required=True, help="file listing the experiment's raw paths, one a line")
    ap.add_argument("--limit-mb", type=int, required=True)
    ap.add_argument("--ref-mb", type=int, required=True)
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--table", default=OUT_TABLE)
    ap.add_argument("--out", default=OUT)
    a = ap.parse_args(argv)
    raws = [ln.strip() for ln in Path(a.raws).read_text().splitlines() if ln.strip()]
    t = runs_table(raws)
    tidy.write_csv(t, a.table)
    cl = build(t, a.limit_mb, a.ref_mb, a.nodes)
    K.write(cl, a.out)
    for c in cl:
        print(f"{c.claim_id}: {c.verdict}: {c.reproduced}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
