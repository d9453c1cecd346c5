"""Each claim builder on data that agrees with the paper (reproduced) and on data that contradicts
it (not reproduced); bands fail on both sides; missing stacks give 'not run'; a local stand-in for
Lustre makes a Lustre comparison informative (it decides it by construction) and its label reaches
the claim."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from repro import claims as rc

from studies.storage import claims as sc
from studies.storage.analysis import size_bytes
from .storage_testlib import section

L = rc.at_scale(section(), "local")            # the tolerances judged at each scale (schema.yaml storage.claims)
CL = rc.at_scale(section(local=False), "cluster")

LM_STANDIN = "stand-in:minio-on-posix-dir (for Lustre+MinIO)"
MD_STANDIN = "stand-in:posix-dir (for Lustre)"
SIZES = ("4KB", "64KB", "1MB", "16MB", "64MB")
WORKERS = (1, 4, 16)


def cos(values: dict, lm_kind: str = "real") -> pd.DataFrame:
    """means rows from {(stack, size, workers): (throughput op/s, avg_res_time ms)}; bandwidth = op/s x size."""
    rows = []
    for (stack, size, w), (tp, rt) in values.items():
        kind = lm_kind if stack == "lustre-minio" else "real"
        for metric, v, unit in (("throughput", tp, "op/s"), ("avg_res_time", rt, "ms"),
                                ("bandwidth", tp * size_bytes(size), "B/s")):
            rows.append({"stack": stack, "size": size, "workers": w, "metric": metric, "unit": unit,
                         "system_kind": kind, "mean": v, "std": 0.0, "n": 2, "size_bytes": size_bytes(size)})
    return pd.DataFrame(rows)


def paper_like(lm_kind: str = "real", sizes=SIZES, workers=WORKERS) -> pd.DataFrame:
    """What the paper says: Lustre+MinIO ~1.3x Ceph in both metrics, its response time flat in workers;
    Ceph's bandwidth rising with size and workers, its response time with size; JuiceFS's response
    time rising with size and workers and longer than Ceph's; throughput rising with workers."""
    v = {}
    for size in sizes:
        mb = size_bytes(size) / 1e6
        for w in workers:
            ceph_rt = 2.6 * (1 + mb)
            v[("ceph", size, w)] = (300 * w / (1 + mb), ceph_rt)
            v[("lustre-minio", size, w)] = (1.3 * 300 * w / (1 + mb), ceph_rt / 1.3)
            v[("juicefs", size, w)] = (200 * w / (1 + mb), 4 * (1 + mb) * (1 + 0.1 * w))
    return cos(v, lm_kind)


def scale(df, stack, metric, f, **where):
    d = df.copy()
    m = (d["stack"] == stack) & (d["metric"] == metric)
    for k, val in where.items():
        m &= d[k] == val
    d.loc[m, "mean"] = f(d.loc[m]) if callable(f) else d.loc[m, "mean"] * f
    return d


def swap(df, a, b):
    d = df.copy()
    d["stack"] = d["stack"].map({a: b, b: a}).fillna(d["stack"])
    return d


R, NR, NOT_RUN, INFO = rc.REPRODUCED, rc.NOT_REPRODUCED, rc.NOT_RUN, rc.INFO


@pytest.mark.parametrize("metric", ["throughput", "avg_res_time"])
def test_leader(metric):
    assert sc.leads(paper_like(), metric, "x", L).verdict == R
    assert sc.leads(swap(paper_like(), "lustre-minio", "ceph"), metric, "x", L).verdict == NR
    assert sc.leads(paper_like()[lambda d: d["stack"] == "lustre-minio"], metric, "x", L).verdict == NOT_RUN


def test_a_lustre_stand_in_makes_lustre_comparisons_informative():
    c = sc.leads(paper_like(LM_STANDIN), "throughput", "x", L)
    assert c.system_kind == LM_STANDIN and "stand-in" in c.claim and c.verdict == INFO and "held" in c.note
    c = sc.leads(swap(paper_like(LM_STANDIN), "lustre-minio", "ceph"), "throughput", "x", L)
    assert c.verdict == INFO and "did not hold" in c.note
    assert sc.advantage_over_ceph(paper_like(LM_STANDIN), "20", L).verdict == INFO
    assert sc.mdtest_lustre_30pct(md_like(1.3, kind=MD_STANDIN), "30", L).verdict == INFO
    # a stack measured for real keeps its verdict
    assert sc.ceph_response_time_rises_with_size(paper_like(LM_STANDIN), "rises", L).verdict == R


def test_lm_response_time_changes_insignificantly_with_workload():
    assert sc.lm_response_time_flat(paper_like(), "changes insignificantly", L).verdict == R
    steep = scale(paper_like(), "lustre-minio", "avg_res_time", lambda d: d["mean"] * d["workers"] / 2)
    c = sc.lm_response_time_flat(steep, "changes insignificantly", L)
    assert c.verdict == NR and "x16.00" in c.reproduced  # 16 workers vs 1: 16 times the response time
    one_w = paper_like(workers=(4,))
    assert sc.lm_response_time_flat(one_w, "x", L).verdict == NOT_RUN


def test_advantage_over_ceph_is_a_band_around_over_20_percent():
    assert sc.advantage_over_ceph(paper_like(), "20", L).verdict == R  # x1.30 in both
    close = scale(paper_like(), "ceph", "throughput", 1.2)  # only 1.08x behind
    assert sc.advantage_over_ceph(close, "20", L).verdict == NR
    far = scale(scale(paper_like(), "ceph", "throughput", 0.25), "ceph", "avg_res_time", 4)  # x5.2: not "over 20 %"
    c = sc.advantage_over_ceph(far, "20", L)
    assert c.verdict == NR and "[1.2, 1.5]" in c.published


def test_juicefs_vs_ceph():
    assert sc.juicefs_slower_than_ceph(paper_like(), "longer", L).verdict == R
    assert sc.juicefs_slower_than_ceph(swap(paper_like(), "juicefs", "ceph"), "longer", L).verdict == NR


def test_ceph_response_time_rises_over_the_whole_size_sweep():
    assert sc.ceph_response_time_rises_with_size(paper_like(), "rises", L).verdict == R
    # the end points still rise, but the sweep in between falls: not "rises with size"
    zig = scale(paper_like(), "ceph", "avg_res_time",
                lambda d: d["size"].map({"4KB": 5.0, "64KB": 4.0, "1MB": 3.0, "16MB": 2.0, "64MB": 6.0}))
    c = sc.ceph_response_time_rises_with_size(zig, "rises", L)
    assert c.verdict == NR and "rho" in c.reproduced
    assert sc.ceph_response_time_rises_with_size(paper_like(sizes=("1MB",)), "rises", L).verdict == NOT_RUN


def test_ceph_throughput_rises_with_size_and_workers():
    assert sc.ceph_throughput_rises(paper_like(), "rises", L).verdict == R
    flat_w = scale(paper_like(), "ceph", "bandwidth", lambda d: d["mean"] / d["workers"] ** 1.5)  # falls with workers
    assert sc.ceph_throughput_rises(flat_w, "rises", L).verdict == NR
    falls_size = scale(paper_like(), "ceph", "bandwidth", lambda d: 1e9 / d["size_bytes"] * d["workers"])
    assert sc.ceph_throughput_rises(falls_size, "rises", L).verdict == NR


def test_juicefs_response_time_rises_with_size_and_workers():
    assert sc.juicefs_response_time_rises(paper_like(), "rises", L).verdict == R
    flat_w = scale(paper_like(), "juicefs", "avg_res_time", lambda d: 10 * (1 + d["size_bytes"] / 1e6) / d["workers"])
    assert sc.juicefs_response_time_rises(flat_w, "rises", L).verdict == NR


def test_correlation_for_larger_chunk_sizes():
    assert sc.large_chunk_correlation(paper_like(), "correlation", L).verdict == R
    noisy = scale(paper_like(), "ceph", "throughput", lambda d: d["workers"].map({1: 5.0, 4: 1.0, 16: 5.0}))
    noisy = scale(noisy, "juicefs", "throughput", lambda d: d["workers"].map({1: 5.0, 4: 1.0, 16: 5.0}))
    noisy = scale(noisy, "lustre-minio", "throughput", lambda d: d["workers"].map({1: 5.0, 4: 1.0, 16: 5.0}))
    assert sc.large_chunk_correlation(noisy, "correlation", L).verdict == NR
    c = sc.large_chunk_correlation(paper_like(sizes=("4KB", "1MB")), "correlation", L)
    assert c.verdict == NOT_RUN and "5 MB" in c.reproduced  # the local sizes stop at 1 MB


def test_multipart_anomaly_is_informative_with_its_reason():
    c = sc.multipart_anomaly(paper_like(sizes=("4KB", "1MB")), "4KB and 4MB", L)
    assert c.verdict == INFO and "multipart" in c.note and "4KB" in c.reproduced


def test_peak_throughput_is_information_only():
    c = sc.peak_throughput(paper_like(), "488.1-510.32", L)
    assert c.verdict == INFO and c.published == "488.1-510.32" and c.reproduced == pytest.approx(390 * 16 / 1.004)
    assert sc.peak_throughput(paper_like()[lambda d: d["stack"] != "lustre-minio"], "488", L).verdict == NOT_RUN


def md(rates: dict, kind: str = "real") -> pd.DataFrame:
    """mdtest means from {(stack, op, tasks): rate}."""
    rows = [{"stack": s, "workers": t, "op": op, "metric": "rate", "unit": "op/s",
             "system_kind": kind if s == "lustre-minio" else "real", "mean": v, "std": 0.0, "n": 2}
            for (s, op, t), v in rates.items()]
    return pd.DataFrame(rows)


OPS = ("create", "stat", "open", "remove", "dir_create", "dir_stat", "dir_rename", "dir_remove")


def md_like(lustre=1.3, grow=1.0, kind="real", tasks=(1, 4, 16)):
    """Lustre `lustre` x the others at the fewest tasks, times grow**i at the i-th task count."""
    return md({(s, op, t): 1000 * ((lustre * grow ** i) if s == "lustre-minio" else 1)
               for s in ("lustre-minio", "ceph", "juicefs") for op in OPS for i, t in enumerate(tasks)}, kind)


def test_mdtest_lustre_leads():
    assert sc.mdtest_lustre_leads(md_like(), "outperforms", L).verdict == R
    d = md_like()
    d.loc[(d["stack"] == "ceph") & (d["op"] == "dir_rename"), "mean"] = 5000  # one phase lost: rename
    c = sc.mdtest_lustre_leads(d, "outperforms", L)
    assert c.verdict == NR and "dir_rename" in c.reproduced
    assert sc.mdtest_lustre_leads(md_like()[lambda d: d["stack"] == "ceph"], "x", L).verdict == NOT_RUN


def test_mdtest_30_percent_is_a_band_around_1_3():
    assert sc.mdtest_lustre_30pct(md_like(1.3), "30", L).verdict == R
    assert sc.mdtest_lustre_30pct(md_like(1.05), "30", L).verdict == NR   # 5 %: below
    c = sc.mdtest_lustre_30pct(md_like(14.6), "30", L)                     # x14.6 (a local disk): far above
    assert c.verdict == NR and "1.30" in c.published
    assert sc.mdtest_lustre_30pct(md_like()[lambda d: d["stack"] == "ceph"], "30", L).verdict == NOT_RUN


def test_mdtest_advantage_grows_with_the_task_count():
    assert sc.mdtest_advantage_grows(md_like(1.2, grow=1.1), "grows", L).verdict == R
    assert sc.mdtest_advantage_grows(md_like(1.3, grow=1.0), "grows", L).verdict == NR      # constant
    assert sc.mdtest_advantage_grows(md_like(1.6, grow=0.85), "grows", L).verdict == NR     # shrinks
    c = sc.mdtest_advantage_grows(md_like(tasks=(2,)), "grows", L)
    assert c.verdict == NOT_RUN and "one task count" in c.reproduced


def test_advantage_grows_at_cluster_scale_needs_much_more_than_10_percent():
    """Issue 28: +10 % from 1 to 16 tasks passed "much more noticeable with higher workloads"; at
    cluster scale the ratio must grow by the paper's whole average advantage (x1.3), locally 1.1
    still records the direction (Lustre is a stand-in there, the claim informative)."""
    small = md_like(1.2, grow=1.05)        # x1.10 from 1 to 16 tasks
    assert sc.mdtest_advantage_grows(small, "grows", L).verdict == R
    c = sc.mdtest_advantage_grows(small, "grows", CL)
    assert c.verdict == NR and "x1.10" in c.reproduced and ">= 1.3" in c.published
    assert c.scale == "cluster" and "much more" in c.tolerance_why
    big = md_like(1.1, grow=1.15)          # x1.32: 1.10 -> 1.27 -> 1.45
    assert sc.mdtest_advantage_grows(big, "grows", CL).verdict == R
    assert sc.mdtest_advantage_grows(md_like(1.6, grow=0.85), "grows", CL).verdict == NR


def test_mdtest_30_percent_at_cluster_scale_is_the_papers_rounding():
    assert sc.mdtest_lustre_30pct(md_like(1.3), "30", CL).verdict == R
    c = sc.mdtest_lustre_30pct(md_like(1.2), "30", CL)   # passes locally (1.15-1.45), not at cluster (1.25-1.35)
    assert sc.mdtest_lustre_30pct(md_like(1.2), "30", L).verdict == R
    assert c.verdict == NR and c.scale == "cluster" and "tens" in c.tolerance_why
    assert sc.mdtest_lustre_30pct(md_like(1.4), "30", CL).verdict == NR


@pytest.mark.parametrize("builder, data, bad", [
    (lambda d, cfg: sc.leads(d, "throughput", "x", cfg), paper_like,
     lambda: swap(paper_like(), "lustre-minio", "ceph")),
    (lambda d, cfg: sc.advantage_over_ceph(d, "20", cfg), paper_like,
     lambda: scale(paper_like(), "ceph", "throughput", 1.2)),
    (lambda d, cfg: sc.lm_response_time_flat(d, "x", cfg), paper_like,
     lambda: scale(paper_like(), "lustre-minio", "avg_res_time", lambda d: d["mean"] * d["workers"] / 2)),
    (lambda d, cfg: sc.juicefs_slower_than_ceph(d, "x", cfg), paper_like,
     lambda: swap(paper_like(), "juicefs", "ceph")),
    (lambda d, cfg: sc.ceph_throughput_rises(d, "x", cfg), paper_like,
     lambda: scale(paper_like(), "ceph", "bandwidth", lambda d: d["mean"] / d["workers"] ** 1.5)),
    (lambda d, cfg: sc.mdtest_lustre_leads(d, "x", cfg), md_like, lambda: md_like(0.9)),
])
def test_each_converted_claim_holds_and_fails_at_cluster_scale(builder, data, bad):
    ok = builder(data(), CL)
    assert ok.verdict == R and ok.scale == "cluster" and ok.tolerance_why
    assert builder(bad(), CL).verdict == NR


def test_below_limits():
    ok = pd.DataFrame({"system_kind": ["real", "real"], "fraction": [0.2, 0.9]})
    assert sc.below_limits(ok).verdict == R
    assert sc.below_limits(ok.assign(fraction=[0.2, 1.3])).verdict == NR
    assert sc.below_limits(ok.assign(fraction=[None, None])).verdict == NOT_RUN


def test_build_names_why_lustre_was_not_run():
    df = pd.DataFrame([{"stack": "lustre-minio", "benchmark": b, "size": "3901B", "workers": 4, "op": "",
                        "unit": "", "system_kind": "real", "status": "not-run", "metric": "", "value": float("nan"),
                        "failure": "not run: storage.paths.lustre_dir is null on the cluster"}
                       for b in ("mdtest", "cosbench")])
    from repro import published

    pub = published.load(Path(sc.__file__).with_name("published.csv"))
    cl = {c.claim_id: c for c in sc.build(df, pd.DataFrame({"fraction": []}), pub, L)}
    assert cl["mdtest_lustre_30pct"].verdict == NOT_RUN and "lustre_dir" in cl["mdtest_lustre_30pct"].note
    assert len(cl) == 15 and all(c.verdict in rc.VERDICTS for c in cl.values())
