#!/usr/bin/env python3
"""inference Table II: usability scores (1-5) carried as data from the config, the published scores beside."""

from __future__ import annotations

import sys

from repro import cli, tidy
from studies.inference import analysis


def main() -> int:
    a, cfg = cli.parse(__doc__, "measurements", "published", "out")
    t = analysis.table2(cfg, analysis.read_published(a.published))
    tidy.write_csv(t, a.out)
    print(t.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
