#!/usr/bin/env python3
"""Montage/BLAST workflows: the tidy table and a per-configuration summary, from raw files only.

Every expected configuration appears: its metrics, its failure record
(``failed``) or ``not-run`` -- never a zero. The --expected list must equal what
layout.workflow_expected_raw gives for --config (the run keys of memfs.workflows),
and no workflow raw file the layout does not expect may exist: a stale list fails,
naming the files (layout.check_expected).
"""

from __future__ import annotations

import argparse
import math

from repro import cli, paramspace, tidy
from studies.memfs import layout

STUDY = "memfs"


def _text(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--expected", required=True, help="file with one expected raw path per line")
    ap.add_argument("--config", required=True,
                    help="memfs.workflows (JSON; at least " + ", ".join(layout.WORKFLOW_RUN_KEYS) + ")")
    ap.add_argument("--out", required=True)
    ap.add_argument("--summary", required=True)
    args = ap.parse_args()
    paths = layout.read_list(args.expected)
    layout.check_expected(paths, layout.workflow_expected_raw(cli.load_config(args.config)), "workflows")

    def experiment_of(p):
        return "workflow_" + paramspace.parse_path(p).get("workflow", "")

    def kind_of(p):
        return "stand-in:network-namespaces"

    df = tidy.collect(paths, STUDY, experiment_of=experiment_of, system_kind_of=kind_of)
    tidy.write_csv(df, args.out)
    # per configuration: the parallel stages, the run, aggregate memory (count/mean/std/min/max,
    # failed and not-run runs counted apart)
    by = ["workflow", "design", "nodes", "tasks_per_node", "stage"]
    lab = df.copy()
    for c in by:
        if c in lab.columns:
            lab[c] = lab[c].map(_text)
    timed = lab["timed"].map(_text).str.lower().isin(["true", "1"]) if "timed" in lab.columns else False
    keep = lab.metric.isin(["parallel_time", "workflow_time", "aggregate_data_bytes", "aggregate_memory_bytes"])
    keep |= (lab.metric == "stage_time") & timed
    keep |= lab.status != "ok"
    summ = tidy.summarize(lab[keep], by)
    summ = summ[summ.metric.astype(str) != ""]
    scale = summ.unit.eq("B")
    for c in ("mean", "std", "min", "max"):
        summ.loc[scale, c] = summ.loc[scale, c] / 1e6
    summ.loc[scale, "unit"] = "MB"
    for c in ("mean", "std", "min", "max"):
        summ[c] = summ[c].round(4)
    tidy.write_csv(summ, args.summary)
    runs = df.drop_duplicates("raw_file")
    print(f"{len(paths)} expected runs: " + ", ".join(f"{k} {v}" for k, v in runs.status.value_counts().items()))


if __name__ == "__main__":
    main()
