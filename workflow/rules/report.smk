# The reproduction report under paper/: a front page, one page per enabled-or-not study (claims
# beside the published values, figures with their claims, tables that fit), the PDF, and a check
# of what a reader sees (repro.report_check: headless Chromium and pdftoppm).

REPORT_PAGES = [f"paper/{s}.html" for s in STUDY_REPORT]


rule report_html:
    input:
        report_inputs,
        analysis_image_input(),
        code="workflow/lib/repro/report.py",
    output:
        html="paper/index.html",
        pages=REPORT_PAGES,
        printed="paper/print.html",
        figures=directory("paper/figures"),
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
        configfiles=shlex.quote(" ".join(os.path.relpath(c) for c in workflow.configfiles)),
    shell:
        "python3 -m repro.report --studies {params.studies} --title {params.title} --scale {params.scale}"
        " --configfiles {params.configfiles} --outdir paper --claims {output.claims} > {log} 2>&1"


rule report_pdf:
    input:
        analysis_image_input(),
        code="workflow/lib/repro/report_pdf.py",
        html="paper/print.html",
        figures="paper/figures",
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


rule report_check:
    """Render every page in headless Chromium and the PDF with pdftoppm (on the host: Debian's
    chromium and poppler-utils); fails naming a broken image, an over-wide table or a study
    missing from the front page. Keeps one screenshot per page under paper/screenshots/."""
    input:
        code="workflow/lib/repro/report_check.py",
        html="paper/index.html",
        pages=REPORT_PAGES,
        figures="paper/figures",
        pdf=REPORT_PDF,
    output:
        check="paper/render-check.json",
        shots=directory("paper/screenshots"),
    log:
        "results/report/log/report_check.log",
    resources:
        **analysis_resources(),
    params:
        studies=" ".join(STUDY_REPORT),
        pdf=lambda wc, input: f"--pdf {input.pdf}" if input.pdf else "",
    shell:
        "python3 -m repro.report_check --dir paper --studies '{params.studies}' {params.pdf}"
        " --screenshots {output.shots} --out {output.check} > {log} 2>&1"


rule report:
    input:
        REPORT_OUTPUTS,
