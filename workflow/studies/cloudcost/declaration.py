"""The cloudcost study, declared once (repro.study): what it is, what it writes, how long it takes.

Its rules are the model-study shape it shares with tco (../tco/model_study.smk), and so are its
expected times (tco's MODEL_STUDY_TIMES). README.md's expected-times row is tco's too
(MODEL_STUDY_README)."""

from repro.study import Study
from studies.tco.declaration import MODEL_STUDY_README, MODEL_STUDY_TIMES

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
