#!/usr/bin/env python3
"""serverless Figure 3 (paper 003): byte-reversal throughput vs request size (log2 axis), one row per
platform (OpenFaaS, Nuclio, Nuclio Go), single requests left and parallel right, each at the instance
count that reached the highest peak. Single: box = per-request throughputs (q1, median, q3; whiskers
5th/95th percentile; mean of the repeats' quantiles); parallel: box over the repeats' y = n*b/t.
Sizes a platform refused are marked."""

from __future__ import annotations

import math
import sys

import pandas as pd

from repro import cli, plotting, tidy
from studies.serverless import analysis, layout

QUANT = {"whislo": "single_p05", "q1": "single_q1", "med": "single_median", "q3": "single_q3",
         "whishi": "single_p95", "mean": "single_mean"}


def data(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for variant in ("single", "parallel"):
        for platform in layout.PLATFORMS:
            n = analysis.best_instances(df, variant, platform)
            if n is None:
                continue
            sub = df[(df.workload == "bytes") & (df.variant == variant) & (df.platform == platform)
                     & (df.instances == n)]
            for size, g in sub.groupby("size"):
                ok = g[g.status == "ok"]
                row = {"variant": variant, "platform": platform, "instances": n, "size": int(size),
                       "runs_ok": ok.raw_file.nunique(), "runs_failed": g[g.status == "failed"].raw_file.nunique(),
                       "system_kind": "+".join(sorted(set(g.system_kind.astype(str))))}
                if variant == "single":
                    for k, m in QUANT.items():
                        v = ok[ok.metric == m]["value"]
                        row[k] = v.mean() if len(v) else math.nan
                else:
                    v = ok[ok.metric == "throughput"]["value"]
                    if len(v):
                        q = v.quantile([0.0, 0.25, 0.5, 0.75, 1.0]).tolist()
                        row.update(whislo=q[0], q1=q[1], med=q[2], q3=q[3], whishi=q[4], mean=v.mean())
                rows.append(row)
    return pd.DataFrame(rows)


def main() -> int:
    a, cfg = cli.parse(__doc__, "measurements", "published", "table", "out")
    df = analysis.read_measurements(a.measurements)
    d = data(df)
    tidy.write_csv(d, a.table)
    plt, _sns = plotting.pyplot()
    fig, axes = plt.subplots(3, 2, figsize=(9, 8), squeeze=False, sharex=True)
    for i, platform in enumerate(layout.PLATFORMS):
        for j, variant in enumerate(("single", "parallel")):
            ax = axes[i][j]
            s = d[(d.platform == platform) & (d.variant == variant)].sort_values("size") if len(d) else d
            letter = "abcdef"[2 * i + j]
            if s.empty:
                ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes, color="#a33")
                ax.set_title(f"({letter}) {layout.LABELS[platform]}, {variant}", fontsize=8)
                continue
            good = s.dropna(subset=["med"]) if "med" in s else s.iloc[0:0]
            pos = [math.log2(x) for x in good["size"]]
            stats = [{"whislo": r.whislo, "q1": r.q1, "med": r.med, "q3": r.q3, "whishi": r.whishi,
                      "mean": r.mean, "fliers": []} for r in good.itertuples()]
            if stats:
                ax.bxp(stats, positions=pos, widths=0.6, showmeans=True, manage_ticks=False,
                       meanprops={"marker": ".", "markerfacecolor": "k", "markeredgecolor": "k"})
            for r in s[s["runs_ok"] == 0].itertuples():
                ax.axvline(math.log2(r.size), color="#a33", ls=":", lw=1)
                ax.text(math.log2(r.size), 0.95, "refused" if r.runs_failed else "not run", rotation=90,
                        transform=ax.get_xaxis_transform(), fontsize=7, color="#a33", va="top", ha="right")
            n = int(s["instances"].iloc[0])
            ax.set_title(f"({letter}) {layout.LABELS[platform]}, {variant}, {n} instance(s)", fontsize=8)
            ax.set_ylim(bottom=0)
            if j == 0:
                ax.set_ylabel("MiB/s")
            if i == 2:
                ax.set_xlabel("request size (log2 bytes)")
    fig.suptitle(f"Figure 3: byte reversal throughput vs request size ({analysis.kinds(df[df.workload == 'bytes'])})",
                 fontsize=9)
    fig.tight_layout()
    plotting.save(fig, a.out)
    print(f"serverless_figure3: wrote {a.out} and {a.table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
