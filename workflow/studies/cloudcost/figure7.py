#!/usr/bin/env python3
"""Figure 7 of paper 002: cloud vs on-premises costs month by month (cumulative and monthly)."""

from __future__ import annotations

import matplotlib.ticker
import pandas as pd

from repro import cli, plotting


def main() -> None:
    args, cfg = cli.parse(__doc__, "series", "break-even", "published", "out")
    currency = cfg["currency"]
    df = pd.read_csv(args.series)
    be = pd.read_csv(args.break_even)
    plt, sns = plotting.pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.8))
    options = list(df.option.unique())
    palette = dict(zip(options, sns.color_palette("tab10", len(options))))
    for opt in options:
        sub = df[df.option == opt]
        ls = "-" if opt == "cloud" else "--"
        ax1.plot(sub.month, sub.cumulative_cost, ls, color=palette[opt], label=opt)
        sub1 = sub[sub.month >= 1]
        ax2.step(sub1.month, sub1.monthly_cost, where="mid", linestyle=ls, color=palette[opt], label=opt)
    for r in be.itertuples():
        if pd.notna(r.break_even_month):
            m = int(r.break_even_month)
            y = df[(df.option == f"on-premises {r.tier}") & (df.month == m)].cumulative_cost.iloc[0]
            ax1.plot([m], [y], "o", color=palette[f"on-premises {r.tier}"])
            ax1.annotate(f"{r.tier}: month {m}", (m, y), textcoords="offset points", xytext=(5, -12), fontsize=7)
    # the paper's own statements in the same axes: on-premises cheaper beyond month 12 (left), the
    # monthly on-premises cost rising after the first year (right)
    pub = pd.read_csv(args.published, dtype=str, keep_default_na=False).set_index("quantity")
    cheaper = float(pub.loc["cheaper than the cloud beyond", "value"])
    rises = float(pub.loc["monthly cost rises after", "value"])
    ax1.axvline(cheaper, color=plotting.PAPER["color"], linestyle=plotting.PAPER["linestyle"], linewidth=1,
                label=f"{plotting.PAPER_LABEL}: on-premises cheaper beyond month {cheaper:.0f}")
    ax2.axvline(rises + 0.5, color=plotting.PAPER["color"], linestyle=plotting.PAPER["linestyle"], linewidth=1,
                label=f"{plotting.PAPER_LABEL}: on-premises monthly cost rises after month {rises:.0f}")
    ax2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2)
    fmt = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}")
    ax1.set(xlabel="Month", ylabel=f"Cumulative cost ({currency})", title="Total cost over time")
    ax2.set(xlabel="Month", ylabel=f"Monthly cost ({currency})", title="Monthly cost",
            yscale="log")
    ax1.yaxis.set_major_formatter(fmt)
    ax2.yaxis.set_major_formatter(fmt)
    ax1.legend(fontsize=7)
    fig.suptitle("Cloud (AWS PAYG) vs on-premises (assumed prices; paper Tables 6-7 omitted)", fontsize=9)
    fig.tight_layout()
    plotting.save(fig, args.out)
    print(f"cloudcost: wrote {args.out}")


if __name__ == "__main__":
    main()
