"""Every claim builder holds on paper-shaped data and fails on data that contradicts it."""

from __future__ import annotations

import copy

import pytest
import serverless_testlib as tl
from repro import claims
from studies.serverless import claims as sc

MiB = 2**20
# claims whose outcome a local stand-in imposes by construction: informative on stand-in rows
IMPOSED = {"bytes_nuclio_go_fails_above_2MiB"}


def _verdicts(data, claim, real: bool = False, scale: str | None = None) -> dict:
    """The claims of one claim function (every item of a per-platform one), by id; ``scale``: judged
    at that scale (claims.at_scale) instead of the local section's."""
    cfg, df, pub = tl.section(), tl.tidy_df(data, real=real), tl.published()
    if scale:
        cfg = claims.at_scale(cfg, scale)
    return {c.claim_id: c for b in sc.builders_of(claim) for c in sc.evaluate(b, df, pub, cfg)}


def _img(variant, platform, n, rate):
    """The data with one image configuration's rate set (MiB/s: 3 MiB images)."""
    return lambda d: _set(d, ("image", variant, platform, n, None), images_per_s=rate, throughput=3 * rate)


def _set(data, key, **vals):
    d = dict(data)
    d[key] = vals
    return d


def _scale(pred, factor, metrics=None):
    """The change: every metric (or only ``metrics``) of the configurations ``pred`` picks times ``factor``."""
    def change(data):
        d = {}
        for k, v in data.items():
            if pred(k) and isinstance(v, dict):
                v = {m: (x * factor if metrics is None or m in metrics else x) for m, x in v.items()}
            d[k] = v
        return d
    return change


def _replace(pred, new, ok_only=False):
    """The data with every configuration whose key ``pred`` picks (``ok_only``: and that ran) replaced
    by ``new``: metric values or "failed: why", or a function of the key and the old value giving them."""
    def change(data):
        return {k: ((new(k, v) if callable(new) else copy.deepcopy(new))
                    if pred(k) and (isinstance(v, dict) or not ok_only) else v) for k, v in data.items()}
    return change


def _drop(data, pred):
    return {k: v for k, v in data.items() if not pred(k)}


def test_every_shape_claim_holds_on_paper_like_data():
    cl = sc.build(tl.tidy_df(tl.paper_like()), tl.published(), tl.section())
    shape = [c for c in cl if c.kind == "shape"]
    assert len(shape) >= 35
    bad = [(c.claim_id, c.verdict, c.reproduced) for c in shape
           if c.verdict != ("informative" if c.claim_id in IMPOSED else "reproduced")]
    assert not bad, bad
    assert all(c.system_kind.startswith("stand-in:") for c in cl if c.verdict != "not run"), \
        [(c.claim_id, c.system_kind) for c in cl]
    assert {c.kind for c in cl} == {"shape", "info"}
    # on the cluster (real rows) the same data gives every shape claim a verdict, the imposed ones too
    real = sc.build(tl.tidy_df(tl.paper_like(), real=True), tl.published(), tl.section())
    assert all(c.verdict == "reproduced" for c in real if c.kind == "shape"), \
        [(c.claim_id, c.verdict) for c in real if c.kind == "shape" and c.verdict != "reproduced"]


def test_every_shape_claim_shows_the_papers_number():
    for c in sc.build(tl.tidy_df(tl.paper_like()), tl.published(), tl.section()):
        assert str(c.published).strip(), c.claim_id
        if c.kind == "shape" and c.claim_id not in ("bytes_single_nuclio_go_fastest",):
            assert any(ch.isdigit() for ch in str(c.published)), (c.claim_id, c.published)


def _of(*prefix):
    """Picks the configurations (workload, variant, platform, instances, size) that start with ``prefix``."""
    return lambda k: k[:len(prefix)] == prefix


def _par(p):
    return _of("bytes", "parallel", p)


def _sgl(p):
    return _of("bytes", "single", p)


def _go_at(size):
    return lambda k: k[2] == "nuclio-go" and k[4] == size


# (builder, claim id, how the data contradicts it)
CONTRADICTIONS = {
    "nuclio_not_1_5x": (sc.image_nuclio_vs_openfaas, "image_nuclio_1_5x_openfaas",
                        _scale(_of("image", "processing", "nuclio-cpp"), 4.58 / 7.17)),
    "nuclio_3x": (sc.image_nuclio_vs_openfaas, "image_nuclio_1_5x_openfaas",
                  _scale(_of("image", "processing", "nuclio-cpp"), 2.0)),
    "nuclio_level_at_4": (sc.image_nuclio_clearly_ahead_from_4, "image_nuclio_clearly_ahead_from_4",
                          _img("processing", "nuclio-cpp", 4, 3.6)),
    "openfaas_peaks_at_8": (sc.image_peak_at_16, "image_peak_at_16_openfaas",
                            _img("processing", "openfaas", 8, 5.0)),
    "nuclio_peaks_at_4": (sc.image_peak_at_16, "image_peak_at_16_nuclio-cpp",
                          _img("processing", "nuclio-cpp", 4, 8.0)),
    "openfaas_doubles_8_16": (sc.image_openfaas_small_gain_8_to_16, "image_openfaas_small_gain_8_to_16",
                              _img("processing", "openfaas", 16, 8.4)),
    "nuclio_gains_more_8_16": (sc.image_8_to_16_gain_smaller_for_nuclio, "image_8_to_16_gain_smaller_for_nuclio",
                               _img("processing", "openfaas", 16, 4.25)),
    "np_nuclio_ahead": (sc.np_openfaas_slight_edge, "image_np_openfaas_slight_edge",
                        _scale(_of("image", "null-processing", "nuclio-cpp"), 1.2)),
    "np_flat": (sc.image_np_proportional, "image_np_proportional_openfaas",
                _replace(_of("image", "null-processing", "openfaas"),
                         {"images_per_s": 1.0, "throughput": 3.0})),
    "nuclio_doubles_8_16": (sc.nuclio_barely_changes_8_16, "image_nuclio_flat_8_to_16",
                            _img("processing", "nuclio-cpp", 16, 13.6)),
    "above_baseline": (sc.image_below_baseline, "image_platforms_below_baseline",
                       _img("processing", "baseline", 16, 5.0)),
    "one_process_per_instance": (sc.image_processes_per_instance, "image_nuclio_two_processes_per_instance",
                                 _img("processing", "nuclio-cpp", 8, 3.6)),
    "single_openfaas_peaks_at_1": (sc.single_peak_instances, "bytes_single_peak_instances_openfaas",
                                   _scale(_of("bytes", "single", "openfaas", 1), 2.0)),
    "single_go_peaks_at_4": (sc.single_peak_instances, "bytes_single_peak_instances_nuclio-go",
                             _scale(_of("bytes", "single", "nuclio-go", 4), 1.5)),
    "go_no_outliers": (sc.nuclio_go_outliers, "bytes_single_nuclio_go_outliers_4x",
                       _replace(_sgl("nuclio-go"), lambda k, v: {**v, "single_max": 1.2 * v["single_mean"]},
                                ok_only=True)),
    "openfaas_fastest_single": (sc.bytes_single_order, "bytes_single_nuclio_go_fastest",
                                _scale(_sgl("openfaas"), 3.0)),
    "single_nuclio_equals_openfaas": (sc.bytes_single_ratio, "bytes_single_ratio_nuclio-cpp_over_openfaas",
                                      _scale(_sgl("openfaas"), 9.64 / 7.47)),
    "single_nuclio_twice_openfaas": (sc.bytes_single_ratio, "bytes_single_ratio_nuclio-cpp_over_openfaas",
                                     _scale(_sgl("openfaas"), 0.5)),
    "single_go_far_ahead": (sc.bytes_single_ratio, "bytes_single_ratio_nuclio-go_over_nuclio-cpp",
                            _scale(_sgl("nuclio-go"), 2.0)),
    "single_go_4x_openfaas": (sc.bytes_single_ratio, "bytes_single_ratio_nuclio-go_over_openfaas",
                              _scale(_sgl("nuclio-go"), 2.5)),
    "single_smaller_faster": (sc.bytes_single_larger_better, "bytes_single_larger_is_faster_openfaas",
                              _replace(_sgl("openfaas"), lambda k, v: {m: 100.0 / max(k[4], 1) for m in v})),
    "parallel_no_gain": (sc.bytes_parallel_nuclio_above_openfaas, "bytes_parallel_nuclio_above_openfaas",
                         _scale(_par("openfaas"), 1.6)),
    "parallel_3x": (sc.bytes_parallel_nuclio_above_openfaas, "bytes_parallel_nuclio_above_openfaas",
                    _scale(_par("openfaas"), 0.5)),
    "parallel_go_twice": (sc.bytes_parallel_nuclio_go_equals_nuclio, "bytes_parallel_nuclio_go_equals_nuclio",
                          _scale(_par("nuclio-go"), 2.0)),
    "parallel_openfaas_peaks_at_16": (sc.bytes_parallel_peak_4_or_8, "bytes_parallel_peak_4_or_8_openfaas",
                                      _scale(_of("bytes", "parallel", "openfaas", 16), 1.5)),
    "parallel_nuclio_peaks_at_1": (sc.bytes_parallel_peak_4_or_8, "bytes_parallel_peak_4_or_8_nuclio-cpp",
                                   _scale(_of("bytes", "parallel", "nuclio-cpp", 1), 10.0)),
    "parallel_linear_not_s": (sc.bytes_parallel_s_shape, "bytes_parallel_s_shape_nuclio-cpp",
                              _replace(_par("nuclio-cpp"), lambda k, v: {"throughput": 33.27 * k[4] / (16 * MiB)},
                                       ok_only=True)),
    "parallel_falls_at_the_top": (sc.bytes_parallel_s_shape, "bytes_parallel_s_shape_nuclio-go",
                                  _scale(lambda k: _par("nuclio-go")(k) and k[4] == 2 * MiB, 0.5)),
    "parallel_flat": (sc.bytes_parallel_s_shape, "bytes_parallel_s_shape_openfaas",
                      _replace(_par("openfaas"), {"throughput": 20.0}, ok_only=True)),
    "go_accepts_4MiB": (sc.nuclio_go_refuses_above_limit, "bytes_nuclio_go_fails_above_2MiB",
                        _replace(_go_at(4 * MiB), {"throughput": 30.0, "single_mean": 30.0, "single_gmean": 29.0,
                                                   "single_hmean": 28.0})),
    "go_fails_1KiB": (sc.nuclio_go_refuses_above_limit, "bytes_nuclio_go_fails_above_2MiB",
                      _replace(_go_at(1024), "failed: HTTP 500: crashed")),
    "go_fails_other_way": (sc.nuclio_go_refuses_above_limit, "bytes_nuclio_go_fails_above_2MiB",
                           _replace(_go_at(4 * MiB), "failed: DirectorError: timeout")),
    "peak_small": (sc.single_peak_at_largest_size, "bytes_single_peak_at_largest_openfaas",
                   _scale(lambda k: _sgl("openfaas")(k) and k[4] == 1024, 1000.0)),
    "outliers": (sc.means_within_90, "bytes_single_means_within_90_nuclio-go",
                 _scale(_sgl("nuclio-go"), 0.5, metrics={"single_hmean"})),
    "go_above_np_images": (sc.bytes_go_below_nuclio_np, "bytes_go_below_nuclio_np_images",
                           _scale(_par("nuclio-go"), 1.5)),
    "go_far_below_np_images": (sc.bytes_go_below_nuclio_np, "bytes_go_below_nuclio_np_images",
                               _scale(_par("nuclio-go"), 0.5)),
    "above_ceiling": (sc.bytes_below_echo_ceiling, "bytes_below_echo_ceiling",
                      _replace(_of("limit", "echo"), {"throughput": 10.0})),
    "near_iperf": (sc.far_below_iperf, "far_below_iperf",
                   lambda d: _set(d, ("limit", "iperf3", None, None, None), throughput=200.0)),
    "near_iperf_by_images": (sc.far_below_iperf, "far_below_iperf",
                             _img("null-processing", "openfaas", 16, 40.0)),
}


@pytest.mark.parametrize("name", sorted(CONTRADICTIONS))
def test_claim_fails_on_contradicting_data(name):
    """On the cluster's (real) rows every claim builder fails on data that contradicts it."""
    builder, cid, change = CONTRADICTIONS[name]
    assert _verdicts(tl.paper_like(), builder, real=True)[cid].verdict == "reproduced"
    c = _verdicts(change(tl.paper_like()), builder, real=True)[cid]
    assert c.verdict == "not reproduced", (c.reproduced, c.published)
    if cid not in IMPOSED:  # the same verdict on stand-in rows
        assert _verdicts(change(tl.paper_like()), builder)[cid].verdict == "not reproduced"
    # and at cluster scale (the paper's tolerances, schema.yaml serverless.claims)
    assert _verdicts(tl.paper_like(), builder, real=True, scale="cluster")[cid].verdict == "reproduced"
    c = _verdicts(change(tl.paper_like()), builder, real=True, scale="cluster")[cid]
    assert c.verdict == "not reproduced" and c.scale == "cluster", (c.reproduced, c.published)


# issue 28: data that passes the local tolerance and contradicts the paper's number at cluster scale
AT_CLUSTER = {
    # OpenFaaS at 0.60 of the baseline: below it (all the local band asks), not the paper's 0.36
    "baseline_fraction": (sc.image_below_baseline, "image_platforms_below_baseline",
                          _img("processing", "openfaas", 16, 0.6 * 12.58)),
    # Nuclio Go's fastest request only twice the average: 'well above' locally, not 'up to four times'
    "go_outliers_2x": (sc.nuclio_go_outliers, "bytes_single_nuclio_go_outliers_4x",
                       _replace(_sgl("nuclio-go"), lambda k, v: {**v, "single_max": 2.0 * v["single_mean"]},
                                ok_only=True)),
    # parallel Nuclio Go 10 % above Nuclio: 'almost identical' within 15 % locally, not the paper's 33.25 vs 33.27
    "go_10pct_above_nuclio": (sc.bytes_parallel_nuclio_go_equals_nuclio, "bytes_parallel_nuclio_go_equals_nuclio",
                              _scale(_par("nuclio-go"), 1.1)),
    # Nuclio 1.85x OpenFaaS on images: in the local 'about 1.5' band [1.25, 1.9], not the paper's rounding
    "nuclio_1_85x": (sc.image_nuclio_vs_openfaas, "image_nuclio_1_5x_openfaas",
                     _scale(_of("image", "processing", "nuclio-cpp"), 1.85 / 1.57)),
}


@pytest.mark.parametrize("name", sorted(AT_CLUSTER))
def test_cluster_tolerances_come_from_the_paper(name):
    builder, cid, change = AT_CLUSTER[name]
    local = _verdicts(change(tl.paper_like()), builder, real=True, scale="local")[cid]
    cluster = _verdicts(change(tl.paper_like()), builder, real=True, scale="cluster")[cid]
    assert local.verdict == "reproduced" and local.scale == "local", (local.reproduced, local.published)
    assert cluster.verdict == "not reproduced", (cluster.reproduced, cluster.published)
    assert cluster.tolerance_why and "Sec." in cluster.tolerance_why or "Table" in cluster.tolerance_why


def test_every_shape_claim_function_has_a_contradiction():
    """One function per claim, and each shape claim's function is fed contradicting data above."""
    funcs = {getattr(b, "func", b) for b in sc.BUILDERS}
    assert len(funcs) == len({f.__name__ for f in funcs})
    tested = {builder for builder, _cid, _change in CONTRADICTIONS.values()}
    info = {sc.info_table1, sc.info_table2, sc.info_iperf3}
    assert funcs - info - tested == set(), sorted(f.__name__ for f in funcs - info - tested)
    cl = sc.build(tl.tidy_df(tl.paper_like()), tl.published(), tl.section())
    assert len({c.claim_id for c in cl}) == len(cl)  # no claim twice


def test_a_claim_the_standin_imposes_is_informative_locally():
    """The stand-in's 2 MiB body limit decides the Nuclio Go refusal: on stand-in rows the claim says
    what it would read, and is informative either way; on real rows it is a verdict."""
    for data, would in ((tl.paper_like(), "reproduced"), (CONTRADICTIONS["go_accepts_4MiB"][2](tl.paper_like()),
                                                          "not reproduced")):
        c = _verdicts(data, sc.nuclio_go_refuses_above_limit)["bytes_nuclio_go_fails_above_2MiB"]
        assert c.verdict == "informative" and f"[would read: {would}]" in c.reproduced
        assert "informative locally" in c.note and "max_body" in c.note


CLUSTER_SCALE = ("image_peak_at_16_openfaas", "image_peak_at_16_nuclio-cpp", "image_openfaas_small_gain_8_to_16",
                 "image_8_to_16_gain_smaller_for_nuclio", "image_nuclio_flat_8_to_16",
                 "image_nuclio_two_processes_per_instance",
                 "bytes_parallel_peak_4_or_8_openfaas", "bytes_parallel_peak_4_or_8_nuclio-cpp",
                 "bytes_parallel_peak_4_or_8_nuclio-go")


def test_claims_needing_the_cluster_matrix_are_cluster_only_on_the_local_one():
    """Local instances 1, 2, 4: the 8 and 16 instance claims are cluster-only, with the paper's number
    and the reason; where the config runs 8 and 16 but the runs are missing, they are not run."""
    local = _drop(tl.paper_like(), lambda k: k[3] in (8, 16) and k[2] != "baseline")
    cl = {c.claim_id: c for c in sc.build(tl.tidy_df(local), tl.published(), tl.section())}
    for cid in CLUSTER_SCALE:
        assert cl[cid].verdict == "cluster-only" and "this config runs [1, 2, 4]" in cl[cid].note, cid
        assert any(ch.isdigit() for ch in str(cl[cid].published)), cid
    cl = {c.claim_id: c for c in sc.build(tl.tidy_df(local), tl.published(), tl.section(local=False))}
    for cid in CLUSTER_SCALE:
        assert cl[cid].verdict == "not run" and "runs missing or failed" in cl[cid].note, cid


def test_s_shape_rule():
    sizes = [2**e for e in range(0, 25, 2)]
    assert sc.s_shape(sizes, [s / (s + 2**18) for s in sizes])[0]
    assert not sc.s_shape(sizes, [s for s in sizes])[0]            # still steepest at the top: no plateau
    assert not sc.s_shape(sizes, [1.0 for _ in sizes])[0]          # flat: no low end
    assert not sc.s_shape(sizes, [1 - s / 2**25 for s in sizes])[0]  # falling
    hump = [s / (s + 2**18) for s in sizes]
    hump[-1] *= 0.58  # rises, then falls back by 42 % at the largest size (seen locally): not an S
    assert not sc.s_shape(sizes, hump)[0]


def test_missing_data_is_not_run_never_a_pass():
    empty = tl.tidy_df({})
    for c in sc.build(empty.reindex(columns=["study", "experiment", "workload", "variant", "platform", "instances",
                                             "size", "rep", "metric", "value", "unit", "status", "failure",
                                             "system_kind", "raw_file"]), tl.published(), tl.section()):
        assert c.verdict == ("cluster-only" if c.claim_id in CLUSTER_SCALE else "not run"), (c.claim_id, c.verdict)
