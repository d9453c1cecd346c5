#!/usr/bin/env python3
"""inference Figure 2: Throughput of the ResNet50 model (requests per second)
vs virtual users, per server; Table I's 100-user values beside."""

from __future__ import annotations

import sys

from studies.inference import plots

if __name__ == "__main__":
    sys.exit(plots.throughput_main(__doc__, "figure2", "resnet50",
                                   "Figure 2: Throughput of the ResNet50 model (req/s)"))
