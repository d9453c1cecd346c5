"""mpifuse on the paper's own numbers (issue 28): the study's claims on a tidy table built from
published.csv alone (Table I, Section V's 10 MB times, Figure 4's text, Figure 5's 5 s) at cluster
scale -- every judged claim reproduced but one, which the paper contradicts itself on (the FUSE
overhead 'the same for any number of nodes' against its own Table I), and every perturbation flips.
The cluster tolerances come from the paper: a 0 % gain no longer passes the abstract's 8 %, a
2.7x FUSE overhead no longer passes 'the same'."""

from __future__ import annotations

import copy

import pandas as pd
import pytest
from repro import claims as C
from repro import config as rc
from repro import published as pubvals
from repro import selfcheck
from repro.testing import REPO

from studies.mpifuse import selfcheck as sc

PUBLISHED = REPO / "workflow/studies/mpifuse/published.csv"


@pytest.fixture(scope="module")
def section():
    return rc.load(REPO / "config/config.yaml")["mpifuse"]


@pytest.fixture(scope="module")
def rows(section):
    return pd.DataFrame([r.__dict__ for r in selfcheck.check_study("mpifuse", sc, pubvals.load(PUBLISHED), section)])


def _judge(section, scale):
    """The claims of the paper's numbers at a scale."""
    inputs = sc.paper_inputs(pubvals.load(PUBLISHED), section)
    return {c.claim_id: c for c in sc.claims(inputs, C.at_scale(section, scale))}


def test_the_paper_reproduces_itself_at_cluster_scale(rows):
    assert (rows.status == selfcheck.OK).all(), rows[rows.status != selfcheck.OK].to_dict("records")
    claims = rows[rows.perturbation == ""]
    assert set(claims.scale) == {"cluster"}
    judged = claims[claims.verdict.isin([C.REPRODUCED, C.NOT_REPRODUCED])]
    assert (judged.verdict == C.NOT_REPRODUCED).sum() == 1
    (contra,) = judged[judged.verdict == C.NOT_REPRODUCED].itertuples()
    assert contra.claim == "fuse_overhead_independent_of_nodes" and "x2.68" in contra.why
    pert = rows[rows.perturbation != ""]
    assert (pert.flipped == "yes").all() and len(pert) >= 40
    # every reproduced shape/value claim has a perturbation (the engine fails otherwise)
    assert set(judged.claim) <= set(pert.claim)


def test_the_papers_table_I_is_what_the_claims_read(section):
    got = _judge(section, "cluster")
    assert got["ratio_osr_22"].reproduced == pytest.approx(24 / (23.094 / 21.408), abs=0.01)
    assert got["ratio_bcast_8"].reproduced == pytest.approx(24 / (72.505 / 21.408), abs=0.01)
    assert got["penalty_osr_8pct"].reproduced == pytest.approx(7.9, abs=0.05)
    assert got["penalty_bcast_250pct"].reproduced == pytest.approx(238.7, abs=0.05)
    assert got["fuse_overhead_independent_of_nodes"].reproduced.startswith("4.100 s at n=1, 10.999 s at n=24")


def test_cluster_tolerances_come_from_the_paper(section):
    """The same data judged at two scales: a FUSE overhead 1.5x from 1 to 24 nodes is 'the same' on two
    shared cores, not on a cluster; a penalty of 0 % is 'around 8 %' at neither (the old +-8 points let
    it pass)."""
    same = {("scratch", "passthrough", 24, "1GB"): 1.427 + 4.100 * 1.5}
    for scale, verdict in (("local", C.REPRODUCED), ("cluster", C.NOT_REPRODUCED)):
        inputs = sc.paper_inputs(pubvals.load(PUBLISHED), section)
        inputs["times"].update(same)
        got = {x.claim_id: x for x in sc.claims(inputs, C.at_scale(section, scale))}
        cl = got["fuse_overhead_independent_of_nodes"]
        assert (cl.verdict, cl.scale) == (verdict, scale), (scale, cl.reproduced, cl.tolerance)
        assert cl.tolerance_why == C.tol(C.at_scale(section, scale), "claims.node_band").why
    inputs = sc.paper_inputs(pubvals.load(PUBLISHED), section)
    inputs["times"][("home", "osr", 24, "1GB")] = 21.408   # no penalty at all
    for scale in C.SCALES:
        got = {x.claim_id: x for x in sc.claims(copy.deepcopy(inputs), C.at_scale(section, scale))}
        assert got["penalty_osr_8pct"].verdict == C.NOT_REPRODUCED, scale


def test_cluster_reasons_cite_the_paper_not_this_machine(section):
    for key in section["claims"]:
        t = C.tol(C.at_scale(section, "cluster"), f"claims.{key}")
        assert not any(w in t.why.lower() for w in C.LOCAL_WORDS), (key, t.why)
    # and the check refuses one that does
    bad = copy.deepcopy(section)
    bad["claims"]["node_band"]["cluster"]["why"] = "on one host the nodes share 2 cores"
    with pytest.raises(C.ToleranceError, match=r"claims\.node_band\.cluster\.why: cites the local machine"):
        sc.claims(sc.paper_inputs(pubvals.load(PUBLISHED), bad), C.at_scale(bad, "cluster"))


def test_the_cluster_notes_do_not_describe_one_host(section):
    got = _judge(section, "cluster")
    for c in got.values():
        assert "one host" not in c.note and "emulated" not in c.note, (c.claim_id, c.note)
