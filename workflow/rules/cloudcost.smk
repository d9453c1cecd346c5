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


STUDY_REPORT["cloudcost"] = {
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
            "caption": "CapEx, OpEx and the month from which each on-premises tier is cheaper",
        },
        {
            "path": CLOUDCOST_OUT["inputs"],
            "caption": "Every price input with its source (all assumptions: the paper omits Tables 6 and 7)",
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
        bench_log("cloudcost", "cloudcost_model"),
        bench_log("cloudcost", "cloudcost_analyze"),
        bench_log("cloudcost", "cloudcost_figure7"),
    ],
}


rule cloudcost_model:
    input:
        analysis_image_input(),
        code=f"{SCRIPTS}/cloudcost_model.py",
    output:
        raw=CLOUDCOST_OUT["raw"],
        series=CLOUDCOST_OUT["series"],
        inputs=CLOUDCOST_OUT["inputs"],
    log:
        "results/cloudcost/log/model.log",
    benchmark:
        bench_log("cloudcost", "cloudcost_model")
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: study_json("cloudcost"),
    shell:
        "python3 workflow/scripts/cloudcost_model.py --params {params.cfg} --raw {output.raw}"
        " --series {output.series} --inputs {output.inputs} > {log} 2>&1"


rule cloudcost_analyze:
    input:
        analysis_image_input(),
        code=f"{SCRIPTS}/cloudcost_analyze.py",
        raw=CLOUDCOST_OUT["raw"],
        series=CLOUDCOST_OUT["series"],
        inputs=CLOUDCOST_OUT["inputs"],
    output:
        measurements=CLOUDCOST_OUT["measurements"],
        break_even=CLOUDCOST_OUT["break_even"],
        claims=CLOUDCOST_OUT["claims"],
    log:
        "results/cloudcost/log/analyze.log",
    benchmark:
        bench_log("cloudcost", "cloudcost_analyze")
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        tier=config["cloudcost"].get("claim_tier", "standard"),
    shell:
        "python3 workflow/scripts/cloudcost_analyze.py --raw {input.raw} --series {input.series}"
        " --inputs {input.inputs} --claim-tier {params.tier}"
        " --measurements {output.measurements} --break-even {output.break_even}"
        " --claims {output.claims} > {log} 2>&1"


rule cloudcost_figure7:
    input:
        analysis_image_input(),
        code=f"{SCRIPTS}/cloudcost_figure7.py",
        series=CLOUDCOST_OUT["series"],
        break_even=CLOUDCOST_OUT["break_even"],
    output:
        CLOUDCOST_OUT["figure7"],
    log:
        "results/cloudcost/log/figure7.log",
    benchmark:
        bench_log("cloudcost", "cloudcost_figure7")
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        currency=config["cloudcost"].get("currency", "USD"),
    shell:
        "python3 workflow/scripts/cloudcost_figure7.py --series {input.series} --break-even {input.break_even}"
        " --currency {params.currency} --out {output} > {log} 2>&1"


rule cloudcost:
    input:
        CLOUDCOST_OUT["claims"],
        CLOUDCOST_OUT["figure7"],
