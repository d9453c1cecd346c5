#!/usr/bin/env python3
"""mpifuse claims (results/mpifuse/claims.csv): the paper's statements with its numbers (published.csv),
a tolerance justified by the local scale, cluster-only where the statement needs the paper's scale;
absolute numbers as info claims beside the published values."""

from __future__ import annotations

import sys

from repro import claims
from studies.mpifuse import analysis, claimset


def build(args, cfg):
    return claimset.build(analysis.read_measurements(args.measurements), cfg, analysis.read_published(args.published))


def main(argv=None) -> int:
    return claims.main(__doc__, "mpifuse", build, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
