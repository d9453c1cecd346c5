#!/usr/bin/env python3
"""Table 2.3: data held by the scheduler node vs the other nodes at the end of a run.

For every workflow, design and node count of the horizontal sweep (at its
largest tasks-per-node): the scheduler node's data (system node 1, which runs
the aggregation stages) and the mean of the other nodes', mean and std over
the repeats, and their ratio.  "Data" is what the node's storage holds at the
end of the run: memcached's ``bytes`` for MemFS and the locality design, the
node directory's bytes for local disk.  The paper's AMFS rows (Montage 6, GB)
sit in their own rows (design "AMFS (paper)"), never mixed with ours.
"""

from __future__ import annotations


from studies.memfs import wf_common as C
import numpy as np
import pandas as pd
from repro import cli, published, tidy


def build(df: pd.DataFrame, sw: dict, published: pd.DataFrame) -> pd.DataFrame:
    k = C.horizontal_tpn(sw)
    nodes = sorted(int(n) for n in sw["horizontal"]["nodes"])
    split = C.memory_split(df, "data_bytes")
    rows = []
    for app in ["montage", "blast"]:
        for design in C.DESIGN_ORDER:
            for n in nodes:
                g = split
                if len(split):
                    g = split[(split.workflow == app) & (split.design == design) & (split.nodes == n)
                              & (split.tasks_per_node == k)]
                expected = df[(df.workflow == app) & (df.design == design) & (df.nodes == n)
                              & (df.tasks_per_node == k)].drop_duplicates("raw_file")
                if expected.empty:
                    continue
                s_m, s_sd, cnt = C.mean_std(g.scheduler if len(g) else [])
                o_m, o_sd, _ = C.mean_std(g.other if len(g) else [])
                ratios = (g.scheduler / g.other).replace([np.inf, -np.inf], np.nan) if len(g) else []
                r_m, r_sd, _ = C.mean_std(ratios)
                rows.append({
                    "workflow": app, "design": design, "nodes": n, "tasks_per_node": k,
                    "runs_ok": cnt, "runs_failed": int((expected.status == "failed").sum()),
                    "runs_not_run": int((expected.status == "not-run").sum()),
                    "scheduler_node_MB": s_m / C.MB, "scheduler_node_MB_std": s_sd / C.MB,
                    "other_nodes_MB": o_m / C.MB, "other_nodes_MB_std": o_sd / C.MB,
                    "ratio_scheduler_to_other": r_m, "ratio_std": r_sd,
                    "source": "reproduced", "system_kind": C.system_kind(expected[expected.status == "ok"])
                    if (expected.status == "ok").any() else "",
                })
    pub = published[published.metric.isin(["memory scheduler node", "memory other nodes"])]
    for n, g in pub.groupby("nodes"):
        s = g[g.metric == "memory scheduler node"].value.astype(float)
        o = g[g.metric == "memory other nodes"].value.astype(float)
        if not len(s) or not len(o):
            continue
        rows.append({
            "workflow": "montage", "design": "AMFS (paper)", "nodes": int(n), "tasks_per_node": np.nan,
            "runs_ok": np.nan, "runs_failed": np.nan, "runs_not_run": np.nan,
            "scheduler_node_MB": float(s.iloc[0]) * 1000, "scheduler_node_MB_std": np.nan,
            "other_nodes_MB": float(o.iloc[0]) * 1000, "other_nodes_MB_std": np.nan,
            "ratio_scheduler_to_other": float(s.iloc[0]) / float(o.iloc[0]), "ratio_std": np.nan,
            "source": str(g.source.iloc[0]), "system_kind": "real (DAS4, paper)",
        })
    out = pd.DataFrame(rows)
    for c in ("tasks_per_node", "runs_ok", "runs_failed", "runs_not_run"):
        if c in out.columns:
            out[c] = out[c].astype("Int64")
    for c in ("scheduler_node_MB", "scheduler_node_MB_std", "other_nodes_MB", "other_nodes_MB_std"):
        out[c] = out[c].round(3)
    for c in ("ratio_scheduler_to_other", "ratio_std"):
        out[c] = out[c].round(3)
    return out


def read_published(paths: list[str]) -> pd.DataFrame:
    frames = [published.load(p) for p in paths]
    frames = [d for d in frames if "nodes" in d.columns]
    pub = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["source", "metric", "design", "nodes", "value"])
    pub = pub[pub.nodes.astype(str).str.fullmatch(r"\d+")].copy()
    pub["nodes"] = pub.nodes.astype(int)
    return pub


def main() -> None:
    ap = cli.parser(__doc__)
    ap.add_argument("--measurements", required=True)
    ap.add_argument("--published", nargs="+", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    df = C.load(args.measurements)
    out = build(df, cli.load_config(args.config)["sweeps"], read_published(args.published))
    tidy.write_csv(out, args.out)
    print(out.to_string())


if __name__ == "__main__":
    main()
