"""The storage study's tidy table, built only from the raw files, plus the per-configuration summary
and the limits table (each stack as a fraction of fio on the same path and of the COSBench driver's
own ceiling, measured in the same run).

    python3 -m studies.storage.aggregate --config CFG --measurements M.csv --summary S.csv --limits L.csv

Every expected configuration appears: measured (ok), failed (its failure record) or not-run; a
configuration left out of the plan (Lustre+MinIO on a cluster without paths.lustre_dir) is a
not-run row whose `failure` column says why (--launcher slurm).
"""

from __future__ import annotations

import pandas as pd
from repro import cli, tidy

from studies.storage import analysis, layout

SUMMARY_BY = ["experiment", "stack", "benchmark", "size", "workers", "limit", "op", "rw", "bs", "system_kind"]


INT_COLUMNS = ("workers", "nodes", "rep")


def measurements(cfg: dict, root=".", launcher: str = "local") -> pd.DataFrame:
    """The tidy table. Integer parameters stay integers: a raw record gives ints, a not-run row's path
    gives text ("4"), and the limit rows have no workers at all (fio) -- without the cast pandas made the
    column float (summary.csv said workers 1.0, 4.0) or, with a not-run row beside an ok one, mixed
    text and numbers that the summary could not group."""
    skipped = layout.not_run_raw(cfg, launcher)
    df = tidy.collect(layout.expected_raw(cfg, launcher=launcher) + sorted(skipped), layout.STUDY,
                      experiment_of=layout.experiment_of, system_kind_of=layout.system_kind_of_path(cfg), root=root)
    if skipped:
        mask = df["raw_file"].isin(list(skipped)) & (df["status"] == "not-run")
        df.loc[mask, "failure"] = df.loc[mask, "raw_file"].map(skipped)
    for col in INT_COLUMNS:
        if col in df.columns:
            df[col] = pd.to_numeric(df[col].replace("", None), errors="raise").astype("Int64")
    return df


def _mix_ceiling(ceil: pd.DataFrame, size: str, mix: dict) -> tuple[float | None, str]:
    """The driver's ceiling for the workload's read/write mix at one size: its best worker count per
    operation, combined as the mix would spend its time (1 / sum(share / rate))."""
    d = ceil[(ceil["size"] == size) & (ceil["metric"] == "throughput")]
    if d.empty:
        return None, ""
    best = d.groupby("op")["value"].mean().to_dict()  # mean over repeats ...
    best = {op: d[d["op"] == op].groupby("workers")["value"].mean().max() for op in best}  # ... best workers
    shares = {op: mix.get(op, 0) / 100 for op in ("read", "write", "delete") if mix.get(op, 0)}
    if any(op not in best for op in shares):
        return None, ""
    return 1.0 / sum(s / best[op] for op, s in shares.items()), "+".join(f"{op} {best[op]:.0f}" for op in shares)


def limits(df: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    means = analysis.cosbench_means(df)
    ok = df[df["status"] == "ok"]
    fio = ok[(ok.get("limit") == "fio") & (ok["metric"] == "bandwidth")] if "limit" in ok else ok.iloc[0:0]
    ceil = ok[ok.get("limit") == "ceiling"] if "limit" in ok else ok.iloc[0:0]
    fio_bw = fio[fio["rw"].isin(["read", "write"])].groupby(["rw", "bs"])["value"].mean()
    fio_best = float(fio_bw.max()) if len(fio_bw) else None
    fio_at = " ".join(map(str, fio_bw.idxmax())) if len(fio_bw) else ""
    rows = []
    for stack in cfg["stacks"]:
        m = means[means["stack"] == stack]
        kind = analysis.kind_of(means, stack) or layout.system_kind(cfg, stack, "cosbench")
        bw = m[m["metric"] == "bandwidth"]
        if not bw.empty:
            b = bw.loc[bw["mean"].idxmax()]
            rows.append({"stack": stack, "system_kind": kind, "size": b["size"], "workers": int(b["workers"]),
                         "metric": "bandwidth", "unit": "B/s", "stack_value": b["mean"],
                         "limit": f"fio sequential ({fio_at})", "limit_value": fio_best,
                         "fraction": b["mean"] / fio_best if fio_best else None})
        tp = m[m["metric"] == "throughput"]
        for size in cfg["cosbench"]["sizes"]:
            t = tp[tp["size"] == size]
            if t.empty:
                continue
            best = t.loc[t["mean"].idxmax()]
            lim, how = _mix_ceiling(ceil, size, cfg["cosbench"]["mix"])
            rows.append({"stack": stack, "system_kind": kind, "size": size, "workers": int(best["workers"]),
                         "metric": "throughput", "unit": "op/s", "stack_value": best["mean"],
                         "limit": f"cosbench-driver ceiling vs memserver ({how})" if how else "ceiling not measured",
                         "limit_value": lim, "fraction": best["mean"] / lim if lim else None})
    return pd.DataFrame(rows, columns=["stack", "system_kind", "size", "workers", "metric", "unit", "stack_value",
                                       "limit", "limit_value", "fraction"])


def main(argv=None) -> int:
    ap = cli.options(cli.parser(__doc__, "measurements", "summary", "limits"), launcher="local")
    args, cfg = cli.finish(ap, argv)
    df = measurements(cfg, launcher=args.launcher)
    tidy.write_csv(df, args.measurements)
    tidy.write_csv(tidy.summarize(df, SUMMARY_BY), args.summary)
    tidy.write_csv(limits(df, cfg), args.limits)
    counts = df.drop_duplicates("raw_file")["status"].value_counts().to_dict()
    print(f"storage: {len(df)} rows from {df['raw_file'].nunique()} configurations {counts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
