#!/usr/bin/env python3
"""serverless Table 2 (paper 003): peak byte-reversal throughput and its instance count
reproduced beside the published values (published.csv)."""

from __future__ import annotations

import sys

from repro import cli, tidy
from studies.serverless import analysis


def main() -> int:
    a, cfg = cli.parse(__doc__, "measurements", "published", "out")
    t = analysis.table2(analysis.read_measurements(a.measurements), analysis.read_published(a.published))
    tidy.write_csv(t, a.out)
    print(t.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
