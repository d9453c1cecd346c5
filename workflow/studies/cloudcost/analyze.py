#!/usr/bin/env python3
"""Cloud vs on-premises cost study: tidy table, break-even table, claims.

The paper (002) gives no prices (its Tables 6 and 7 are omitted), so the
absolute break-even month is compared for information only; the claims
checked are the paper's shapes: CapEx makes on-premises dearer at first, the
monthly on-premises cost rises after the first year, and on-premises is the
cheaper option beyond 12 months.
"""

from __future__ import annotations


import pandas as pd

from repro import claims, cli, rawio, tidy

STUDY = "cloudcost"
PUBLISHED_MONTHS = 12  # "remains more cost-effective than the cloud alternative beyond the 12-month" (Sec. 5.3)


def main() -> None:
    args, cfg = cli.parse(__doc__, "raw", "series", "inputs", "measurements", "break-even", "claims")
    claim_tier = cfg["claim_tier"]

    tidy.write_csv(tidy.collect([args.raw], STUDY, system_kind_of=lambda p: "model"), args.measurements)
    rec = rawio.read(args.raw)
    df = pd.read_csv(args.series)
    inputs = pd.read_csv(args.inputs)
    cloud_total = next(m["value"] for m in rec["metrics"] if m["metric"] == "cloud_monthly_total")

    def val(metric, **labels):
        return rawio.value(rec, metric, **labels)

    tiers = [o.removeprefix("on-premises ") for o in df.option.unique() if o != "cloud"]
    rows = []
    for t in tiers:
        be = val("break_even_month", tier=t)
        rows.append({"tier": t, "capex": val("capex", tier=t),
                     "opex_first_year": val("opex_monthly", tier=t, phase="first"),
                     "opex_with_provisions": val("opex_monthly", tier=t, phase="with_provisions"),
                     "cloud_monthly": cloud_total, "break_even_month": be,
                     "stays_cheaper": rec["sanity"].get(f"stays_cheaper_{t}"),
                     "published_break_even_month": PUBLISHED_MONTHS if t == claim_tier else None})
    table = pd.DataFrame(rows)
    tidy.write_csv(table, args.break_even)

    tier = claim_tier
    opt = f"on-premises {tier}"
    own = df[df.option == opt].set_index("month")
    cloud = df[df.option == "cloud"].set_index("month")
    n_assumed = int(inputs.assumed.astype(str).str.lower().eq("true").sum())
    note = f"all {n_assumed} price inputs are assumptions (paper Tables 6-7 omitted); see inputs table"
    out = []

    def base(cid, text, ref):
        return claims.Claim(study=STUDY, claim_id=cid, claim=text, paper_ref=ref, target="rule cloudcost_aggregate",
                            output=args.break_even, system_kind="model", note=note)

    if tier not in tiers:
        raise SystemExit(f"cloudcost.claim_tier: no on-premises tier named {tier!r} (have {tiers})")
    first_month_dearer = own.cumulative_cost.loc[1] > cloud.cumulative_cost.loc[1]
    out.append(claims.shape_claim(
        base("capex-first", f"on-premises ({tier}) costs more in the first months (CapEx)", "002 Section 5.3"),
        bool(first_month_dearer),
        f"month 1: on-premises {own.cumulative_cost.loc[1]:,.0f} vs cloud {cloud.cumulative_cost.loc[1]:,.0f}",
        "on-premises > cloud in month 1"))
    start = own.index[own.monthly_cost.diff() > 1e-9]
    start = [m for m in start if m > 1]
    rise = bool(start) and start[0] == 13
    out.append(claims.shape_claim(
        base("opex-rises-after-year-1", f"monthly on-premises ({tier}) cost rises after the first year",
             "002 Section 5.3"),
        rise, f"monthly cost steps up in month {start[0] if start else 'never'}", "a step up in month 13"))
    be = val("break_even_month", tier=tier)
    stays = rec["sanity"].get(f"stays_cheaper_{tier}")
    holds = be is not None and be <= PUBLISHED_MONTHS + 1 and bool(stays)
    c = base("onprem-cheaper-after-year-1",
             f"on-premises ({tier}) is cheaper than the cloud beyond 12 months and stays cheaper",
             "002 Section 5.3, Fig. 7")
    out.append(claims.shape_claim(
        c, holds, f"cheaper from month {be}, stays cheaper to month {int(df.month.max())}: {stays}"
        if be is not None else "never cheaper within the horizon",
        "cheaper from month <= 13 on, to the horizon"))
    c = base("break-even-month", f"month from which on-premises ({tier}) is cheaper", "002 Section 5.3")
    c.unit = "months"
    out.append(claims.info_claim(c, be, f"after {PUBLISHED_MONTHS}"))
    claims.write(out, args.claims)
    print(f"cloudcost: {sum(x.verdict == claims.REPRODUCED for x in out)}/{len(out)} shape claims hold")


if __name__ == "__main__":
    main()
