#!/usr/bin/env python3
"""inference Figure 1: latency results for 1 virtual user (median per request, ms), per model and server."""

from __future__ import annotations

import sys

from repro import cli
from studies.inference import analysis, plots


def main() -> int:
    a, cfg = cli.parse(__doc__, "measurements", "published", "table", "out")
    plots.latency_figure(analysis.read_measurements(a.measurements), analysis.read_published(a.published),
                         a.table, a.out)
    print(f"inference_figure1: wrote {a.out} and {a.table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
