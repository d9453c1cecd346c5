# Paper 000: TCO of a vehicle software component, onboard vs cloud (eqs. 2-10,
# Table I, Figure 2). A model: its "raw" output is the computed costs.

from studies.tco import model as tco_model

# Derived inputs (fraction_of) refer to another item by name: checked here, at start-up,
# so a wrong name fails before any job runs, naming the key.
if enabled("tco"):
    try:
        tco_model.resolve(config["tco"])
    except tco_model.InputError as _exc:
        raise WorkflowError(f"invalid configuration: {_exc}") from None

TCO_OUT = {
    "raw": "results/tco/raw/model.json",
    "series": "results/tco/raw/series.csv",
    "measurements": "results/tco/measurements.csv",
    "table1": "results/tco/tables/table1.csv",
    "inputs": "results/tco/tables/inputs.csv",
    "lifecycle": "results/tco/tables/tco_lifecycle.csv",
    "break_even": "results/tco/tables/break_even.csv",
    "figure2": "results/tco/figures/figure2.png",
    "claims": "results/tco/claims.csv",
}


register_study(
    "tco",
    kick=[TCO_OUT["claims"]],
    **{
    "title": "TCO of vehicle software components: onboard vs cloud",
    "paper": "000 (SCALABILITY 2024 proceedings), TCO paper: equations (2)-(10), Table I, Figure 2",
    "enabled": enabled("tco"),
    "claims": TCO_OUT["claims"],
    "measurements": TCO_OUT["measurements"],
    "figures": [
        {
            "path": TCO_OUT["figure2"],
            "caption": "Figure 2: cumulative TCO of the HVAC function for fleets of 1,000 and 5,000 buses; break-even points marked",
        },
    ],
    "tables": [
        {
            "path": TCO_OUT["table1"],
            "caption": "Table I: CapEx and OpEx for cloud and vehicle execution platform (reproduced beside published)",
        },
        {
            "path": TCO_OUT["inputs"],
            "caption": "Every input with its formula and source: the derived inputs (hardware = 1/3 x software, "
                       "cloud introduction/purchasing/migration = software) and the cloud price "
                       "0.0204 EUR/h x 730 h / 10 vehicles = 1.4892 EUR beside the paper's rounded 1.49 EUR",
        },
        {
            "path": TCO_OUT["lifecycle"],
            "caption": "TCO over the 8.3-year bus life cycle",
        },
        {
            "path": TCO_OUT["break_even"],
            "caption": "Break-even periods with and without development costs",
        },
    ],
    "stand_ins": [],
    "expected_times": {
        "setup_local": "none beyond ./repro setup",
        "run_local": "< 10 s",
        "analysis_local": "< 10 s",
        "run_cluster": "< 1 min (one small job)",
    },
    "benchmarks": [
        bench_log("tco", "tco_run"),
        bench_log("tco", "tco_aggregate"),
        bench_log("tco", "tco_figure2"),
    ],
    },
)


rule tco_run:
    """The model: every cost month by month from the config (the study's raw file)."""
    input:
        analysis_image_input(),
        code=study_code("tco", "model"),
    output:
        raw=TCO_OUT["raw"],
        series=TCO_OUT["series"],
    log:
        "results/tco/log/run.log",
    benchmark:
        bench_log("tco", "tco_run")
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: study_json("tco"),
    shell:
        "python3 -m studies.tco.model --config {params.cfg} --raw {output.raw}"
        " --series {output.series} > {log} 2>&1"


rule tco_aggregate:
    """The tidy table, the paper's tables and the claims, from the model's raw file only."""
    input:
        analysis_image_input(),
        code=study_code("tco", "analyze"),
        raw=TCO_OUT["raw"],
        published=f"{STUDIES}/tco/published.csv",
    output:
        measurements=TCO_OUT["measurements"],
        table1=TCO_OUT["table1"],
        inputs=TCO_OUT["inputs"],
        lifecycle=TCO_OUT["lifecycle"],
        break_even=TCO_OUT["break_even"],
        claims=TCO_OUT["claims"],
    log:
        "results/tco/log/aggregate.log",
    benchmark:
        bench_log("tco", "tco_aggregate")
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    shell:
        "python3 -m studies.tco.analyze --raw {input.raw} --published {input.published}"
        " --measurements {output.measurements} --table1 {output.table1} --inputs {output.inputs}"
        " --lifecycle {output.lifecycle} --break-even {output.break_even}"
        " --claims {output.claims} > {log} 2>&1"


rule tco_figure:
    """The paper's figure (figures/{name}.png), from the model's series."""
    input:
        analysis_image_input(),
        code=f"{STUDIES}/tco/{{name}}.py",
        series=TCO_OUT["series"],
        break_even=TCO_OUT["break_even"],
        published=f"{STUDIES}/tco/published.csv",
    output:
        "results/tco/figures/{name}.png",
    log:
        "results/tco/log/{name}.log",
    benchmark:
        bench_log("tco", "tco_{name}")
    wildcard_constraints:
        name="figure2",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: study_json("tco"),
    shell:
        "python3 -m studies.tco.{wildcards.name} --series {input.series} --break-even {input.break_even}"
        " --published {input.published} --config {params.cfg} --out {output} > {log} 2>&1"


rule tco:
    input:
        TCO_OUT["claims"],
        TCO_OUT["figure2"],
