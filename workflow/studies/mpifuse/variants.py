#!/usr/bin/env python3
"""mpifuse: every use case with its mode and library options (results/mpifuse/tables/variants.csv), and
the options in which each OSR use case differs from osr -- osr-nometa (Figure 5) only in meta_buffer."""

from __future__ import annotations

import sys

from repro import cli, tidy
from studies.mpifuse import analysis


def main() -> int:
    a, cfg = cli.parse(__doc__, "measurements", "published", "out")
    t = analysis.variants_table(cfg)
    tidy.write_csv(t, a.out)
    print(t.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
