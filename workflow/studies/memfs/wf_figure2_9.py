#!/usr/bin/env python3
"""Figure 2.9: aggregate memory at the end of the run vs nodes, both designs.

Aggregate memory = the sum over the system nodes of memcached's and the FUSE
clients' resident memory (what the paper's figure shows: data plus the
per-process overhead); dashed: the data the storage holds (memcached bytes;
for local disk, bytes on the node directories).  Horizontal sweep at its
largest tasks-per-node (the paper: the runs of Figure 2.8a); mean +- std.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from studies.memfs import wf_common as C

COLORS = {"memfs": "#4c72b0", "locality": "#dd8452", "local-disk": "#55a868"}


def main() -> None:
    args, df, sw = C.figure_cli(__doc__)
    k = C.horizontal_tpn(sw)
    nodes = sorted(int(n) for n in sw["horizontal"]["nodes"])
    apps = [a for a in ("montage", "blast") if a in set(df.workflow.dropna())] or ["montage"]
    fig, axes = plt.subplots(1, len(apps), figsize=(6.2 * len(apps), 4.3), squeeze=False)
    for ax, app in zip(axes[0], apps):
        for metric, style, what in (("aggregate_memory_bytes", "-", "memcached + FUSE RSS"),
                                    ("aggregate_data_bytes", "--", "data held")):
            runs = C.per_run(df[df.workflow == app], metric)
            for d in C.DESIGN_ORDER:
                if metric == "aggregate_memory_bytes" and d == "local-disk":
                    continue  # no memory-resident storage
                xs, ys, es = [], [], []
                for n in nodes:
                    v = runs[(runs.design == d) & (runs.nodes == n) & (runs.tasks_per_node == k)].value
                    m, s, cnt = C.mean_std(v)
                    if cnt:
                        xs.append(n)
                        ys.append(m / C.MB)
                        es.append(s / C.MB)
                if xs:
                    ax.errorbar(xs, ys, yerr=es, fmt=style + "o", color=COLORS[d], capsize=3, ms=4,
                                label=f"{C.DESIGN_LABEL[d]}: {what}")
        ax.set_xscale("log", base=2)
        ax.set_xticks(nodes, [str(n) for n in nodes])
        ax.set_xlabel("nodes")
        ax.set_ylabel("aggregate at the end of the run (MB)")
        ax.set_title(f"{C.APP_LABEL[app]} ({k} task{'s' if k > 1 else ''}/node)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Figure 2.9: aggregate memory vs nodes (paper: MemFS lower, growing more slowly)", fontsize=10)
    fig.tight_layout()
    C.save(fig, args.out)


if __name__ == "__main__":
    main()
