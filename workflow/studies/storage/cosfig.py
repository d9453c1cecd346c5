"""Figures 4 and 5 share one drawing: a COSBench metric vs object size, one line per worker count,
one panel per stack, the paper's statements in the title."""

from __future__ import annotations

from repro import plotting, published, tidy

from studies.storage import analysis


def draw(args, metric: str, ylabel: str, title: str, pub_ids: list[str], ceiling: bool = False) -> None:
    df = analysis.load(args.measurements)
    means = analysis.cosbench_means(df)
    data = means[means["metric"] == metric].copy()
    data["stack_label"] = data["stack"].map(analysis.label)
    tidy.write_csv(data, args.table)
    pub = published.load(args.published)
    notes = []
    for pid in pub_ids:
        row = published.lookup(pub, id=pid)
        if row is not None:
            notes.append(f"{row['source']}: {row['note'].strip(chr(34))}"[:110])
    plt, sns = plotting.pyplot()
    stacks = list(dict.fromkeys(data["stack"])) or ["(no data)"]
    fig, axes = plt.subplots(1, len(stacks), figsize=(4.2 * len(stacks), 3.8), sharey=True, squeeze=False)
    for ax, stack in zip(axes[0], stacks):
        d = data[data["stack"] == stack].sort_values("size_bytes")
        for w, g in d.groupby("workers"):
            ax.errorbar(g["size_bytes"], g["mean"], yerr=g["std"].fillna(0), marker="o", capsize=2,
                        label=f"{w} workers")
        if ceiling and "limit" in df.columns:
            c = df[(df["limit"] == "ceiling") & (df["metric"] == metric) & (df["status"] == "ok")]
            if not c.empty:
                c = c.assign(size_bytes=c["size"].map(analysis.size_bytes))
                cm = c.groupby("size_bytes")["value"].mean().reset_index()
                ax.plot(cm["size_bytes"], cm["value"], "k--", lw=1, label="driver ceiling (memserver)")
        ax.set_xscale("log")
        ax.set_xlabel("object size (bytes, decimal)")
        kind = analysis.kind_of(d, stack)
        ax.set_title(analysis.label(stack) + (f"\n[{kind}]" if kind.startswith("stand-in") else ""), fontsize=8)
        if len(d):
            ax.legend(fontsize=6)
    axes[0][0].set_ylabel(ylabel)
    fig.suptitle(title + ("\n" + "\n".join(notes) if notes else ""), fontsize=7)
    fig.tight_layout()
    plotting.save(fig, args.out)
