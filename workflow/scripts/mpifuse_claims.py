#!/usr/bin/env python3
"""mpifuse claims (results/mpifuse/claims.csv): shape claims that should hold on any hardware,
absolute numbers as info claims beside the published values (paper/published/mpifuse.csv)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mfbench import analysis, claimset
from repro import claims


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--config", required=True)
    ap.add_argument("--measurements", required=True)
    ap.add_argument("--published", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    cfg = json.loads(Path(a.config[1:]).read_text() if a.config.startswith("@") else a.config)
    cl = claimset.build(analysis.read_measurements(a.measurements), cfg, analysis.read_published(a.published))
    claims.write(cl, a.out)
    for c in cl:
        if c.kind == "shape":
            print(f"{c.verdict:15s} {c.claim_id}: {c.reproduced}")
    print(f"mpifuse_claims: {len(cl)} claims, {sum(c.kind == 'shape' for c in cl)} shape, "
          f"{sum(c.verdict == claims.REPRODUCED for c in cl)} reproduced, "
          f"{sum(c.verdict == claims.NOT_REPRODUCED for c in cl)} not reproduced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
