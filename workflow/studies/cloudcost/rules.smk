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


register_study(
    "cloudcost",
    kick=[CLOUDCOST_OUT["claims"]],
    **{
    "title": "Cloud (AWS PAYG) vs on-premises storage cost for HPC over cloud",
    "paper": "002 (HPC over cloud storage), Section 5: equations (1)-(12), Figure 7",
    "enabled": enabled("cloudcost"),
    "claims": CLOUDCOST_OUT["claims"],
    "measurements": CLOUDCOST_OUT["measurements"],
    "figures": [
        {
            "path": CLOUDCOST_OUT["figure7"],
            "caption": "Figure 7: cumulative and monthly cost, cloud vs three on-premises tiers (assumed prices)",
        },
    ],
    "tables": [
        {
            "path": CLOUDCOST_OUT["break_even"],
            "caption": "CapEx, OpEx and the month from which each on-premises tier is cheaper (all three tiers; "
                       "where none within the horizon, the month it would be if the last month's costs went on)",
        },
        {
            "path": CLOUDCOST_OUT["inputs"],
            "caption": "Every input with its source: the prices (all assumptions: the paper omits Tables 6 and 7) "
                       "and the on-premises model's own assumptions (hours per month, the month the depreciation "
                       "and maintenance provisions start, depreciation counted as OpEx)",
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
        bench_log("cloudcost", "cloudcost_run"),
        bench_log("cloudcost", "cloudcost_aggregate"),
        bench_log("cloudcost", "cloudcost_figure7"),
    ],
    },
)


rule cloudcost_run:
    """The model: every cost month by month from the config (the study's raw file)."""
    input:
        analysis_image_input(),
        code=study_code("cloudcost", "model"),
    output:
        raw=CLOUDCOST_OUT["raw"],
        series=CLOUDCOST_OUT["series"],
        inputs=CLOUDCOST_OUT["inputs"],
    log:
        "results/cloudcost/log/run.log",
    benchmark:
        bench_log("cloudcost", "cloudcost_run")
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: study_json("cloudcost"),
    shell:
        "python3 -m studies.cloudcost.model --config {params.cfg} --raw {output.raw}"
        " --series {output.series} --inputs {output.inputs} > {log} 2>&1"


rule cloudcost_aggregate:
    """The tidy table, the paper's tables and the claims, from the model's raw file only."""
    input:
        analysis_image_input(),
        code=study_code("cloudcost", "analyze"),
        raw=CLOUDCOST_OUT["raw"],
        series=CLOUDCOST_OUT["series"],
        inputs=CLOUDCOST_OUT["inputs"],
        published=f"{STUDIES}/cloudcost/published.csv",
    output:
        measurements=CLOUDCOST_OUT["measurements"],
        break_even=CLOUDCOST_OUT["break_even"],
        claims=CLOUDCOST_OUT["claims"],
    log:
        "results/cloudcost/log/aggregate.log",
    benchmark:
        bench_log("cloudcost", "cloudcost_aggregate")
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    shell:
        "python3 -m studies.cloudcost.analyze --raw {input.raw} --series {input.series}"
        " --inputs {input.inputs} --published {input.published}"
        " --measurements {output.measurements} --break-even {output.break_even}"
        " --claims {output.claims} > {log} 2>&1"


rule cloudcost_figure:
    """The paper's figure (figures/{name}.png), from the model's series."""
    input:
        analysis_image_input(),
        code=f"{STUDIES}/cloudcost/{{name}}.py",
        series=CLOUDCOST_OUT["series"],
        break_even=CLOUDCOST_OUT["break_even"],
        published=f"{STUDIES}/cloudcost/published.csv",
    output:
        "results/cloudcost/figures/{name}.png",
    log:
        "results/cloudcost/log/{name}.log",
    benchmark:
        bench_log("cloudcost", "cloudcost_{name}")
    wildcard_constraints:
        name="figure7",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: study_json("cloudcost"),
    shell:
        "python3 -m studies.cloudcost.{wildcards.name} --series {input.series} --break-even {input.break_even}"
        " --published {input.published} --config {params.cfg} --out {output} > {log} 2>&1"


rule cloudcost:
    input:
        CLOUDCOST_OUT["claims"],
        CLOUDCOST_OUT["figure7"],
