# The reproduction report under paper/: a front page, one page per enabled-or-not study (claims
# beside the published values, figures with their claims, tables that fit), the PDF, and a check
# of what a reader sees (repro.report_check: headless Chromium and pdftoppm).

import glob

REPORT_PAGES = [f"paper/{s}.html" for s in STUDY_REPORT]
# pages beside the studies' (repro.report.extra_pages): the cluster rehearsal's evidence, the selfcheck
EXTRA_REPORT_PAGES = ["paper/rehearsal.html", "paper/selfcheck.html"]
REHEARSAL_DIR = "results/rehearsal"
SELFCHECK_CSV = "results/selfcheck.csv"  # ./repro selfcheck or rule selfcheck (workflow/rules/selfcheck.smk)


def rehearsal_inputs(wildcards):
    """What `./repro rehearse` wrote, if it ran: read when present (a newer rehearsal rebuilds the
    report), never required -- no rule makes these files, so the report never runs a rehearsal."""
    return sorted(glob.glob(f"{REHEARSAL_DIR}/*.json"))


def selfcheck_inputs(wildcards):
    """results/selfcheck.csv when it exists (read, never required: the report never runs the selfcheck)."""
    return [SELFCHECK_CSV] if os.path.exists(SELFCHECK_CSV) else []


rule report_html:
    input:
        report_inputs,
        analysis_image_input(),
        rehearsal_inputs,
        selfcheck_inputs,
        code="workflow/lib/repro/report.py",
        code_selfcheck="workflow/lib/repro/report_selfcheck.py",
        code_rehearsal="workflow/lib/repro/report_rehearsal.py",
        code_failures="workflow/lib/repro/failures.py",
    output:
        html="paper/index.html",
        pages=REPORT_PAGES,
        extra=EXTRA_REPORT_PAGES,
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
        rehearsal=REHEARSAL_DIR,
    shell:
        "python3 -m repro.report --studies {params.studies} --title {params.title} --scale {params.scale}"
        " --configfiles {params.configfiles} --outdir paper --claims {output.claims}"
        " --rehearsal {params.rehearsal} > {log} 2>&1"


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
        extra=EXTRA_REPORT_PAGES,
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
        # the front page must link every study page and every page beside them
        studies=" ".join(list(STUDY_REPORT) + [os.path.basename(p)[: -len(".html")] for p in EXTRA_REPORT_PAGES]),
        pdf=lambda wc, input: f"--pdf {input.pdf}" if input.pdf else "",
    shell:
        "python3 -m repro.report_check --dir paper --studies '{params.studies}' {params.pdf}"
        " --screenshots {output.shots} --out {output.check} > {log} 2>&1"


rule report:
    input:
        REPORT_OUTPUTS,
