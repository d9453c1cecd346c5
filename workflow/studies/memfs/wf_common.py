"""Shared helpers of the Montage/BLAST workflow analysis (paper 004, Section 2.4.2).

Everything is computed from the tidy table results/memfs/measurements_workflows.csv,
which memfs_wf_tidy.py builds from the raw files only.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from repro import cli, plotting
from studies.memfs.common import DPI

DESIGN_LABEL = {"memfs": "MemFS", "locality": "locality (AMFS-style)", "local-disk": "local disk"}
DESIGN_ORDER = ["memfs", "locality", "local-disk"]
TIMED = {"montage": ["mProjectPP", "mDiffFit", "mBackground"], "blast": ["formatdb", "blastall"]}
APP_LABEL = {"montage": "Montage", "blast": "BLAST"}
MB = 1e6


def figure_cli(doc: str) -> tuple[argparse.Namespace, pd.DataFrame, dict]:
    """The figure scripts' command line (--config: memfs.workflows, --measurements, --out):
    (args, table, the sweeps)."""
    args, cfg = cli.parse(doc, "measurements", "out")
    return args, load(args.measurements), cfg["sweeps"]


# the metrics' labels; a table without a run that measured (every run not run or failed) has no column
# for them, and the readers select on them
LABELS = ("stage", "timed", "node")


def load(path: str) -> pd.DataFrame:
    df = pd.read_csv(path, low_memory=False)
    for col in LABELS:
        if col not in df.columns:
            df[col] = pd.NA
    for col in ("nodes", "tasks_per_node", "rep", "node"):
        df[col] = pd.to_numeric(df[col], errors="coerce")
    df["timed"] = df["timed"].astype(str).str.lower().isin(["true", "1", "1.0"])
    return df


def ok(df: pd.DataFrame) -> pd.DataFrame:
    return df[df.status == "ok"]


def sweep_configs(sw: dict, name: str) -> list[tuple[int, int]]:
    s = sw.get(name) or {}
    return [(int(n), int(k)) for n in s.get("nodes", []) for k in s.get("tasks_per_node", [])]


def vertical_nodes(sw: dict) -> int:
    return max(int(n) for n in sw["vertical"]["nodes"])


def horizontal_tpn(sw: dict) -> int:
    """The tasks per node of the horizontal sweep that Table 2.3 / Figure 2.9 use (the largest)."""
    return max(int(k) for k in sw["horizontal"]["tasks_per_node"])


def per_run(df: pd.DataFrame, metric: str, **labels) -> pd.DataFrame:
    """One value per run (workflow, design, nodes, tasks_per_node, rep) of a metric."""
    d = ok(df)
    d = d[d.metric == metric]
    for k, v in labels.items():
        d = d[d[k] == v]
    keys = ["workflow", "design", "nodes", "tasks_per_node", "rep"]
    return d.groupby(keys, as_index=False)["value"].sum()


def stage_times(df: pd.DataFrame) -> pd.DataFrame:
    """Timed stages per run: workflow, design, nodes, tasks_per_node, rep, stage, value (s)."""
    d = ok(df)
    d = d[(d.metric == "stage_time") & (d.timed)]
    return d[["workflow", "design", "nodes", "tasks_per_node", "rep", "stage", "value"]].copy()


def mean_std(values) -> tuple[float, float, int]:
    v = np.asarray(list(values), dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return float("nan"), float("nan"), 0
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0, len(v)


def memory_split(df: pd.DataFrame, metric: str = "data_bytes") -> pd.DataFrame:
    """Per run: the scheduler node's value and the mean of the other nodes' values."""
    d = ok(df)
    d = d[d.metric == metric]
    rows = []
    for keys, g in d.groupby(["workflow", "design", "nodes", "tasks_per_node", "rep"]):
        sched = g[g.node == 1].value
        other = g[g.node != 1].value
        rows.append(dict(zip(["workflow", "design", "nodes", "tasks_per_node", "rep"], keys),
                         scheduler=float(sched.iloc[0]) if len(sched) else float("nan"),
                         other=float(other.mean()) if len(other) else float("nan"),
                         other_max=float(other.max()) if len(other) else float("nan"),
                         total=float(g.value.sum())))
    return pd.DataFrame(rows)


def system_kind(df: pd.DataFrame) -> str:
    kinds = sorted(set(ok(df).system_kind.dropna().astype(str)))
    return kinds[0] if len(kinds) == 1 else (",".join(kinds) if kinds else "")


# ------------------------------------------------------------------ plotting
STAGE_COLORS = {"mProjectPP": "#4c72b0", "mDiffFit": "#dd8452", "mBackground": "#55a868",
                "formatdb": "#8172b3", "blastall": "#c44e52"}
DESIGN_HATCH = {"memfs": "", "locality": "//", "local-disk": ".."}
DESIGN_SHORT = {"memfs": "MemFS", "locality": "loc.", "local-disk": "disk"}


def stacked_bars(df, out, groups, xlabel, title, by_nodes=False, show_k=False):
    """Stacked bars of the timed stages: groups = [(nodes, tasks_per_node, design)] in plot order."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    st = stage_times(df)
    apps = [a for a in ("montage", "blast") if a in set(df.workflow.dropna())] or ["montage"]
    fig, axes = plt.subplots(1, len(apps), figsize=(6.8 * len(apps), 4.8), squeeze=False)
    for ax, app in zip(axes[0], apps):
        clusters: dict = {}
        for n, k, d in groups:
            clusters.setdefault(n if by_nodes else k, []).append((n, k, d))
        ticks, labels = [], []
        for ci, (_key, bars) in enumerate(clusters.items()):
            width = 0.84 / len(bars)
            for bi, (n, k, d) in enumerate(bars):
                x = ci + (bi - (len(bars) - 1) / 2) * width
                sub = st[(st.workflow == app) & (st.design == d) & (st.nodes == n) & (st.tasks_per_node == k)]
                tag = DESIGN_SHORT[d] + (f" {k}" if show_k else "")
                if sub.empty:
                    ax.text(x, 0, tag + ": not run", rotation=90, ha="center", va="bottom", fontsize=6.5,
                            color="red")
                    continue
                ax.text(x, 0, tag, rotation=90, ha="center", va="bottom", fontsize=6.5, color="0.1")
                means = sub.groupby("stage").value.mean()
                totals = sub.groupby("rep").value.sum()
                bottom = 0.0
                for stage in TIMED[app]:
                    v = float(means.get(stage, 0.0))
                    ax.bar(x, v, width * 0.95, bottom=bottom, color=STAGE_COLORS[stage],
                           hatch=DESIGN_HATCH[d], edgecolor="white", linewidth=0.5)
                    bottom += v
                if len(totals) > 1:
                    ax.errorbar(x, totals.mean(), yerr=totals.std(ddof=1), color="black", capsize=2, lw=0.8)
            n0, k0, _ = bars[0]
            ticks.append(ci)
            labels.append(xlabel(n0, k0))
        ax.set_xticks(ticks, labels)
        ax.set_ylabel("time of the parallel stages (s)")
        ax.set_title(APP_LABEL[app])
        ax.grid(axis="y", alpha=0.3)
        handles = [Patch(color=STAGE_COLORS[s], label=s) for s in TIMED[app]]
        handles += [Patch(facecolor="white", edgecolor="0.3", hatch=DESIGN_HATCH[d], label=DESIGN_LABEL[d])
                    for d in DESIGN_ORDER if any(g[2] == d for g in groups)]
        ax.legend(handles=handles, fontsize=7, loc="upper right")
    fig.suptitle(title + " — mean of repeats, error bar = std of the stages' sum", fontsize=10)
    fig.tight_layout()
    save(fig, out)


def save(fig, out: str) -> None:
    """The workflows' figures: the study's resolution, through the one save helper."""
    plotting.save(fig, out, dpi=DPI)
