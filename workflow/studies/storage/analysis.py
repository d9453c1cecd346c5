"""What the storage study's aggregate, figures, tables and claims share: the tidy table read back and
reduced to means over repeats (never a bare mean: std and count come along)."""

from __future__ import annotations

import re

import pandas as pd

from studies.storage import layout

SIZE_RE = re.compile(r"^([0-9]+)(B|KB|MB|GB)$")
UNITS = {"B": 1, "KB": 1000, "MB": 1000**2, "GB": 1000**3}  # decimal, as COSBench
# the major mdtest phases (files, then directories where the run had them: files_only false);
# the directory rename phase (Table 5's "rename": mdtest's default without -F, mdbench --dirs)
FILE_OPS = ("create", "stat", "open", "remove")
DIR_OPS = ("dir_create", "dir_stat", "dir_read", "dir_rename", "dir_remove")
MAJOR_OPS = FILE_OPS + DIR_OPS
OP_LABELS = {"create": "file create", "stat": "file stat", "open": "file read", "remove": "file remove",
             "dir_create": "dir create", "dir_stat": "dir stat", "dir_read": "dir read", "dir_rename": "dir rename",
             "dir_remove": "dir remove",
             "tree_create": "tree create", "tree_remove": "tree remove"}
COSBENCH_METRICS = ("avg_res_time", "throughput", "bandwidth")


def size_bytes(size: str) -> int:
    m = SIZE_RE.match(str(size))
    if not m:
        raise ValueError(f"size {size!r} is not like 4KB")
    return int(m.group(1)) * UNITS[m.group(2)]


def load(path) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=True, low_memory=False)


def _ok(df: pd.DataFrame, benchmark: str) -> pd.DataFrame:
    if "benchmark" not in df.columns:
        return df.iloc[0:0]
    return df[(df["benchmark"] == benchmark) & (df["status"] == "ok")]


def cosbench_means(df: pd.DataFrame) -> pd.DataFrame:
    """Per stack, size, workers and metric (main stage, all operations): mean, std, n over repeats."""
    d = _ok(df, "cosbench")
    d = d[(d["op"] == "all") & d["metric"].isin(COSBENCH_METRICS)]
    cols = ["stack", "size", "workers", "metric", "unit", "system_kind", "mean", "std", "n", "size_bytes"]
    if d.empty:
        return pd.DataFrame(columns=cols)
    g = (d.groupby(["stack", "size", "workers", "metric", "unit", "system_kind"])["value"]
         .agg(mean="mean", std="std", n="count").reset_index())
    g["workers"] = g["workers"].astype(int)
    g["size_bytes"] = g["size"].map(size_bytes)
    return g.sort_values(["stack", "size_bytes", "workers", "metric"])[cols].reset_index(drop=True)


def mdtest_means(df: pd.DataFrame) -> pd.DataFrame:
    """Per stack, tasks (workers), operation and metric (rate, rate_max, rate_min): mean, std, n."""
    d = _ok(df, "mdtest")
    d = d[d["metric"].isin(["rate", "rate_max", "rate_min"])]
    cols = ["stack", "workers", "op", "metric", "unit", "system_kind", "mean", "std", "n"]
    if d.empty:
        return pd.DataFrame(columns=cols)
    g = (d.groupby(["stack", "workers", "op", "metric", "unit", "system_kind"])["value"]
         .agg(mean="mean", std="std", n="count").reset_index())
    g["workers"] = g["workers"].astype(int)
    return g[cols]


def pivot(means: pd.DataFrame, metric: str, index=("size", "workers")) -> pd.DataFrame:
    """One column per stack, one row per configuration, the mean of `metric`."""
    d = means[means["metric"] == metric]
    if d.empty:
        return pd.DataFrame()
    return d.pivot_table(index=list(index), columns="stack", values="mean")


def kind_of(means: pd.DataFrame, *stacks: str) -> str:
    """The system_kind of the rows of these stacks: a stand-in's label wins over real."""
    kinds = sorted(set(means[means["stack"].isin(stacks)]["system_kind"].dropna()))
    stand = [k for k in kinds if str(k).startswith("stand-in:")]
    return "; ".join(stand) if stand else ("real" if kinds else "")


def label(stack: str) -> str:
    return layout.LABELS.get(stack, stack)
