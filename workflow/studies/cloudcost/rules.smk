# Paper 002, Section 5: cloud (AWS PAYG) vs on-premises cost model (eqs. 1-12,
# Figure 7). Every price is an assumption from the config (the paper omits them). What the
# study is and writes (title, paper, outputs, captions, expected times): declaration.py.

from studies.cloudcost import declaration as cloudcost_declaration

# the engine's model-study shape (workflow/rules/model_study.smk): run, aggregate, figure

model_study(
    cloudcost_declaration.STUDY,
    run_outputs=["raw", "series", "inputs"],
    aggregate_inputs=["raw", "series", "inputs"],
    aggregate_outputs=["measurements", "break_even", "claims"],
)
