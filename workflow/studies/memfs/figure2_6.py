#!/usr/bin/env python3
"""Figure 2.6: metadata throughput (create, open) vs nodes, MemFS and the locality-based design."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from repro import plotting
from studies.memfs import common as mc


def main():
    a, cfg = mc.figure_args(__doc__)
    df = mc.load(a.measurements)
    md = cfg["metadata"]
    net = md["networks"][0]
    plotting.theme()
    fig, ax = plt.subplots(figsize=(5, 3.6))
    colors = {"memfs": "tab:blue", "locality": "tab:orange"}
    for design in md["designs"]:
        for metric, ls, label in (("create_rate", "-", "create"), ("open_rate", "--", "open")):
            s = mc.series(df, "metadata", metric, "nodes", network=net, design=design).sort_values("nodes")
            if s.empty:
                continue
            ax.errorbar(s["nodes"], s["mean"], yerr=s["std"].fillna(0), marker="o", linestyle=ls, capsize=2,
                        color=colors.get(design), label=f"{'MemFS' if design == 'memfs' else 'locality'} {label}")
    ax.set_xlabel("nodes")
    ax.set_ylabel("operations/s")
    ax.set_xticks(sorted({int(n) for n in md["nodes"]}))
    ax.legend(fontsize=7)
    note = mc.stand_in_note(df[(df["experiment"] == "metadata") & (df["network"] == net)])
    ax.set_title(f"Metadata throughput, {net}" + (f"\n({note})" if note else ""), fontsize=7)
    fig.tight_layout()
    mc.save(fig, a.out)


if __name__ == "__main__":
    main()
