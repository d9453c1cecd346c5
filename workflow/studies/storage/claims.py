"""The storage study's claims (paper 002, Sec. 4.2 and 6), as shapes: who leads, which way a trend
goes, a ratio band; the published peak throughput side by side as information (hardware differs).
Where MinIO on a POSIX directory stands in for Lustre+MinIO (and a POSIX directory for Lustre), the
claim's system_kind and text say so.

    python3 -m studies.storage.claims --config CFG --measurements M --limits L --published P --out C

Every builder takes the means of the tidy table (analysis.cosbench_means / mdtest_means) and
returns one Claim; the tests feed each builder data that contradicts it and see it fail.
"""

from __future__ import annotations

import pandas as pd
from repro import claims as rc
from repro import published

from studies.storage import analysis

LM, CEPH, JFS = "lustre-minio", "ceph", "juicefs"
OUT = {"fig4": "results/storage/figures/figure4.png", "fig5": "results/storage/figures/figure5.png",
       "table5": "results/storage/tables/table5.csv", "limits": "results/storage/tables/limits.csv"}


def _base(cid: str, text: str, ref: str, target: str, output: str, kind: str, unit: str = "", note: str = ""):
    if kind.startswith("stand-in"):
        text += f" -- measured on the stand-in ({kind})"
    return rc.Claim(study="storage", claim_id=cid, claim=text, paper_ref=ref, target=target, output=output,
                    unit=unit, system_kind=kind or "real", note=note)


def _common(means: pd.DataFrame, metric: str, stacks: list[str]) -> pd.DataFrame:
    """Configurations (size, workers) measured for every one of `stacks`, one column per stack."""
    p = analysis.pivot(means, metric)
    if p.empty or any(s not in p.columns for s in stacks):
        return pd.DataFrame()
    return p[stacks].dropna()


def leads(means: pd.DataFrame, metric: str, pub: str) -> rc.Claim:
    """Lustre+MinIO leads: best (highest throughput / lowest response time) in most configurations
    measured for all stacks, and best on its overall mean."""
    higher = metric == "throughput"
    others = sorted(s for s in means["stack"].unique() if s != LM)
    what = "throughput" if higher else "average response time"
    base = _base(f"cosbench_{metric}_leader", f"Lustre+MinIO leads {what} among the stacks (COSBench)",
                 "002 Sec. 4.2.1, Figs. 4-5", "storage_figure", OUT["fig5" if higher else "fig4"],
                 analysis.kind_of(means, LM, *others))
    p = _common(means, metric, [LM, *others])
    if p.empty or not others:
        return rc.shape_claim(base, None, "not measured for every stack", pub)
    best = p.idxmax(axis=1) if higher else p.idxmin(axis=1)
    share = float((best == LM).mean())
    overall = p.mean()
    top = overall.idxmax() if higher else overall.idxmin()
    observed = (f"Lustre+MinIO best in {share:.0%} of {len(p)} configurations; mean "
                + ", ".join(f"{analysis.label(s)} {overall[s]:.3g}" for s in p.columns))
    return rc.shape_claim(base, bool(share > 0.5 and top == LM), observed, pub)


def advantage_over_ceph(means: pd.DataFrame, pub: str) -> rc.Claim:
    """Over 20 % better average response time and throughput than Ceph (means of per-configuration ratios)."""
    base = _base("cosbench_advantage_over_ceph",
                 "Lustre+MinIO over 20 % better than Ceph in average response time and throughput",
                 "002 Sec. 6", "storage_figure", OUT["fig5"], analysis.kind_of(means, LM, CEPH), unit="ratio")
    t = _common(means, "throughput", [LM, CEPH])
    r = _common(means, "avg_res_time", [LM, CEPH])
    if t.empty or r.empty:
        return rc.shape_claim(base, None, "not measured for both stacks", f"> 1.2 ({pub} %)")
    tp = float((t[LM] / t[CEPH]).mean())
    rt = float((r[CEPH] / r[LM]).mean())
    return rc.shape_claim(base, tp > 1.2 and rt > 1.2,
                          f"throughput x{tp:.2f}, response time x{rt:.2f} better ({len(t)} configurations)",
                          f"both > 1.2 (over {pub} %)")


def peak_throughput(means: pd.DataFrame, pub: str) -> rc.Claim:
    base = _base("cosbench_peak_throughput", "Highest COSBench throughput of Lustre+MinIO",
                 "002 Sec. 4.2.1", "storage_figure", OUT["fig5"], analysis.kind_of(means, LM), unit="op/s",
                 note="CloudLab c220g2 nodes in the paper; this hardware differs: no verdict")
    t = means[(means["stack"] == LM) & (means["metric"] == "throughput")]
    return rc.info_claim(base, float(t["mean"].max()) if len(t) else None, pub)


def juicefs_slower_than_ceph(means: pd.DataFrame, pub: str) -> rc.Claim:
    base = _base("cosbench_juicefs_vs_ceph", "JuiceFS generally has a longer average response time than Ceph",
                 "002 Sec. 4.2.1, Fig. 4", "storage_figure", OUT["fig4"], analysis.kind_of(means, JFS, CEPH))
    r = _common(means, "avg_res_time", [JFS, CEPH])
    if r.empty:
        return rc.shape_claim(base, None, "not measured for both stacks", pub)
    share = float((r[JFS] > r[CEPH]).mean())
    return rc.shape_claim(base, share > 0.5, f"JuiceFS longer in {share:.0%} of {len(r)} configurations",
                          f"{pub} in most configurations")


def ceph_response_time_rises_with_size(means: pd.DataFrame, pub: str) -> rc.Claim:
    base = _base("cosbench_ceph_rt_vs_size", "Ceph's average response time rises with the object size",
                 "002 Sec. 4.2.1, Fig. 4", "storage_figure", OUT["fig4"], analysis.kind_of(means, CEPH))
    d = means[(means["stack"] == CEPH) & (means["metric"] == "avg_res_time")]
    if d["size_bytes"].nunique() < 2:
        return rc.shape_claim(base, None, "fewer than two sizes measured", pub)
    per_w = []
    for w, g in d.groupby("workers"):
        g = g.sort_values("size_bytes")
        per_w.append((w, g["mean"].iloc[0], g["mean"].iloc[-1]))
    rises = sum(last > first for _, first, last in per_w)
    obs = "; ".join(f"{w} workers {first:.3g} -> {last:.3g} ms" for w, first, last in per_w)
    return rc.shape_claim(base, rises > len(per_w) / 2, f"smallest -> largest size: {obs}", pub)


def mdtest_lustre_leads(md: pd.DataFrame, pub: str) -> rc.Claim:
    base = _base("mdtest_lustre_leads", "Lustre outperforms the others on every major metadata operation (create, stat, read, "
                 "remove of files and of directories, as measured)",
                 "002 Sec. 4.2.2, Fig. 6", "storage_table", OUT["table5"], analysis.kind_of(md, LM))
    ratios = _md_ratios(md)
    if ratios is None:
        return rc.shape_claim(base, None, "not measured for every stack", pub)
    worst = ratios.min()
    return rc.shape_claim(base, bool(worst > 1), f"smallest Lustre/other rate ratio {worst:.2f} "
                          f"({ratios.idxmin()[1]} vs {analysis.label(ratios.idxmin()[0])})", pub)


def mdtest_lustre_30pct(md: pd.DataFrame, pub: str) -> rc.Claim:
    base = _base("mdtest_lustre_30pct", "Lustre about 30 % faster on average across the major metadata operations",
                 "002 Sec. 6", "storage_table", OUT["table5"], analysis.kind_of(md, LM), unit="ratio")
    ratios = _md_ratios(md)
    if ratios is None:
        return rc.shape_claim(base, None, "not measured for every stack", f">= 1.{pub}")
    mean = float(ratios.mean())
    return rc.shape_claim(base, mean >= 1 + float(pub) / 100,
                          f"mean Lustre/other rate ratio {mean:.2f} over {len(ratios)} (stack, op) pairs",
                          f">= {1 + float(pub) / 100:.2f} (about {pub} % faster)")


def _md_ratios(md: pd.DataFrame) -> pd.Series | None:
    d = md[(md["metric"] == "rate") & md["op"].isin(analysis.MAJOR_OPS)]
    p = d.pivot_table(index="op", columns="stack", values="mean")
    others = [s for s in p.columns if s != LM]
    if LM not in p.columns or not others:
        return None
    s = pd.Series({(o, op): p.loc[op, LM] / p.loc[op, o] for o in others for op in p.index
                   if pd.notna(p.loc[op, LM]) and pd.notna(p.loc[op, o])})
    return s if len(s) else None


def below_limits(limits: pd.DataFrame) -> rc.Claim:
    base = _base("limits_fraction", "Every stack stays below its limits (fio on its path, the driver's ceiling)",
                 "CONVENTIONS (limits measured in the same run)", "storage_aggregate", OUT["limits"],
                 "; ".join(sorted({k for k in limits.get("system_kind", []) if str(k).startswith("stand-in")}))
                 or "real", unit="fraction")
    f = pd.to_numeric(limits.get("fraction", pd.Series(dtype=float)), errors="coerce").dropna()
    if f.empty:
        return rc.shape_claim(base, None, "no limit measured", "every fraction <= 1")
    return rc.shape_claim(base, bool(f.max() <= 1.0), f"largest fraction {f.max():.3f} of {len(f)}",
                          "every fraction <= 1 (above 1 is a measurement error)")


def build(df: pd.DataFrame, limits: pd.DataFrame, pub: pd.DataFrame) -> list[rc.Claim]:
    means, md = analysis.cosbench_means(df), analysis.mdtest_means(df)

    def val(pid):
        row = published.lookup(pub, id=pid)
        return row["value"] if row is not None else ""

    return [
        leads(means, "throughput", val("peak_throughput") and "highest throughput"),
        leads(means, "avg_res_time", val("best_response_time") + " average response time"),
        advantage_over_ceph(means, val("cosbench_advantage")),
        peak_throughput(means, val("peak_throughput")),
        juicefs_slower_than_ceph(means, val("juicefs_vs_ceph")),
        ceph_response_time_rises_with_size(means, val("ceph_vs_size")),
        mdtest_lustre_leads(md, val("mdtest_lustre_leads")),
        mdtest_lustre_30pct(md, val("mdtest_advantage")),
        below_limits(limits),
    ]


def main(argv=None) -> int:
    return rc.main(__doc__, "storage", lambda a, cfg: build(analysis.load(a.measurements), pd.read_csv(a.limits),
                                                           published.load(a.published)),
                   paths=("measurements", "limits", "published", "out"), argv=argv)


if __name__ == "__main__":
    raise SystemExit(main())
