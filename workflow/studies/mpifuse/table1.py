#!/usr/bin/env python3
"""mpifuse Table I: the largest file, time at the smallest and largest node count, increase,
aggregate throughput -- reproduced beside the published values (workflow/studies/mpifuse/published.csv)."""

from __future__ import annotations

import sys

from repro import cli
from studies.mpifuse import analysis
from repro import tidy


def main() -> int:
    a, cfg = cli.parse(__doc__, "measurements", "published", "out")
    t = analysis.table1(analysis.read_measurements(a.measurements), cfg, analysis.read_published(a.published))
    tidy.write_csv(t, a.out)
    with_cols = ["source", "use_case", "time_min_nodes_s", "time_max_nodes_s", "increase", "throughput_GBps",
                 "published_time_1_node_s", "published_time_24_nodes_s", "published_increase"]
    print(t[with_cols].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
