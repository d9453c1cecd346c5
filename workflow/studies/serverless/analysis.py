"""The serverless study's analysis, from the tidy table only (results/serverless/measurements.csv):
per-configuration statistics, the peaks of Tables 1-3, the limits table. Published values come
from published.csv and only ever fill their own columns."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from repro import cli, published as rpub, tidy
from studies.serverless import layout

MiB = 2**20
PAPER_MIB_PER_IMAGE = 3.0  # Sec. 3.1: x_b = x * 3 MiB
# published.csv's platform names
PUB_NAME = {"openfaas": "OpenFaaS", "nuclio-cpp": "Nuclio", "nuclio-go": "Nuclio Go", "baseline": "baseline"}


def read_measurements(path) -> pd.DataFrame:
    df = pd.read_csv(path, keep_default_na=False, na_values=[""], low_memory=False)
    for col in ("instances", "size", "rep", "value"):
        if col in df.columns:
            df[col] = pd.to_numeric(df[col], errors="coerce")
    return df


def read_published(path) -> pd.DataFrame:
    return rpub.load(path)


published_value = rpub.number


def kinds(df: pd.DataFrame) -> str:
    k = sorted({str(x) for x in df.get("system_kind", pd.Series(dtype=str)).dropna() if str(x)})
    return "+".join(k) if k else "real"


_sel = tidy.select


def stats(df: pd.DataFrame, metric: str, keys: list[str], **eq) -> pd.DataFrame:
    """mean/std/count of `metric` over repeats per configuration (ok runs), with failed/not-run counts."""
    sub = _sel(df, **eq)
    ok = sub[(sub["status"] == "ok") & (sub["metric"] == metric)]
    cols = keys + ["mean", "std", "count", "failed", "not_run", "system_kind"]
    if sub.empty:
        return pd.DataFrame(columns=cols)
    runs = sub.drop_duplicates(subset=["raw_file"])
    # counted with vectorised sums, not per-group lambdas (the claims' tests call this ~100 times per
    # build: the lambdas were ~7 of its 11 s)
    runs = runs.assign(failed=(runs["status"] == "failed").astype(int),
                       not_run=(runs["status"] == "not-run").astype(int),
                       system_kind=runs["system_kind"].astype(str))
    g = runs.groupby(keys, dropna=False)
    bad = g[["failed", "not_run"]].sum()
    bad["system_kind"] = g["system_kind"].agg(lambda s: "+".join(sorted(set(s) - {"", "nan"})))
    bad = bad.reset_index()
    st = ok.groupby(keys, dropna=False)["value"].agg(["mean", "std", "count"]).reset_index()
    out = bad.merge(st, on=keys, how="left")
    out["count"] = out["count"].fillna(0).astype(int)
    return out[cols].sort_values(keys).reset_index(drop=True)


# ------------------------------------------------------------------ images (Figures 1-2, Table 1)
def image_stats(df: pd.DataFrame) -> pd.DataFrame:
    return stats(df, "images_per_s", ["variant", "platform", "instances"], workload="image")


def peak(st: pd.DataFrame) -> pd.Series | None:
    st = st.dropna(subset=["mean"])
    if st.empty:
        return None
    return st.loc[st["mean"].idxmax()]


def image_peak(df: pd.DataFrame, variant: str, platform: str) -> pd.Series | None:
    st = image_stats(df)
    return peak(st[(st.variant == variant) & (st.platform == platform)])


def table1(df: pd.DataFrame, pub: pd.DataFrame) -> pd.DataFrame:
    rows = []
    mib = stats(df, "throughput", ["variant", "platform", "instances"], workload="image")
    base = image_peak(df, "processing", "baseline")
    for variant, platform in (("processing", "baseline"), ("processing", "openfaas"), ("processing", "nuclio-cpp"),
                              ("null-processing", "openfaas"), ("null-processing", "nuclio-cpp")):
        pk = image_peak(df, variant, platform)
        pv = published_value(pub, workload="image", variant=variant, platform=PUB_NAME[platform], metric="peak_rate")
        row = {"variant": variant, "platform": platform, "label": layout.LABELS[platform]
               + (" NP" if variant == "null-processing" else ""),
               "peak_images_per_s": np.nan, "std": np.nan, "instances": np.nan, "repeats": 0,
               "peak_mib_per_s": np.nan, "peak_mib_per_s_at_3MiB": np.nan, "fraction_of_baseline": np.nan,
               "published_images_per_s": pv, "published_mib_per_s": pv * PAPER_MIB_PER_IMAGE if pv else np.nan,
               "published_fraction_of_baseline": np.nan, "system_kind": ""}
        bpub = published_value(pub, workload="image", variant="processing", platform="baseline", metric="peak_rate")
        if pv and bpub:
            row["published_fraction_of_baseline"] = pv / bpub
        if pk is not None:
            m = mib[(mib.variant == variant) & (mib.platform == platform) & (mib.instances == pk["instances"])]
            row.update(peak_images_per_s=pk["mean"], std=pk["std"], instances=int(pk["instances"]),
                       repeats=int(pk["count"]), peak_mib_per_s=float(m["mean"].iloc[0]) if len(m) else np.nan,
                       peak_mib_per_s_at_3MiB=pk["mean"] * PAPER_MIB_PER_IMAGE, system_kind=pk["system_kind"])
            if base is not None:
                row["fraction_of_baseline"] = pk["mean"] / base["mean"]
        else:
            st = image_stats(df)
            st = st[(st.variant == variant) & (st.platform == platform)]
            row["system_kind"] = "not run" if st.empty or st["failed"].sum() == 0 else "failed"
        rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ bytes (Figure 3, Tables 2-3)
def bytes_metric(variant: str) -> str:
    """Parallel: y = n*b/t per run; single: the mean of the per-request throughputs (Table 3's Mean)."""
    return "throughput" if variant == "parallel" else "single_mean"


def bytes_stats(df: pd.DataFrame, variant: str, metric: str | None = None) -> pd.DataFrame:
    return stats(df, metric or bytes_metric(variant), ["platform", "instances", "size"], workload="bytes",
                 variant=variant)


def bytes_peak(df: pd.DataFrame, variant: str, platform: str) -> pd.Series | None:
    st = bytes_stats(df, variant)
    return peak(st[st.platform == platform])


def best_instances(df: pd.DataFrame, variant: str, platform: str) -> int | None:
    pk = bytes_peak(df, variant, platform)
    return None if pk is None else int(pk["instances"])


def table2(df: pd.DataFrame, pub: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for variant in ("single", "parallel"):
        for platform in layout.PLATFORMS:
            pk = bytes_peak(df, variant, platform)
            row = {"variant": variant, "platform": platform, "label": layout.LABELS[platform],
                   "peak_mib_per_s": np.nan, "std": np.nan, "instances": np.nan, "size_bytes": np.nan, "repeats": 0,
                   "published_mib_per_s": published_value(pub, workload="bytes", variant=variant,
                                                          platform=PUB_NAME[platform], metric="peak_throughput"),
                   "published_instances": np.nan, "system_kind": ""}
            prow = rpub.lookup(pub, workload="bytes", variant=variant, platform=PUB_NAME[platform],
                               metric="peak_throughput")
            if prow is not None and str(prow["instances"]).isdigit():
                row["published_instances"] = int(prow["instances"])
            if pk is not None:
                row.update(peak_mib_per_s=pk["mean"], std=pk["std"], instances=int(pk["instances"]),
                           size_bytes=int(pk["size"]), repeats=int(pk["count"]), system_kind=pk["system_kind"])
            rows.append(row)
    return pd.DataFrame(rows)


def pooled_means(df: pd.DataFrame, platform: str, instances: int, size: int) -> dict:
    """Table 3 at one configuration: the repeats' per-request means pooled (equal request counts per
    run: the pooled arithmetic mean is the mean of the runs' means, the geometric the geometric mean
    of their geometric means, the harmonic the harmonic mean of their harmonic means)."""
    out = {}
    for what in ("mean", "gmean", "hmean"):
        v = _sel(df, workload="bytes", variant="single", platform=platform, instances=instances, size=size,
                 metric=f"single_{what}", status="ok")["value"].dropna()
        v = v[v > 0]
        if v.empty:
            out[what] = np.nan
        elif what == "mean":
            out[what] = float(v.mean())
        elif what == "gmean":
            out[what] = float(math.exp(np.log(v).mean()))
        else:
            out[what] = float(len(v) / (1 / v).sum())
    return out


def table3(df: pd.DataFrame, pub: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for platform in layout.PLATFORMS:
        pk = bytes_peak(df, "single", platform)
        row = {"platform": platform, "label": layout.LABELS[platform], "instances": np.nan, "size_bytes": np.nan,
               "mean": np.nan, "gmean": np.nan, "hmean": np.nan, "gmean_over_mean": np.nan,
               "hmean_over_mean": np.nan, "system_kind": ""}
        for what in ("mean", "gmean", "hmean"):
            row[f"published_{what}"] = published_value(pub, workload="bytes", variant="single",
                                                       platform=PUB_NAME[platform], metric=what)
        if pk is not None:
            m = pooled_means(df, platform, int(pk["instances"]), int(pk["size"]))
            row.update(instances=int(pk["instances"]), size_bytes=int(pk["size"]), system_kind=pk["system_kind"], **m)
            if m["mean"] and not math.isnan(m["mean"]):
                row["gmean_over_mean"] = m["gmean"] / m["mean"]
                row["hmean_over_mean"] = m["hmean"] / m["mean"]
        rows.append(row)
    return pd.DataFrame(rows)


def refusals(df: pd.DataFrame, platform: str) -> pd.DataFrame:
    """Per size of `platform`'s bytes runs: ok and failed runs, and whether a failure was an HTTP 4xx refusal."""
    sub = _sel(df, workload="bytes", platform=platform).drop_duplicates(subset=["raw_file"])
    if sub.empty:
        return pd.DataFrame(columns=["size", "ok", "failed", "refused", "not_run"])
    fail = sub["failure"].fillna("").astype(str)
    sub = sub.assign(ok=(sub.status == "ok").astype(int), failed=(sub.status == "failed").astype(int),
                     refused=((sub.status == "failed") & fail.str.contains(r"HTTP 4\d\d", regex=True)).astype(int),
                     not_run=(sub.status == "not-run").astype(int))
    return sub.groupby("size")[["ok", "failed", "refused", "not_run"]].sum().reset_index()


# ------------------------------------------------------------------ limits
def limits(df: pd.DataFrame) -> pd.DataFrame:
    """Each platform's peak bytes throughput as a fraction of the director's ceiling (echo server, at the
    same request size where measured, else the largest) and of iperf3; image peaks over the baseline."""
    echo = stats(df, "throughput", ["size"], workload="limit", variant="echo")
    ip = stats(df, "throughput", ["variant"], workload="limit", variant="iperf3")
    iperf_mean = float(ip["mean"].iloc[0]) if len(ip) and not pd.isna(ip["mean"].iloc[0]) else np.nan
    echo_ok = echo.dropna(subset=["mean"])
    rows = []
    for variant in ("single", "parallel"):
        for platform in layout.PLATFORMS:
            pk = bytes_peak(df, variant, platform)
            if pk is None:
                continue
            at = echo_ok[echo_ok["size"] == pk["size"]]  # the ceiling at the same request size, or none
            ceiling = float(at["mean"].iloc[0]) if len(at) else np.nan
            rows.append({"what": f"bytes {variant}", "platform": platform, "instances": int(pk["instances"]),
                         "size_bytes": int(pk["size"]), "value": pk["mean"], "unit": "MiB/s",
                         "ceiling_mib_s": ceiling, "ceiling_size_bytes": int(pk["size"]) if len(at) else np.nan,
                         "fraction_of_ceiling": pk["mean"] / ceiling if ceiling == ceiling else np.nan,
                         "iperf3_mib_s": iperf_mean,
                         "fraction_of_iperf3": pk["mean"] / iperf_mean if iperf_mean == iperf_mean else np.nan,
                         "fraction_of_baseline": np.nan, "system_kind": pk["system_kind"]})
    base = image_peak(df, "processing", "baseline")
    for variant in ("processing", "null-processing"):
        for platform in ("openfaas", "nuclio-cpp"):
            pk = image_peak(df, variant, platform)
            if pk is None:
                continue
            rows.append({"what": f"image {variant}", "platform": platform, "instances": int(pk["instances"]),
                         "size_bytes": np.nan, "value": pk["mean"], "unit": "images/s", "ceiling_mib_s": np.nan,
                         "ceiling_size_bytes": np.nan, "fraction_of_ceiling": np.nan, "iperf3_mib_s": iperf_mean,
                         "fraction_of_iperf3": np.nan,
                         "fraction_of_baseline": pk["mean"] / base["mean"] if base is not None else np.nan,
                         "system_kind": pk["system_kind"]})
    for _, e in echo.iterrows():
        rows.append({"what": "ceiling (director vs echo server)", "platform": "echo", "instances": np.nan,
                     "size_bytes": int(e["size"]), "value": e["mean"], "unit": "MiB/s", "ceiling_mib_s": e["mean"],
                     "ceiling_size_bytes": int(e["size"]), "fraction_of_ceiling": np.nan, "iperf3_mib_s": iperf_mean,
                     "fraction_of_iperf3": e["mean"] / iperf_mean if iperf_mean == iperf_mean else np.nan,
                     "fraction_of_baseline": np.nan, "system_kind": e["system_kind"]})
    if len(ip):
        rows.append({"what": "iperf3", "platform": "iperf3", "instances": np.nan, "size_bytes": np.nan,
                     "value": iperf_mean, "unit": "MiB/s", "ceiling_mib_s": np.nan, "ceiling_size_bytes": np.nan,
                     "fraction_of_ceiling": np.nan, "iperf3_mib_s": iperf_mean, "fraction_of_iperf3": np.nan,
                     "fraction_of_baseline": np.nan, "system_kind": ip["system_kind"].iloc[0]})
    return pd.DataFrame(rows)


def table_main(doc: str, make) -> int:
    """The command line of table1-3 (``make``: one of table1/2/3): the tidy table and the published
    values in, one CSV out, printed too."""
    a, _cfg = cli.parse(doc, "measurements", "published", "out")
    t = make(read_measurements(a.measurements), read_published(a.published))
    tidy.write_csv(t, a.out)
    print(t.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0
