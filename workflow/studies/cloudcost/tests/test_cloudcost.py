"""The cloud-vs-on-premises cost study (paper 002, Section 5) end to end: the break-even comes
from the config, and a changed price moves it."""

from __future__ import annotations

import math

import pandas as pd
import yaml

from repro import config as rconfig
from repro.testing import claims_table


def test_cloudcost_break_even_comes_from_the_config(snake, workspace):
    snake("cloudcost", "--profile", "profiles/local")
    cfg = rconfig.validate(yaml.safe_load((workspace / "config/config.yaml").read_text()))["cloudcost"]
    series = pd.read_csv(workspace / "results/cloudcost/raw/series.csv")
    cloud_month = sum(r["quantity"] * r["unit_price"] for s in cfg["cloud"]["services"].values() for r in s.values())
    t = cfg["onprem"]["tiers"]["standard"]
    hw = t["servers"]["count"] * t["servers"]["unit_price"] + t["network"]["value"] + t["storage"]["value"]
    capex = hw + t["facilities"]["value"]
    watts = t["servers"]["count"] * t["power_w"]["server_each"] + t["power_w"]["network"] + t["power_w"]["cooling"]
    base = (watts * 730 / 1000 * t["electricity_per_kwh"]["value"]
            + t["staff_hours_per_month"]["value"] * t["staff_wage_per_hour"]["value"]
            + t["licenses_per_month"]["value"])
    prov = t["maintenance_rate_per_year"]["value"] * hw / 12 + hw / (12 * t["depreciation_years"]["value"])
    for m in (1, 12, 13, 36):
        onprem = capex + base * m + prov * max(0, m - 12)
        got = series[(series.option == "on-premises standard") & (series.month == m)].cumulative_cost.iloc[0]
        assert math.isclose(got, onprem, rel_tol=1e-9), m
        got_cloud = series[(series.option == "cloud") & (series.month == m)].cumulative_cost.iloc[0]
        assert math.isclose(got_cloud, cloud_month * m, rel_tol=1e-9)
    first = next(m for m in range(1, 37) if capex + base * m + prov * max(0, m - 12) < cloud_month * m)
    be = pd.read_csv(workspace / "results/cloudcost/tables/break_even.csv").set_index("tier")
    assert be.break_even_month["standard"] == first
    cl = claims_table(workspace, "cloudcost")
    assert set(cl.kind) == {"shape", "info"}
    assert "assumptions" in cl.note.iloc[0]
    inputs = pd.read_csv(workspace / "results/cloudcost/tables/inputs.csv")
    assert inputs.source.notna().all() and len(inputs) > 40
    assert (workspace / "results/cloudcost/figures/figure7.png").stat().st_size > 10_000


def test_cloudcost_smaller_cloud_bill_moves_the_break_even(snake, workspace):
    overlay = workspace / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({"cloudcost": {"cloud": {"services": {"fsx_lustre": {"ssd_storage": {
        "quantity": 2000, "unit": "GB-month", "unit_price": 0.168, "source": "smaller (test)"}}}}}}))
    snake("cloudcost", "--profile", "profiles/local", "--configfile", "config/local.yaml", str(overlay))
    be = pd.read_csv(workspace / "results/cloudcost/tables/break_even.csv").set_index("tier")
    assert be.break_even_month["standard"] > 11  # a smaller cloud bill moves the break-even later
