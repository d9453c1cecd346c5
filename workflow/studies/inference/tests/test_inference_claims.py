"""Every claim builder holds on paper-shaped data and fails on data that contradicts it."""

from __future__ import annotations

import inference_study_testlib as tl
import pytest
from studies.inference import claims as ic

from repro import claims as rc


def _verdicts(data, builder, real=True, local=False, **cfg_over) -> dict:
    """Verdicts on the cluster's real rows with the cluster's tolerances (local=True: config/local.yaml's)."""
    return {c.claim_id: c for c in builder(tl.tidy_df(data, real=real), tl.published(),
                                           tl.section(local=local, **cfg_over))}


def _is(server=None, model=None, users=None, exp="serve"):
    return lambda k: (k[0] == exp and (server is None or k[1] == server) and (model is None or k[2] == model)
                      and (users is None or k[3] == users))


# the paper's statements its own Table I contradicts (studies.inference.selfcheck declares the same)
PAPER_CONTRADICTIONS = {"resnet50_tf_worst_latency_tfserving", "torchserve_overall_best"}


def test_every_shape_claim_holds_on_paper_like_data():
    """The paper's own numbers (Table I, shaped over user counts) pass every claim at the cluster's tolerances,
    but the two statements Table I itself contradicts."""
    from studies.inference import selfcheck

    cl = ic.build(tl.tidy_df(tl.paper_like(), real=True), tl.published(), tl.section(local=False))
    shape = [c for c in cl if c.kind == "shape"]
    assert len(shape) >= 31
    bad = [(c.claim_id, c.verdict, c.reproduced) for c in shape
           if c.verdict != "reproduced" and c.claim_id not in PAPER_CONTRADICTIONS]
    assert not bad, bad
    assert {c.claim_id for c in shape if c.verdict == "not reproduced"} == PAPER_CONTRADICTIONS
    assert PAPER_CONTRADICTIONS == set(selfcheck.EXPECTED_CONTRADICTIONS)
    info = [c for c in cl if c.kind == "info"]
    # Table I's 12 numbers, Table II's 3 totals, "only TorchServe serves BART" and TF Serving x full Wav2Vec2
    # (the paper's gaps, never tried)
    assert len(info) == 12 + 3 + 1 + 1
    assert all("tolerances: cluster:" in c.note for c in shape)
    judged = [c for c in shape if c.tolerance_why]
    assert len(judged) >= 24 and {c.scale for c in judged} == {"cluster"}


def test_stand_ins_never_decide_a_cross_server_verdict():
    """Locally (stand-in rows) a comparison between servers is informative, showing what it would read."""
    cl = {c.claim_id: c for c in ic.build(tl.tidy_df(tl.paper_like()), tl.published(), tl.section())}
    for cid in ("resnet50_torchserve_leads", "resnet50_tfserving_slowest", "resnet50_tfserving_highest_latency",
                "resnet50_triton_pytorch_close", "truncated_order", "tf_models_half_of_best",
                "wav2vec2_triton_excels", "latency_torchserve_lowest_resnet50", "wav2vec2_triton_tf_latency_double",
                "resnet50_latency_triton_pytorch_close"):
        assert cl[cid].verdict == "informative" and "[would read: reproduced]" in cl[cid].reproduced, cid
        assert "stand-in:" in cl[cid].system_kind
    assert cl["plateau_resnet50"].verdict == "reproduced"  # per server: not imposed by a stand-in
    assert cl["no_failed_requests"].verdict == "reproduced"
    assert all("tolerances: local:" in c.note for c in cl.values() if c.kind == "shape")
    # the paper's absolute latencies are its GPU's: informative on the local CPU, with the reason
    for cid in ("wav2vec2_latency_1user_under_100ms", "resnet50_latency_100users_under_1s_torchserve",
                "resnet50_tf_worst_latency_triton-tensorflow"):
        assert cl[cid].verdict == "informative" and "informative at local scale" in cl[cid].note, cid
    # and at cluster scale on a stand-in's rows (a cluster run with the stand-in kinds): still informative
    st = {c.claim_id: c for c in ic.build(tl.tidy_df(tl.paper_like()), tl.published(), tl.section(local=False))}
    c = st["resnet50_latency_100users_under_1s_triton-pytorch"]
    assert c.verdict == "informative" and "[would read: reproduced]" in c.reproduced and c.scale == "cluster"
    assert st["resnet50_latency_100users_under_1s_torchserve"].verdict == "reproduced"   # the real TorchServe


def _scaled(cid: str, pred, builder=None, **metrics) -> tuple:
    """(builder, claim id, the contradiction): the configurations matching pred get `metrics` (tl.mutate).
    The builder is the claims module's function of the claim's own name unless given."""
    return builder or getattr(ic, cid), cid, lambda d: tl.mutate(d, pred, **metrics)


def _keeps_rising(d: dict) -> dict:
    """Triton's truncated Wav2Vec2 throughput grows with the user count (x users/10): no plateau."""
    rising = _is("triton-pytorch", "wav2vec2_truncated")
    return {k: ({**v, "throughput": v["throughput"] * k[3] / 10} if rising(k) else v) for k, v in d.items()}


def _failures_in_ok_run(d: dict) -> dict:
    """An ok TorchServe ResNet50 run at 10 users that still counted 2 failed requests."""
    return {k: ({**v, "failures": 2.0} if _is("torchserve", "resnet50", 10)(k) else v) for k, v in d.items()}


# name: (builder, claim id, how the data contradicts it)
CONTRADICTIONS = {
    "triton_leads_resnet50": _scaled("resnet50_torchserve_leads", _is("triton-pytorch", "resnet50"), throughput=1.3),
    "torchserve_behind_at_1_user": _scaled("resnet50_torchserve_leads", _is("torchserve", "resnet50", 1),
                                           throughput=0.5),
    "leads_by_less_than_tolerance": _scaled("resnet50_torchserve_leads", _is("triton-pytorch", "resnet50"),
                                            throughput=1.07),
    "tfserving_not_slowest": _scaled("resnet50_tfserving_slowest", _is("tfserving", "resnet50"), throughput=3.0),
    "tfserving_not_slowest_at_10": _scaled("resnet50_tfserving_slowest", _is("tfserving", "resnet50", 10),
                                           throughput=2.0),
    "tfserving_above_triton_tf": _scaled("resnet50_triton_tf_above_tfserving", _is("tfserving", "resnet50"),
                                         throughput=2.0),
    "tfserving_not_highest_latency": _scaled("resnet50_tfserving_highest_latency", _is("tfserving", "resnet50", 100),
                                             latency_median=0.5),
    "triton_trails_far": _scaled("resnet50_triton_pytorch_close", _is("triton-pytorch", "resnet50", 10),
                                 throughput=0.7),
    "no_plateau": _scaled("plateau_resnet50", _is("torchserve", "resnet50", 100), ic.throughput_plateaus,
                          throughput=0.5),
    "keeps_rising": (ic.throughput_plateaus, "plateau_wav2vec2_truncated", _keeps_rising),
    "bart_fails_on_torchserve": _scaled("bart_torchserve_serves", _is("torchserve", "bart"),
                                        whole="failed: HTTP 500: OOM"),
    "bart_served_by_triton": _scaled("bart_only_torchserve", _is("triton-pytorch", "bart"),
                                     whole={"throughput": 1.0, "failures": 0.0}),
    "triton_no_better_under_load": _scaled("wav2vec2_triton_excels", _is("triton-pytorch", "wav2vec2", 100),
                                           throughput=0.85),
    "triton_lead_shrinks_with_load": _scaled("wav2vec2_triton_excels", _is("triton-pytorch", "wav2vec2", 1),
                                             throughput=1.5),
    "triton_tf_as_fast": _scaled("wav2vec2_triton_tf_half", _is("triton-tensorflow", "wav2vec2"), throughput=1.6),
    "truncated_tfserving_below_torchserve": _scaled("truncated_order", _is("tfserving", "wav2vec2_truncated"),
                                                    throughput=0.7),
    "truncated_torchserve_first": _scaled("truncated_order", _is("torchserve", "wav2vec2_truncated"), throughput=1.8),
    "tf_models_as_fast_as_best": (ic.tf_models_half_of_best, "tf_models_half_of_best",
                                  lambda d: tl.mutate(tl.mutate(d, _is("tfserving"), throughput=2.3),
                                                      _is("triton-tensorflow"), throughput=1.3)),
    "latency_grows_beyond_queueing": _scaled("latency_queueing_resnet50", _is("torchserve", "resnet50", 10),
                                             ic.latency_queueing, latency_median=2.0),
    "server_batches_under_load": _scaled("latency_queueing_wav2vec2", _is("triton-pytorch", "wav2vec2", 10),
                                         ic.latency_queueing, latency_median=0.3),
    "slows_under_load_at_50": _scaled("latency_queueing_wav2vec2_truncated", _is("tfserving", "wav2vec2_truncated", 50),
                                      ic.latency_queueing, latency_median=1.5),
    "lone_user_faster_than_loaded": _scaled("latency_queueing_resnet50", _is("torchserve", "resnet50", 1),
                                            ic.latency_queueing, latency_median=0.3),
    "wav2vec2_slow_at_1_user": _scaled("wav2vec2_latency_1user_under_100ms", _is("triton-tensorflow", "wav2vec2", 1),
                                       latency_median=1.5),
    "torchserve_over_1s": _scaled("resnet50_latency_100users_under_1s_torchserve", _is("torchserve", "resnet50", 100),
                                  ic.resnet50_latency_100users_under_1s, latency_mean=1.2),
    "triton_over_1s": _scaled("resnet50_latency_100users_under_1s_triton-pytorch",
                              _is("triton-pytorch", "resnet50", 100), ic.resnet50_latency_100users_under_1s,
                              latency_mean=1.2),
    "triton_tf_worst_1_75s": _scaled("resnet50_tf_worst_latency_triton-tensorflow",
                                     _is("triton-tensorflow", "resnet50", 100), ic.resnet50_tf_worst_latency,
                                     latency_mean=1.3),
    "triton_tf_latency_1_2x": _scaled("wav2vec2_triton_tf_latency_double", _is("triton-tensorflow", "wav2vec2", 100),
                                      latency_median=0.7),
    "triton_tf_latency_3x": _scaled("wav2vec2_triton_tf_latency_double", _is("triton-tensorflow", "wav2vec2", 100),
                                    latency_median=1.8),
    "triton_pytorch_latency_not_second": _scaled("resnet50_latency_triton_pytorch_close",
                                                 _is("triton-pytorch", "resnet50", 1), latency_median=2.0),
    "triton_pytorch_latency_far_at_100": _scaled("resnet50_latency_triton_pytorch_close",
                                                 _is("triton-pytorch", "resnet50", 100), latency_median=1.25),
    "tfserving_serves_full_wav2vec2": _scaled("wav2vec2_tfserving_not_served", _is("tfserving", "wav2vec2"),
                                              whole={"throughput": 30.0, "failures": 0.0}),
    "triton_excels_by_6pc": _scaled("wav2vec2_triton_excels", _is("triton-pytorch", "wav2vec2", 100), throughput=0.9),
    "truncated_tf_only_1_3x_triton_tf": _scaled("truncated_order", _is("triton-tensorflow", "wav2vec2_truncated"),
                                                throughput=1.3),
    "truncated_tf_far_above_torchserve": _scaled("truncated_order", _is("torchserve", "wav2vec2_truncated"),
                                                 throughput=0.7),
    "truncated_1_39x": _scaled("truncated_vs_full_torchserve", _is("torchserve", "wav2vec2_truncated"),
                               ic.truncated_vs_full, throughput=0.95),
    "truncated_3x": _scaled("truncated_vs_full_torchserve", _is("torchserve", "wav2vec2_truncated"),
                            ic.truncated_vs_full, throughput=2.2),
    "truncated_slower": _scaled("truncated_vs_full_triton-pytorch", _is("triton-pytorch", "wav2vec2_truncated"),
                                ic.truncated_vs_full, throughput=0.5),
    "torchserve_slow_latency": _scaled("latency_torchserve_lowest_resnet50", _is("torchserve", "resnet50", 1),
                                       ic.torchserve_lowest_latency, latency_median=3.0),
    "a_failed_run": _scaled("no_failed_requests", _is("tfserving", "resnet50", 25),
                            whole="failed: 3 of 90 requests failed"),
    "failed_requests_in_ok_run": (ic.no_failed_requests, "no_failed_requests", _failures_in_ok_run),
    "generator_saturated": _scaled("generator_not_bottleneck", lambda k: k[0] == "ceiling", throughput=0.06),
}


@pytest.mark.parametrize("name", sorted(CONTRADICTIONS))
def test_claim_fails_on_contradicting_data(name):
    builder, cid, change = CONTRADICTIONS[name]
    before = _verdicts(tl.paper_like(), builder)[cid]
    if cid not in ("bart_only_torchserve", "wav2vec2_tfserving_not_served"):  # the paper's gaps: informative
        assert before.verdict == "reproduced", (before.reproduced, before.published)
    c = _verdicts(change(tl.paper_like()), builder)[cid]
    assert c.verdict == "not reproduced", (c.reproduced, c.published)


def test_lead_tolerance_is_per_scale():
    """A 7 % lead of Triton: beyond the cluster's 2 % (fails), within the 2 shared cores' 10 % -- where, on
    stand-in rows, the verdict is informative anyway."""
    d = tl.mutate(tl.paper_like(), _is("triton-pytorch", "resnet50"), throughput=1.07)
    assert _verdicts(d, ic.resnet50_torchserve_leads)["resnet50_torchserve_leads"].verdict == "not reproduced"
    assert _verdicts(d, ic.resnet50_torchserve_leads, local=True)["resnet50_torchserve_leads"].verdict == "reproduced"
    t = rc.tol(tl.section(local=False), "claims.lead_tolerance")
    assert t.scale == "cluster" and t.value < 104.10 / 99.74 - 1 and "4.4 %" in t.why  # below the paper's margin
    assert rc.tol(tl.section(), "claims.lead_tolerance").value == 0.10


def test_paper_words_at_cluster_scale_reject_what_the_old_constants_passed():
    """Issue 28: 'much better' (1.69 in Table I) at 1.30 x, 'excelled' (1.18) at 1.06 x and '1.5 to 2 times' at
    1.39 x passed the old constants (1.05, 1.05, [1.25, 2.25]); at cluster scale they fail."""
    cases = [(ic.truncated_order, "truncated_order", _is("triton-tensorflow", "wav2vec2_truncated"), 1.3),
             (ic.wav2vec2_triton_excels, "wav2vec2_triton_excels", _is("triton-pytorch", "wav2vec2", 100), 0.9),
             (ic.truncated_vs_full, "truncated_vs_full_torchserve", _is("torchserve", "wav2vec2_truncated"), 0.95)]
    for builder, cid, pred, f in cases:
        c = _verdicts(tl.mutate(tl.paper_like(), pred, throughput=f), builder)[cid]
        assert c.verdict == "not reproduced" and c.scale == "cluster" and c.tolerance_why, (cid, c.reproduced)


def test_queueing_follows_the_figures_rise_from_1_to_10_users():
    """Figures 2-4 rise from 1 to 10 users: the paper-like data have latency(10) / 10 at half the 1-user latency
    (ResNet50 TorchServe 9.6 vs 20 ms), which the old form (latency(10) / 10 within 25 % of latency(1)) failed;
    the claim holds there and fails when throughput is not flat from 10 users on."""
    d = tl.paper_like()
    c = _verdicts(d, ic.latency_queueing)["latency_queueing_resnet50"]
    one, ten = d[("serve", "torchserve", "resnet50", 1)], d[("serve", "torchserve", "resnet50", 10)]
    assert abs(ten["latency_median"] / 10 / one["latency_median"] - 1) > 0.25   # the old form would fail
    assert c.verdict == "reproduced" and "1 user 20.1 ms" in c.reproduced
    flat_from_1 = tl.mutate(d, _is("torchserve", "resnet50", 1), latency_median=0.45)  # 1 user at 9 ms: faster
    assert _verdicts(flat_from_1, ic.latency_queueing)["latency_queueing_resnet50"].verdict == "reproduced"
    faster_alone = tl.mutate(d, _is("torchserve", "resnet50", 1), latency_median=0.3)   # 6 ms < 0.75 x 9.6
    assert _verdicts(faster_alone, ic.latency_queueing)["latency_queueing_resnet50"].verdict == "not reproduced"


def test_torchserve_overall_best_follows_table1():
    """'The overall best-performing framework, consistently surpassing the other two': Table I puts Triton
    (PyTorch) first on both Wav2Vec2 rows, so on the paper's own numbers it is not reproduced; where TorchServe
    does lead every model in throughput and latency it is."""
    c = _verdicts(tl.paper_like(), ic.torchserve_overall_best)["torchserve_overall_best"]
    assert c.verdict == "not reproduced"
    assert "Wav2Vec2 throughput at 100: TorchServe 35.34 vs best other 41.64 (behind)" in c.reproduced
    best = tl.mutate(tl.paper_like(), _is("torchserve", "wav2vec2"), throughput=1.25)
    best = tl.mutate(best, _is("torchserve", "wav2vec2_truncated"), throughput=1.7)
    assert _verdicts(best, ic.torchserve_overall_best)["torchserve_overall_best"].verdict == "reproduced"
    slow = tl.mutate(best, _is("torchserve", "resnet50", 1), latency_median=1.5)   # 30 ms vs Triton's 22
    assert _verdicts(slow, ic.torchserve_overall_best)["torchserve_overall_best"].verdict == "not reproduced"


def test_usability_and_bart_gaps_are_informative_never_a_verdict():
    cl = _verdicts(tl.paper_like(), ic.usability_table2)
    assert {c.verdict for c in cl.values()} == {"informative"} and len(cl) == 3
    assert (cl["usability_total_torchserve"].reproduced, cl["usability_total_torchserve"].published) == (23, 23)
    scores = {"torchserve": [1, 1, 1, 1, 1], "tfserving": [3, 3, 4, 5, 5], "triton": [4, 5, 5, 4, 5]}
    cl = _verdicts({}, ic.usability_table2, usability={"scores": scores})
    t = cl["usability_total_torchserve"]
    assert t.verdict == "informative" and t.reproduced == 5
    b = _verdicts(tl.paper_like(), ic.bart_only_torchserve)["bart_only_torchserve"]
    assert b.verdict == "informative" and "not tried" in b.reproduced


def test_missing_data_is_not_run_never_a_pass():
    cols = ["study", "experiment", "server", "model", "framework", "users", "rep", "metric", "value", "unit",
            "status", "failure", "reason", "system_kind", "weights", "raw_file"]
    empty = tl.tidy_df({}).reindex(columns=cols)
    for c in ic.build(empty, tl.published(), tl.section()):
        if c.claim_id.startswith("usability_total_"):  # from the config, not from runs: informative
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


def test_a_claim_not_run_says_why():
    """A not-run claim without a reason of its own gets one naming the matrix (the rehearsal's
    claims_computed check failed on bart_only_torchserve / truncated_vs_full_* without one)."""
    import pandas as pd

    from repro import claims as rc
    from studies.inference import claims as ic

    c = rc.Claim(study="inference", claim_id="x", claim="x", paper_ref="", target="", output="")
    c = rc.shape_claim(c, None, "not run", "something")
    orig = ic.BUILDERS
    try:
        ic.BUILDERS = [lambda df, pub, cfg: [c]]
        out = ic.build(pd.DataFrame(), pd.DataFrame(), {"models": ["resnet50"], "servers": ["torchserve"],
                                                         "claims": {"basis": "test"}})
    finally:
        ic.BUILDERS = orig
    assert out[0].verdict == rc.NOT_RUN and out[0].note.startswith("not run: no ok runs") and "resnet50" in out[0].note


def test_the_paper_reproduces_itself_through_the_selfcheck():
    """repro.selfcheck on the inference study: every claim with published inputs reproduced on the paper's numbers
    at cluster scale or a declared contradiction of the paper, every perturbation past its tolerance flips."""
    from studies.inference import selfcheck

    from repro import config as rconf
    from repro import published as pubvals
    from repro import selfcheck as sc

    pub = pubvals.load(tl.REPO / "workflow/studies/inference/published.csv")
    rows = sc.check_study("inference", selfcheck, pub, rconf.load(tl.REPO / "config/config.yaml")["inference"])
    bad = [(r.claim, r.perturbation, r.why) for r in rows if r.status != "ok"]
    assert not bad, bad
    claims_rows = [r for r in rows if not r.perturbation]
    pert = [r for r in rows if r.perturbation]
    assert {r.scale for r in claims_rows if r.verdict in ("reproduced", "not reproduced")} == {"cluster"}
    assert sum(r.verdict == "reproduced" for r in claims_rows) >= 25
    assert {r.claim for r in claims_rows if r.verdict == "not reproduced"} == set(selfcheck.EXPECTED_CONTRADICTIONS)
    assert len(pert) >= 29 and all(r.flipped == "yes" for r in pert)
    # the inputs are published.csv's: Table I's 100-user cells, Little's law for the latencies
    inputs = selfcheck.paper_inputs(pub, rc.at_scale({}, "cluster"))
    assert inputs["throughput"][("resnet50", "tfserving", 100)] == 40.59
    df = selfcheck.tidy(inputs)
    lat = df[(df.metric == "latency_mean") & (df.model == "resnet50") & (df.server == "tfserving") & (df.users == 100)]
    assert lat.value.iloc[0] == pytest.approx(1000 * 100 / 40.59)
