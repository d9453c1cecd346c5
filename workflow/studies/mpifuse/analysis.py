"""The mpifuse study's numbers, computed from the tidy table only.

Every figure/table script calls one function here, and the tests call the same
functions on the raw files to check that what the scripts wrote is what the raw
files say.

Definitions (the paper's, where it gives one):

* run time: the slowest node's time (MPI_Wtime from a barrier until every node
  has the hash of the file) -- metric ``time``;
* Table I: at the largest size, the mean run time at the smallest and at the
  largest node count, increase = t(max) / t(min), aggregate throughput =
  n_max x size / t(max);
* Figure 4 (one configuration): OSR = open + read (MPI_Get) + FUSE overhead +
  hashing in memory + remaining; Naive (bcast-nocopy) = open + read (from the
  source) + broadcast + FUSE overhead + hashing + remaining, where every file
  system term is the mean over nodes of the per-node sum (the paper's "average
  over all calls times the calls per node"), FUSE overhead = t(passthrough) -
  t(native) of the same run and hashing = sha256sum of a file already in
  memory (tmpfs) on every node at once;
* bandwidth-reduction to latency-increase ratio: reduction = native's bytes
  from the source / the variant's (n for a design that reads the file once;
  the paper's nominal value is n itself), latency increase = t(variant) /
  t(native) on the same source, at the largest size and node count.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from repro import paramspace, published, tidy

from .layout import NATIVE_LABEL, VARIANTS, expected_source_reads, options_text, variant_options

KEYS = ["source", "variant", "nodes", "size"]
PAPER_USE_CASE = {  # published.csv names
    "native": "native", "osr": "OSR", "bcast-local": "Bcast to local", "bcast-shm": "Bcast to /dev/shm",
    "bcast-nocopy": "Bcast no copy", "passthrough": "Passthrough", "osr-nometa": "OSR without metadata buffer",
    "osr-refined": "OSR refined (beyond the paper)",
}


# --------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------
def normalise(df: pd.DataFrame) -> pd.DataFrame:
    """Types of the tidy table's columns after a CSV round trip."""
    df = df.copy()
    for col in ("nodes", "rep", "node"):
        if col in df.columns:
            df[col] = pd.to_numeric(df[col], errors="coerce").astype("Int64")
    df["value"] = pd.to_numeric(df["value"], errors="coerce")
    for col in ("source", "variant", "size", "metric", "status", "unit", "system_kind"):
        if col in df.columns:
            df[col] = df[col].fillna("").astype(str)
    return df


def read_measurements(path) -> pd.DataFrame:
    return normalise(pd.read_csv(path, keep_default_na=True))


def read_published(path) -> pd.DataFrame:
    return published.load(path)


def size_bytes(size: str) -> int:
    return paramspace.size_bytes(size)


def largest_size(sizes) -> str:
    return max(sizes, key=size_bytes)


def ok(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    return df[(df["status"] == "ok") & (df["metric"] == metric)]


def kinds(df: pd.DataFrame, source: str | None = None) -> str:
    d = df if source is None else df[df["source"] == source]
    ks = sorted({k for k in d.get("system_kind", pd.Series(dtype=str)).dropna() if k})
    return "; ".join(ks) if ks else ""


# --------------------------------------------------------------------------
# summary (count/mean/std/min/max, failed/not-run) of the run-level metrics
# --------------------------------------------------------------------------
RUN_METRICS = ["time", "bytes_from_source", "link_bytes", "gen_time"]
TRAFFIC = ("bytes_from_source", "link_bytes")  # also kept from failed runs' records (aggregate.py)


def runs_only(df: pd.DataFrame) -> pd.DataFrame:
    """Without the traffic rows of failed runs: one failed row per failed run, as tidy.collect wrote it."""
    return df[~((df["status"] == "failed") & df["value"].notna())]


def traffic(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Every run's value of a traffic metric, ok and failed runs alike (the claims on bytes read once)."""
    return df[(df["metric"] == metric) & df["status"].isin(["ok", "failed"]) & df["value"].notna()]


def summary(df: pd.DataFrame) -> pd.DataFrame:
    df = runs_only(df)
    d = df[(df["metric"].isin(RUN_METRICS)) | (df["status"] != "ok")]
    s = tidy.summarize(d, KEYS)
    s = s[s["metric"].isin(RUN_METRICS)] if not s.empty else s
    s = s.sort_values(KEYS + ["metric"], key=lambda c: c.map(size_bytes) if c.name == "size" else c)
    return s.reset_index(drop=True)


def status_counts(df: pd.DataFrame) -> pd.DataFrame:
    """Per configuration: repeats ok / failed / not run (one row per run, not per metric)."""
    runs = df.drop_duplicates(subset=KEYS + ["rep", "status"])[KEYS + ["rep", "status"]]
    c = runs.pivot_table(index=KEYS, columns="status", values="rep", aggfunc="count", fill_value=0)
    for col in ("ok", "failed", "not-run"):
        if col not in c.columns:
            c[col] = 0
    return c[["ok", "failed", "not-run"]].reset_index()


def time_stats(df: pd.DataFrame) -> pd.DataFrame:
    t = ok(df, "time")
    g = t.groupby(KEYS)["value"].agg(["count", "mean", "std", "min", "max"]).reset_index()
    return g


def mean_time(stats: pd.DataFrame, source, variant, nodes, size) -> float:
    r = stats[(stats["source"] == source) & (stats["variant"] == variant) & (stats["nodes"] == nodes)
              & (stats["size"] == size)]
    return float(r["mean"].iloc[0]) if len(r) and r["count"].iloc[0] > 0 else math.nan


# --------------------------------------------------------------------------
# Table I
# --------------------------------------------------------------------------
def _published_time(pub, source, use_case, nodes):
    r = pub[(pub["source"] == "001 Table I") & (pub["source_fs"] == source) & (pub["use_case"] == use_case)
            & (pub["nodes"] == str(nodes)) & (pub["metric"] == "time")]
    return float(r["value_num"].iloc[0]) if len(r) else math.nan


def table1(df: pd.DataFrame, cfg: dict, pub: pd.DataFrame) -> pd.DataFrame:
    size = largest_size(cfg["sizes"])
    n1, nmax = min(cfg["nodes"]), max(cfg["nodes"])
    stats = time_stats(df)
    counts = status_counts(df)
    pub_n1, pub_nmax = 1, 24
    pub_size_gb = 1.0
    rows = []
    for source in cfg["sources"]:
        for v in cfg["variants"]:
            t1 = stats[(stats.source == source) & (stats.variant == v) & (stats.nodes == n1) & (stats["size"] == size)]
            tm = stats[(stats.source == source) & (stats.variant == v) & (stats.nodes == nmax)
                       & (stats["size"] == size)]
            c = counts[(counts.source == source) & (counts.variant == v) & (counts["size"] == size)
                       & (counts.nodes.isin([n1, nmax]))]
            m1 = float(t1["mean"].iloc[0]) if len(t1) else math.nan
            mm = float(tm["mean"].iloc[0]) if len(tm) else math.nan
            uc = PAPER_USE_CASE[v]
            p1 = _published_time(pub, source, uc, pub_n1)
            pm = _published_time(pub, source, uc, pub_nmax)
            rows.append({
                "source": source, "variant": v,
                "use_case": NATIVE_LABEL[source] if v == "native" else VARIANTS[v].label,
                "size": size, "nodes_min": n1, "nodes_max": nmax,
                "time_min_nodes_s": m1, "time_min_nodes_std": float(t1["std"].iloc[0]) if len(t1) else math.nan,
                "time_max_nodes_s": mm, "time_max_nodes_std": float(tm["std"].iloc[0]) if len(tm) else math.nan,
                "increase": mm / m1 if m1 and not math.isnan(m1) else math.nan,
                "throughput_GBps": nmax * size_bytes(size) / mm / 1e9 if mm and not math.isnan(mm) else math.nan,
                "repeats_ok": int(min(t1["count"].iloc[0] if len(t1) else 0, tm["count"].iloc[0] if len(tm) else 0)),
                "failed": int(c["failed"].sum()) if len(c) else 0,
                "not_run": int(c["not-run"].sum()) if len(c) else 0,
                "published_time_1_node_s": p1, "published_time_24_nodes_s": pm,
                "published_increase": pm / p1 if p1 else math.nan,
                "published_throughput_GBps": pub_nmax * pub_size_gb / pm if pm else math.nan,
                "system_kind": kinds(df, source),
            })
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------
# Figure 4: composition of performance factors
# --------------------------------------------------------------------------
def _node_mean(df, metric, source, variant, nodes, size) -> pd.Series:
    d = ok(df, metric)
    d = d[(d.source == source) & (d.variant == variant) & (d.nodes == nodes) & (d["size"] == size)]
    return d.groupby("rep")["value"].mean()


def _run_value(df, metric, source, variant, nodes, size) -> pd.Series:
    d = ok(df, metric)
    d = d[(d.source == source) & (d.variant == variant) & (d.nodes == nodes) & (d["size"] == size)]
    return d.groupby("rep")["value"].first()


def figure4(df: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    """Per file system (OSR, Naive = bcast-nocopy) and component: mean and std over repeats."""
    f4 = cfg["figure4"]
    src, n, size = f4["source"], f4["nodes"], f4["size"]
    native = _run_value(df, "time", src, "native", n, size)
    passthrough = _run_value(df, "time", src, "passthrough", n, size)
    fuse = (passthrough - native).dropna()
    rows = []
    for fs_name, variant, parts in (
            ("OSR", "osr", [("open", "fs_open_time"), ("read (MPI_Get)", "fs_read_time")]),
            ("Naive", "bcast-nocopy", [("open", "fs_open_time"), ("read (source)", "fs_source_read_time"),
                                       ("broadcast", "fs_bcast_time")])):
        total = _run_value(df, "time", src, variant, n, size)
        comp = pd.DataFrame({"total": total})
        for label, metric in parts:
            comp[label] = _node_mean(df, metric, src, variant, n, size)
        comp["FUSE overhead"] = fuse
        comp["hashing in memory"] = _node_mean(df, "hash_in_memory", src, variant, n, size)
        comp = comp.dropna()
        named = [p for p, _ in parts] + ["FUSE overhead", "hashing in memory"]
        comp["remaining"] = comp["total"] - comp[named].sum(axis=1)
        for comp_name in ["total"] + named + ["remaining"]:
            vals = comp[comp_name] if comp_name in comp else pd.Series(dtype=float)
            rows.append({"file_system": fs_name, "variant": variant, "component": comp_name,
                         "mean_s": float(vals.mean()) if len(vals) else math.nan,
                         "std_s": float(vals.std()) if len(vals) > 1 else math.nan,
                         "repeats": len(vals), "source": src, "nodes": n, "size": size,
                         "system_kind": kinds(df, src)})
    # the read-callback counts (the paper: 7630 calls at 1 GB)
    for fs_name, variant in (("OSR", "osr"), ("Naive", "bcast-nocopy")):
        calls = _node_mean(df, "fs_read_calls", src, variant, n, size)
        rows.append({"file_system": fs_name, "variant": variant, "component": "read calls per node",
                     "mean_s": float(calls.mean()) if len(calls) else math.nan,
                     "std_s": float(calls.std()) if len(calls) > 1 else math.nan, "repeats": len(calls),
                     "source": src, "nodes": n, "size": size, "system_kind": kinds(df, src)})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------
# the use cases and their options (what "differs only in the metadata buffer" means)
# --------------------------------------------------------------------------
def option_diff(cfg: dict, a: str, b: str) -> str:
    """The library options in which use case b differs from a ('' = none)."""
    oa, ob = variant_options(cfg, a), variant_options(cfg, b)
    keys = sorted(set(oa) | set(ob))
    return ",".join(f"{k}={options_text({k: ob[k]}).split('=', 1)[1] if k in ob else '(default)'}"
                    for k in keys if oa.get(k, None) != ob.get(k, None))


def variants_table(cfg: dict) -> pd.DataFrame:
    rows = []
    for v in cfg["variants"]:
        d = VARIANTS[v]
        rows.append({"variant": v, "use_case": d.label, "in_paper": "yes" if d.paper else "no (beyond the paper)",
                     "mode": d.mode or "", "action": d.action, "source_reads": "1x" if d.reads == "1" else "n x",
                     "options": options_text(variant_options(cfg, v)),
                     "differs_from_osr": ("(osr itself)" if v == "osr" else option_diff(cfg, "osr", v)
                                          if d.mode == "osr" else f"mode {d.mode}" if d.mode else "no file system")})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------
# Figure 5: OSR with vs without the metadata buffer (osr-nometa, the paper's variant); our
# refined design (beyond the paper) beside it
# --------------------------------------------------------------------------
FIG5 = ("osr", "osr-nometa", "osr-refined", "native")


def figure5(df: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    stats = time_stats(df)
    rows = []
    diff = option_diff(cfg, "osr", "osr-nometa")
    for source in cfg["sources"]:
        for size in cfg["sizes"]:
            for n in cfg["nodes"]:
                r = {"source": source, "size": size, "nodes": n}
                for v in FIG5:
                    s = stats[(stats.source == source) & (stats.variant == v) & (stats.nodes == n)
                              & (stats["size"] == size)]
                    r[f"{v}_mean_s"] = float(s["mean"].iloc[0]) if len(s) else math.nan
                    r[f"{v}_std_s"] = float(s["std"].iloc[0]) if len(s) else math.nan
                r["saving_s"] = r["osr_mean_s"] - r["osr-nometa_mean_s"]
                nat = r["native_mean_s"]
                r["nometa_vs_native"] = r["osr-nometa_mean_s"] / nat if nat else math.nan
                r["refined_saving_s"] = r["osr_mean_s"] - r["osr-refined_mean_s"]  # beyond the paper
                r["refined_vs_native"] = r["osr-refined_mean_s"] / nat if nat else math.nan
                r["nometa_differs_from_osr_in"] = diff
                r["system_kind"] = kinds(df, source)
                rows.append(r)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------
# bandwidth-reduction to latency-increase ratios
# --------------------------------------------------------------------------
RATIO_VARIANTS = ["osr", "osr-refined", "bcast-local", "bcast-shm", "bcast-nocopy", "passthrough"]


def ratios(df: pd.DataFrame, cfg: dict, pub: pd.DataFrame) -> pd.DataFrame:
    size = largest_size(cfg["sizes"])
    n = max(cfg["nodes"])
    stats = time_stats(df)
    b = ok(df, "bytes_from_source")
    link = ok(df, "link_bytes")
    rows = []
    for source in cfg["sources"]:
        t_nat = mean_time(stats, source, "native", n, size)

        def mean_of(d, v, source=source):
            x = d[(d.source == source) & (d.variant == v) & (d.nodes == n) & (d["size"] == size)]["value"]
            return float(x.mean()) if len(x) else math.nan

        b_nat, l_nat = mean_of(b, "native"), mean_of(link, "native")
        p_nat = _published_time(pub, source, "native", 24)
        for v in RATIO_VARIANTS:
            if v not in cfg["variants"]:
                continue
            t_v = mean_time(stats, source, v, n, size)
            nominal = n / expected_source_reads(v, n)
            measured = b_nat / mean_of(b, v) if mean_of(b, v) else math.nan
            lat = t_v / t_nat if t_nat else math.nan
            p_v = _published_time(pub, source, PAPER_USE_CASE[v], 24)
            p_lat = p_v / p_nat if p_nat else math.nan
            p_red = 24 / expected_source_reads(v, 24)
            rows.append({
                "source": source, "variant": v, "use_case": VARIANTS[v].label, "nodes": n, "size": size,
                "time_s": t_v, "native_time_s": t_nat, "latency_increase": lat,
                "bandwidth_reduction_nominal": nominal, "bandwidth_reduction_measured": measured,
                "bandwidth_reduction_link": l_nat / mean_of(link, v) if mean_of(link, v) else math.nan,
                "ratio": nominal / lat if lat else math.nan,
                "ratio_measured": measured / lat if lat else math.nan,
                "published_latency_increase": p_lat,
                "published_ratio_from_table1": p_red / p_lat if p_lat else math.nan,
                "published_ratio_text": _published_ratio(pub, v) if source == "home" else math.nan,
                "system_kind": kinds(df, source),
            })
    return pd.DataFrame(rows)


def _published_ratio(pub, variant) -> float:
    name = {"osr": "OSR", "bcast-nocopy": "Bcast"}.get(variant)
    r = pub[(pub["metric"] == "bandwidth_reduction_to_latency_increase") & (pub["use_case"] == name)]
    return float(r["value_num"].iloc[0]) if len(r) else math.nan


# --------------------------------------------------------------------------
# bytes read from the source, per design
# --------------------------------------------------------------------------
def bytes_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per configuration, over every run that measured it (ok and failed): file sizes read from the
    source and carried by the home link."""
    b = traffic(df, "bytes_from_source").copy()
    b["size_bytes"] = b["size"].map(size_bytes).astype(float)
    b["expected_reads"] = [expected_source_reads(v, int(n)) for v, n in zip(b["variant"], b["nodes"])]
    b["file_sizes_read"] = (b["value"] / b["size_bytes"]).astype(float)
    link = traffic(df, "link_bytes")[KEYS + ["rep", "value"]].rename(columns={"value": "link_bytes"})
    b = b.merge(link, on=KEYS + ["rep"], how="left")
    b["link_file_sizes"] = (b["link_bytes"] / b["size_bytes"]).astype(float)
    g = b.groupby(KEYS).agg(expected_reads=("expected_reads", "first"), file_sizes_read=("file_sizes_read", "mean"),
                            file_sizes_read_min=("file_sizes_read", "min"),
                            file_sizes_read_max=("file_sizes_read", "max"),
                            link_file_sizes=("link_file_sizes", "mean"), repeats=("value", "count"),
                            failed_runs=("status", lambda s: int((s == "failed").sum()))).reset_index()
    return g


def nan_to_none(x):
    return None if x is None or (isinstance(x, float) and (math.isnan(x) or np.isinf(x))) else x
