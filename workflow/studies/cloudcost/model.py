#!/usr/bin/env python3
"""Cloud vs on-premises cost model of paper 002, Section 5 (eqs. 1-12), month by month.

Cloud (AWS PAYG, eq. 1): C_cloud(m) = m * sum_i sum_n p_ni q_ni with
  FSx for Lustre (3): storage (HDD, SSD), throughput, backup;
  S3 (4): storage, transfer; ELB (5): processed data; total (6).
On-premises (7): C_onprem(m) = CapEx + sum_{k<=m} OpEx(k) with
  CapEx (8) = N * C_server + C_network + C_storage + C_facilities;
  OpEx (9) = electricity (10) + maintenance (11) + depreciation + staff (12) + licences,
  electricity = (N P_server + P_network + P_cooling) * hours / 1000 * tariff,
  maintenance = r * hardware CapEx / 12, depreciation = hardware CapEx / (12 * years);
  maintenance and depreciation provisions start in month ``provisions_start_month``.
The on-premises model's own assumptions (``onprem.model``: hours per month, the month the
provisions start, whether depreciation is OpEx) are the same for every tier, each with its
source, and go into the inputs table beside the prices.

    python3 -m studies.cloudcost.model --config '<cloudcost config JSON>' \
        --raw results/cloudcost/raw/model.json --series results/cloudcost/raw/series.csv \
        --inputs results/cloudcost/raw/inputs.csv
"""

from __future__ import annotations


import pandas as pd

from repro import cli, rawio, tidy


def cloud_breakdown(cloud: dict) -> pd.DataFrame:
    rows = []
    for service, resources in cloud["services"].items():
        for resource, r in resources.items():
            rows.append({"service": service, "resource": resource, "quantity": r["quantity"], "unit": r["unit"],
                         "unit_price": r["unit_price"], "monthly_cost": r["quantity"] * r["unit_price"],
                         "assumed": r.get("assumed", True), "source": r["source"]})
    return pd.DataFrame(rows)


def hardware_capex(t: dict) -> float:
    return t["servers"]["count"] * t["servers"]["unit_price"] + t["network"]["value"] + t["storage"]["value"]


def capex(t: dict) -> float:
    """Eq. (8)."""
    return hardware_capex(t) + t["facilities"]["value"]


MODEL_KEYS = ("hours_per_month", "provisions_start_month", "depreciation_in_opex")


def model_assumptions(cfg: dict) -> dict:
    """``onprem.model`` as plain values: hours_per_month, provisions_start_month, depreciation_in_opex."""
    return {k: cfg["onprem"]["model"][k]["value"] for k in MODEL_KEYS}


def electricity_month(t: dict, model: dict) -> float:
    """Eq. (10): kWh per month times the tariff."""
    p = t["power_w"]
    watts = t["servers"]["count"] * p["server_each"] + p["network"] + p["cooling"]
    return watts * model["hours_per_month"] / 1000.0 * t["electricity_per_kwh"]["value"]


def opex_parts(t: dict, month: int, model: dict) -> dict[str, float]:
    """Eq. (9) for month ``month`` (1-based)."""
    provisions = month >= model["provisions_start_month"]
    hw = hardware_capex(t)
    return {
        "electricity": electricity_month(t, model),
        "maintenance": t["maintenance_rate_per_year"]["value"] * hw / 12.0 if provisions else 0.0,
        "depreciation": (hw / (12.0 * t["depreciation_years"]["value"])
                         if provisions and model["depreciation_in_opex"] else 0.0),
        "staff": t["staff_hours_per_month"]["value"] * t["staff_wage_per_hour"]["value"],
        "licenses": t["licenses_per_month"]["value"],
    }


def series(cfg: dict) -> pd.DataFrame:
    model = model_assumptions(cfg)
    cloud_month = float(cloud_breakdown(cfg["cloud"])["monthly_cost"].sum())
    rows = []
    for m in range(0, cfg["horizon_months"] + 1):
        rows.append({"month": m, "option": "cloud", "monthly_cost": cloud_month if m else 0.0,
                     "cumulative_cost": cloud_month * m})
    for name, t in cfg["onprem"]["tiers"].items():
        cum = capex(t)
        rows.append({"month": 0, "option": f"on-premises {name}", "monthly_cost": cum, "cumulative_cost": cum})
        for m in range(1, cfg["horizon_months"] + 1):
            month_cost = sum(opex_parts(t, m, model).values())
            cum += month_cost
            rows.append({"month": m, "option": f"on-premises {name}", "monthly_cost": month_cost,
                         "cumulative_cost": cum})
    return pd.DataFrame(rows)


def break_even(df: pd.DataFrame, option: str) -> tuple[int | None, bool]:
    """First month from which the option's cumulative cost is below the cloud's, and whether it stays below."""
    cloud = df[df.option == "cloud"].set_index("month").cumulative_cost
    own = df[df.option == option].set_index("month").cumulative_cost
    cheaper = (own < cloud - 1e-9)
    months = cheaper[cheaper].index
    months = [m for m in months if m > 0]
    if not months:
        return None, False
    first = int(months[0])
    return first, bool(cheaper.loc[first:].all())


def projected_break_even(df: pd.DataFrame, option: str, model: dict, opex_later: float) -> int | None:
    """Where an option is not cheaper within the horizon: the month it would be, continuing the
    horizon's last monthly costs (None if the cloud's monthly bill is not the higher one then)."""
    horizon = int(df.month.max())
    if horizon < model["provisions_start_month"]:
        return None
    cloud = df[df.option == "cloud"].set_index("month")
    own = df[df.option == option].set_index("month")
    gap = float(cloud.monthly_cost.loc[horizon]) - opex_later
    behind = float(own.cumulative_cost.loc[horizon] - cloud.cumulative_cost.loc[horizon])
    if gap <= 0:
        return None
    return horizon + int(behind // gap) + 1


def inputs_table(cfg: dict) -> pd.DataFrame:
    rows = [{"side": "cloud", "tier": "", "item": f"{r.service}.{r.resource}",
             "value": r.unit_price, "unit": f"{cfg['currency']}/{r.unit}", "quantity": r.quantity,
             "assumed": r.assumed, "source": r.source}
            for r in cloud_breakdown(cfg["cloud"]).itertuples()]
    for key in MODEL_KEYS:
        v = cfg["onprem"]["model"][key]
        rows.append({"side": "on-premises", "tier": "(all)", "item": f"model.{key}", "value": v["value"],
                     "unit": {"hours_per_month": "h/month", "provisions_start_month": "month"}.get(key, ""),
                     "quantity": "", "assumed": v.get("assumed", True), "source": v["source"]})
    for name, t in cfg["onprem"]["tiers"].items():
        for key, v in t.items():
            if not isinstance(v, dict):
                continue
            if key == "servers":
                rows.append({"side": "on-premises", "tier": name, "item": "servers", "value": v["unit_price"],
                             "unit": f"{cfg['currency']} each", "quantity": v["count"],
                             "assumed": v.get("assumed", True), "source": v["source"]})
            elif key == "power_w":
                for part in ("server_each", "network", "cooling"):
                    rows.append({"side": "on-premises", "tier": name, "item": f"power.{part}", "value": v[part],
                                 "unit": "W", "quantity": "", "assumed": v.get("assumed", True),
                                 "source": v["source"]})
            else:
                rows.append({"side": "on-premises", "tier": name, "item": key, "value": v["value"], "unit": "",
                             "quantity": "", "assumed": v.get("assumed", True), "source": v["source"]})
    return pd.DataFrame(rows)


def run(cfg: dict) -> tuple[dict, pd.DataFrame]:
    cur = cfg["currency"]
    df = series(cfg)
    model = model_assumptions(cfg)
    rec = rawio.new_record("cloudcost", "cost_model", {"horizon_months": cfg["horizon_months"]}, 0, "model")
    rec["metrics"].append(rawio.metric("horizon_months", cfg["horizon_months"], "months"))
    rec["metrics"].append(rawio.metric("hours_per_month", model["hours_per_month"], "h/month"))
    rec["metrics"].append(rawio.metric("provisions_start_month", model["provisions_start_month"], "month"))
    rec["metrics"].append(rawio.metric("depreciation_in_opex", bool(model["depreciation_in_opex"]), "bool"))
    cb = cloud_breakdown(cfg["cloud"])
    for r in cb.itertuples():
        rec["metrics"].append(rawio.metric("cloud_monthly", r.monthly_cost, f"{cur}/month",
                                           service=r.service, resource=r.resource))
    rec["metrics"].append(rawio.metric("cloud_monthly_total", cb.monthly_cost.sum(), f"{cur}/month"))
    for name, t in cfg["onprem"]["tiers"].items():
        rec["metrics"].append(rawio.metric("capex", capex(t), cur, tier=name))
        first = opex_parts(t, 1, model)
        later = opex_parts(t, max(model["provisions_start_month"], 1), model)
        for part, value in first.items():
            rec["metrics"].append(rawio.metric(f"opex_{part}", value, f"{cur}/month", tier=name, phase="first"))
        rec["metrics"].append(rawio.metric("opex_monthly", sum(first.values()), f"{cur}/month", tier=name,
                                           phase="first"))
        rec["metrics"].append(rawio.metric("opex_monthly", sum(later.values()), f"{cur}/month", tier=name,
                                           phase="with_provisions"))
        month, stays = break_even(df, f"on-premises {name}")
        if month is not None:
            rec["metrics"].append(rawio.metric("break_even_month", month, "months", tier=name))
        else:
            projected = projected_break_even(df, f"on-premises {name}", model, sum(later.values()))
            if projected is not None:
                rec["metrics"].append(rawio.metric("break_even_month_projected", projected, "months", tier=name))
        rec["sanity"][f"stays_cheaper_{name}"] = stays if month is not None else None
    return rawio.finish(rec), df


def main() -> None:
    args, cfg = cli.parse(__doc__, "raw", "series", "inputs")
    rec, df = run(cfg)
    tidy.write_csv(df, args.series)
    tidy.write_csv(inputs_table(cfg), args.inputs)
    rawio.write_json_atomic(args.raw, rec)
    print(f"cloudcost: wrote {args.raw}")


if __name__ == "__main__":
    main()
