#!/usr/bin/env python3
"""serverless Figure 2 (paper 003): Image workload with null processing: OpenFaaS and Nuclio in comparison --
images/s vs function instances
(mean of repeats, error bars: std), the published peaks beside."""

import sys

from studies.serverless import plots

if __name__ == "__main__":
    sys.exit(plots.image_figure_main(
        __doc__, "figure2", "null-processing",
        "Figure 2: Image workload with null processing: OpenFaaS and Nuclio in comparison"))
