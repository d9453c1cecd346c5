"""Figure 6 (paper 002): mdtest rates per operation (mean over repeats, op/s), one bar per stack and
one panel per MPI task count --
file create/stat/read/remove, then directory create/stat/read/remove where the run had them
(files_only false), then tree create/remove; the published statements in the title.

    python3 -m studies.storage.figure6 --config CFG --measurements M --published P --table T --out F
"""

from repro import cli, plotting, published, tidy

from studies.storage import analysis

if __name__ == "__main__":
    args, cfg = cli.parse(__doc__, "measurements", "published", "table", "out")
    means = analysis.mdtest_means(analysis.load(args.measurements))
    data = means[means["metric"] == "rate"].copy()
    data["stack_label"] = data["stack"].map(analysis.label)
    order = [op for op in analysis.OP_LABELS if op in set(data["op"])]
    order += sorted(set(data["op"]) - set(order))
    data["op_label"] = data["op"].map(lambda o: analysis.OP_LABELS.get(o, o))
    tidy.write_csv(data, args.table)
    pub = published.load(args.published)
    rows = (published.lookup(pub, id=i) for i in ("mdtest_lustre_leads", "mdtest_advantage"))
    notes = [f"{r['source']}: {r['note'].strip(chr(34))}"[:110] for r in rows if r is not None]
    plt, sns = plotting.pyplot()
    tasks = sorted(data["workers"].unique()) if len(data) else [None]
    # one panel per MPI task count (Section 6: the advantage "with higher workloads"), never averaged
    fig, axes = plt.subplots(1, len(tasks), figsize=(max(8, 5.5 * len(tasks)), 4.4), sharey=True, squeeze=False)
    kinds = analysis.kind_of(data, *data["stack"].unique()) if len(data) else ""
    for ax, t in zip(axes[0], tasks):
        d = data[data["workers"] == t] if t is not None else data
        if len(d):
            sns.barplot(data=d, x="op_label", y="mean", hue="stack_label", ax=ax, errorbar=None,
                        order=[analysis.OP_LABELS.get(o, o) for o in order])
            ax.set_yscale("log")
            ax.tick_params(axis="x", labelrotation=30, labelsize=7)
            ax.set_title(f"{t} MPI task(s)", fontsize=8)
        ax.set_ylabel("rate (op/s, log)")
        ax.set_xlabel("mdtest phase" + (f"  [{kinds}]" if kinds.startswith("stand-in") else ""))
    fig.suptitle("Fig. 6: mdtest rates per operation\n" + "\n".join(notes), fontsize=7)
    fig.tight_layout()
    plotting.save(fig, args.out)
