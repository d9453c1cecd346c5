#!/usr/bin/env python3
"""inference Figure 2: Throughput of the ResNet50 model (requests per second)
vs virtual users, per server; Table I's 100-user values beside."""

from __future__ import annotations

import sys

from repro import cli
from studies.inference import analysis, plots


def main() -> int:
    a, cfg = cli.parse(__doc__, "measurements", "published", "table", "out")
    plots.throughput_figure(analysis.read_measurements(a.measurements), analysis.read_published(a.published),
                            "resnet50", a.table, a.out, "Figure 2: Throughput of the ResNet50 model (req/s)")
    print(f"inference_figure2: wrote {a.out} and {a.table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
