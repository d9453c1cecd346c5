"""Every claim builder holds on paper-shaped data and fails on data that contradicts it."""

from __future__ import annotations

import pytest
import serverless_testlib as tl
from studies.serverless import claims as sc

MiB = 2**20


def _verdicts(data, builder) -> dict:
    cfg = tl.section()
    return {c.claim_id: c for c in builder(tl.tidy_df(data), tl.published(), cfg)}


def _set(data, key, **vals):
    d = dict(data)
    d[key] = vals
    return d


def _scale(data, pred, factor, metrics=None):
    d = {}
    for k, v in data.items():
        if pred(k) and isinstance(v, dict):
            v = {m: (x * factor if metrics is None or m in metrics else x) for m, x in v.items()}
        d[k] = v
    return d


def test_every_shape_claim_holds_on_paper_like_data():
    cl = sc.build(tl.tidy_df(tl.paper_like()), tl.published(), tl.section())
    shape = [c for c in cl if c.kind == "shape"]
    assert len(shape) >= 15
    bad = [(c.claim_id, c.verdict, c.reproduced) for c in shape if c.verdict != "reproduced"]
    assert not bad, bad
    assert all(c.system_kind.startswith("stand-in:") for c in cl if c.verdict != "not run"), \
        [(c.claim_id, c.system_kind) for c in cl]
    assert {c.kind for c in cl} == {"shape", "info"}


# (builder, claim id, how the data contradicts it)
CONTRADICTIONS = {
    "nuclio_not_1_5x": (sc.image_nuclio_vs_openfaas, "image_nuclio_1_5x_openfaas",
                        lambda d: _scale(d, lambda k: k[:3] == ("image", "processing", "nuclio-cpp"), 4.58 / 7.17)),
    "nuclio_3x": (sc.image_nuclio_vs_openfaas, "image_nuclio_1_5x_openfaas",
                  lambda d: _scale(d, lambda k: k[:3] == ("image", "processing", "nuclio-cpp"), 2.0)),
    "np_nuclio_ahead": (sc.np_openfaas_slight_edge, "image_np_openfaas_slight_edge",
                        lambda d: _scale(d, lambda k: k[:3] == ("image", "null-processing", "nuclio-cpp"), 1.2)),
    "np_flat": (sc.np_scales_proportionally, "image_np_proportional_openfaas",
                lambda d: {k: ({"images_per_s": 1.0, "throughput": 3.0} if k[:3] == ("image", "null-processing",
                                                                                      "openfaas") else v)
                           for k, v in d.items()}),
    "nuclio_doubles_8_16": (sc.nuclio_barely_changes_8_16, "image_nuclio_flat_8_to_16",
                            lambda d: _set(d, ("image", "processing", "nuclio-cpp", 16, None),
                                           images_per_s=13.6, throughput=40.8)),
    "above_baseline": (sc.image_below_baseline, "image_platforms_below_baseline",
                       lambda d: _set(d, ("image", "processing", "baseline", 16, None),
                                      images_per_s=5.0, throughput=15.0)),
    "openfaas_fastest_single": (sc.bytes_single_order, "bytes_single_nuclio_go_fastest",
                                lambda d: _scale(d, lambda k: k[:3] == ("bytes", "single", "openfaas"), 3.0)),
    "parallel_no_gain": (sc.bytes_parallel, "bytes_parallel_nuclio_above_openfaas",
                         lambda d: _scale(d, lambda k: k[:3] == ("bytes", "parallel", "openfaas"), 1.6)),
    "parallel_go_twice": (sc.bytes_parallel, "bytes_parallel_nuclio_go_equals_nuclio",
                          lambda d: _scale(d, lambda k: k[:3] == ("bytes", "parallel", "nuclio-go"), 2.0)),
    "go_accepts_4MiB": (sc.nuclio_go_refuses_above_limit, "bytes_nuclio_go_fails_above_2MiB",
                        lambda d: {k: ({"throughput": 30.0, "single_mean": 30.0, "single_gmean": 29.0,
                                        "single_hmean": 28.0} if k[2] == "nuclio-go" and k[4] == 4 * MiB else v)
                                   for k, v in d.items()}),
    "go_fails_1KiB": (sc.nuclio_go_refuses_above_limit, "bytes_nuclio_go_fails_above_2MiB",
                      lambda d: {k: ("failed: HTTP 500: crashed" if k[2] == "nuclio-go" and k[4] == 1024 else v)
                                 for k, v in d.items()}),
    "go_fails_other_way": (sc.nuclio_go_refuses_above_limit, "bytes_nuclio_go_fails_above_2MiB",
                           lambda d: {k: ("failed: DirectorError: timeout" if k[2] == "nuclio-go" and k[4] == 4 * MiB
                                          else v) for k, v in d.items()}),
    "peak_small": (sc.single_peak_at_largest_size, "bytes_single_peak_at_largest_openfaas",
                   lambda d: _scale(d, lambda k: k[:3] == ("bytes", "single", "openfaas") and k[4] == 1024, 20.0)),
    "outliers": (sc.means_within_90, "bytes_single_means_within_90_nuclio-go",
                 lambda d: _scale(d, lambda k: k[:3] == ("bytes", "single", "nuclio-go"), 0.5,
                                  metrics={"single_hmean"})),
    "above_ceiling": (sc.below_limits, "bytes_far_below_path_limit",
                      lambda d: {k: ({"throughput": 10.0} if k[0] == "limit" and k[1] == "echo" else v)
                                 for k, v in d.items()}),
    "above_iperf": (sc.below_limits, "bytes_far_below_path_limit",
                    lambda d: _set(d, ("limit", "iperf3", None, None, None), throughput=20.0)),
}


@pytest.mark.parametrize("name", sorted(CONTRADICTIONS))
def test_claim_fails_on_contradicting_data(name):
    builder, cid, change = CONTRADICTIONS[name]
    assert _verdicts(tl.paper_like(), builder)[cid].verdict == "reproduced"
    c = _verdicts(change(tl.paper_like()), builder)[cid]
    assert c.verdict == "not reproduced", (c.reproduced, c.published)


def test_missing_data_is_not_run_never_a_pass():
    empty = tl.tidy_df({})
    for c in sc.build(empty.reindex(columns=["study", "experiment", "workload", "variant", "platform", "instances",
                                             "size", "rep", "metric", "value", "unit", "status", "failure",
                                             "system_kind", "raw_file"]), tl.published(), tl.section()):
        assert c.verdict == "not run", (c.claim_id, c.verdict)
