# Paper 002, Section 5: cloud (AWS PAYG) vs on-premises cost model (eqs. 1-12,
# Figure 7). Every price is an assumption from the config (the paper omits them).

CLOUDCOST_OUT = {
    "raw": "results/cloudcost/raw/model.json",
    "series": "results/cloudcost/raw/series.csv",
    "inputs": "results/cloudcost/tables/inputs.csv",
    "measurements": "results/cloudcost/measurements.csv",
    "break_even": "results/cloudcost/tables/break_even.csv",
    "figure7": "results/cloudcost/figures/figure7.png",
    "claims": "results/cloudcost/claims.csv",
}


# the shape it shares with tco (a model study: run, aggregate, figure)
include: "../tco/model_study.smk"


model_study(
    "cloudcost",
    CLOUDCOST_OUT,
    run_outputs=["raw", "series", "inputs"],
    aggregate_inputs=["raw", "series", "inputs"],
    aggregate_outputs=["measurements", "break_even", "claims"],
    figure="figure7",
    entry={
        "title": "Cloud (AWS PAYG) vs on-premises storage cost for HPC over cloud",
        "paper": "002 (HPC over cloud storage), Section 5: equations (1)-(12), Figure 7",
        "figure_caption": "Figure 7: cumulative and monthly cost, cloud vs three on-premises tiers (assumed prices)",
        "tables": [
            (
                "break_even",
                "CapEx, OpEx and the month from which each on-premises tier is cheaper (all three tiers; "
                "where none within the horizon, the month it would be if the last month's costs went on)",
            ),
            (
                "inputs",
                "Every input with its source: the prices (all assumptions: the paper omits Tables 6 and 7) "
                "and the on-premises model's own assumptions (hours per month, the month the depreciation "
                "and maintenance provisions start, depreciation counted as OpEx)",
            ),
        ],
    },
)
