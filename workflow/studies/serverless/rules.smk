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


# The run rules, one shape: the director against one platform (or the limits), on the n+1 layout
# (placement.py: the director on the driver node, the platform and its instances on the system
# nodes; locally processes on this host). One job = one image run (the baseline: the function run
# by the director, one node), one byte-reversal sweep (every request size of the config; one rule
# per platform because the sizes a platform refuses by design, Nuclio Go above 2 MiB, are sent but
# are not outputs: their failure records are the result), or one limit measurement (the director's
# ceiling against a bare echo server at every ceiling size; iperf3 over the same path).
# A rule made in a loop runs its shell expression when the job runs, after the loop has ended: the
# shell strings are literals, what differs per rule comes in through params (made per rule here).


def _sl_args(fmt):
    """params.args of a run rule: the command's arguments, ``fmt`` filled from the wildcards and inputs."""
    return lambda wildcards, input: fmt.format(wildcards=wildcards, input=input)


SL_RUN_RULES = (
    [
        {
            "name": "serverless_image_run",
            "output": f"{sl_layout.RAW_DIR}/workload~image/variant~{{variant}}/platform~{{platform}}"
            "/instances~{instances}/rep~{rep}.json",
            "log": "results/serverless/log/run/image/variant~{variant}/platform~{platform}"
            "/instances~{instances}/rep~{rep}.log",
            "benchmark": sl_bench_image("{variant}", "{platform}", "{instances}", "{rep}"),
            "constraints": {
                "variant": "processing|null-processing",
                "platform": "openfaas|nuclio-cpp|baseline",
                "instances": r"[0-9]+",
            },
            "system_nodes": lambda wc: 0 if wc.platform == "baseline" else int(wc.instances),
            "inputs": {"images": SL_IMAGES_DIR},
            "args": "--workload image --variant {wildcards.variant} --platform {wildcards.platform}"
            " --instances {wildcards.instances} --rep {wildcards.rep} --images {input.images}",
        }
    ]
    + [
        {
            "name": f"serverless_bytes_run_{p.replace('-', '_')}",
            "output": sl_bytes_outputs(p),
            "log": f"results/serverless/log/run/bytes/variant~{{variant}}/platform~{p}"
            "/instances~{instances}/rep~{rep}.log",
            "benchmark": sl_bench_bytes("{variant}", p, "{instances}", "{rep}"),
            "constraints": {"variant": "parallel|single", "instances": r"[0-9]+"},
            "system_nodes": lambda wc: int(wc.instances),
            "inputs": {},
            "args": "--workload bytes --variant {wildcards.variant} --platform " + p
            + " --instances {wildcards.instances} --rep {wildcards.rep}",
        }
        for p in PLATFORMS_BYTES
    ]
    + [
        {
            "name": f"serverless_limit_run_{v}",
            "output": sl_layout.limit_outputs(SL, v, "{rep}"),
            "log": f"results/serverless/log/run/limit/variant~{v}/rep~{{rep}}.log",
            "benchmark": sl_bench_limit(v, "{rep}"),
            "constraints": {},
            "system_nodes": 1,
            "inputs": {},
            "args": f"--workload limit --variant {v}" + " --rep {wildcards.rep}",
        }
        for v in ("echo", "iperf3")
    ]
)

for _sl_r in SL_RUN_RULES:

    rule:
        name:
            _sl_r["name"]
        input:
            sl_system_inputs,
            **_sl_r["inputs"],
            code=study_code("serverless", "run", "layout", "placement"),
        output:
            _sl_r["output"],
        log:
            _sl_r["log"],
        benchmark:
            _sl_r["benchmark"]
        wildcard_constraints:
            **_sl_r["constraints"],
            rep=r"[0-9]+",
        resources:
            **sl_run_resources(_sl_r["system_nodes"]),
        params:
            exec=sl_exec(),
            cfg=lambda wc: study_json("serverless"),
            args=_sl_args(_sl_r["args"]),
        shell:
            "{params.exec} python3 -m studies.serverless.run --config {params.cfg} {params.args} > {log} 2>&1"


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


# Tables 1-3 (tables/{name}.csv, the published values beside), Figures 1-3 (figures/{name}.png and
# the data each draws, tables/{name}.csv) and the claims: one shape, from the tidy table and the
# published values only (params: the script and its output flags; see the run rules on loops).
SL_ANALYSIS_RULES = [
    {
        "name": "serverless_table",
        "code": {"code": f"{SL_DIR}/{{name}}.py", "lib": study_code("serverless", "analysis", "layout")},
        "output": ["results/serverless/tables/{name}.csv"],
        "named_output": {},
        "log": "results/serverless/log/{name}.log",
        "benchmark": bench_log("serverless", "serverless_{name}"),
        "constraints": {"name": "|".join(SL_TABLES)},
        "params": {"script": lambda wc: wc.name, "out": lambda wc, output: f"--out {output}"},
    },
    {
        "name": "serverless_figure",
        "code": {
            "code": f"{SL_DIR}/{{name}}.py",
            "lib": study_code("serverless", "analysis", "layout", "plots"),
        },
        "output": [],
        "named_output": {
            "table": "results/serverless/tables/{name}.csv",
            "figure": "results/serverless/figures/{name}.png",
        },
        "log": "results/serverless/log/{name}.log",
        "benchmark": bench_log("serverless", "serverless_{name}"),
        "constraints": {"name": "|".join(SL_FIGURES)},
        "params": {
            "script": lambda wc: wc.name,
            "out": lambda wc, output: f"--table {output.table} --out {output.figure}",
        },
    },
    {
        "name": "serverless_claims",
        "code": {"code": study_code("serverless", "claims", "analysis", "layout")},
        "output": [SL_OUT["claims"]],
        "named_output": {},
        "log": "results/serverless/log/claims.log",
        "benchmark": bench_log("serverless", "serverless_claims"),
        "constraints": {},
        "params": {"script": "claims", "out": lambda wc, output: f"--out {output}"},
    },
]

for _sl_a in SL_ANALYSIS_RULES:

    rule:
        name:
            _sl_a["name"]
        input:
            analysis_image_input(),
            **_sl_a["code"],
            measurements=SL_OUT["measurements"],
            published=SL_PUBLISHED,
        output:
            *_sl_a["output"],
            **_sl_a["named_output"],
        log:
            _sl_a["log"],
        benchmark:
            _sl_a["benchmark"]
        wildcard_constraints:
            **_sl_a["constraints"],
        container:
            ANALYSIS_IMAGE
        resources:
            **analysis_resources(),
        params:
            cfg=lambda wc: study_json("serverless"),
            **_sl_a["params"],
        shell:
            "python3 -m studies.serverless.{params.script} --config {params.cfg} --measurements {input.measurements}"
            " --published {input.published} {params.out} > {log} 2>&1"


rule serverless_kick:
    input:
        _sl_kick(),


rule serverless:
    input:
        SL_OUT["claims"],
        SL_OUT["limits"],
        [f"results/serverless/tables/{n}.csv" for n in SL_TABLES],
        [f"results/serverless/figures/{n}.png" for n in SL_FIGURES],
