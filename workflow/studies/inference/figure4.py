#!/usr/bin/env python3
"""inference Figure 4: Throughput of the Wav2Vec2 truncated model (requests per second)
vs virtual users, per server; Table I's 100-user values beside."""

from __future__ import annotations

import sys

from repro import cli
from studies.inference import analysis, plots


def main() -> int:
    a, cfg = cli.parse(__doc__, "measurements", "published", "table", "out")
    plots.throughput_figure(analysis.read_measurements(a.measurements), analysis.read_published(a.published),
                            "wav2vec2_truncated", a.table, a.out,
                            "Figure 4: Throughput of the Wav2Vec2 truncated model (req/s)")
    print(f"inference_figure4: wrote {a.out} and {a.table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
