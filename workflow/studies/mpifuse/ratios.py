#!/usr/bin/env python3
"""mpifuse: bandwidth-reduction to latency-increase ratios (Section VII: ~8 broadcast, ~22 OSR).

reduction = native's bytes from the source / the variant's (nominal: n for a design that reads
the file once), latency increase = t(variant) / t(native) on the same source, at the largest
size and node count; the paper's values are computed the same way from its Table I beside the
ones its text states."""

from __future__ import annotations

import sys

from repro import cli
from studies.mpifuse import analysis
from repro import tidy


def main() -> int:
    a, cfg = cli.parse(__doc__, "measurements", "published", "out")
    r = analysis.ratios(analysis.read_measurements(a.measurements), cfg, analysis.read_published(a.published))
    tidy.write_csv(r, a.out)
    print(r[["source", "use_case", "latency_increase", "bandwidth_reduction_nominal", "bandwidth_reduction_measured",
             "ratio", "published_ratio_from_table1", "published_ratio_text"]].to_string(
        index=False, float_format=lambda x: f"{x:.2f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
