"""The cloudcost study, declared once (repro.study): what it is, what it writes, how long it takes.

Its rules are the engine's model-study shape (workflow/rules/model_study.smk), and so are its expected
times and README row (repro.study.MODEL_STUDY_TIMES, MODEL_STUDY_README: one per cost model)."""

from repro.study import MODEL_STUDY_README, MODEL_STUDY_TIMES, Study

STUDY = Study(
    name="cloudcost",
    title="Cloud (AWS PAYG) vs on-premises storage cost for HPC over cloud",
    paper="002 (HPC over cloud storage), Section 5: equations (1)-(12), Figure 7",
    figures={
        "figure7": "Figure 7: cumulative and monthly cost, cloud vs three on-premises tiers (assumed prices)",
    },
    outputs={
        "raw": "raw/model.json",
        "series": "raw/series.csv",
        "inputs": "tables/inputs.csv",
        "measurements": "measurements.csv",
        "break_even": "tables/break_even.csv",
        "claims": "claims.csv",
    },
    output_tables={
        "break_even": "CapEx, OpEx and the month from which each on-premises tier is cheaper (all three tiers; "
        "where none within the horizon, the month it would be if the last month's costs went on)",
        "inputs": "Every input with its source: the prices (all assumptions: the paper omits Tables 6 and 7) "
        "and the on-premises model's own assumptions (hours per month, the month the depreciation "
        "and maintenance provisions start, depreciation counted as OpEx)",
    },
    expected_times=MODEL_STUDY_TIMES,
    readme=MODEL_STUDY_README,
)
