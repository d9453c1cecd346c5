"""The tco study, declared once (repro.study): what it is, what it writes, how long it takes.

Its rules are the engine's model-study shape (workflow/rules/model_study.smk), and so are its expected
times and README row (repro.study.MODEL_STUDY_TIMES, MODEL_STUDY_README: one per cost model)."""

from repro.study import MODEL_STUDY_README, MODEL_STUDY_TIMES, Study

STUDY = Study(
    name="tco",
    title="TCO of vehicle software components: onboard vs cloud",
    paper="000 (SCALABILITY 2024 proceedings), TCO paper: equations (2)-(10), Table I, Figure 2",
    figures={
        "figure2": "Figure 2: cumulative TCO of the HVAC function for fleets of 1,000 and 5,000 buses; "
        "break-even points marked",
    },
    outputs={
        "raw": "raw/model.json",
        "series": "raw/series.csv",
        "measurements": "measurements.csv",
        "table1": "tables/table1.csv",
        "inputs": "tables/inputs.csv",
        "lifecycle": "tables/tco_lifecycle.csv",
        "break_even": "tables/break_even.csv",
        "claims": "claims.csv",
    },
    output_tables={
        "table1": "Table I: CapEx and OpEx for cloud and vehicle execution platform (reproduced beside published)",
        "inputs": "Every input with its formula and source: the derived inputs (hardware = 1/3 x software, "
        "cloud introduction/purchasing/migration = software) and the cloud price of 1.49 EUR per vehicle "
        "and month, each beside the value the paper's text states",
        "lifecycle": "TCO over the 8.3-year bus life cycle",
        "break_even": "Break-even periods with and without development costs",
    },
    expected_times=MODEL_STUDY_TIMES,
    readme=MODEL_STUDY_README,
)
