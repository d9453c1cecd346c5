"""One tidy long table per study, built only from raw files.

Columns: ``study, experiment, <every parameter>, <every metric label>, rep,
metric, value, unit, status, failure, failure_kind, failure_load, system_kind, host,
started_at, git_sha, tool_versions, raw_file``.

``status`` is ``ok`` (a measurement), ``failed`` (the run failed its sanity
check or crashed; ``value`` is empty; ``failure`` says why, ``failure_kind`` and
``failure_load`` are the record's own where it has them, empty otherwise: the report
classifies those with repro.failures) or ``not-run`` (the configuration is in
the config but no run exists yet).  Nothing is ever filled in with zero.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import pandas as pd

from . import cli, paramspace, rawio

BASE_COLUMNS = ["study", "experiment"]
TAIL_COLUMNS = [
    "rep", "metric", "value", "unit", "status", "failure", "failure_kind", "failure_load", "system_kind",
    "host", "started_at", "git_sha", "tool_versions", "raw_file",
]
STAT_COLUMNS = ["count", "mean", "std", "min", "max", "failed", "not_run"]


def rows_from_record(rec: dict, raw_file: str) -> list[dict]:
    base = {"study": rec["study"], "experiment": rec["experiment"], **rec["params"]}
    common = {
        "rep": rec["rep"],
        "status": rec["status"],
        "failure": rec.get("failure") or "",
        "failure_kind": rec.get("failure_kind") or "",
        "failure_load": json.dumps(rec["failure_load"], sort_keys=True) if rec.get("failure_load") else "",
        "system_kind": rec["system_kind"],
        "host": rec.get("host", ""),
        "started_at": rec.get("started_at", ""),
        "git_sha": rec.get("git_sha", ""),
        "tool_versions": json.dumps(rec.get("tool_versions", {}), sort_keys=True),
        "raw_file": raw_file,
    }
    if rec["status"] != "ok":
        return [{**base, **common, "metric": rec.get("primary_metric", ""), "value": float("nan"), "unit": ""}]
    rows = []
    for m in rec["metrics"]:
        rows.append({**base, **m.get("labels", {}), **common,
                     "metric": m["metric"], "value": float(m["value"]), "unit": m["unit"]})
    return rows


def collect(expected: Iterable[str | os.PathLike], study: str, experiment_of=None,
            system_kind_of=None, root: str | os.PathLike = ".") -> pd.DataFrame:
    """Rows for every expected raw path: its metrics, its failure record, or not-run.

    ``experiment_of(path)`` / ``system_kind_of(path)`` name the experiment and
    the system kind of a configuration that has no file yet.
    """
    rows: list[dict] = []
    root = Path(root)
    for path in expected:
        path = Path(path)
        rel = str(path)
        full = path if path.is_absolute() else root / path
        if full.exists():
            rows.extend(rows_from_record(rawio.read(full), rel))
            continue
        fail = rawio.failure_path(full)
        if fail.exists():
            rows.extend(rows_from_record(rawio.read(fail), str(rawio.failure_path(path))))
            continue
        params = paramspace.parse_path(rel)
        rep = params.pop("rep", "")
        rows.append({
            "study": study,
            "experiment": experiment_of(rel) if experiment_of else "",
            **params,
            "rep": int(rep) if str(rep).isdigit() else rep,
            "metric": "", "value": float("nan"), "unit": "", "status": "not-run",
            "failure": "", "failure_kind": "", "failure_load": "",
            "system_kind": system_kind_of(rel) if system_kind_of else "",
            "host": "", "started_at": "", "git_sha": "", "tool_versions": "", "raw_file": rel,
        })
    return order_columns(pd.DataFrame(rows))


def order_columns(df: pd.DataFrame) -> pd.DataFrame:
    if df.empty:
        return pd.DataFrame(columns=BASE_COLUMNS + TAIL_COLUMNS)
    for col in BASE_COLUMNS + TAIL_COLUMNS:
        if col not in df.columns:
            df[col] = ""
    middle = [c for c in df.columns if c not in BASE_COLUMNS + TAIL_COLUMNS]
    return df[BASE_COLUMNS + middle + TAIL_COLUMNS]


def write_csv(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Atomic CSV write (temporary name, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    df.to_csv(tmp, index=False)
    os.replace(tmp, path)
    return path


def select(df: pd.DataFrame, **eq) -> pd.DataFrame:
    """The rows whose columns equal the given values; no rows when a named column is absent
    (a study whose runs never wrote that column has no such configuration)."""
    mask = pd.Series(True, index=df.index)
    for col, val in eq.items():
        if col not in df.columns:
            return df.iloc[0:0]
        mask &= df[col] == val
    return df[mask]


def summarize(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """count/mean/std/min/max of ``value`` per configuration and metric.

    Failed and not-run repeats are counted in their own columns, never averaged in.
    """
    keys = [k for k in by if k in df.columns] + ["metric", "unit"]
    ok = df[df["status"] == "ok"]
    stats = (ok.groupby(keys, dropna=False)["value"]
             .agg(["count", "mean", "std", "min", "max"]).reset_index())
    cfg_keys = [k for k in by if k in df.columns]
    bad = (df[df["status"] != "ok"]
           .assign(failed=lambda d: (d["status"] == "failed").astype(int),
                   not_run=lambda d: (d["status"] == "not-run").astype(int))
           .groupby(cfg_keys, dropna=False)[["failed", "not_run"]].sum().reset_index())
    if cfg_keys:
        stats = stats.merge(bad, on=cfg_keys, how="outer") if not bad.empty else stats.assign(failed=0, not_run=0)
    else:
        stats = stats.assign(failed=int(bad["failed"].sum()) if not bad.empty else 0,
                             not_run=int(bad["not_run"].sum()) if not bad.empty else 0)
    stats[["failed", "not_run"]] = stats[["failed", "not_run"]].fillna(0).astype(int)
    stats["count"] = stats["count"].fillna(0).astype(int)
    return stats


def run_counts(runs: pd.DataFrame) -> str:
    """'N ok, N failed, N not run' over one row per raw file; where the table has a ``reason``
    column (a configuration the paper itself left out), the not-run ones it names are counted apart."""
    ok, failed = (runs.status == "ok").sum(), (runs.status == "failed").sum()
    not_run = runs.status == "not-run"
    if "reason" not in runs.columns:
        return f"{ok} ok, {failed} failed, {not_run.sum()} not run"
    return (f"{ok} ok, {failed} failed, {(not_run & (runs.reason != '')).sum()} not run as in the paper, "
            f"{(not_run & (runs.reason == '')).sum()} not run")


def aggregate_main(doc: str, build: Callable[[dict], tuple[pd.DataFrame, pd.DataFrame]], *, label: str,
                   tables: dict[str, Callable[[pd.DataFrame, argparse.Namespace], pd.DataFrame]],
                   runs: str = "runs", argv=None) -> int:
    """The main of a study's aggregate script: ``--config`` and ``--measurements``, ``--summary`` and one
    ``--<name>`` per entry of ``tables``. ``build(cfg)`` gives (tidy table, summary); both are written,
    then each further table ``make(df, args)`` (args: the parsed paths, e.g. args.measurements to read the
    written table back), in order; one line counts the runs: ``<label>: R rows from N <runs>: ...``."""
    a, cfg = cli.parse(doc, "measurements", "summary", *tables, argv=argv)
    df, summ = build(cfg)
    write_csv(df, a.measurements)
    write_csv(summ, a.summary)
    for name, make in tables.items():
        write_csv(make(df, a), getattr(a, name))
    once = df.drop_duplicates(subset=["raw_file"])
    print(f"{label}: {len(df)} rows from {len(once)} {runs}: {run_counts(once)}")
    return 0
