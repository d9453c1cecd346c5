"""Shared drawing of the inference figures (from the tidy table only, via analysis). A configuration
without a number is written on the plot (failed / not run / the paper's reason), never drawn as zero."""

from __future__ import annotations

import numpy as np
import pandas as pd

from repro import cli, plotting, tidy
from studies.inference import analysis, layout

COLORS = {"torchserve": "#d9822b", "triton-pytorch": "#3b6ea8", "triton-tensorflow": "#4f9a4f",
          "tfserving": "#a33b3b"}


def _label(server: str, kinds: str) -> str:
    return layout.LABELS[server] + (f" [{kinds}]" if kinds and kinds != "real" else "")


def latency_figure(df: pd.DataFrame, pub: pd.DataFrame, table_out: str, fig_out: str) -> None:
    """Figure 1: median latency at 1 user (mean of repeats, error bars: std) per model and server."""
    st = analysis.serve_stats(df, "latency_median")
    st = st[st.users == 1].copy()
    st["status"] = [analysis.status_text(r) for _, r in st.iterrows()]
    tidy.write_csv(st, table_out)
    plt, _sns = plotting.pyplot()
    models = [m for m in layout.MODELS if m in set(st.model)]
    fig, ax = plt.subplots(figsize=(8, 3.8))
    w = 0.8 / len(layout.SERVERS)
    for k, server in enumerate(layout.SERVERS):
        s = st[st.server == server].set_index("model")
        x = np.arange(len(models)) + (k - (len(layout.SERVERS) - 1) / 2) * w
        means = [s["mean"].get(m, np.nan) for m in models]
        stds = [s["std"].get(m, np.nan) for m in models]
        kinds = "+".join(sorted({k2 for k2 in s["system_kind"] if k2}))
        ax.bar(x, means, w, yerr=np.nan_to_num(stds), capsize=2, color=COLORS[server], label=_label(server, kinds))
        for xi, m, v in zip(x, models, means):
            if v != v:
                txt = s["status"].get(m, "not run") if m in s.index else "not run"
                ax.text(xi, 0.02, txt.split(":")[0].split(" (")[0], rotation=90, ha="center", va="bottom",
                        fontsize=6, color="#a33", transform=ax.get_xaxis_transform())
    ax.set_xticks(np.arange(len(models)), [layout.MODEL_LABELS[m] for m in models])
    ax.set_xlim(-0.5, len(models) - 0.5)
    ax.set_yscale("log")
    ax.set_ylabel("median latency at 1 user (ms)")
    ax.legend(fontsize=6, frameon=False)
    ax.set_title("Figure 1: latency for 1 virtual user (reproduced; weights: "
                 f"{'+'.join(sorted(set(st.weights) - {''})) or 'n/a'})", fontsize=9)
    fig.tight_layout()
    plotting.save(fig, fig_out)


def throughput_figure(df: pd.DataFrame, pub: pd.DataFrame, model: str, table_out: str, fig_out: str,
                      title: str) -> None:
    """Figures 2-4: throughput vs virtual users for one model, per server (mean of repeats, error bars:
    std); the published 100-user value (Table I) marked at the right."""
    st = analysis.serve_stats(df)
    st = st[st.model == model].copy()
    st["status"] = [analysis.status_text(r) for _, r in st.iterrows()]
    tidy.write_csv(st, table_out)
    plt, _sns = plotting.pyplot()
    fig, (ax, axp) = plt.subplots(1, 2, figsize=(9, 3.6), gridspec_kw={"width_ratios": [3, 1.2]})
    notes = []
    for server in layout.SERVERS:
        s = st[st.server == server].sort_values("users")
        if s.empty:
            continue
        kinds = "+".join(sorted({k for k in s["system_kind"] if k}))
        ok = s.dropna(subset=["mean"])
        if len(ok):
            ax.errorbar(ok["users"], ok["mean"], yerr=np.nan_to_num(ok["std"]), marker="o", capsize=2,
                        color=COLORS[server], label=_label(server, kinds))
        if len(ok) < len(s):
            notes.append(f"{layout.LABELS[server]}: {s[s['mean'].isna()]['status'].iloc[0]}")
    if st.empty or st["mean"].notna().sum() == 0:
        notes.append(f"{layout.MODEL_LABELS[model]}: not run in this configuration")
    for i, n in enumerate(notes):
        ax.text(0.02, 0.95 - 0.07 * i, n[:90], transform=ax.transAxes, fontsize=6, color="#a33", va="top")
    ax.set_xlabel("virtual users")
    ax.set_ylabel("throughput (req/s)")
    ax.set_title("reproduced", fontsize=8)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6, frameon=False, loc="lower right")
    names, vals, cols = [], [], []
    for server in layout.SERVERS:
        v = analysis.published_value(pub, source="000 inference Table I", model=model, server=server,
                                     metric="throughput")
        if v is not None:
            names.append(layout.LABELS[server].replace(" (", "\n("))
            vals.append(v)
            cols.append(COLORS[server])
    axp.bar(range(len(vals)), vals, color=cols)
    axp.set_xticks(range(len(vals)), names, fontsize=6)
    axp.set_title("published, 100 users (Table I)", fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    plotting.save(fig, fig_out)


def throughput_main(doc: str, name: str, model: str, title: str, argv=None) -> int:
    """The command line of one throughput figure (figures 2-4): --config --measurements --published
    --table --out; draws `model`'s throughput vs users with `title`."""
    a, _cfg = cli.parse(doc, "measurements", "published", "table", "out", argv=argv)
    throughput_figure(analysis.read_measurements(a.measurements), analysis.read_published(a.published), model,
                      a.table, a.out, title)
    print(f"inference_{name}: wrote {a.out} and {a.table}")
    return 0
