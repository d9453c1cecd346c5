#!/usr/bin/env python3
"""TCO of a vehicle software component, onboard vs cloud (paper 000, eqs. 2-10).

    TCO_SWC = C_dev + C_depl + C_exe                                  (2)
    vehicle: C_dev = sum sw + sum hw (4); C_depl = sum ECU (5); C_exe = sum monthly items (6)
    cloud:   C_dev = intro + purchasing + migration + sw (8); C_depl = 0 (9);
             C_exe = CSP + internal operation + usage + update/upgrade (10)

Every number comes from the ``tco`` section of the configuration; an input the paper
states as a fraction of another (hardware = 1/3 of the software, cloud introduction/
purchasing/migration = the software amount) is a formula of that input (``fraction_of``),
and a cost item may be an hourly resource shared by vehicles (per_hour x hours / shared_by;
the configuration gives the paper's 1.49 EUR per vehicle-month as printed), each item's formula kept
in the raw file beside its value. Writes the
raw model output (``repro.raw/1``, system_kind ``model``) and the month-by-month
cumulative series for every fleet size.

    python3 -m studies.tco.model --config '<tco config as JSON>' \
        --raw results/tco/raw/model.json --series results/tco/raw/series.csv
"""

from __future__ import annotations

import math

import pandas as pd

from repro import cli, rawio, tidy


class InputError(ValueError):
    """A cost item that cannot be resolved (the message names the config key)."""


def item_value(item: dict) -> float:
    """A plain cost item: a value, or an hourly resource shared by several vehicles."""
    if "value" in item:
        return float(item["value"])
    return float(item["per_hour"]) * float(item["hours_per_month"]) / int(item["shared_by"])


def _num(x: float) -> str:
    return f"{x:,.10g}"


def resolve_group(group: dict, where: str, currency: str = "EUR") -> dict[str, dict]:
    """Every item of one cost group (e.g. ``tco.platforms.vehicle.development``) as
    ``{"value": ..., "formula": ..., "source": ...}``.

    An item ``{fraction_of: <other item>, numerator: a, denominator: b}`` is a/b times another
    *plain* item of the same group (the paper's "hardware is one third of the software amount",
    "migration adds up to an equal amount"), so a changed software cost moves it.
    """
    out = {}
    for name, item in group.items():
        if "fraction_of" in item:
            ref = item["fraction_of"]
            if ref not in group:
                raise InputError(f"{where}.{name}.fraction_of: no item {ref!r} in {where} "
                                 f"(have {', '.join(sorted(k for k in group if k != name))})")
            if "fraction_of" in group[ref]:
                raise InputError(f"{where}.{name}.fraction_of: {ref!r} is itself derived; "
                                 "derive from a plain item")
            num, den = float(item.get("numerator", 1)), float(item.get("denominator", 1))
            base = item_value(group[ref])
            value = base * num / den
            formula = f"{_num(num)}/{_num(den)} x {ref} ({_num(base)} {currency})"
        elif "value" in item:
            value, formula = float(item["value"]), "given"
        else:
            value = item_value(item)
            formula = (f"{_num(item['per_hour'])} {currency}/h x {_num(item['hours_per_month'])} h"
                       f" / {int(item['shared_by'])} vehicles")
        out[name] = {"value": value, "formula": formula, "source": item.get("source", "")}
    return out


GROUPS = (("development", "C_dev"), ("deployment_per_vehicle", "C_depl"), ("execution_per_vehicle_month", "C_exe"))


def resolve(cfg: dict) -> dict[str, dict[str, dict[str, dict]]]:
    """Every item of both platforms, resolved: ``{platform: {group: {item: {...}}}}``."""
    cur = cfg.get("currency", "EUR")
    return {p: {g: resolve_group(cfg["platforms"][p].get(g, {}), f"tco.platforms.{p}.{g}", cur)
                for g, _ in GROUPS}
            for p in ("vehicle", "cloud")}


def platform_costs(resolved: dict) -> dict[str, float]:
    """C_dev, C_depl, C_exe of one platform: the sums of its resolved items."""
    return {q: sum(i["value"] for i in resolved[g].values()) for g, q in GROUPS}


def lifecycle_months(cfg: dict) -> float:
    return float(cfg["lifecycle_years"]) * int(cfg["months_per_year"])


def tco_swc(costs: dict[str, float], months: float) -> float:
    """Eq. (2) for one SWC over ``months``: development + deployment + monthly execution."""
    return costs["C_dev"] + costs["C_depl"] + costs["C_exe"] * months


def cumulative(costs: dict[str, float], fleet: int, month: float, with_dev: bool = True) -> float:
    """Cost of running the SWC on a whole fleet up to ``month``."""
    return (costs["C_dev"] if with_dev else 0.0) + fleet * (costs["C_depl"] + costs["C_exe"] * month)


def crossing_month(vehicle: dict, cloud: dict, fleet: int, with_dev: bool) -> float | None:
    """Exact month after which the onboard SWC is again the cheaper option.

    The cloud saves CapEx and pays more per month; the curves cross where
    (dCapEx) = fleet * (C_exe,c - C_exe,v) * m. None if they never cross
    (the cloud's monthly cost is not higher) or the cloud never was cheaper.
    """
    d_capex = fleet * (vehicle["C_depl"] - cloud["C_depl"])
    if with_dev:
        d_capex += vehicle["C_dev"] - cloud["C_dev"]
    d_exe = fleet * (cloud["C_exe"] - vehicle["C_exe"])
    if d_exe <= 0 or d_capex <= 0:
        return None
    return d_capex / d_exe


def round_months(x: float | None, how: str) -> int | None:
    if x is None:
        return None
    return {"floor": math.floor, "ceil": math.ceil, "round": round}[how](x + 1e-9 if how == "floor" else x)


def series(vehicle: dict, cloud: dict, fleets: list[int], horizon: int) -> pd.DataFrame:
    rows = []
    for fleet in fleets:
        for m in range(horizon + 1):
            for name, costs in (("vehicle", vehicle), ("cloud", cloud)):
                rows.append({"fleet": fleet, "month": m, "platform": name,
                             "cumulative_cost": round(cumulative(costs, fleet, m), 6)})
    return pd.DataFrame(rows)


def series_break_even(df: pd.DataFrame, fleet: int) -> int | None:
    """Last whole month in the series at which the cloud is still not dearer (cross-check)."""
    sub = df[df.fleet == fleet].pivot(index="month", columns="platform", values="cumulative_cost")
    cheaper = sub["cloud"] <= sub["vehicle"] + 1e-9
    if cheaper.all() or not cheaper.iloc[0]:
        return None
    return int(cheaper[~cheaper].index[0]) - 1


def run(cfg: dict) -> tuple[dict, pd.DataFrame]:
    items = resolve(cfg)
    vehicle = platform_costs(items["vehicle"])
    cloud = platform_costs(items["cloud"])
    months = lifecycle_months(cfg)
    how = cfg.get("break_even_rounding", "floor")
    rec = rawio.new_record("tco", "tco_model", {"lifecycle_years": cfg["lifecycle_years"]}, 0, "model")
    cur = cfg.get("currency", "EUR")
    for name, costs in (("vehicle", vehicle), ("cloud", cloud)):
        rec["metrics"] += [
            rawio.metric("C_dev", costs["C_dev"], cur, platform=name),
            rawio.metric("C_depl", costs["C_depl"], cur, platform=name),
            rawio.metric("C_exe", costs["C_exe"], f"{cur}/month", platform=name),
            rawio.metric("TCO_lifecycle", tco_swc(costs, months), cur, platform=name),
        ]
    for name, groups in items.items():
        for g, q in GROUPS:
            for item, r in groups[g].items():
                unit = f"{cur}/month" if q == "C_exe" else cur
                rec["metrics"].append(rawio.metric("input", r["value"], unit, platform=name, quantity=q, item=item))
    rec["metrics"].append(rawio.metric("lifecycle_months", months, "months"))
    rec["metrics"].append(rawio.metric("months_per_year", int(cfg["months_per_year"]), "months"))
    df = series(vehicle, cloud, list(cfg["fleet_sizes"]), int(cfg["horizon_months"]))
    horizon = max(int(cfg["horizon_months"]), 1)
    for fleet in cfg["fleet_sizes"]:
        for with_dev in (False, True):
            x = crossing_month(vehicle, cloud, fleet, with_dev)
            labels = {"fleet": fleet, "with_dev": with_dev}
            if x is None:
                rec["sanity"][f"no_break_even_fleet{fleet}_dev{with_dev}"] = True
                continue
            rec["metrics"].append(rawio.metric("break_even_exact", x, "months", **labels))
            rec["metrics"].append(rawio.metric("break_even", round_months(x, how), "months", **labels))
            cost = cumulative(vehicle, fleet, x, with_dev)
            rec["metrics"].append(rawio.metric("break_even_cost", cost, cur, **labels))
            if with_dev and x <= horizon:
                check = series_break_even(df, fleet)
                rec["sanity"][f"series_agrees_fleet{fleet}"] = check == math.floor(x + 1e-9)
    rec["extra"] = {"rounding": how, "costs": {"vehicle": vehicle, "cloud": cloud},
                    "inputs": {p: {g: {k: {"formula": r["formula"], "source": r["source"]} for k, r in grp.items()}
                                   for g, grp in groups.items()} for p, groups in items.items()}}
    if not all(v for k, v in rec["sanity"].items() if k.startswith("series_agrees")):
        rec["status"] = "failed"
        rec["failure"] = "analytic break-even disagrees with the month-by-month series"
    return rawio.finish(rec), df


def main() -> None:
    args, cfg = cli.parse(__doc__, "raw", "series")
    try:
        rec, df = run(cfg)
    except InputError as exc:
        raise SystemExit(f"invalid configuration: {exc}") from None
    tidy.write_csv(df, args.series)
    if rec["status"] != "ok":
        rawio.write_failure(args.raw, rec, rec["failure"])
        raise SystemExit(f"tco: {rec['failure']}")
    rawio.clear_failure(args.raw)
    rawio.write_json_atomic(args.raw, rec)
    print(f"tco: wrote {args.raw} and {args.series}")


if __name__ == "__main__":
    main()
