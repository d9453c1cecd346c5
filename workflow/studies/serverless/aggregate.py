#!/usr/bin/env python3
"""serverless: raw files -> the tidy table (results/serverless/measurements.csv), the summary and the
limits table. Every configuration of the matrix appears: its measurements, a `failed` row (failure
record, e.g. Nuclio Go's HTTP 413 above 2 MiB) or a `not-run` row (no file yet) -- never a zero."""

from __future__ import annotations

import sys

import pandas as pd

from repro import tidy
from studies.serverless import analysis, layout

KEYS = ["workload", "variant", "platform", "instances", "size"]


def build(cfg: dict, root: str = "."):
    expected = layout.expected_raw(cfg)
    df = tidy.collect(expected, layout.STUDY, experiment_of=lambda p: p.split("workload~", 1)[1].split("/", 1)[0],
                      system_kind_of=lambda p: layout.system_kind_of_path(cfg, p), root=root)
    for col in ("instances", "size"):  # whole numbers, empty where a workload has no such dimension
        if col in df.columns:
            df[col] = pd.to_numeric(df[col], errors="coerce").astype("Int64")
    return df, tidy.summarize(df, KEYS)


def main(argv=None) -> int:
    return tidy.aggregate_main(
        __doc__, build, label="serverless_aggregate", argv=argv,
        tables={"limits": lambda df, a: analysis.limits(analysis.read_measurements(a.measurements))})


if __name__ == "__main__":
    sys.exit(main())
