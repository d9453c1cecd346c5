#!/usr/bin/env python3
"""serverless Table 3 (paper 003): single requests, arithmetic, geometric and harmonic mean throughput
reproduced beside the published values (published.csv)."""

import sys

from studies.serverless import analysis

if __name__ == "__main__":
    sys.exit(analysis.table_main(__doc__, analysis.table3))
