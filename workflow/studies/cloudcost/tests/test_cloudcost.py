"""The cloud-vs-on-premises cost study (paper 002, Section 5) end to end: the break-evens of all three
tiers come from the config, a changed price or model assumption moves them, and every claim builder
fails on data that contradicts the paper."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import yaml

from repro import claims as rclaims
from repro import config as rconfig
from repro import published as pubvals
from repro.testing import REPO, claims_table
from studies.cloudcost import analyze, model

PUBLISHED = REPO / "workflow/studies/cloudcost/published.csv"
TIERS = ("budget", "standard", "high_performance")


def cc_config(**changes) -> dict:
    """The cloudcost section of config/config.yaml, validated against the study's schema only."""
    raw = rconfig.deep_merge(yaml.safe_load((REPO / "config/config.yaml").read_text())["cloudcost"], changes)
    schema = {"type": "object", "properties": {"cloudcost": rconfig.study_schema("cloudcost")}}
    return rconfig.validate({"cloudcost": raw}, schema=schema)["cloudcost"]


def build(cfg: dict, pub: pd.DataFrame | None = None):
    rec, series = model.run(cfg)
    series = series.reset_index(drop=True)
    inputs = model.inputs_table(cfg)
    pub = pubvals.load(PUBLISHED) if pub is None else pub
    return rec, series, pub, {c.claim_id: c for c in analyze.build_claims(rec, series, inputs, pub, "be.csv")}


def expected_series(cfg: dict, tier: str, m: int) -> tuple[float, float]:
    """Cumulative (on-premises, cloud) cost after month m, recomputed from the config alone."""
    mod = {k: v["value"] for k, v in cfg["onprem"]["model"].items()}
    cloud_month = sum(r["quantity"] * r["unit_price"] for s in cfg["cloud"]["services"].values() for r in s.values())
    t = cfg["onprem"]["tiers"][tier]
    hw = t["servers"]["count"] * t["servers"]["unit_price"] + t["network"]["value"] + t["storage"]["value"]
    capex = hw + t["facilities"]["value"]
    watts = t["servers"]["count"] * t["power_w"]["server_each"] + t["power_w"]["network"] + t["power_w"]["cooling"]
    base = (watts * mod["hours_per_month"] / 1000 * t["electricity_per_kwh"]["value"]
            + t["staff_hours_per_month"]["value"] * t["staff_wage_per_hour"]["value"]
            + t["licenses_per_month"]["value"])
    prov = (t["maintenance_rate_per_year"]["value"] * hw / 12
            + (hw / (12 * t["depreciation_years"]["value"]) if mod["depreciation_in_opex"] else 0))
    return capex + base * m + prov * max(0, m - mod["provisions_start_month"] + 1), cloud_month * m


def test_cloudcost_every_tier_comes_from_the_config(snake, workspace):
    snake("cloudcost", "--profile", "profiles/local")
    cfg = rconfig.validate(yaml.safe_load((workspace / "config/config.yaml").read_text()))["cloudcost"]
    series = pd.read_csv(workspace / "results/cloudcost/raw/series.csv")
    be = pd.read_csv(workspace / "results/cloudcost/tables/break_even.csv").set_index("tier")
    assert sorted(be.index) == sorted(TIERS)
    for tier in TIERS:
        for m in (1, 12, 13, 36):
            own, cloud = expected_series(cfg, tier, m)
            got = series[(series.option == f"on-premises {tier}") & (series.month == m)].cumulative_cost.iloc[0]
            assert math.isclose(got, own, rel_tol=1e-9), (tier, m)
            got_cloud = series[(series.option == "cloud") & (series.month == m)].cumulative_cost.iloc[0]
            assert math.isclose(got_cloud, cloud, rel_tol=1e-9)
        first = next((m for m in range(1, 37) if expected_series(cfg, tier, m)[0] < expected_series(cfg, tier, m)[1]),
                     None)
        assert (pd.isna(be.break_even_month[tier]) if first is None else be.break_even_month[tier] == first), tier
    assert pd.isna(be.break_even_month["high_performance"]) and be.projected_break_even_month["high_performance"] > 36
    assert set(be.published_cheaper_beyond_month) == {12}  # from published.csv
    cl = claims_table(workspace, "cloudcost").set_index("claim_id")
    assert len(cl) == 12 and (cl.published != "").all()
    assert cl.verdict["onprem-cheaper-after-year-1-standard"] == "reproduced"
    assert cl.verdict["onprem-cheaper-after-year-1-budget"] == "reproduced"
    assert cl.verdict["onprem-cheaper-after-year-1-high_performance"] == "not reproduced"
    assert cl.reproduced["onprem-cheaper-after-year-1-high_performance"].startswith("never cheaper within 36 months")
    for tier in TIERS:
        assert cl.verdict[f"capex-first-{tier}"] == "reproduced"
        assert cl.verdict[f"opex-rises-after-year-1-{tier}"] == "informative"  # a model property, never "reproduced"
        assert "model property" in cl.tolerance[f"opex-rises-after-year-1-{tier}"]
    assert cl.note.str.contains("inputs are assumptions").all()
    inputs = pd.read_csv(workspace / "results/cloudcost/tables/inputs.csv")
    assert inputs.source.notna().all() and len(inputs) > 40
    assert set(inputs[inputs.tier == "(all)"].item) == {"model.hours_per_month", "model.provisions_start_month",
                                                        "model.depreciation_in_opex"}
    assert (workspace / "results/cloudcost/figures/figure7.png").stat().st_size > 10_000


def test_cloudcost_smaller_cloud_bill_moves_the_break_even(snake, workspace):
    overlay = workspace / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({"cloudcost": {"cloud": {"services": {"fsx_lustre": {"ssd_storage": {
        "quantity": 2000, "unit": "GB-month", "unit_price": 0.168, "source": "smaller (test)"}}}}}}))
    snake("cloudcost", "--profile", "profiles/local", "--configfile", "config/local.yaml", str(overlay))
    be = pd.read_csv(workspace / "results/cloudcost/tables/break_even.csv").set_index("tier")
    assert be.break_even_month["standard"] > 11  # a smaller cloud bill moves the break-even later


def test_cloudcost_model_assumptions_come_from_the_config(snake, workspace):
    """provisions_start_month, hours_per_month and depreciation_in_opex are config inputs: changed, they move
    the series, and the step that is no longer after the paper's first year fails its claim."""
    overlay = workspace / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({"cloudcost": {"onprem": {"model": {
        "hours_per_month": {"value": 365, "source": "half the month (test)"},
        "provisions_start_month": {"value": 7, "source": "half a year (test)"},
        "depreciation_in_opex": {"value": False, "source": "cash-flow view (test)"}}}}}))
    snake("cloudcost", "--profile", "profiles/local", "--configfile", "config/local.yaml", str(overlay))
    cfg = rconfig.validate(rconfig.deep_merge(yaml.safe_load((workspace / "config/config.yaml").read_text()),
                                              yaml.safe_load(overlay.read_text())))["cloudcost"]
    series = pd.read_csv(workspace / "results/cloudcost/raw/series.csv")
    for m in (6, 7, 36):
        got = series[(series.option == "on-premises standard") & (series.month == m)].cumulative_cost.iloc[0]
        assert math.isclose(got, expected_series(cfg, "standard", m)[0], rel_tol=1e-9), m
    cl = claims_table(workspace, "cloudcost").set_index("claim_id")
    for tier in TIERS:
        assert cl.verdict[f"opex-rises-after-year-1-{tier}"] == "not reproduced"
        assert cl.reproduced[f"opex-rises-after-year-1-{tier}"].startswith("steps up in month 7")
    inputs = pd.read_csv(workspace / "results/cloudcost/tables/inputs.csv").set_index("item")
    assert inputs.value["model.provisions_start_month"] == "7" and inputs.value["model.hours_per_month"] == "365"


def test_cloudcost_missing_model_assumption_fails_at_start(snake, workspace):
    overlay = workspace / "overlay.yaml"
    overlay.write_text("cloudcost:\n  onprem:\n    model:\n      hours_per_month: {value: 0, source: x}\n")
    proc = snake("-n", "cloudcost", "--profile", "profiles/local", "--configfile", "config/local.yaml",
                 str(overlay), check=False, timeout=120)
    assert proc.returncode != 0
    assert "cloudcost.onprem.model.hours_per_month.value: 0 is less than or equal to the minimum" in (
        proc.stderr + proc.stdout)


# ---------------------------------------------------------------------------
# each claim builder on data that contradicts the paper (no Snakemake: the builders alone)
# ---------------------------------------------------------------------------
def test_claims_on_the_configured_inputs():
    _, _, _, got = build(cc_config())
    assert len(got) == 12
    assert {got[f"opex-rises-after-year-1-{t}"].verdict for t in TIERS} == {rclaims.INFO}
    assert got["onprem-cheaper-after-year-1-high_performance"].verdict == rclaims.NOT_REPRODUCED


def test_capex_first_fails_without_capex():
    free = {"servers": {"count": 0, "unit_price": 0, "source": "t"}, "network": {"value": 0, "source": "t"},
            "storage": {"value": 0, "source": "t"}, "facilities": {"value": 0, "source": "t"}}
    _, series, pub, got = build(cc_config(onprem={"tiers": {"budget": free}}))
    assert got["capex-first-budget"].verdict == rclaims.NOT_REPRODUCED
    assert got["capex-first-standard"].verdict == rclaims.REPRODUCED


@pytest.mark.parametrize("changes, reproduced", [
    ({"onprem": {"model": {"provisions_start_month": {"value": 7, "source": "t"}}}}, "steps up in month 7"),
    ({"onprem": {"model": {"provisions_start_month": {"value": 25, "source": "t"}}}}, "steps up in month 25"),
    ({"onprem": {"model": {"depreciation_in_opex": {"value": False, "source": "t"}},
                 "tiers": {"standard": {"maintenance_rate_per_year": {"value": 0, "source": "t"}}}}},
     "no step up in the monthly cost"),
])
def test_rise_after_year_1_fails_when_the_model_lacks_it(changes, reproduced):
    _, _, _, got = build(cc_config(**changes))
    c = got["opex-rises-after-year-1-standard"]
    assert c.verdict == rclaims.NOT_REPRODUCED and c.reproduced.startswith(reproduced)


def test_cheaper_beyond_12_months_fails_on_contradicting_series():
    rec, series, pub, got = build(cc_config())
    assert got["onprem-cheaper-after-year-1-standard"].verdict == rclaims.REPRODUCED
    # dearer again from month 20 on: no longer cheaper in every month beyond 12
    sel = (series.option == "on-premises standard") & (series.month >= 20)
    series.loc[sel, "cumulative_cost"] += 1e6
    c = analyze.claim_cheaper_beyond(series, rec, "standard", pub, "be.csv", "")
    assert c.verdict == rclaims.NOT_REPRODUCED and c.reproduced.startswith("dearer in 17 of months 13-36")
    # cheaper only from month 14 on: month 13 is not beyond the break-even
    rec, series, pub, _ = build(cc_config())
    sel = (series.option == "on-premises standard") & (series.month <= 13)
    series.loc[sel, "cumulative_cost"] += 1e6
    c = analyze.claim_cheaper_beyond(series, rec, "standard", pub, "be.csv", "")
    assert c.verdict == rclaims.NOT_REPRODUCED and c.reproduced == "dearer in 1 of months 13-36 (first: 13)"


def test_cheaper_beyond_fails_with_a_cheaper_cloud():
    """Every cloud price a tenth: the cloud bill (1,312 USD/month) is below even the budget tier's OpEx."""
    services = cc_config()["cloud"]["services"]
    tenth = {s: {r: {**v, "unit_price": v["unit_price"] / 10} for r, v in res.items()} for s, res in services.items()}
    _, _, _, got = build(cc_config(cloud={"services": tenth}))
    for tier in TIERS:
        assert got[f"onprem-cheaper-after-year-1-{tier}"].verdict == rclaims.NOT_REPRODUCED, tier


def test_the_papers_months_come_from_published_csv():
    """The 12 months are read from published.csv: a paper that said 'beyond 3 months' fails the standard tier
    (cheaper only from month 11), and one that said the rise comes after 6 months fails the model's step."""
    pub = pubvals.load(PUBLISHED)
    pub.loc[pub.quantity == analyze.Q_CHEAPER, ["value", "value_num"]] = ["3", 3]
    pub.loc[pub.quantity == analyze.Q_RISE, ["value", "value_num"]] = ["6", 6]
    _, _, _, got = build(cc_config(), pub)
    assert got["onprem-cheaper-after-year-1-standard"].verdict == rclaims.NOT_REPRODUCED
    assert got["onprem-cheaper-after-year-1-budget"].verdict == rclaims.REPRODUCED  # cheaper from month 4
    assert got["opex-rises-after-year-1-standard"].verdict == rclaims.NOT_REPRODUCED
    assert got["break-even-month-standard"].published == "after 3"


def test_cheaper_beyond_is_not_run_when_the_horizon_ends_first():
    _, _, _, got = build(cc_config(horizon_months=12))
    assert got["onprem-cheaper-after-year-1-standard"].verdict == rclaims.NOT_RUN


def test_break_even_month_is_informative_only():
    """No verdict to fail (every price is assumed): the builder reports the month, or none within the horizon."""
    _, _, _, got = build(cc_config())
    assert (got["break-even-month-standard"].verdict, got["break-even-month-standard"].reproduced) == (rclaims.INFO, 11)
    assert got["break-even-month-high_performance"].reproduced == "none within 36 months"
