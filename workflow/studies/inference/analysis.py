"""The inference study's analysis, from the tidy table only (results/inference/measurements.csv):
per-configuration statistics over repeats, Table I, the figures' data, the limits. Published values
come from published.csv and only ever fill their own columns."""

from __future__ import annotations

import numpy as np
import pandas as pd

from repro import published as rpub, tidy
from studies.inference import layout

NOT_RUN = "not run"
FAILED = "failed"


def read_measurements(path) -> pd.DataFrame:
    df = pd.read_csv(path, keep_default_na=False, na_values=[""], low_memory=False)
    for col in ("users", "rep", "value"):
        if col in df.columns:
            df[col] = pd.to_numeric(df[col], errors="coerce")
    for col in ("reason", "failure", "system_kind", "server", "model", "framework", "weights"):
        if col in df.columns:
            df[col] = df[col].fillna("").astype(str)
    return df


def read_published(path) -> pd.DataFrame:
    return rpub.load(path)


published_value = rpub.number


_sel = tidy.select


def stats(df: pd.DataFrame, metric: str, keys: list[str], **eq) -> pd.DataFrame:
    """mean/std/count of `metric` over repeats per configuration (ok runs), with failed/not-run counts,
    the reason a configuration was never run (the paper's gaps) and the system kinds."""
    sub = _sel(df, **eq)
    cols = keys + ["mean", "std", "count", "failed", "not_run", "reason", "system_kind", "weights"]
    if sub.empty:
        return pd.DataFrame(columns=cols)
    ok = sub[(sub["status"] == "ok") & (sub["metric"] == metric)]
    runs = sub.drop_duplicates(subset=["raw_file"])
    # counts as vectorised sums, the texts joined per group (per-group lambdas comparing strings made
    # the selfcheck's ~1,000 calls take most of its time)
    runs = runs.assign(failed=(runs["status"] == "failed").astype(int),
                       not_run=(runs["status"] == "not-run").astype(int),
                       **{c: (runs[c].astype(str) if c in runs else "") for c in ("reason", "system_kind", "weights")})
    g = runs.groupby(keys, dropna=False)
    bad = g[["failed", "not_run"]].sum()
    for c in ("reason", "system_kind", "weights"):
        bad[c] = g[c].agg(lambda s: "+".join(sorted(set(s) - {"", "nan"})))
    bad = bad.reset_index()
    st = ok.groupby(keys, dropna=False)["value"].agg(["mean", "std", "count"]).reset_index()
    out = bad.merge(st, on=keys, how="left")
    out["count"] = out["count"].fillna(0).astype(int)
    return out[cols].sort_values(keys).reset_index(drop=True)


def serve_stats(df: pd.DataFrame, metric: str = "throughput") -> pd.DataFrame:
    return stats(df, metric, ["model", "server", "users"], experiment="serve")


def status_text(row) -> str:
    """ok, or why there is no number: the paper's gap, failed, not run."""
    if row["count"] > 0:
        return "ok" if not row["failed"] else f"ok ({int(row['failed'])} repeat(s) failed)"
    if row["reason"]:
        return row["reason"]
    if row["failed"]:
        return FAILED
    return NOT_RUN


def largest_users(df: pd.DataFrame) -> int | None:
    u = _sel(df, experiment="serve")["users"].dropna()
    return int(u.max()) if len(u) else None


def curve(df: pd.DataFrame, model: str, server: str, metric: str = "throughput") -> pd.DataFrame:
    st = serve_stats(df, metric)
    return st[(st.model == model) & (st.server == server)].sort_values("users")


# ------------------------------------------------------------------ Table I
def table1(df: pd.DataFrame, pub: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    st = serve_stats(df)
    rows = []
    for model in layout.MODELS:
        for server in layout.SERVERS:
            pv = published_value(pub, source="000 inference Table I", model=model, server=server, metric="throughput")
            prow = rpub.lookup(pub, source="000 inference Table I", model=model, server=server, metric="throughput")
            row = {"model": model, "server": server, "label": f"{layout.MODEL_LABELS[model]} / {layout.LABELS[server]}",
                   "users": np.nan, "throughput": np.nan, "std": np.nan, "repeats": 0, "status": "",
                   "published_users": 100, "published_throughput": pv,
                   "published_note": "" if prow is None else prow["paper_note"],
                   "system_kind": "", "weights": ""}
            sub = st[(st.model == model) & (st.server == server)]
            if model not in cfg["models"] or server not in cfg["servers"]:
                row["status"] = layout.by_design(server, model) or "not in this configuration"
                rows.append(row)
                continue
            top = sub[sub.users == sub.users.max()] if len(sub) else sub
            if len(top):
                t = top.iloc[0]
                row.update(users=int(t["users"]), throughput=t["mean"], std=t["std"], repeats=int(t["count"]),
                           status=status_text(t), system_kind=t["system_kind"], weights=t["weights"])
            else:
                row["status"] = layout.by_design(server, model) or NOT_RUN
            rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ Table II
def table2(cfg: dict, pub: pd.DataFrame) -> pd.DataFrame:
    us = cfg["usability"]
    rows = []
    for server, scores in us["scores"].items():
        prow = rpub.lookup(pub, metric="usability", server=server)
        published = [int(x) for x in prow["value"].split(",")] if prow is not None else []
        for i, crit in enumerate(us["criteria"]):
            rows.append({"server": server, "criterion": crit, "score": scores[i],
                         "published": published[i] if i < len(published) else np.nan})
        rows.append({"server": server, "criterion": "total", "score": sum(scores),
                     "published": sum(published) if published else np.nan})
    return pd.DataFrame(rows, columns=["server", "criterion", "score", "published"])


# ------------------------------------------------------------------ limits
def limits(df: pd.DataFrame) -> pd.DataFrame:
    """Per server x model: throughput at 1 user and at the largest user count as fractions of the model's
    raw in-process rate in the same framework; the generator's CPU; the ceiling and the fraction of it used."""
    raw = stats(df, "raw_rate", ["model", "framework"], experiment="raw_rate")
    cpu = serve_stats(df, "generator_cpu_cores")
    ceil = stats(df, "throughput", ["users"], experiment="ceiling").dropna(subset=["mean"])
    ceiling = float(ceil["mean"].max()) if len(ceil) else np.nan
    st = serve_stats(df).dropna(subset=["mean"])
    rows = []
    for (model, server), g in st.groupby(["model", "server"]):
        fw = layout.FRAMEWORK[server]
        r = raw[(raw.model == model) & (raw.framework == fw)]
        rate = float(r["mean"].iloc[0]) if len(r) and not pd.isna(r["mean"].iloc[0]) else np.nan
        one = g[g.users == g.users.min()].iloc[0]
        top = g[g.users == g.users.max()].iloc[0]
        best = float(g["mean"].max())
        c = cpu[(cpu.model == model) & (cpu.server == server)]
        rows.append({"model": model, "server": server, "framework": fw, "raw_rate": rate,
                     "users_min": int(one["users"]), "served_at_min_users": one["mean"],
                     "fraction_at_min_users": one["mean"] / rate if rate == rate else np.nan,
                     "users_max": int(top["users"]), "served_at_max_users": top["mean"],
                     "fraction_at_max_users": top["mean"] / rate if rate == rate else np.nan,
                     "generator_cpu_cores_max": float(c["mean"].max()) if len(c) else np.nan,
                     "ceiling_req_s": ceiling, "fraction_of_ceiling": best / ceiling if ceiling == ceiling else np.nan,
                     "system_kind": one["system_kind"]})
    for _, c in ceil.iterrows():
        rows.append({"model": "", "server": "ceiling (Locust vs trivial endpoint)", "framework": "",
                     "raw_rate": np.nan, "users_min": int(c["users"]), "served_at_min_users": c["mean"],
                     "fraction_at_min_users": np.nan, "users_max": int(c["users"]), "served_at_max_users": c["mean"],
                     "fraction_at_max_users": np.nan, "generator_cpu_cores_max": np.nan, "ceiling_req_s": c["mean"],
                     "fraction_of_ceiling": np.nan, "system_kind": c["system_kind"]})
    return pd.DataFrame(rows)
