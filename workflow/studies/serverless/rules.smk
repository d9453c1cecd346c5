# Paper 003 (serverless): the rules. The study's declaration (paths, report entry, helper
# functions) is study.smk; the Snakefile includes this file, which includes it.


include: "study.smk"


rule serverless_build_functions:
    output:
        "systems/faas-functions/build/imageproc",
        "systems/faas-functions/build/imageproc-np",
        "systems/faas-functions/build/reverse",
        "systems/faas-functions/build/mkimages",
    log:
        "results/serverless/log/build_functions.log",
    shell:
        "make -C systems/faas-functions > {log} 2>&1"


rule serverless_build_standin:
    output:
        "systems/faas-standin/build/faas-standin",
    log:
        "results/serverless/log/build_standin.log",
    shell:
        "make -C systems/faas-standin > {log} 2>&1"


rule serverless_images:
    """The test images: 16-bit RGB PNGs of the paper's two sizes (every small_every-th small)."""
    input:
        (
            ["systems/faas-functions/build/mkimages"]
            if SL_STANDIN
            else system_image_input("faas-functions") + [sl_layout.SITE_CHECK]
        ),
    output:
        directory(SL_IMAGES_DIR),
    log:
        "results/serverless/log/images.log",
    params:
        exe=(
            "systems/faas-functions/build/mkimages"
            if SL_STANDIN
            else f"{system_exec('faas-functions')} mkimages"
        ),
        im=SL["images"],
    shell:
        "mkdir -p {output} && {params.exe} --out {output} --count {params.im[count]} --size {params.im[size]}"
        " --small-size {params.im[small_size]} --small-every {params.im[small_every]} > {log} 2>&1"


localrules:
    serverless_site_check,


rule serverless_site_check:
    """Cluster runs only (mode kubernetes): the site edits config.yaml ships unedited (kubeconfig,
    limit.iperf_host, limit.echo_url), checked before any run job; fails naming each key."""
    input:
        code=study_code("serverless", "site_check", "layout"),
    output:
        sl_layout.SITE_CHECK,
    log:
        "results/serverless/log/site_check.log",
    params:
        cfg=lambda wc: study_json("serverless"),
        cores=config["cluster"]["cores_per_node"],
    shell:
        "python3 -m studies.serverless.site_check --config {params.cfg} --out {output}"
        " --cores-per-node {params.cores} 2> {log}"
        " || {{ cat {log} >&2; exit 1; }}"


rule serverless_image_run:
    """One image run: the director against one platform at n instances (n+1 layout: the director on
    the driver node, the platform and its n instances on the system nodes, placement.py; locally
    processes on this host; the baseline: one node)."""
    input:
        sl_system_inputs,
        images=SL_IMAGES_DIR,
        code=study_code("serverless", "run", "layout", "placement"),
    output:
        f"{sl_layout.RAW_DIR}/workload~image/variant~{{variant}}/platform~{{platform}}/instances~{{instances}}/rep~{{rep}}.json",
    log:
        "results/serverless/log/run/image/variant~{variant}/platform~{platform}/instances~{instances}/rep~{rep}.log",
    benchmark:
        sl_bench_image("{variant}", "{platform}", "{instances}", "{rep}")
    wildcard_constraints:
        variant="processing|null-processing",
        platform="openfaas|nuclio-cpp|baseline",
        instances=r"[0-9]+",
        rep=r"[0-9]+",
    resources:
        # the baseline is the function run by the director on its own node: one node
        **sl_run_resources(lambda wc: 0 if wc.platform == "baseline" else int(wc.instances)),
    params:
        exec=sl_exec(),
        cfg=lambda wc: study_json("serverless"),
    shell:
        "{params.exec} python3 -m studies.serverless.run --config {params.cfg} --workload image"
        " --variant {wildcards.variant} --platform {wildcards.platform} --instances {wildcards.instances}"
        " --rep {wildcards.rep} --images {input.images} > {log} 2>&1"


# One byte-reversal sweep job per platform x variant x n x repeat: every request size of the
# config. One rule per platform, because the sizes a platform refuses by design (Nuclio Go above
# 2 MiB) are sent but are not outputs (their failure records are the result).
for _sl_p in PLATFORMS_BYTES:

    rule:
        name:
            f"serverless_bytes_run_{_sl_p.replace('-', '_')}"
        input:
            sl_system_inputs,
            code=study_code("serverless", "run", "layout", "placement"),
        output:
            sl_bytes_outputs(_sl_p),
        log:
            f"results/serverless/log/run/bytes/variant~{{variant}}/platform~{_sl_p}/instances~{{instances}}/rep~{{rep}}.log",
        benchmark:
            sl_bench_bytes("{variant}", _sl_p, "{instances}", "{rep}")
        wildcard_constraints:
            variant="parallel|single",
            instances=r"[0-9]+",
            rep=r"[0-9]+",
        resources:
            **sl_run_resources(lambda wc: int(wc.instances)),
        params:
            exec=sl_exec(),
            cfg=lambda wc: study_json("serverless"),
            platform=_sl_p,
        shell:
            "{params.exec} python3 -m studies.serverless.run --config {params.cfg} --workload bytes"
            " --variant {wildcards.variant} --platform {params.platform} --instances {wildcards.instances}"
            " --rep {wildcards.rep} > {log} 2>&1"


# The limits, in the same run: the director's ceiling against a bare echo server (every ceiling
# size), and iperf3 over the same path.
for _sl_v in ("echo", "iperf3"):

    rule:
        name:
            f"serverless_limit_run_{_sl_v}"
        input:
            sl_system_inputs,
            code=study_code("serverless", "run", "layout", "placement"),
        output:
            sl_layout.limit_outputs(SL, _sl_v, "{rep}"),
        log:
            f"results/serverless/log/run/limit/variant~{_sl_v}/rep~{{rep}}.log",
        benchmark:
            sl_bench_limit(_sl_v, "{rep}")
        wildcard_constraints:
            rep=r"[0-9]+",
        resources:
            **sl_run_resources(1),
        params:
            exec=sl_exec(),
            cfg=lambda wc: study_json("serverless"),
            variant=_sl_v,
        shell:
            "{params.exec} python3 -m studies.serverless.run --config {params.cfg} --workload limit"
            " --variant {params.variant} --rep {wildcards.rep} > {log} 2>&1"


rule serverless_aggregate:
    """The tidy table (every expected configuration: ok, failed or not run), the summary and the
    limits table, from the raw files only."""
    input:
        analysis_image_input(),
        sl_raw_inputs,
        code=study_code("serverless", "aggregate", "analysis", "layout"),
    output:
        measurements=SL_OUT["measurements"],
        summary=SL_OUT["summary"],
        limits=SL_OUT["limits"],
    log:
        "results/serverless/log/aggregate.log",
    benchmark:
        bench_log("serverless", "serverless_aggregate")
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: study_json("serverless"),
    shell:
        "python3 -m studies.serverless.aggregate --config {params.cfg} --measurements {output.measurements}"
        " --summary {output.summary} --limits {output.limits} > {log} 2>&1"


rule serverless_table:
    """Tables 1-3 (tables/{name}.csv), the published values beside."""
    input:
        analysis_image_input(),
        code=f"{SL_DIR}/{{name}}.py",
        lib=study_code("serverless", "analysis", "layout"),
        measurements=SL_OUT["measurements"],
        published=SL_PUBLISHED,
    output:
        "results/serverless/tables/{name}.csv",
    log:
        "results/serverless/log/{name}.log",
    benchmark:
        bench_log("serverless", "serverless_{name}")
    wildcard_constraints:
        name="table1|table2|table3",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: study_json("serverless"),
    shell:
        "python3 -m studies.serverless.{wildcards.name} --config {params.cfg} --measurements {input.measurements}"
        " --published {input.published} --out {output} > {log} 2>&1"


rule serverless_figure:
    """Figures 1-3 (figures/{name}.png) and the data each draws (tables/{name}.csv)."""
    input:
        analysis_image_input(),
        code=f"{SL_DIR}/{{name}}.py",
        lib=study_code("serverless", "analysis", "layout", "plots"),
        measurements=SL_OUT["measurements"],
        published=SL_PUBLISHED,
    output:
        table="results/serverless/tables/{name}.csv",
        figure="results/serverless/figures/{name}.png",
    log:
        "results/serverless/log/{name}.log",
    benchmark:
        bench_log("serverless", "serverless_{name}")
    wildcard_constraints:
        name="figure1|figure2|figure3",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: study_json("serverless"),
    shell:
        "python3 -m studies.serverless.{wildcards.name} --config {params.cfg} --measurements {input.measurements}"
        " --published {input.published} --table {output.table} --out {output.figure} > {log} 2>&1"


rule serverless_claims:
    input:
        analysis_image_input(),
        code=study_code("serverless", "claims", "analysis", "layout"),
        measurements=SL_OUT["measurements"],
        published=SL_PUBLISHED,
    output:
        SL_OUT["claims"],
    log:
        "results/serverless/log/claims.log",
    benchmark:
        bench_log("serverless", "serverless_claims")
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: study_json("serverless"),
    shell:
        "python3 -m studies.serverless.claims --config {params.cfg} --measurements {input.measurements}"
        " --published {input.published} --out {output} > {log} 2>&1"


rule serverless_kick:
    input:
        _sl_kick(),


rule serverless:
    input:
        SL_OUT["claims"],
        SL_OUT["limits"],
        [f"results/serverless/tables/{n}.csv" for n in SL_TABLES],
        [f"results/serverless/figures/{n}.png" for n in SL_FIGURES],
