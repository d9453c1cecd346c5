#!/usr/bin/env python3
"""mpifuse Figure 4: composition of performance factors of the OSR and the Naive (broadcast, no
copy) file systems at one configuration (the paper: 1 GB, 8 nodes, Scratch): open, read/MPI_Get,
broadcast, FUSE overhead (passthrough - native), hashing in memory, remaining."""

from __future__ import annotations

import sys

from repro import cli
from studies.mpifuse import analysis, layout, plotting
from repro import tidy

ORDER = ["open", "read (MPI_Get)", "read (source)", "broadcast", "FUSE overhead", "hashing in memory", "remaining"]


def published_parts(pub):
    name = {"open": "open", "read": None, "bcast": "broadcast", "fuse_overhead": "FUSE overhead",
            "hash_in_memory": "hashing in memory", "remaining": "remaining"}
    out = {}
    f = pub[pub["source"] == "001 Figure 4 text"]
    for _, r in f.iterrows():
        for fs in (["OSR", "Naive"] if r["use_case"] == "both" else [r["use_case"]]):
            comp = name.get(r["metric"], None)
            if r["metric"] == "read":
                comp = "read (MPI_Get)" if fs == "OSR" else "read (source)"
            if r["metric"] == "total":
                comp = "total"
            if comp:
                out[(fs, comp)] = r["value_num"]
    return out


def main() -> int:
    a, cfg = cli.parse(__doc__, "measurements", "published", "table", "out")
    df = analysis.read_measurements(a.measurements)
    t = analysis.figure4(df, cfg)
    pub = published_parts(analysis.read_published(a.published))
    t["published_s"] = [pub.get((fs, c), float("nan")) for fs, c in zip(t["file_system"], t["component"])]
    tidy.write_csv(t, a.table)
    plt = plotting.setup()
    colours = dict(zip(ORDER, plotting.sns.color_palette("Set2", len(ORDER))))
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), gridspec_kw={"width_ratios": [1, 1]})
    f4 = cfg["figure4"]
    for ax, (title, getter) in zip(axes, (
            (f"reproduced ({f4['size']}, {f4['nodes']} nodes, {f4['source']})",
             lambda fs, c: t[(t.file_system == fs) & (t.component == c)]["mean_s"]),
            ("published (1 GB, 8 nodes, Scratch)", lambda fs, c: [pub.get((fs, c), float("nan"))]))):
        for y, fs in enumerate(["OSR", "Naive"]):
            left, neg = 0.0, 0.0  # positive parts stack rightwards, negative ones leftwards from 0
            for comp in ORDER:
                vals = list(getter(fs, comp))
                if not vals or vals[0] != vals[0]:
                    continue
                w = float(vals[0])
                if w >= 0:
                    ax.barh(y, w, left=left, color=colours[comp], edgecolor="white", label=comp)
                    left += w
                else:
                    neg += w
                    ax.barh(y, -w, left=neg, color=colours[comp], edgecolor="k", hatch="//", label=comp)
            tot = list(getter(fs, "total"))
            if tot and tot[0] == tot[0]:
                ax.plot([tot[0]], [y], marker="|", color="k", ms=18)
        ax.set_yticks([0, 1], ["OSR", "Naive"])
        ax.axvline(0, color="0.3", lw=0.8)
        ax.set_xlabel("time (s); | = measured total")
        ax.set_title(title, fontsize=9)
    h, lab = axes[0].get_legend_handles_labels()
    h2, lab2 = axes[1].get_legend_handles_labels()
    seen = dict(zip(lab + lab2, h + h2))
    fig.legend([seen[k] for k in ORDER if k in seen], [k for k in ORDER if k in seen], loc="lower center",
               bbox_to_anchor=(0.5, 0.09),
               ncol=4, fontsize=8, frameon=False)
    req = {fs: layout.variant_options(cfg, v).get("max_read", "")
           for fs, v in (("OSR", "osr"), ("Naive", "bcast-nocopy"))}
    calls = t[t.component == "read calls per node"].set_index("file_system")["mean_s"]
    per_gb = {fs: calls.get(fs, float("nan")) / (analysis.size_bytes(f4["size"]) / 1e9) for fs in req}
    plotting.finish(fig, a.out, "requests: " + ", ".join(
        f"{fs} {req[fs]} ({per_gb[fs]:.0f} calls/GB)" for fs in req)
                    + ", the kernel's default size as in the paper (7630/GB)\n"
                    + analysis.kinds(df, f4["source"]) + "\nhatched, left of 0 = a negative part (the "
                    "parts overlap in time, or noise made passthrough faster than native)", (0, 0.2, 1, 1), t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
