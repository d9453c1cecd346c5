"""Every claim builder holds on paper-shaped data and fails on data that contradicts it."""

from __future__ import annotations

import inference_study_testlib as tl
import pytest
from studies.inference import claims as ic


def _verdicts(data, builder, **cfg_over) -> dict:
    return {c.claim_id: c for c in builder(tl.tidy_df(data), tl.published(), tl.section(**cfg_over))}


def _is(server=None, model=None, users=None, exp="serve"):
    return lambda k: (k[0] == exp and (server is None or k[1] == server) and (model is None or k[2] == model)
                      and (users is None or k[3] == users))


def test_every_shape_claim_holds_on_paper_like_data():
    cl = ic.build(tl.tidy_df(tl.paper_like()), tl.published(), tl.section())
    shape = [c for c in cl if c.kind == "shape"]
    assert len(shape) >= 15
    bad = [(c.claim_id, c.verdict, c.reproduced) for c in shape if c.verdict != "reproduced"]
    assert not bad, bad
    info = [c for c in cl if c.kind == "info"]
    assert len(info) == 12  # Table I's numbers (the three BART gaps and TF Serving x Wav2Vec2 have none)
    assert {c.system_kind for c in cl if c.claim_id.startswith("info_table1_resnet50_tfserving")} == \
        {"stand-in:tfserving-rest-on-tf-python"}


# (builder, claim id, how the data contradicts it)
CONTRADICTIONS = {
    "triton_leads_resnet50": (ic.resnet50_torchserve_leads, "resnet50_torchserve_leads",
                              lambda d: tl.mutate(d, _is("triton-pytorch", "resnet50"), throughput=1.3)),
    "torchserve_behind_at_1_user": (ic.resnet50_torchserve_leads, "resnet50_torchserve_leads",
                                    lambda d: tl.mutate(d, _is("torchserve", "resnet50", 1), throughput=0.5)),
    "tfserving_not_slowest": (ic.resnet50_tfserving_slowest, "resnet50_tfserving_slowest",
                              lambda d: tl.mutate(d, _is("tfserving", "resnet50"), throughput=3.0)),
    "tfserving_above_triton_tf": (ic.resnet50_triton_tf_above_tfserving, "resnet50_triton_tf_above_tfserving",
                                  lambda d: tl.mutate(d, _is("tfserving", "resnet50"), throughput=2.0)),
    "no_plateau": (ic.throughput_plateaus, "plateau_resnet50",
                   lambda d: tl.mutate(d, _is("torchserve", "resnet50", 100), throughput=0.5)),
    "keeps_rising": (ic.throughput_plateaus, "plateau_wav2vec2_truncated",
                     lambda d: {k: ({**v, "throughput": v["throughput"] * k[3] / 10} if _is(
                         "triton-pytorch", "wav2vec2_truncated")(k) else v) for k, v in d.items()}),
    "bart_fails_on_torchserve": (ic.bart_only_torchserve, "bart_only_torchserve",
                                 lambda d: tl.mutate(d, _is("torchserve", "bart"), whole="failed: HTTP 500: OOM")),
    "bart_served_by_triton": (ic.bart_only_torchserve, "bart_only_torchserve",
                              lambda d: tl.mutate(d, _is("triton-pytorch", "bart"),
                                                  whole={"throughput": 1.0, "failures": 0.0})),
    "truncated_3x": (ic.truncated_vs_full, "truncated_vs_full_torchserve",
                     lambda d: tl.mutate(d, _is("torchserve", "wav2vec2_truncated"), throughput=2.2)),
    "truncated_slower": (ic.truncated_vs_full, "truncated_vs_full_triton-pytorch",
                         lambda d: tl.mutate(d, _is("triton-pytorch", "wav2vec2_truncated"), throughput=0.5)),
    "torchserve_slow_latency": (ic.torchserve_lowest_latency, "latency_torchserve_lowest_resnet50",
                                lambda d: tl.mutate(d, _is("torchserve", "resnet50", 1), latency_median=3.0)),
    "a_failed_run": (ic.no_failed_requests, "no_failed_requests",
                     lambda d: tl.mutate(d, _is("tfserving", "resnet50", 25), whole="failed: 3 of 90 requests failed")),
    "failed_requests_in_ok_run": (ic.no_failed_requests, "no_failed_requests",
                                  lambda d: {k: ({**v, "failures": 2.0} if _is("torchserve", "resnet50", 10)(k) else v)
                                             for k, v in d.items()}),
    "generator_saturated": (ic.generator_not_bottleneck, "generator_not_bottleneck",
                            lambda d: tl.mutate(d, lambda k: k[0] == "ceiling", throughput=0.06)),
}


@pytest.mark.parametrize("name", sorted(CONTRADICTIONS))
def test_claim_fails_on_contradicting_data(name):
    builder, cid, change = CONTRADICTIONS[name]
    assert _verdicts(tl.paper_like(), builder)[cid].verdict == "reproduced"
    c = _verdicts(change(tl.paper_like()), builder)[cid]
    assert c.verdict == "not reproduced", (c.reproduced, c.published)


def test_usability_claim_reads_the_config_and_can_fail():
    ok = _verdicts({}, ic.usability_torchserve_highest)["usability_torchserve_highest"]
    assert ok.verdict == "reproduced" and "tied" in ok.reproduced  # Table II: 23 = 23
    scores = {"torchserve": [4, 4, 4, 4, 4], "tfserving": [3, 3, 4, 5, 5], "triton": [4, 5, 5, 4, 5]}
    bad = _verdicts({}, ic.usability_torchserve_highest, usability={"scores": scores})["usability_torchserve_highest"]
    assert bad.verdict == "not reproduced", bad.reproduced


def test_missing_data_is_not_run_never_a_pass():
    cols = ["study", "experiment", "server", "model", "framework", "users", "rep", "metric", "value", "unit",
            "status", "failure", "reason", "system_kind", "weights", "raw_file"]
    empty = tl.tidy_df({}).reindex(columns=cols)
    for c in ic.build(empty, tl.published(), tl.section()):
        if c.claim_id == "usability_torchserve_highest":  # from the config, not from runs
            continue
        assert c.verdict == "not run", (c.claim_id, c.verdict)


def test_gaps_of_the_paper_are_never_filled():
    d = tl.paper_like()
    t = __import__("studies.inference.analysis", fromlist=["table1"]).table1(tl.tidy_df(d), tl.published(),
                                                                            tl.section(local=False))
    gaps = t[t.status.str.startswith("not")]
    assert set(zip(gaps.model, gaps.server)) == {("wav2vec2", "tfserving"), ("bart", "triton-pytorch"),
                                                 ("bart", "triton-tensorflow"), ("bart", "tfserving")}
    assert gaps.throughput.isna().all()
