#!/usr/bin/env python3
"""Cloud vs on-premises cost study: tidy table, break-even table, claims -- for every tier.

The paper (002) gives no prices (its Tables 6 and 7 are omitted), so the
absolute break-even month is compared for information only; the claims
checked are the paper's statements, for each of its three on-premises tiers:
CapEx makes on-premises dearer at first, and on-premises is the cheaper option
beyond 12 months. That the monthly on-premises cost rises after the first year
is a property of the model (the month the provisions start is an input taken
from that very sentence), so it gets no "reproduced", only a check that the
model has it. The paper's numbers (12 months; month 1) come from published.csv,
the months the model uses from the raw file (its config); none is in this code.
Each claim is built by one function below (``claim_*``), so a test can feed it
data that contradicts the paper.
"""

from __future__ import annotations

import pandas as pd

from repro import claims, cli, rawio, tidy
from repro import published as pubvals

STUDY = "cloudcost"
Q_FIRST = "dearer in the initial months"
Q_RISE = "monthly cost rises after"
Q_CHEAPER = "cheaper than the cloud beyond"


def published(pub: pd.DataFrame, quantity: str, tier: str = "") -> tuple[int, str]:
    """The paper's month for a statement (a tier's own row if there is one, else the row for all
    tiers) and its source; fails naming the quantity if published.csv lacks it."""
    row = pubvals.lookup(pub, quantity=quantity, tier=tier)
    if row is None:
        row = pubvals.lookup(pub, quantity=quantity, tier="")
    if row is None:
        raise SystemExit(f"cloudcost: published.csv has no row for {quantity!r}")
    return int(row.value_num), str(row.source)


def tiers_of(series: pd.DataFrame) -> list[str]:
    return [o.removeprefix("on-premises ") for o in series.option.unique() if o != "cloud"]


def _curves(series: pd.DataFrame, tier: str):
    own = series[series.option == f"on-premises {tier}"].set_index("month")
    cloud = series[series.option == "cloud"].set_index("month")
    return own, cloud


def _base(cid, text, ref, output, note, unit=""):
    return claims.Claim(study=STUDY, claim_id=cid, claim=text, paper_ref=ref, target="rule cloudcost_aggregate",
                        output=output, unit=unit, system_kind="model", note=note)


# ---------------------------------------------------------------------------
# claim builders
# ---------------------------------------------------------------------------
def claim_capex_first(series, tier, pub, output, note, currency="") -> claims.Claim:
    """On-premises costs more than the cloud in the initial months (CapEx): checked in the paper's month."""
    month, ref = published(pub, Q_FIRST, tier)
    own, cloud = _curves(series, tier)
    c = _base(f"capex-first-{tier}", f"on-premises ({tier}) costs more than the cloud in the initial months (CapEx)",
              ref, output, note, currency)
    if month not in own.index or month not in cloud.index:
        return claims.shape_claim(c, None, f"no month {month} in the series", f"on-premises > cloud in month {month}")
    o, k = float(own.cumulative_cost.loc[month]), float(cloud.cumulative_cost.loc[month])
    return claims.shape_claim(c, o > k, f"month {month}: on-premises {o:,.0f} vs cloud {k:,.0f}",
                              f"on-premises > cloud in month {month}")


def claim_rise_after_year_1(series, rec, tier, pub, output, note) -> claims.Claim:
    """The monthly on-premises cost steps up after the first year. A model property: the step's month is
    the input provisions_start_month, taken from this sentence. Informative when the model has the step
    in the month after the paper's 12; not reproduced when it has none or has it elsewhere."""
    after, ref = published(pub, Q_RISE, tier)
    expected = after + 1
    start = rawio.value(rec, "provisions_start_month")
    own, _ = _curves(series, tier)
    monthly = own.monthly_cost[own.index >= 1]
    steps = [int(m) for m, d in monthly.diff().items() if d > 1e-9]
    c = _base(f"opex-rises-after-year-1-{tier}",
              f"the monthly on-premises ({tier}) cost rises after the first year (depreciation and maintenance "
              "provisions) -- a model property, not a reproduction", ref, output,
              note + f"; the step's month is the input onprem.model.provisions_start_month = "
              f"{start:g}, set from this sentence" if start is not None else note, "month")
    c.kind = "shape"
    c.published = f"a step up after {after} months (month {expected})"
    c.tolerance = "none: model property (the step month is an input, not a result)"
    if not steps:
        c.reproduced, c.verdict = "no step up in the monthly cost", claims.NOT_REPRODUCED
        return c
    m = steps[0]
    before, at = float(monthly.loc[m - 1]), float(monthly.loc[m])
    c.reproduced = f"steps up in month {m}: {before:,.0f} -> {at:,.0f} per month (+{(at / before - 1) * 100:.0f} %)"
    c.verdict = claims.INFO if m == expected else claims.NOT_REPRODUCED
    return c


def claim_cheaper_beyond(series, rec, tier, pub, output, note) -> claims.Claim:
    """On-premises is cheaper than the cloud in every month after the paper's 12, to the horizon."""
    after, ref = published(pub, Q_CHEAPER, tier)
    own, cloud = _curves(series, tier)
    horizon = int(own.index.max())
    c = _base(f"onprem-cheaper-after-year-1-{tier}",
              f"on-premises ({tier}) is cheaper than the cloud beyond {after} months, to the horizon",
              ref, output, note, "month")
    expected = f"on-premises < cloud in every month {after + 1}-{horizon}"
    months = [m for m in own.index if after < m <= horizon]
    if not months:
        return claims.shape_claim(c, None, f"the horizon ({horizon} months) ends before month {after + 1}", expected)
    dearer = [int(m) for m in months if not own.cumulative_cost.loc[m] < cloud.cumulative_cost.loc[m] - 1e-9]
    cheaper = [int(m) for m in own.index if m > 0 and own.cumulative_cost.loc[m] < cloud.cumulative_cost.loc[m] - 1e-9]
    if not dearer:
        observed = f"cheaper from month {cheaper[0]}, in every month {after + 1}-{horizon}"
    elif not cheaper:
        proj = rawio.value(rec, "break_even_month_projected", tier=tier)
        observed = (f"never cheaper within {horizon} months (the model's result with the assumed prices"
                    + (f"; month {proj:g} if the month-{horizon} costs went on)" if proj is not None else ")"))
    else:
        observed = f"dearer in {len(dearer)} of months {after + 1}-{horizon} (first: {dearer[0]})"
    return claims.shape_claim(c, not dearer, observed, expected)


def claim_break_even_month(rec, tier, pub, output, note) -> claims.Claim:
    """The month from which on-premises is cheaper: informative (every price is assumed)."""
    after, ref = published(pub, Q_CHEAPER, tier)
    c = _base(f"break-even-month-{tier}", f"month from which on-premises ({tier}) is cheaper", ref, output, note,
              "months")
    be = rawio.value(rec, "break_even_month", tier=tier)
    c = claims.info_claim(c, be, f"after {after}")
    if be is None:  # a result, not a missing input: say so instead of "not run"
        horizon = rawio.value(rec, "horizon_months")
        c.reproduced, c.verdict = f"none within {horizon:g} months", claims.INFO
    c.tolerance = "none (every price is assumed)"
    return c


def build_claims(rec: dict, series: pd.DataFrame, inputs: pd.DataFrame, pub: pd.DataFrame,
                 output: str) -> list[claims.Claim]:
    assumed = inputs.assumed.astype(str).str.lower().eq("true")
    note = (f"{int(assumed.sum())} of {len(inputs)} inputs are assumptions (paper Tables 6-7 omitted); "
            "see the inputs table")
    currency = next((m["unit"] for m in rec["metrics"] if m["metric"] == "capex"), "")
    out = []
    for tier in tiers_of(series):
        out += [claim_capex_first(series, tier, pub, output, note, currency),
                claim_rise_after_year_1(series, rec, tier, pub, output, note),
                claim_cheaper_beyond(series, rec, tier, pub, output, note),
                claim_break_even_month(rec, tier, pub, output, note)]
    return out


def break_even_table(rec: dict, series: pd.DataFrame, pub: pd.DataFrame) -> pd.DataFrame:
    cloud_total = rawio.value(rec, "cloud_monthly_total")
    rows = []
    for t in tiers_of(series):
        rows.append({"tier": t, "capex": rawio.value(rec, "capex", tier=t),
                     "opex_first_year": rawio.value(rec, "opex_monthly", tier=t, phase="first"),
                     "opex_with_provisions": rawio.value(rec, "opex_monthly", tier=t, phase="with_provisions"),
                     "cloud_monthly": cloud_total, "break_even_month": rawio.value(rec, "break_even_month", tier=t),
                     "stays_cheaper": rec["sanity"].get(f"stays_cheaper_{t}"),
                     "projected_break_even_month": rawio.value(rec, "break_even_month_projected", tier=t),
                     "horizon_months": rawio.value(rec, "horizon_months"),
                     "published_cheaper_beyond_month": published(pub, Q_CHEAPER, t)[0]})
    return pd.DataFrame(rows)


def main() -> None:
    args, cfg = cli.parse(__doc__, "raw", "series", "inputs", "published", "measurements", "break-even", "claims")
    tidy.write_csv(tidy.collect([args.raw], STUDY, system_kind_of=lambda p: "model"), args.measurements)
    rec = rawio.read(args.raw)
    series = pd.read_csv(args.series)
    inputs = pd.read_csv(args.inputs)
    pub = pubvals.load(args.published)
    tidy.write_csv(break_even_table(rec, series, pub), args.break_even)
    out = build_claims(rec, series, inputs, pub, args.break_even)
    claims.write(out, args.claims, scale=claims.scale_of(cfg))  # no tolerance to scale: relations and info
    print(claims.summary(STUDY, out))


if __name__ == "__main__":
    main()
