#!/usr/bin/env python3
"""serverless Table 2 (paper 003): peak byte-reversal throughput and its instance count
reproduced beside the published values (published.csv)."""

import sys

from studies.serverless import analysis

if __name__ == "__main__":
    sys.exit(analysis.table_main(__doc__, analysis.table2))
