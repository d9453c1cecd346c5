# The papers reproduce themselves (issue 28; repro.selfcheck): every study with a selfcheck.py has
# its claims run on its published.csv values alone at cluster scale (config/config.yaml, whatever
# overlay this run uses), and each perturbed input must flip its verdict. Fails (exit 1) naming each
# failure; `./repro selfcheck` runs the same module and keeps the CSV when it fails. Not part of
# `rule all`: the report shows paper/selfcheck.html from results/selfcheck.csv when it exists.

SELFCHECK_STUDIES = [s for s in STUDY_NAMES if os.path.exists(f"{STUDIES}/{s}/selfcheck.py")]


rule selfcheck:
    input:
        analysis_image_input(),
        code=["workflow/lib/repro/selfcheck.py", "workflow/lib/repro/claims.py"],
        config="config/config.yaml",
        studies=[f"{STUDIES}/{s}/{f}" for s in SELFCHECK_STUDIES for f in ("selfcheck.py", "published.csv")],
        # the builders the selfcheck runs: every Python file of those studies
        lib=[f"{STUDIES}/{s}/{f}" for s in SELFCHECK_STUDIES for f in sorted(os.listdir(f"{STUDIES}/{s}"))
             if f.endswith(".py")],
    output:
        "results/selfcheck.csv",
    log:
        "results/selfcheck/log/selfcheck.log",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    shell:
        "python3 -m repro.selfcheck --config {input.config} --out {output} > {log} 2>&1"
