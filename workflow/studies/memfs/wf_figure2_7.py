#!/usr/bin/env python3
"""Figure 2.7 (vertical scalability): parallel-stage times vs tasks per node on a fixed node count.

One panel per workflow; for every tasks-per-node value one stacked bar per
design (mProjectPP/mDiffFit/mBackground for Montage, formatdb/blastall for
BLAST), mean over the repeats, with the std of the stages' sum as error bar.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from studies.memfs import wf_common as C


def main() -> None:
    args, df, sw = C.figure_cli(__doc__)
    n = C.vertical_nodes(sw)
    ks = sorted(int(k) for k in sw["vertical"]["tasks_per_node"])
    groups = [(k, d) for k in ks for d in C.DESIGN_ORDER]
    C.stacked_bars(df, args.out, groups=[(n, k, d) for k, d in groups],
                   xlabel=lambda nn, kk: f"{kk} task{'s' if kk > 1 else ''}/node\n({nn * kk} cores)",
                   title=f"Figure 2.7: vertical scalability on {n} node{'s' if n > 1 else ''}")


if __name__ == "__main__":
    main()
