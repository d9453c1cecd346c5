"""The TCO paper reproduces itself (repro.selfcheck): the model built from published.csv alone -- the
cost items of Section V's text (150,000 EUR software and its third, 30 EUR ECU, 2 EUR/month OTA,
90,000 EUR and an equal amount, 1.49 + 1 EUR/month), the 8.3-year life cycle and the fleets of
Figure 2 -- and the study's own claim builders (analyze.build_claims) on its raw record: Table I's
sums, the two TCOs, the break-evens and Section VI/VII's statements. Each perturbation moves one of
those published inputs past the claim's tolerance."""

from __future__ import annotations

import copy
from fractions import Fraction
from types import SimpleNamespace

import pandas as pd

from repro import published as pubvals
from studies.tco import analyze, model

PATHS = SimpleNamespace(table1="results/tco/tables/table1.csv", inputs="results/tco/tables/inputs.csv",
                        lifecycle="results/tco/tables/tco_lifecycle.csv",
                        break_even="results/tco/tables/break_even.csv")


def _item(pub, quantity, platform):
    row = pubvals.lookup(pub, quantity=quantity, platform=platform)
    if row is None:
        raise KeyError(f"tco published.csv: no {quantity!r} for {platform!r}")
    return {"value": float(row.value), "source": str(row.source)}


def _fraction(pub, quantity, platform, of):
    row = pubvals.lookup(pub, quantity=f"{quantity} fraction", platform=platform)
    f = Fraction(str(row.value))
    return {"fraction_of": of, "numerator": f.numerator, "denominator": f.denominator, "source": str(row.source)}


def paper_inputs(published: pd.DataFrame, cfg: dict) -> dict:
    """The model's section from the paper's numbers alone (cfg gives only the rules: currency, months
    per year, the horizon and the rounding of a break-even), and the published table."""
    fleets = sorted({int(f) for f in published.fleet if str(f).strip()})
    section = {
        "currency": cfg["currency"], "months_per_year": cfg["months_per_year"], "horizon_months": cfg["horizon_months"],
        "break_even_rounding": cfg["break_even_rounding"], "fleet_sizes": fleets,
        "lifecycle_years": pubvals.number(published, quantity="lifecycle"),
        "platforms": {
            "vehicle": {
                "development": {"software": _item(published, "C_dev_software", "vehicle"),
                                "hardware": _fraction(published, "C_dev_hardware", "vehicle", "software")},
                "deployment_per_vehicle": {"ecu": _item(published, "C_depl_ecu", "vehicle")},
                "execution_per_vehicle_month": {"ota_updates": _item(published, "C_exe_ota_updates", "vehicle")},
            },
            "cloud": {
                "development": {"software": _item(published, "C_dev_software", "cloud"),
                                "introduction_purchasing_migration": _fraction(
                                    published, "C_dev_introduction_purchasing_migration", "cloud", "software")},
                "deployment_per_vehicle": {},   # eq. (9): "negligible as they are converted into operating expenses"
                "execution_per_vehicle_month": {"csp": _item(published, "C_exe_csp", "cloud"),
                                                "operation_usage_updates": _item(
                                                    published, "C_exe_operation_usage_updates", "cloud")},
            },
        },
    }
    return {"model": section, "published": published}


def claims(inputs: dict, cfg: dict):
    rec, _ = model.run(inputs["model"])
    pub = inputs["published"]
    be = analyze.break_even_table(rec, pub)
    return analyze.build_claims(rec, pub, be, PATHS, cfg)


def _set(platform, group, item, value):
    def fn(inputs):
        inputs["model"]["platforms"][platform][group][item]["value"] = value
        return inputs
    return fn


def _target(quantity, platform, value, fleet=""):
    """Move a published result (the claim's other side) instead of an input."""
    def fn(inputs):
        pub = copy.deepcopy(inputs["published"])
        sel = (pub.quantity == quantity) & (pub.platform == platform) & (pub.fleet == fleet)
        pub.loc[sel, "value"] = str(value)
        pub["value_num"] = pd.to_numeric(pub["value"], errors="coerce")
        inputs["published"] = pub
        return inputs
    return fn


V, C = "vehicle", "cloud"
PERTURB = [
    ("table1-vehicle-C_dev", "vehicle software 150,000 -> 150,100 EUR (C_dev +133.33)",
     _set(V, "development", "software", 150100)),
    ("table1-cloud-C_dev", "cloud software 90,000 -> 90,010 EUR (C_dev +20)",
     _set(C, "development", "software", 90010)),
    ("table1-cloud-C_exe", "operation/usage/updates 1.00 -> 1.01 EUR/month (2.50 vs Table I's 2.49)",
     _set(C, "execution_per_vehicle_month", "operation_usage_updates", 1.01)),
    ("tco-vehicle", "OTA updates 2.00 -> 2.01 EUR/month (+0.996 EUR over 99.6 months, band ±0.503)",
     _set(V, "execution_per_vehicle_month", "ota_updates", 2.01)),
    ("tco-cloud", "cloud price 1.49 -> 1.50 EUR/month (+0.996 EUR over 99.6 months, band ±0.503)",
     _set(C, "execution_per_vehicle_month", "csp", 1.50)),
    ("tco-cloud", "the paper's cloud TCO 180,247.92 -> 180,247.00 EUR (1.00 EUR from ours)",
     _target("TCO", C, "180247.00")),
    ("break-even-1000-without-dev", "ECU 30 -> 31 EUR (63 months)", _set(V, "deployment_per_vehicle", "ecu", 31)),
    ("break-even-5000-without-dev", "ECU 30 -> 31 EUR (63 months)", _set(V, "deployment_per_vehicle", "ecu", 31)),
    ("break-even-1000-with-dev", "vehicle software 150,000 -> 151,000 EUR (104 months)",
     _set(V, "development", "software", 151000)),
    ("break-even-5000-with-dev", "cloud software 90,000 -> 89,000 EUR (70 months)",
     _set(C, "development", "software", 89000)),
    ("fleet-size-earlier-break-even", "vehicle software 150,000 -> 120,000 EUR (vehicle C_dev below the cloud's: "
     "the larger fleet breaks even later)", _set(V, "development", "software", 120000)),
    ("break-even-1000-with-dev-near-lifespan", "cloud price 1.49 -> 1.40 EUR/month (125 months = 10.4 years)",
     _set(C, "execution_per_vehicle_month", "csp", 1.40)),
]
EXPECTED_CONTRADICTIONS: dict = {}
UNCHECKED: dict = {}
