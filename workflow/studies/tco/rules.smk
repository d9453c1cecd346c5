# Paper 000: TCO of a vehicle software component, onboard vs cloud (eqs. 2-10,
# Table I, Figure 2). A model: its "raw" output is the computed costs. What the study is and
# writes (title, paper, outputs, captions, expected times): declaration.py.

from studies.tco import declaration as tco_declaration
from studies.tco import model as tco_model

# Derived inputs (fraction_of) refer to another item by name: checked here, at start-up,
# so a wrong name fails before any job runs, naming the key.
if enabled("tco"):
    try:
        tco_model.resolve(config["tco"])
    except tco_model.InputError as _exc:
        raise WorkflowError(f"invalid configuration: {_exc}") from None

# the engine's model-study shape (workflow/rules/model_study.smk): run, aggregate, figure

model_study(
    tco_declaration.STUDY,
    run_outputs=["raw", "series"],
    aggregate_inputs=["raw"],
    aggregate_outputs=[
        "measurements",
        "table1",
        "inputs",
        "lifecycle",
        "break_even",
        "claims",
    ],
)
