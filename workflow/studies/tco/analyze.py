#!/usr/bin/env python3
"""TCO study: tidy table, Table I, lifecycle TCO, break-even table and claims.

Every reproduced number is read back from the model's raw file; published
numbers come from workflow/studies/tco/published.csv and stay in their own column.
"""

from __future__ import annotations


import pandas as pd

from repro import claims, cli, rawio, tidy
from repro import published as pubvals

STUDY = "tco"


def _pub_row(pub: pd.DataFrame, quantity: str, platform: str = "", fleet: str = ""):
    return pubvals.lookup(pub, quantity=quantity, platform=platform, fleet=fleet)


def published(pub: pd.DataFrame, quantity: str, platform: str = "", fleet: str = "") -> float | None:
    row = _pub_row(pub, quantity, platform, fleet)
    return None if row is None else float(row.value)


def pub_source(pub: pd.DataFrame, quantity: str, platform: str = "", fleet: str = "") -> str:
    row = _pub_row(pub, quantity, platform, fleet)
    return "" if row is None else str(row.source)


def main() -> None:
    args, _ = cli.parse(__doc__, "raw", "published", "measurements", "table1", "lifecycle", "break-even", "claims",
                        config=False)

    df = tidy.collect([args.raw], STUDY, experiment_of=lambda p: "tco_model", system_kind_of=lambda p: "model")
    tidy.write_csv(df, args.measurements)
    rec = rawio.read(args.raw)
    pub = pubvals.load(args.published)
    cur = next(m["unit"] for m in rec["metrics"] if m["metric"] == "C_dev")

    def val(metric, **labels):
        return rawio.value(rec, metric, **labels)

    # Table I: CapEx and OpEx per execution platform
    t1 = pd.DataFrame([
        {"platform": p, "C_dev": val("C_dev", platform=p), "C_depl": val("C_depl", platform=p),
         "C_exe_per_month": val("C_exe", platform=p),
         "C_dev_published": published(pub, "C_dev", p), "C_depl_published": published(pub, "C_depl", p),
         "C_exe_published": published(pub, "C_exe", p), "currency": cur}
        for p in ("vehicle", "cloud")])
    tidy.write_csv(t1, args.table1)

    life = pd.DataFrame([
        {"platform": p, "lifecycle_months": val("lifecycle_months"), "TCO": round(val("TCO_lifecycle", platform=p), 2),
         "TCO_published": published(pub, "TCO", p), "currency": cur}
        for p in ("vehicle", "cloud")])
    tidy.write_csv(life, args.lifecycle)

    fleets = sorted({m["labels"]["fleet"] for m in rec["metrics"] if m["metric"] == "break_even"})
    rows = []
    for fleet in fleets:
        for with_dev in (False, True):
            rows.append({
                "fleet": fleet, "with_dev": with_dev,
                "break_even_months": val("break_even", fleet=fleet, with_dev=with_dev),
                "exact_months": val("break_even_exact", fleet=fleet, with_dev=with_dev),
                "cost_at_break_even": val("break_even_cost", fleet=fleet, with_dev=with_dev),
                "published_months": published(pub, "break-even with C_dev" if with_dev else "break-even without C_dev",
                                              "", str(fleet)),
                "rounding": rec["extra"]["rounding"],
            })
    be = pd.DataFrame(rows)
    tidy.write_csv(be, args.break_even)

    out = []

    def base(cid, text, ref, output, unit):
        return claims.Claim(study=STUDY, claim_id=cid, claim=text, paper_ref=ref,
                            target="rule tco_aggregate", output=output, unit=unit, system_kind="model")

    for p in ("vehicle", "cloud"):
        for q, unit, col in (("C_dev", cur, "C_dev"), ("C_depl", cur, "C_depl"), ("C_exe", f"{cur}/month", "C_exe")):
            pv = published(pub, q, p)
            if pv is None:
                continue
            c = base(f"table1-{p}-{q}", f"{q} of the {p} SWC", pub_source(pub, q, p), args.table1, unit)
            # the paper prints money rounded to the cent; so do we, and compare within half a cent
            out.append(claims.value_claim(c, round(val(col, platform=p), 2), pv, abs_tol=0.005))
        pv = published(pub, "TCO", p)
        c = base(f"tco-{p}", f"TCO of the {p} SWC over the bus life cycle", pub_source(pub, "TCO", p),
                 args.lifecycle, cur)
        out.append(claims.value_claim(c, round(val("TCO_lifecycle", platform=p), 2), pv, abs_tol=0.005))
    for r in rows:
        if r["published_months"] is None:
            continue
        q = "with" if r["with_dev"] else "without"
        c = base(f"break-even-{r['fleet']}-{q}-dev", f"break-even, fleet of {r['fleet']}, {q} C_dev",
                 pub_source(pub, f"break-even {q} C_dev", "", str(r["fleet"])), args.break_even, "months")
        out.append(claims.value_claim(c, r["break_even_months"], r["published_months"], abs_tol=0))
    with_dev = be[be.with_dev].sort_values("fleet")
    if len(with_dev) >= 2:
        months = with_dev.break_even_months.tolist()
        holds = all(a > b for a, b in zip(months, months[1:]))
        c = base("fleet-size-earlier-break-even", "the larger the fleet, the sooner the break-even point",
                 "000 TCO paper Section VI", args.break_even, "months")
        out.append(claims.shape_claim(
            c, holds, " > ".join(f"{int(m)} (fleet {f})" for f, m in zip(with_dev.fleet, months)),
            "break-even decreases with fleet size"))
    claims.write(out, args.claims)
    print(f"tco: {sum(c.verdict == claims.REPRODUCED for c in out)}/{len(out)} claims reproduced")


if __name__ == "__main__":
    main()
