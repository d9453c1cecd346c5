#!/usr/bin/env python3
"""serverless Table 1 (paper 003): peak image rates (images/s, MiB/s) and the baseline
reproduced beside the published values (published.csv)."""

import sys

from studies.serverless import analysis

if __name__ == "__main__":
    sys.exit(analysis.table_main(__doc__, analysis.table1))
