#!/usr/bin/env python3
"""mpifuse: raw files -> the tidy table (results/mpifuse/measurements.csv) and a summary.

Every configuration of the matrix appears: its measurements, a `failed` row
(failure record) or a `not-run` row (no file yet) -- never a zero. A failed run's
source traffic (bytes_from_source, link_bytes), where its failure record has it,
is kept too (status `failed`): the claims on the bytes read once count every run,
so a design that read the file n times fails them even though its run failed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from studies.mpifuse import analysis, layout
from repro import paramspace, rawio, tidy


def build(cfg: dict, root: str = ".", raw_dir: str = layout.RAW_DIR):
    expected = layout.expected_raw(cfg, raw_dir)
    df = tidy.collect(expected, layout.STUDY, experiment_of=lambda p: layout.EXPERIMENT,
                      system_kind_of=lambda p: layout.system_kind(cfg, paramspace.parse_path(p)["source"]),
                      root=root)
    df = analysis.normalise(pd.concat([df, failed_traffic(df, root)], ignore_index=True))
    return df, analysis.summary(df)


def failed_traffic(df: pd.DataFrame, root: str = ".") -> pd.DataFrame:
    """The source-traffic metrics that failed runs' records carry, one row each, status failed."""
    rows = []
    for _, r in df[df["status"] == "failed"].drop_duplicates(subset=["raw_file"]).iterrows():
        rec = rawio.read(Path(root) / r["raw_file"])
        for m in rec.get("metrics", []):
            if m["metric"] in analysis.TRAFFIC and not m.get("labels"):
                rows.append({**r.to_dict(), "metric": m["metric"], "value": float(m["value"]), "unit": m["unit"]})
    return pd.DataFrame(rows, columns=df.columns)


def main(argv=None) -> int:
    return tidy.aggregate_main(__doc__, build, label="mpifuse_aggregate", runs="configurations x repeats", argv=argv,
                               tables={"bytes": lambda df, a: analysis.bytes_table(df)})


if __name__ == "__main__":
    sys.exit(main())
