#!/usr/bin/env python3
"""Join a study's partial tidy tables into its one results/<study>/measurements.csv."""

import argparse

import pandas as pd

from repro import tidy

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("--out", required=True)
ap.add_argument("parts", nargs="+")
args = ap.parse_args()
frames = [pd.read_csv(p, low_memory=False) for p in args.parts]
joined = tidy.order_columns(pd.concat(frames, ignore_index=True, sort=False))
tidy.write_csv(joined, args.out)
print(f"tidy_concat: {len(joined)} rows from {len(frames)} tables -> {args.out}")
