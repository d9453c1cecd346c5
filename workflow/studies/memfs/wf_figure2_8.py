#!/usr/bin/env python3
"""Figure 2.8 (horizontal scalability): parallel-stage times vs nodes.

One panel per workflow; for every node count one stacked bar per design and
tasks-per-node of the horizontal sweep (the paper shows AMFS with 4 and 8
tasks per node beside MemFS with 8), mean over the repeats, std as error bar.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from studies.memfs import wf_common as C


def main() -> None:
    args, df, sw = C.figure_cli(__doc__)
    nodes = sorted(int(n) for n in sw["horizontal"]["nodes"])
    ks = sorted(int(k) for k in sw["horizontal"]["tasks_per_node"])
    groups = [(n, k, d) for n in nodes for d in C.DESIGN_ORDER for k in ks]
    C.stacked_bars(df, args.out, groups=groups, by_nodes=True,
                   xlabel=lambda nn, kk: f"{nn} node{'s' if nn > 1 else ''}",
                   title="Figure 2.8: horizontal scalability"
                   + (f" ({ks[0]} task{'s' if ks[0] > 1 else ''}/node)" if len(ks) == 1 else ""),
                   show_k=len(ks) > 1)


if __name__ == "__main__":
    main()
