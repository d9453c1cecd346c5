# The reproduction report under paper/: claims of every enabled study, figures,
# tables, stand-ins, expected vs measured times.

REPORT_OUTPUTS = ["paper/index.html", "paper/claims.csv"]
if config["report"]["pdf"]:
    REPORT_OUTPUTS.append("paper/report.pdf")


def as_list(x):
    return [] if not x else ([x] if isinstance(x, str) else list(x))


def report_inputs(wildcards):
    files = []
    for st in STUDY_REPORT.values():
        if not st["enabled"] or not st.get("claims"):
            continue
        files += as_list(st["claims"]) + as_list(st.get("measurements"))
        files += [f["path"] for f in st.get("figures", [])]
        files += [t["path"] for t in st.get("tables", [])]
        # benchmark files only feed the measured times; a report built from what exists
        # (allow_incomplete) must not wait for, or re-run, a job that failed
        files += [b for b in st.get("benchmarks", []) if not ALLOW_INCOMPLETE or os.path.exists(b)]
    return files


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
