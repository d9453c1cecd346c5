#!/usr/bin/env python3
"""Figure 2.3: MemFS design decisions - (a) write bandwidth vs stripe size, (b) read bandwidth vs prefetch threads."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from repro import plotting
from studies.memfs import common as mc


def main():
    a, cfg = mc.figure_args(__doc__)
    df = mc.load(a.measurements)
    sw = cfg["sweeps"]
    n = int(sw["nodes"][0])
    plotting.theme()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    for metric, color, label in (("write_bw", "tab:blue", "write"), ("read_bw", "tab:green", "read")):
        s = mc.series(df, "stripe", metric, "stripe", network=sw["network"], nodes=n)
        if not s.empty:
            s = s.assign(k=s["stripe"].map(mc.size_key)).sort_values("k")
            ax1.errorbar(s["k"] / 1024, s["mean"], yerr=s["std"].fillna(0), marker="o", color=color,
                         capsize=2, label=label, linestyle="-" if metric == "write_bw" else ":")
        s = mc.series(df, "threads", metric, "threads", network=sw["network"], nodes=n).sort_values("threads")
        if not s.empty:
            ax2.errorbar(s["threads"], s["mean"], yerr=s["std"].fillna(0), marker="o", color=color,
                         capsize=2, label=label, linestyle="-" if metric == "read_bw" else ":")
    ax1.set_xscale("log", base=2)
    ax1.set_yscale("log")
    ax2.set_yscale("log")
    ax1.set_xlabel("stripe size (KiB)")
    ax1.set_ylabel("MB/s")
    ax1.set_title("(a) stripe size (write: solid)")
    ax1.axvline(512, color="grey", linewidth=0.8, linestyle="--")
    ax1.legend(fontsize=7)
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel("prefetch / buffering threads")
    ax2.set_ylabel("MB/s")
    ax2.set_title("(b) threads (read: solid)")
    ax2.legend(fontsize=7)
    note = mc.stand_in_note(df[df["experiment"].isin(["stripe", "threads"]) & (df["network"] == sw["network"])])
    fig.suptitle(f"MemFS design decisions: {n} nodes, {mc.size_label(sw['size'])} files, {sw['network']}"
                 + (f" ({note})" if note else ""), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    mc.save(fig, a.out)


if __name__ == "__main__":
    main()
