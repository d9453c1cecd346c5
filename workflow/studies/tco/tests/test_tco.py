"""The TCO study (paper 000) end to end: numbers match the paper to the cent and month, come
from the config (a changed parameter changes them, derived inputs included), and the tables
equal the raw model file. Every claim builder fails on data that contradicts the paper."""

from __future__ import annotations

import copy
import json
import math
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from repro import claims as rclaims
from repro import config as rconfig
from repro import published as pubvals
from repro.testing import REPO, claims_table, raw_metric
from studies.tco import analyze, model

PUBLISHED = REPO / "workflow/studies/tco/published.csv"
PATHS = SimpleNamespace(table1="t1.csv", inputs="in.csv", lifecycle="l.csv", break_even="be.csv")


def tco_config(**changes) -> dict:
    """The tco section of config/config.yaml, validated against the study's schema only."""
    raw = yaml.safe_load((REPO / "config/config.yaml").read_text())["tco"]
    raw = rconfig.deep_merge(raw, changes)
    schema = {"type": "object", "properties": {"tco": rconfig.study_schema("tco")}}
    return rconfig.validate({"tco": raw}, schema=schema)["tco"]


INPUT_ROWS = ["table1-vehicle-C_depl", "table1-vehicle-C_exe", "table1-cloud-C_depl", "cloud-csp-per-vehicle-month"]


def build(cfg: dict, scale: str = "cluster"):
    rec, _ = model.run(cfg)
    pub = pubvals.load(PUBLISHED)
    be = analyze.break_even_table(rec, pub)
    return rec, pub, be, {c.claim_id: c for c in analyze.build_claims(rec, pub, be, PATHS,
                                                                        rclaims.at_scale(cfg, scale))}


def item(i, group):
    if "fraction_of" in i:
        return item(group[i["fraction_of"]], group) * i.get("numerator", 1) / i.get("denominator", 1)
    return i["value"] if "value" in i else i["per_hour"] * i["hours_per_month"] / i["shared_by"]


def test_tco_matches_the_paper_to_the_cent_and_month(snake, workspace):
    snake("tco", "--profile", "profiles/local")
    cl = claims_table(workspace, "tco")
    assert len(cl) == 15
    # the inputs taken from the paper are shown, not judged against themselves (issue 28)
    inputs = cl.set_index("claim_id").loc[INPUT_ROWS]
    assert (inputs.verdict == "informative").all() and inputs.note.str.startswith("taken from the paper").all()
    judged = cl[~cl.claim_id.isin(INPUT_ROWS)]
    assert len(judged) == 11 and (judged.verdict == "reproduced").all(), judged[judged.verdict != "reproduced"]
    assert (cl.published != "").all() and set(cl.scale) == {"local"}
    assert (cl[cl.kind == "value"].tolerance_why != "").all()
    life = pd.read_csv(workspace / "results/tco/tables/tco_lifecycle.csv").set_index("platform")
    assert f"{life.TCO['vehicle']:.2f}" == "200229.20"
    # from the paper's printed 1.49 + 1 EUR/month: 180,248.00, 8 cents off its 180,247.92 (an unrounded
    # price it does not print), inside half a cent per month over 99.6 months
    assert f"{life.TCO['cloud']:.2f}" == "180248.00"
    tco_cloud = cl.set_index("claim_id").loc["tco-cloud"]
    assert (tco_cloud.verdict, tco_cloud.tolerance) == ("reproduced", "±0.503 EUR")
    be = pd.read_csv(workspace / "results/tco/tables/break_even.csv")
    got = {(r.fleet, bool(r.with_dev)): int(r.break_even_months) for r in be.itertuples()}
    assert got == {(1000, False): 61, (5000, False): 61, (1000, True): 102, (5000, True): 69}
    near = cl.set_index("claim_id").loc["break-even-1000-with-dev-near-lifespan"]
    assert (near.published, near.reproduced, near.unit, near.tolerance) == ("8.3", "8.5", "years", "±5 %")
    # the cloud price is the paper's 1.49 EUR as printed (no back-solved hourly price)
    inputs = pd.read_csv(workspace / "results/tco/tables/inputs.csv").set_index(["platform", "item"])
    csp = inputs.loc[("cloud", "csp")]
    assert csp.formula == "given" and csp.published == 1.49 and csp.value == 1.49
    assert inputs.loc[("vehicle", "hardware")].formula == "1/3 x software (150,000 EUR)"
    assert (workspace / "results/tco/figures/figure2.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tco_tables_equal_raw_and_an_independent_recomputation(snake, workspace):
    snake("tco", "--profile", "profiles/local")
    raw = json.loads((workspace / "results/tco/raw/model.json").read_text())
    cfg = tco_config()
    months = cfg["lifecycle_years"] * cfg["months_per_year"]
    plat = cfg["platforms"]
    tot = {p: {k: sum(item(i, plat[p][k]) for i in plat[p][k].values())
               for k in ("development", "deployment_per_vehicle", "execution_per_vehicle_month")}
           for p in ("vehicle", "cloud")}
    t1 = pd.read_csv(workspace / "results/tco/tables/table1.csv").set_index("platform")
    for p in ("vehicle", "cloud"):
        expect = (tot[p]["development"] + tot[p]["deployment_per_vehicle"]
                  + tot[p]["execution_per_vehicle_month"] * months)
        assert math.isclose(raw_metric(raw, "TCO_lifecycle", platform=p), expect, rel_tol=1e-12)
        assert t1.C_dev[p] == raw_metric(raw, "C_dev", platform=p)
        assert t1.C_exe_per_month[p] == raw_metric(raw, "C_exe", platform=p)
    tidy = pd.read_csv(workspace / "results/tco/measurements.csv")
    assert set(tidy.status) == {"ok"} and set(tidy.system_kind) == {"model"}
    assert len(tidy) == len(raw["metrics"])
    inputs = pd.read_csv(workspace / "results/tco/tables/inputs.csv")
    assert len(inputs) == sum(len(g) for p in plat.values() for k, g in p.items() if isinstance(g, dict))


def test_tco_changed_parameters_change_results(snake, workspace):
    overlay = workspace / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({"tco": {
        "fleet_sizes": [2000],
        "platforms": {"cloud": {"execution_per_vehicle_month": {"csp": {
            "value": 0.0408 * 730 / 10, "source": "doubled A0 price (test)"}}}}}}))
    snake("tco", "--profile", "profiles/local", "--configfile", "config/local.yaml", str(overlay))
    be = pd.read_csv(workspace / "results/tco/tables/break_even.csv")
    assert be.fleet.tolist() == [2000, 2000]
    # independent: cloud exe = 0.0408*730/10 + 1 = 3.9784; with dev: (20000/2000 + 30) / (3.9784 - 2)
    exact = (20000 / 2000 + 30) / (0.0408 * 730 / 10 + 1 - 2)
    row = be[be.with_dev].iloc[0]
    assert math.isclose(row.exact_months, exact, rel_tol=1e-12) and row.break_even_months == math.floor(exact)
    life = pd.read_csv(workspace / "results/tco/tables/tco_lifecycle.csv").set_index("platform")
    assert math.isclose(life.TCO["cloud"], 180000 + 3.9784 * 99.6, abs_tol=0.006)
    cl = claims_table(workspace, "tco").set_index("claim_id")
    assert cl.verdict["tco-cloud"] == "not reproduced"  # no longer the paper's number
    # an input row: the configuration's price beside the paper's, no verdict, and it says they differ
    csp = cl.loc["cloud-csp-per-vehicle-month"]
    assert (csp.verdict, csp.reproduced, csp.published) == ("informative", "2.9784", "1.49")
    assert "set in the configuration to 2.9784" in csp.note and "the paper's value is 1.49" in csp.note


def test_tco_changed_software_cost_moves_the_derived_inputs(snake, workspace):
    """Hardware = 1/3 of the software and migration = the software amount are formulas: a changed
    software cost moves them, C_dev, the TCOs and the break-evens."""
    overlay = workspace / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({"tco": {"platforms": {
        "vehicle": {"development": {"software": {"value": 300000, "source": "doubled (test)"}}},
        "cloud": {"development": {"software": {"value": 120000, "source": "changed (test)"}}}}}}))
    snake("tco", "--profile", "profiles/local", "--configfile", "config/local.yaml", str(overlay))
    inputs = pd.read_csv(workspace / "results/tco/tables/inputs.csv").set_index(["platform", "item"])
    assert inputs.value[("vehicle", "hardware")] == 100000
    assert inputs.value[("cloud", "introduction_purchasing_migration")] == 120000
    assert inputs.formula[("cloud", "introduction_purchasing_migration")] == "1/1 x software (120,000 EUR)"
    t1 = pd.read_csv(workspace / "results/tco/tables/table1.csv").set_index("platform")
    assert (t1.C_dev["vehicle"], t1.C_dev["cloud"]) == (400000, 240000)
    life = pd.read_csv(workspace / "results/tco/tables/tco_lifecycle.csv").set_index("platform")
    assert math.isclose(life.TCO["vehicle"], 400000 + 30 + 2 * 99.6, abs_tol=0.006)
    be = pd.read_csv(workspace / "results/tco/tables/break_even.csv").set_index(["fleet", "with_dev"])
    exact = (400000 - 240000 + 1000 * 30) / (1000 * (1.49 + 1 - 2))  # 387.8 months
    assert math.isclose(be.exact_months[(1000, True)], exact, rel_tol=1e-12)
    assert be.break_even_months[(1000, False)] == 61  # without C_dev nothing moves
    cl = claims_table(workspace, "tco").set_index("claim_id")
    for cid in ("table1-vehicle-C_dev", "table1-cloud-C_dev", "tco-vehicle", "tco-cloud",
                "break-even-1000-with-dev", "break-even-1000-with-dev-near-lifespan"):
        assert cl.verdict[cid] == "not reproduced", cid
    assert cl.verdict["break-even-1000-without-dev"] == "reproduced"


def test_tco_derived_input_naming_a_missing_item_fails_at_start(snake, workspace):
    overlay = workspace / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({"tco": {"platforms": {"vehicle": {"development": {"hardware": {
        "fraction_of": "softwar", "numerator": 1, "denominator": 3, "source": "typo (test)"}}}}}}))
    proc = snake("-n", "tco", "--profile", "profiles/local", "--configfile", "config/local.yaml", str(overlay),
                 check=False, timeout=120)
    assert proc.returncode != 0
    assert "tco.platforms.vehicle.development.hardware.fraction_of: no item 'softwar'" in proc.stderr + proc.stdout
    assert not (workspace / "results").exists()


# ---------------------------------------------------------------------------
# each claim builder on data that contradicts the paper (no Snakemake: the builders alone)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("scale", rclaims.SCALES)
def test_claims_hold_on_the_papers_inputs(scale):
    _, _, _, got = build(tco_config(), scale)
    assert len(got) == 15
    assert {cid for cid, c in got.items() if c.verdict == rclaims.INFO} == set(INPUT_ROWS)
    assert {c.verdict for cid, c in got.items() if cid not in INPUT_ROWS} == {rclaims.REPRODUCED}
    assert {c.scale for cid, c in got.items() if c.kind == "value"} == {scale}


def test_the_cloud_tco_is_not_back_solved():
    """The paper's cloud TCO from its printed monthly prices: 180,000 + (1.49 + 1) x 99.6 = 180,248.004,
    judged within half a cent per printed month (±0.503 EUR); an hourly A0 price that gives 180,247.92 to
    the cent is no longer in the configuration."""
    rec, _, _, got = build(tco_config())
    c = got["tco-cloud"]
    assert (c.reproduced, c.published, c.verdict) == (180248.0, 180247.92, rclaims.REPRODUCED)
    assert "99.6 months = 0.498 EUR" in c.tolerance_why
    csp = tco_config()["platforms"]["cloud"]["execution_per_vehicle_month"]["csp"]
    assert csp["value"] == 1.49 and "per_hour" not in csp
    # 2 cents more per month (1.51) moves it by 1.99 EUR: outside the band
    _, _, _, got = build(tco_config(platforms={"cloud": {"execution_per_vehicle_month": {"csp": {
        "value": 1.51, "source": "t"}}}}))
    assert got["tco-cloud"].verdict == rclaims.NOT_REPRODUCED


@pytest.mark.parametrize("changes, moved", [
    ({"platforms": {"vehicle": {"deployment_per_vehicle": {"ecu": {"value": 31, "source": "t"}}}}},
     "table1-vehicle-C_depl"),
    ({"platforms": {"vehicle": {"execution_per_vehicle_month": {"ota_updates": {"value": 2.01, "source": "t"}}}}},
     "table1-vehicle-C_exe"),
    ({"platforms": {"cloud": {"deployment_per_vehicle": {"sim": {"value": 0.01, "source": "t"}}}}},
     "table1-cloud-C_depl"),
    ({"platforms": {"cloud": {"execution_per_vehicle_month": {"csp": {"value": 1.5, "source": "t"}}}}},
     "cloud-csp-per-vehicle-month"),
])
def test_input_rows_show_a_changed_input_beside_the_paper(changes, moved):
    _, _, _, got = build(tco_config(**changes))
    c = got[moved]
    assert c.verdict == rclaims.INFO and "set in the configuration to" in c.note and "the paper's value is" in c.note


@pytest.mark.parametrize("changes, failing", [
    ({"platforms": {"vehicle": {"development": {"software": {"value": 151000, "source": "t"}}}}},
     ["table1-vehicle-C_dev", "tco-vehicle", "break-even-1000-with-dev"]),   # 5000 buses: 69.9 -> still 69
    ({"platforms": {"vehicle": {"deployment_per_vehicle": {"ecu": {"value": 31, "source": "t"}}}}},
     ["tco-vehicle", "break-even-1000-without-dev"]),
    ({"platforms": {"vehicle": {"execution_per_vehicle_month": {"ota_updates": {"value": 2.01, "source": "t"}}}}},
     ["tco-vehicle"]),
    ({"platforms": {"cloud": {"development": {"software": {"value": 90100, "source": "t"}}}}},
     ["table1-cloud-C_dev", "tco-cloud"]),
    ({"platforms": {"cloud": {"deployment_per_vehicle": {"sim": {"value": 0.6, "source": "t"}}}}},
     ["tco-cloud"]),
    ({"platforms": {"cloud": {"execution_per_vehicle_month": {"csp": {"value": 1.4965, "source": "t"}}}}},
     ["table1-cloud-C_exe", "tco-cloud", "break-even-1000-without-dev"]),
])
@pytest.mark.parametrize("scale", rclaims.SCALES)
def test_value_claim_builders_fail_on_other_inputs(changes, failing, scale):
    _, _, _, got = build(tco_config(**changes), scale)
    for cid in failing:
        assert got[cid].verdict == rclaims.NOT_REPRODUCED, (cid, got[cid].reproduced, got[cid].published)


def test_break_even_builder_fails_one_month_off():
    rec, pub, be, _ = build(tco_config())
    be.loc[(be.fleet == 5000) & be.with_dev, "break_even_months"] = 70
    got = {c.claim_id: c for c in analyze.claim_break_even(be, pub, "be.csv", rclaims.at_scale(tco_config(),
                                                                                              "cluster"))}
    assert got["break-even-5000-with-dev"].verdict == rclaims.NOT_REPRODUCED
    assert got["break-even-1000-with-dev"].verdict == rclaims.REPRODUCED


@pytest.mark.parametrize("m1000, m5000, holds", [(102, 69, True), (60, 70, False), (69, 69, False)])
def test_fleet_size_builder_fails_when_a_larger_fleet_breaks_even_no_sooner(m1000, m5000, holds):
    rec, pub, be, _ = build(tco_config())
    be.loc[(be.fleet == 1000) & be.with_dev, "break_even_months"] = m1000
    be.loc[(be.fleet == 5000) & be.with_dev, "break_even_months"] = m5000
    (c,) = analyze.claim_fleet_size(be, "be.csv")
    assert c.verdict == (rclaims.REPRODUCED if holds else rclaims.NOT_REPRODUCED)


@pytest.mark.parametrize("months, verdict", [
    (102, rclaims.REPRODUCED),       # the paper's 8.5 years vs 8.3
    (104, rclaims.REPRODUCED),       # 8.67 years: inside 8.3 +- 5 % (8.715)
    (105, rclaims.NOT_REPRODUCED),   # 8.75 years
    (69, rclaims.NOT_REPRODUCED),    # the 5,000 fleet's 5.75 years: not "nearly the lifespan"
    (None, rclaims.NOT_RUN),         # no break-even at all
])
def test_near_lifespan_builder_fails_far_from_the_bus_lifespan(months, verdict):
    rec, pub, be, _ = build(tco_config())
    sel = (be.fleet == 1000) & be.with_dev
    be.loc[sel, "break_even_months"] = float("nan") if months is None else months
    (c,) = analyze.claim_near_lifespan(rec, be, pub, "be.csv", rclaims.at_scale(tco_config(), "cluster"))
    assert c.verdict == verdict and c.published == 8.3


def test_near_lifespan_builder_fails_with_a_cheaper_cloud_platform():
    """Not just edited tables: a cloud price a quarter lower puts the break-even far past the bus's life."""
    changes = {"platforms": {"cloud": {"execution_per_vehicle_month": {"csp": {"value": 1.1175, "source": "t"}}}}}
    _, _, be, got = build(tco_config(**changes))
    c = got["break-even-1000-with-dev-near-lifespan"]
    assert c.verdict == rclaims.NOT_REPRODUCED and c.reproduced > 8.3 * 1.05


def test_derived_input_errors_name_the_key():
    cfg = copy.deepcopy(tco_config())
    cfg["platforms"]["cloud"]["development"]["x"] = {"fraction_of": "introduction_purchasing_migration",
                                                      "source": "t"}
    with pytest.raises(model.InputError, match=r"tco.platforms.cloud.development.x.fraction_of: "
                                               r"'introduction_purchasing_migration' is itself derived"):
        model.resolve(cfg)
