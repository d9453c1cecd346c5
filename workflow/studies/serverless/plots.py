"""Shared drawing of the serverless figures (from the tidy table only, via analysis)."""

from __future__ import annotations

import numpy as np

from repro import cli, plotting, tidy
from studies.serverless import analysis, layout

COLORS = {"openfaas": "#3b6ea8", "nuclio-cpp": "#d9822b", "nuclio-go": "#4f9a4f", "baseline": "#555555"}


def image_figure(df, pub, variant: str, table_out: str, fig_out: str, title: str) -> None:
    """Figures 1-2: images/s vs instances, bars per platform (mean of repeats, error bars std); the
    baseline as a line (processing only); beside it the published peaks (Table 1)."""
    st = analysis.image_stats(df)
    st = st[st.variant == variant]
    tidy.write_csv(st, table_out)
    plt, _sns = plotting.pyplot()
    fig, (ax, axp) = plt.subplots(1, 2, figsize=(9, 3.6), gridspec_kw={"width_ratios": [3, 1.4]})
    plats = [p for p in ("openfaas", "nuclio-cpp") if p in set(st.platform)]
    inst = sorted({int(i) for i in st[st.platform != "baseline"].instances.dropna()})
    w = 0.8 / max(1, len(plats))
    for k, p in enumerate(plats):
        s = st[st.platform == p].set_index("instances")
        x = np.arange(len(inst)) + (k - (len(plats) - 1) / 2) * w
        means = [s["mean"].get(i, np.nan) for i in inst]
        stds = [s["std"].get(i, np.nan) for i in inst]
        ax.bar(x, means, w, yerr=np.nan_to_num(stds), capsize=2, color=COLORS[p], label=layout.LABELS[p])
        for xi, (i, m) in zip(x, zip(inst, means)):
            if m != m:  # not run or failed: said, never drawn as zero
                row = s.loc[i] if i in s.index else None
                txt = "failed" if row is not None and row["failed"] else "not run"
                ax.text(xi, 0, txt, rotation=90, ha="center", va="bottom", fontsize=7, color="#a33")
    base = st[st.platform == "baseline"].dropna(subset=["mean"])
    if len(base):
        b = base.iloc[0]
        ax.axhline(b["mean"], color=COLORS["baseline"], ls="--", lw=1,
                   label=f"baseline ({int(b['instances'])} at a time, no platform)")
    ax.set_xticks(np.arange(len(inst)), [str(i) for i in inst])
    ax.set_xlabel("function instances")
    ax.set_ylabel("images/s")
    ax.set_title(f"reproduced ({analysis.kinds(st)})", fontsize=8)
    ax.legend(fontsize=7, frameon=False)
    names, vals = [], []
    for p in ["baseline"] * (variant == "processing") + ["openfaas", "nuclio-cpp"]:
        v = analysis.published_value(pub, workload="image", variant=variant, platform=analysis.PUB_NAME[p],
                                     metric="peak_rate")
        if v is not None:
            names.append(layout.LABELS[p])
            vals.append(v)
    axp.bar(range(len(vals)), vals, color=[COLORS[p] for p in ["baseline"] * (variant == "processing")
                                           + ["openfaas", "nuclio-cpp"]][:len(vals)])
    axp.set_xticks(range(len(vals)), names, fontsize=7)
    axp.set_title("published peaks (Table 1, 16 instances)", fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    plotting.save(fig, fig_out)


def image_figure_main(doc: str, name: str, variant: str, title: str) -> int:
    """The command line of figure1/figure2: the image figure of ``variant`` and the data it draws."""
    a, _cfg = cli.parse(doc, "measurements", "published", "table", "out")
    image_figure(analysis.read_measurements(a.measurements), analysis.read_published(a.published), variant,
                 a.table, a.out, title)
    print(f"serverless_{name}: wrote {a.out} and {a.table}")
    return 0
