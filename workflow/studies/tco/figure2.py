#!/usr/bin/env python3
"""Figure 2 of the TCO paper: cumulative TCO of the HVAC SWC for each fleet, break-evens marked."""

from __future__ import annotations

import matplotlib.ticker
import pandas as pd

from repro import cli, plotting


def main() -> None:
    args, cfg = cli.parse(__doc__, "series", "break-even", "published", "out")
    currency = cfg["currency"]
    df = pd.read_csv(args.series)
    be = pd.read_csv(args.break_even)
    df["curve"] = df.platform.str.capitalize() + " with a fleet of " + df.fleet.astype(str)
    plt, sns = plotting.pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    palette = dict(zip(sorted(df.fleet.unique()), sns.color_palette("tab10")))
    for (fleet, platform), sub in df.groupby(["fleet", "platform"]):
        ax.plot(sub.month, sub.cumulative_cost, color=palette[fleet],
                linestyle="-" if platform == "cloud" else "--",
                label=f"{platform.capitalize()} with a fleet of {fleet}")
    for _, r in be[be.with_dev].iterrows():
        if pd.isna(r.break_even_months) or r.exact_months > df.month.max():
            continue
        ax.axhline(r.cost_at_break_even, color=palette[r.fleet], linestyle=":", linewidth=1)
        ax.plot([r.exact_months], [r.cost_at_break_even], marker="o", color=palette[r.fleet])
        ax.annotate(f"{int(r.break_even_months)} months", (r.exact_months, r.cost_at_break_even),
                    textcoords="offset points", xytext=(-60, 8), fontsize=8)
    # the paper's own break-even months (with development cost), in the same axes
    pub = pd.read_csv(args.published, dtype=str, keep_default_na=False)
    pub = pub[(pub.quantity == "break-even with C_dev") & (pub.unit == "months")]
    for i, r in enumerate(pub.itertuples()):
        month = float(r.value)
        ax.axvline(month, color=plotting.PAPER["color"], linestyle=plotting.PAPER["linestyle"], linewidth=1,
                   label=plotting.PAPER_LABEL + ": break-even with development cost" if i == 0 else None)
        ax.annotate(f"paper: {month:.0f} months\n(fleet {r.fleet})", (month, ax.get_ylim()[1]),
                    textcoords="offset points", xytext=(3, -26), fontsize=7)
    ax.set_xlabel("Months")
    ax.set_ylabel(f"Costs in {currency}")
    ax.set_title("TCO for a HVAC function (reproduced from the config)")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    plotting.save(fig, args.out)
    print(f"tco: wrote {args.out}")


if __name__ == "__main__":
    main()
