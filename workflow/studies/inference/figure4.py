#!/usr/bin/env python3
"""inference Figure 4: Throughput of the Wav2Vec2 truncated model (requests per second)
vs virtual users, per server; Table I's 100-user values beside."""

from __future__ import annotations

import sys

from studies.inference import plots

if __name__ == "__main__":
    sys.exit(plots.throughput_main(__doc__, "figure4", "wav2vec2_truncated",
                                   "Figure 4: Throughput of the Wav2Vec2 truncated model (req/s)"))
