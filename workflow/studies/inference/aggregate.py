#!/usr/bin/env python3
"""inference: raw files -> the tidy table (results/inference/measurements.csv), the summary and the
limits table. Every configuration of the matrix appears: its measurements, a `failed` row (failure
record: failed requests or checks, a server that did not come up), a `not-run` row with the paper's
reason (TF Serving x full Wav2Vec2, BART off TorchServe) or an empty reason (no file yet) -- never a zero."""

from __future__ import annotations

import sys

import pandas as pd

from repro import tidy
from studies.inference import analysis, layout

KEYS = ["experiment", "server", "model", "framework", "users"]


def build(cfg: dict, root: str = "."):
    expected = layout.expected_raw(cfg)
    df = tidy.collect(expected, layout.STUDY, experiment_of=layout.experiment_of,
                      system_kind_of=lambda p: layout.system_kind_of_path(cfg, p), root=root)
    for col in ("server", "model", "framework", "weights"):
        if col not in df.columns:
            df[col] = ""
    df["users"] = pd.to_numeric(df.get("users"), errors="coerce").astype("Int64")
    df["reason"] = [layout.by_design_path(p) if s == "not-run" else "" for p, s in zip(df["raw_file"], df["status"])]
    # a configuration without a measurement carries the weights the configuration asks for
    df["weights"] = df["weights"].fillna("").astype(str).replace({"nan": ""})
    no_w = (df["weights"] == "") & (df["experiment"] != "ceiling")
    df.loc[no_w, "weights"] = cfg["weights"]
    return tidy.order_columns(df), tidy.summarize(df, KEYS)


def main(argv=None) -> int:
    return tidy.aggregate_main(
        __doc__, build, label="inference_aggregate", runs="configurations x repeats", argv=argv,
        tables={"limits": lambda df, a: analysis.limits(analysis.read_measurements(a.measurements))})


if __name__ == "__main__":
    sys.exit(main())
