#!/usr/bin/env python3
"""mpifuse Figure 5: the OSR file system without the metadata buffer (osr-nometa: osr with
meta_buffer=off, nothing else changed) vs with it (osr), native Home for reference, and our own
refined design (osr-refined, beyond the paper) beside them; time vs nodes per file size."""

from __future__ import annotations

import sys

from repro import cli
from studies.mpifuse import analysis, plotting
from repro import tidy


def main() -> int:
    a, cfg = cli.parse(__doc__, "measurements", "published", "table", "out")
    df = analysis.read_measurements(a.measurements)
    t = analysis.figure5(df, cfg)
    tidy.write_csv(t, a.table)
    plt = plotting.setup()
    sizes = sorted(cfg["sizes"], key=analysis.size_bytes)
    source = "home" if "home" in cfg["sources"] else cfg["sources"][0]
    fig, axes = plt.subplots(1, len(sizes), figsize=(3.2 * len(sizes), 2.9), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        d = t[(t.source == source) & (t["size"] == size)].sort_values("nodes")
        for v, ls in (("osr", "-"), ("osr-nometa", "--"), ("osr-refined", "-."), ("native", ":")):
            if f"{v}_mean_s" not in d or d[f"{v}_mean_s"].isna().all():
                continue
            ax.errorbar(d["nodes"], d[f"{v}_mean_s"], yerr=d[f"{v}_std_s"].fillna(0), color=plotting.PALETTE[v],
                        marker=plotting.MARKERS[v], ls=ls, ms=4, capsize=2,
                        label={"osr": "OSR with metadata buffer", "osr-nometa": "OSR without metadata buffer",
                               "osr-refined": "OSR refined (beyond the paper)", "native": f"native {source}"}[v])
        ax.set_title(f"{plotting.SOURCE_TITLE.get(source, source)} -- {size}", fontsize=9)
        ax.set_xticks(cfg["nodes"])
        ax.set_xlabel("nodes")
        ax.set_ylim(bottom=0)
    axes[0][0].set_ylabel("time (s)")
    h, lab = axes[0][0].get_legend_handles_labels()
    fig.legend(h, lab, loc="upper center", ncol=4, fontsize=8, frameon=False)
    diff = analysis.option_diff(cfg, "osr", "osr-nometa")
    plotting.finish(fig, a.out, f"without metadata buffer = OSR with only {diff} changed; "
                    + analysis.kinds(df, source), (0, 0.03, 1, 0.9), t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
