#!/usr/bin/env python3
"""inference Table I: throughput at the largest user count (req/s) per model and server, the
published 100-user values beside; the paper's gaps, failed and not-run configurations shown as such."""

from __future__ import annotations

import sys

from repro import cli, tidy
from studies.inference import analysis


def main() -> int:
    a, cfg = cli.parse(__doc__, "measurements", "published", "out")
    t = analysis.table1(analysis.read_measurements(a.measurements), analysis.read_published(a.published), cfg)
    tidy.write_csv(t, a.out)
    print(t.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
