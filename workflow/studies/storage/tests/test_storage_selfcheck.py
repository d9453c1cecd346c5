"""The storage paper reproduces itself (issue 28 step 2, repro.selfcheck): the claims with published
inputs ("over 20 %", "an average of 30 %", the peak) reproduce at cluster scale on a table built from
published.csv alone, each perturbation past the cluster tolerance flips its claim, every other claim
says which number the text lacks; and the selfcheck reads published.csv (a changed percentage moves it)."""

from __future__ import annotations

import copy

import pandas as pd
import yaml

from repro import claims as C
from repro import config as rconfig
from repro import published as pubvals
from repro import selfcheck
from studies.storage import selfcheck as st_sc

from .storage_testlib import REPO

PUB = REPO / "workflow/studies/storage/published.csv"


def _section() -> dict:
    cfg = yaml.safe_load((REPO / "config/config.yaml").read_text())["storage"]
    schema = {"type": "object", "properties": {"storage": rconfig.study_schema("storage")}}
    return rconfig.validate({"storage": cfg}, schema=schema)["storage"]


def _run(pub) -> pd.DataFrame:
    return pd.DataFrame([r.__dict__ for r in selfcheck.check_study("storage", st_sc, pub, _section())])


def test_the_storage_selfcheck_passes_and_every_judged_claim_flips():
    df = _run(pubvals.load(PUB))
    assert (df.status == "ok").all(), df[df.status != "ok"][["claim", "perturbation", "why"]].to_string()
    claims = df[df.perturbation == ""]
    assert set(claims[claims.verdict == C.REPRODUCED].claim) == {
        "cosbench_throughput_leader", "cosbench_avg_res_time_leader", "cosbench_advantage_over_ceph",
        "mdtest_lustre_leads", "mdtest_lustre_30pct"}
    assert (claims.scale == "cluster").all()
    pert = df[df.perturbation != ""]
    assert len(pert) == 7 and (pert.flipped == "yes").all()
    grows = claims[claims.claim == "mdtest_advantage_grows"].iloc[0]
    assert grows.verdict == C.NOT_RUN and "task counts" in grows.why


def test_the_selfcheck_reads_the_published_percentages():
    pub = pubvals.load(PUB)
    moved = copy.deepcopy(pub)
    moved.loc[moved["id"] == "mdtest_advantage", "value"] = "15"   # the paper saying 15 % would not reproduce
    df = _run(moved)
    row = df[(df.claim == "mdtest_lustre_30pct") & (df.perturbation == "")].iloc[0]
    assert row.verdict == C.NOT_REPRODUCED and row.status == "FAIL"
