#!/usr/bin/env python3
"""mpifuse claims (results/mpifuse/claims.csv): shape claims that should hold on any hardware,
absolute numbers as info claims beside the published values (workflow/studies/mpifuse/published.csv)."""

from __future__ import annotations

import sys
from collections import Counter

from repro import cli
from studies.mpifuse import analysis, claimset
from repro import claims


def main() -> int:
    a, cfg = cli.parse(__doc__, "measurements", "published", "out")
    cl = claimset.build(analysis.read_measurements(a.measurements), cfg, analysis.read_published(a.published))
    claims.write(cl, a.out)
    for c in cl:
        if c.kind == "shape":
            print(f"{c.verdict:15s} {c.claim_id}: {c.reproduced}")
    n = Counter(c.verdict for c in cl)
    print(f"mpifuse_claims: {len(cl)} claims, {sum(c.kind == 'shape' for c in cl)} shape, "
          f"{n[claims.REPRODUCED]} reproduced, {n[claims.NOT_REPRODUCED]} not reproduced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
