"""Figure 6 (paper 002): mdtest rates per operation (mean over repeats, op/s), one bar per stack --
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
    fig, ax = plt.subplots(figsize=(8, 4.2))
    if len(data):
        sns.barplot(data=data, x="op_label", y="mean", hue="stack_label", ax=ax,
                    order=[analysis.OP_LABELS.get(o, o) for o in order])
        ax.set_yscale("log")
        ax.tick_params(axis="x", labelrotation=30, labelsize=7)
    kinds = analysis.kind_of(data, *data["stack"].unique()) if len(data) else ""
    ax.set_ylabel("rate (op/s, log)")
    ax.set_xlabel("mdtest phase" + (f"  [{kinds}]" if kinds.startswith("stand-in") else ""))
    fig.suptitle("Fig. 6: mdtest rates per operation\n" + "\n".join(notes), fontsize=7)
    fig.tight_layout()
    plotting.save(fig, args.out)
