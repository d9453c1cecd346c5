"""The MemFS claims' tolerances per judging scale (issue 28): each cluster value comes from the paper
and bites where the local one does not (a number between the two thresholds passes locally and fails at
cluster scale, or the reverse where the paper's own spread is wider than the local rule); every
converted claim is stamped with its scale and reason; and the paper reproduces itself through the
claims at cluster scale (selfcheck.py): every claim with published inputs reproduced, every
perturbation past a tolerance flips its verdict, and one inside it does not."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest
from repro import claims as K
from repro import config as rc
from repro import published

from studies.memfs import selfcheck as S

from test_memfs_claims import CFG, CLUSTER, WF_CLAIMS, envelope_claims, envelope_table, scale, wf_claims, wf_table

STUDY = Path(__file__).resolve().parents[1]
ROOT = STUDY.parents[2]


def pub() -> pd.DataFrame:
    return published.load(STUDY / "published.csv")


def table21(metric, net, design) -> float:
    return published.number(pub(), metric=metric, network=net, design=design)


def test_cluster_margin_fraction_is_the_papers_own_spread():
    """The cluster margin_fraction lets a cluster be as far from the paper as the paper's two networks
    are from each other: the smallest ratio of one statement's margins on IPoIB and 1GbE (Table 2.1)."""
    spreads = []
    for metric_a, design_a, metric_b, design_b in (("Open", "AMFS", "Open", "MemFS"),
                                                   ("Open", "MemFS", "Create", "MemFS")):
        m = {net: table21(metric_a, net, design_a) / table21(metric_b, net, design_b) - 1 for net in ("IPoIB", "1GbE")}
        spreads.append(min(m.values()) / max(m.values()))
    k = K.tol(K.at_scale(CFG, "cluster"), "claims.margin_fraction").value
    assert min(spreads) == pytest.approx(0.48, abs=0.001)  # the reason in schema.yaml says 0.48
    assert 0 < k <= min(spreads)
    # and so the paper's 1GbE MemFS open/create (x1.84) passes the IPoIB statement at cluster scale, not locally
    f_ipoib = table21("Open", "IPoIB", "MemFS") / table21("Create", "IPoIB", "MemFS")
    f_1gbe = table21("Open", "1GbE", "MemFS") / table21("Create", "1GbE", "MemFS")
    assert f_1gbe >= 1 + k * (f_ipoib - 1)
    assert f_1gbe < 1 + K.tol(K.at_scale(CFG, "local"), "claims.margin_fraction").value * (f_ipoib - 1)


def _verdicts(df, cid):
    return {at: envelope_claims(copy.deepcopy(df), at)[cid].verdict for at in ("local", "cluster")}


def test_open_create_at_the_papers_1gbe_ratio_passes_at_cluster_only():
    """MemFS open/create x1.84 on IPoIB: cluster threshold 1 + 0.45 x 1.76 = 1.79, local 1 + 0.5 x 1.76 = 1.88."""
    df = scale(envelope_table(), 3 / 1.84, experiment="metadata", metric="create_rate", design="memfs",
               network="IPoIB", nodes=4)
    assert _verdicts(df, "table21-memfs-open-above-create-IPoIB") == {"local": "not reproduced",
                                                                      "cluster": "reproduced"}
    df = scale(envelope_table(), 3 / 1.7, experiment="metadata", metric="create_rate", design="memfs",
               network="IPoIB", nodes=4)
    assert _verdicts(df, "table21-memfs-open-above-create-IPoIB") == {"local": "not reproduced",
                                                                      "cluster": "not reproduced"}


def test_an_exponent_of_085_is_linear_locally_not_at_cluster():
    """Figure 2.6 over 1-64 nodes: b = 0.85 is 34x of one node at 64 (53 %), not linear at cluster scale."""
    df = envelope_table()
    for n in (2, 4):
        df = scale(df, n ** -0.15, experiment="metadata", metric="create_rate", design="memfs", nodes=n)
    assert _verdicts(df, "metadata-create-linear-memfs") == {"local": "reproduced", "cluster": "not reproduced"}


def test_n1_throughput_15_percent_off_is_equal_locally_not_at_cluster():
    df = scale(envelope_table(), 1.15, experiment="envelope", metric="readN1_tput", design="locality", size="1MiB")
    assert _verdicts(df, "fig25-locality-n1-equals-11-1MiB") == {"local": "reproduced", "cluster": "not reproduced"}


def _wf(change, scale_):
    def time(app, design, n, k):
        from test_memfs_claims import wf_time
        return change(app, design, n, k, wf_time(app, design, n, k))
    return wf_claims(wf_table(time), CLUSTER, scale_)


def test_blast_30_percent_faster_is_about_18_locally_not_at_cluster():
    """'only about 18 %': local band +-0.15 (x1.03-x1.33), cluster +-0.06 (x1.12-x1.24, the paper's 'approximately')."""
    def change(a, d, n, k, v):
        return 1.30 * 100 / (n * k) if (a, d, k) == ("blast", "locality", 1) else v
    assert {s: _wf(change, s)["W8a"].verdict for s in ("local", "cluster")} == {
        "local": "reproduced", "cluster": "not reproduced"}


def test_w8b_much_higher_is_above_the_about_18_band():
    """x1.22 at 8 tasks per node was 'much higher' than 18 % under the old rule (> 1.18); it is inside
    'about 18 %' at cluster scale (x1.12-x1.24), so not 'much higher'; x1.30 is."""
    def at(r):
        def change(a, d, n, k, v):
            return r * 100 / (n * k) if (a, d) == ("blast", "locality") and k >= 4 else v
        return _wf(change, "cluster")["W8b"].verdict
    assert at(1.22) == "not reproduced" and at(1.30) == "reproduced"


def test_mdifffit_18_percent_faster_is_similar_locally_not_at_cluster():
    df = wf_table()
    sel = (df.stage == "mDiffFit") & (df.design == "memfs") & (df.tasks_per_node == 8)
    df.loc[sel, "value"] = df.loc[sel, "value"] / 1.18
    assert {s: wf_claims(df.copy(), CLUSTER, s)["W11"].verdict for s in ("local", "cluster")} == {
        "local": "reproduced", "cluster": "not reproduced"}


def test_converted_claims_carry_their_scale_and_reason():
    cl = envelope_claims(envelope_table(), "cluster")
    judged = {k for k, c in cl.items() if c.kind == "shape" and c.verdict != "not run"}
    unstamped = {k for k in judged if not cl[k].tolerance_why or cl[k].scale != "cluster"}
    assert judged and not unstamped, unstamped
    wf = wf_claims(wf_table(), CLUSTER, "cluster")
    for cid in ("W1", "W2", "W8a", "W8b", "W9-montage", "W9-blast", "W11"):
        assert wf[cid].scale == "cluster" and wf[cid].tolerance_why, cid
    for c in list(cl.values()) + list(wf.values()):
        assert not any(w in c.tolerance_why.lower() for w in K.LOCAL_WORDS), (c.claim_id, c.tolerance_why)


def test_every_tolerance_is_declared_per_scale_with_a_reason():
    for section in (CFG["claims"], WF_CLAIMS):
        for key, node in section.items():
            K.check_tolerance(key, node)


# ----------------------------------------------------------------------------- the paper reproduces itself
@pytest.fixture(scope="module")
def cluster_section():
    return K.at_scale(rc.load(ROOT / "config" / "config.yaml")["memfs"], "cluster")


def test_the_paper_reproduces_itself_at_cluster_scale(cluster_section):
    from repro import selfcheck
    rows = selfcheck.check_study("memfs", S, pub(), cluster_section)
    df = pd.DataFrame([r.__dict__ for r in rows])
    assert (df.status == selfcheck.FAIL).sum() == 0, df[df.status == selfcheck.FAIL][["claim", "perturbation", "why"]]
    claims_ = df[df.perturbation == ""]
    reproduced = set(claims_[claims_.verdict == "reproduced"].claim)
    # Table 2.1's relations and the text's factors on it (18), Table 2.3 (W1, W3) and 'only about 18 %' (W8a)
    assert len(reproduced) == 21 and {"W1", "W3", "W8a", "table21-n1-read-1GbE", "table21-remote-factor-IPoIB",
                                      "table21-remote-degradation-factor-1GbE"} <= reproduced, sorted(reproduced)
    pert = df[df.perturbation != ""]
    assert len(pert) == 22 and (pert.flipped == "yes").all()
    assert set(pert.claim) == reproduced


@pytest.mark.parametrize("cid,factor,metric,net,design", [
    ("table21-create-lower-on-1GbE-memfs", 1.01, "create_rate", "1GbE", "memfs"),        # 1.6 % -> 0.6 %: still lower
    ("table21-memfs-open-above-create-IPoIB", 1.5, "create_rate", "IPoIB", "memfs"),     # x2.76 -> x1.84 >= 1.79
    ("table21-open-locality-above-memfs-IPoIB", 0.62, "open_rate", "IPoIB", "locality"),  # x3.62 -> x2.24 >= 2.18
])
def test_a_perturbation_inside_the_tolerance_does_not_flip(cluster_section, cid, factor, metric, net, design):
    inputs = S.paper_inputs(pub(), cluster_section)
    moved = S._scale(factor, metric=metric, network=net, design=design)(copy.deepcopy(inputs))
    assert {c.claim_id: c for c in S.claims(moved, cluster_section)}[cid].verdict == "reproduced"
