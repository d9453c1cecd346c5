#!/usr/bin/env python3
"""serverless Figure 1 (paper 003): Image workload: OpenFaaS and Nuclio in comparison -- images/s vs function instances
(mean of repeats, error bars: std), the published peaks beside."""

import sys

from studies.serverless import plots

if __name__ == "__main__":
    sys.exit(plots.image_figure_main(__doc__, "figure1", "processing",
                                     "Figure 1: Image workload: OpenFaaS and Nuclio in comparison"))
