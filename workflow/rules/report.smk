# The reproduction report under paper/: claims of every enabled study, figures,
# tables, stand-ins, expected vs measured times.

rule report_html:
    input:
        report_inputs,
        analysis_image_input(),
        code="workflow/lib/repro/report.py",
    output:
        html="paper/index.html",
        claims="paper/claims.csv",
    log:
        "results/report/log/report_html.log",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        studies=lambda wc: shlex.quote(json.dumps(STUDY_REPORT)),
        title=shlex.quote(config["report"]["title"]),
        scale=SCALE,
    shell:
        "python3 -m repro.report --studies {params.studies} --title {params.title}"
        " --scale {params.scale} --html {output.html} --claims {output.claims} > {log} 2>&1"


rule report_pdf:
    input:
        analysis_image_input(),
        code="workflow/lib/repro/report_pdf.py",
        html="paper/index.html",
    output:
        "paper/report.pdf",
    log:
        "results/report/log/report_pdf.log",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    shell:
        "python3 -m repro.report_pdf --html {input.html} --pdf {output} > {log} 2>&1"


rule report:
    input:
        REPORT_OUTPUTS,
