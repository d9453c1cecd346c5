"""Each claim builder on data that agrees with the paper (reproduced) and on data that contradicts
it (not reproduced); missing stacks give 'not run'; a stand-in's label reaches the claim."""

from __future__ import annotations

import pandas as pd
import pytest

from studies.storage import claims as sc
from studies.storage.analysis import size_bytes

LM_KIND = "stand-in:minio-on-posix-dir (for Lustre+MinIO)"


def cos(values: dict) -> pd.DataFrame:
    """means rows from {(stack, size, workers): (throughput, avg_res_time)}."""
    rows = []
    for (stack, size, w), (tp, rt) in values.items():
        kind = LM_KIND if stack == "lustre-minio" else "real"
        for metric, v, unit in (("throughput", tp, "op/s"), ("avg_res_time", rt, "ms")):
            rows.append({"stack": stack, "size": size, "workers": w, "metric": metric, "unit": unit,
                         "system_kind": kind, "mean": v, "std": 0.0, "n": 2, "size_bytes": size_bytes(size)})
    return pd.DataFrame(rows)


def paper_like() -> pd.DataFrame:
    v = {}
    for size, f in (("4KB", 1.0), ("1MB", 0.5)):
        for w in (1, 4):
            v[("lustre-minio", size, w)] = (500 * f * w, 2 / f)
            v[("ceph", size, w)] = (300 * f * w, 4 / f)
            v[("juicefs", size, w)] = (200 * f * w, 6 / f)
    return cos(v)


def swap(df, a, b):
    d = df.copy()
    d["stack"] = d["stack"].map({a: b, b: a}).fillna(d["stack"])
    return d


@pytest.mark.parametrize("metric", ["throughput", "avg_res_time"])
def test_leader(metric):
    assert sc.leads(paper_like(), metric, "x").verdict == "reproduced"
    c = sc.leads(swap(paper_like(), "lustre-minio", "ceph"), metric, "x")
    assert c.verdict == "not reproduced"
    assert c.system_kind == "real" or "stand-in" in c.system_kind
    assert sc.leads(paper_like()[lambda d: d["stack"] != "ceph"][lambda d: d["stack"] != "juicefs"], metric,
                    "x").verdict == "not run"


def test_leader_claim_names_the_stand_in():
    c = sc.leads(paper_like(), "throughput", "x")
    assert c.system_kind == LM_KIND and "stand-in" in c.claim


def test_advantage_over_ceph():
    assert sc.advantage_over_ceph(paper_like(), "20").verdict == "reproduced"
    close = paper_like()
    close.loc[(close["stack"] == "ceph") & (close.metric == "throughput"), "mean"] *= 1.5  # only 1.11x behind
    assert sc.advantage_over_ceph(close, "20").verdict == "not reproduced"


def test_juicefs_vs_ceph():
    assert sc.juicefs_slower_than_ceph(paper_like(), "longer").verdict == "reproduced"
    assert sc.juicefs_slower_than_ceph(swap(paper_like(), "juicefs", "ceph"), "longer").verdict == "not reproduced"


def test_ceph_response_time_rises_with_size():
    assert sc.ceph_response_time_rises_with_size(paper_like(), "rises").verdict == "reproduced"
    d = paper_like()
    d.loc[(d["stack"] == "ceph") & (d.metric == "avg_res_time") & (d["size"] == "1MB"), "mean"] = 0.1
    assert sc.ceph_response_time_rises_with_size(d, "rises").verdict == "not reproduced"


def test_peak_throughput_is_information_only():
    c = sc.peak_throughput(paper_like(), "488.1-510.32")
    assert c.verdict == "informative" and c.reproduced == 2000 and c.published == "488.1-510.32"
    assert sc.peak_throughput(paper_like()[lambda d: d["stack"] != "lustre-minio"], "488").verdict == "not run"


def md(rates: dict) -> pd.DataFrame:
    rows = [{"stack": s, "workers": 2, "op": op, "metric": "rate", "unit": "op/s",
             "system_kind": "stand-in:posix-dir (for Lustre)" if s == "lustre-minio" else "real",
             "mean": v, "std": 0.0, "n": 2} for (s, op), v in rates.items()]
    return pd.DataFrame(rows)


def md_like(lustre=1.4):
    return md({(s, op): (1000 * (lustre if s == "lustre-minio" else 1)) for s in ("lustre-minio", "ceph", "juicefs")
               for op in ("create", "stat", "open", "remove")})


def test_mdtest_lustre_leads_and_30pct():
    assert sc.mdtest_lustre_leads(md_like(), "outperforms").verdict == "reproduced"
    assert sc.mdtest_lustre_30pct(md_like(), "30").verdict == "reproduced"
    c = sc.mdtest_lustre_30pct(md_like(), "30")
    assert "stand-in" in c.system_kind and "stand-in" in c.claim
    assert sc.mdtest_lustre_leads(md_like(0.9), "outperforms").verdict == "not reproduced"
    assert sc.mdtest_lustre_30pct(md_like(1.1), "30").verdict == "not reproduced"
    assert sc.mdtest_lustre_30pct(md_like()[lambda d: d["stack"] == "ceph"], "30").verdict == "not run"


def test_below_limits():
    ok = pd.DataFrame({"system_kind": ["real", "real"], "fraction": [0.2, 0.9]})
    assert sc.below_limits(ok).verdict == "reproduced"
    assert sc.below_limits(ok.assign(fraction=[0.2, 1.3])).verdict == "not reproduced"
    assert sc.below_limits(ok.assign(fraction=[None, None])).verdict == "not run"
