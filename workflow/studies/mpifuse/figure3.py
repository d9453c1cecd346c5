#!/usr/bin/env python3
"""mpifuse Figure 3: time to hash the file on every node vs the number of nodes, one panel per
file size and source (Home, Scratch), one line per use case, error bars = std over repeats."""

from __future__ import annotations

import sys

from repro import cli, tidy
from studies.mpifuse import analysis, plotting


def main() -> int:
    a, cfg = cli.parse(__doc__, "measurements", "published", "table", "out")
    df = analysis.read_measurements(a.measurements)
    stats = analysis.time_stats(df)
    tidy.write_csv(stats, a.table)  # the figure's data
    plt = plotting.setup()
    sizes = sorted(cfg["sizes"], key=analysis.size_bytes)
    sources = cfg["sources"]
    variants = [v for v in cfg["variants"]]
    fig, axes = plt.subplots(len(sizes), len(sources), figsize=(4.2 * len(sources), 2.6 * len(sizes)),
                             squeeze=False, sharex=True)
    for j, source in enumerate(sources):
        for i, size in enumerate(sizes):
            ax = axes[i][j]
            if stats[(stats.source == source) & (stats["size"] == size)].empty:
                ax.text(0.5, 0.5, "no successful run", ha="center", va="center", transform=ax.transAxes,
                        fontsize=9, color="#a33")
            for v in variants:
                sel = (stats.source == source) & (stats.variant == v) & (stats["size"] == size)
                s = stats[sel].sort_values("nodes")
                if s.empty:
                    continue
                ax.errorbar(s["nodes"].astype(int), s["mean"], yerr=s["std"].fillna(0), label=plotting.label(v),
                            color=plotting.PALETTE[v], marker=plotting.MARKERS[v], ms=4, lw=1.2, capsize=2,
                            ls="--" if v == "osr-refined" else "-")
            ax.set_title(f"{plotting.SOURCE_TITLE.get(source, source)} -- {size}", fontsize=9)
            ax.set_xticks(cfg["nodes"])
            ax.set_ylim(bottom=0)
            if j == 0:
                ax.set_ylabel("time (s)")
            if i == len(sizes) - 1:
                ax.set_xlabel("nodes")
    handles = {}
    for ax in axes.flat:  # every use case that has data in any panel, once
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    if handles:
        fig.legend(list(handles.values()), list(handles), loc="upper center", ncol=min(len(handles), 4), fontsize=8,
                   frameon=False)
    kinds = analysis.kinds(df)
    plotting.finish(fig, a.out, f"mean of repeats (slowest node per run), error bars: std; {kinds}", (0, 0.02, 1, 0.95))
    print(f"mpifuse_figure3: wrote {a.out} and {a.table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
