#!/usr/bin/env python3
"""serverless Figure 1 (paper 003): Image workload: OpenFaaS and Nuclio in comparison -- images/s vs function instances
(mean of repeats, error bars: std), the published peaks beside."""

from __future__ import annotations

import sys

from repro import cli
from studies.serverless import analysis, plots


def main() -> int:
    a, cfg = cli.parse(__doc__, "measurements", "published", "table", "out")
    plots.image_figure(analysis.read_measurements(a.measurements), analysis.read_published(a.published),
                       "processing", a.table, a.out, "Figure 1: Image workload: OpenFaaS and Nuclio in comparison")
    print(f"serverless_figure1: wrote {a.out} and {a.table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
