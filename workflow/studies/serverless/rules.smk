# Paper 003 (serverless): the rules. The study's declaration (title, captions, every output's path,
# expected times) is declaration.py; what the configuration decides (report entry, helper functions)
# is study.smk; the Snakefile includes this file, which includes it. The whole-study target
# `serverless` and `serverless_kick` are derived by the Snakefile from register_study.


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
    limit.iperf_host, limit.echo_url), checked before any run job; fails naming each key. Its output is
    every run job's input: it gets the run section too (run_json), so a judging key re-runs no run job."""
    input:
        code=study_code("serverless", "site_check", "layout"),
    output:
        sl_layout.SITE_CHECK,
    log:
        "results/serverless/log/site_check.log",
    params:
        cfg=lambda wc: run_json("serverless"),
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
# A rule made in a bare loop would run its shell expression when the job runs, after the loop has
# ended: each rule is made in a function (_sl_run_rule), its shell string a literal, what differs per
# rule coming in through params.
# Every run job (and the site check they wait for) gets run_json: the section without its x-judging keys.
# The command is the run contract (repro.runner): the experiment, --params (from the wildcards),
# --rep, the named inputs and --out {output}.


def _sl_args(experiment, params, inputs=()):
    """params.args of a run rule: the experiment, its --params JSON (``params(wildcards)``), --rep and
    ``--input NAME=PATH`` for each named input."""

    def args(wildcards, input):
        text = f"{experiment} --params {shlex.quote(json.dumps(params(wildcards)))} --rep {wildcards.rep}"
        return text + "".join(f" --input {n}={shlex.quote(str(input[n]))}" for n in inputs)

    return args


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
            "args": _sl_args(
                "image",
                lambda wc: {"variant": wc.variant, "platform": wc.platform, "instances": int(wc.instances)},
                inputs=("images",),
            ),
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
            "args": _sl_args(
                "bytes",
                lambda wc, p=p: {"variant": wc.variant, "platform": p, "instances": int(wc.instances)},
            ),
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
            "args": _sl_args("limit", lambda wc, v=v: {"variant": v}),
        }
        for v in ("echo", "iperf3")
    ]
)

def _sl_run_rule(r):
    """One run rule of SL_RUN_RULES (made in a function: see the comment above)."""

    rule:
        name:
            r["name"]
        input:
            sl_system_inputs,
            **r["inputs"],
            code=study_code("serverless", "run", "layout", "placement"),
        output:
            r["output"],
        log:
            r["log"],
        benchmark:
            r["benchmark"]
        wildcard_constraints:
            **r["constraints"],
            rep=r"[0-9]+",
        resources:
            **sl_run_resources(r["system_nodes"]),
        params:
            exec=sl_exec(),
            cfg=lambda wc: run_json("serverless"),
            args=r["args"],
        shell:
            "{params.exec} python3 -m studies.serverless.run {params.args} --config {params.cfg} --out {output}"
            " > {log} 2>&1"


for _sl_r in SL_RUN_RULES:
    _sl_run_rule(_sl_r)


# The tidy table (every expected configuration: ok, failed or not run), the summary and the limits
# table, from the raw files only; Tables 1-3 (tables/{name}.csv, the published values beside),
# Figures 1-3 (figures/{name}.png and the data each draws, tables/{name}.csv) and the claims, from the
# tidy table and the published values only. The engine's analysis_rule gives each its log, benchmark,
# image and resources.
SL_READS = {"measurements": SL_OUT["measurements"], "published": SL_PUBLISHED}
SL_READ_ARGS = "--measurements {input.measurements} --published {input.published}"
analysis_rule(
    "serverless", "serverless_aggregate", script="aggregate", lib=("analysis", "layout"), raw=sl_raw_inputs,
    output={k: SL_OUT[k] for k in ("measurements", "summary", "limits")},
    args="--measurements {output.measurements} --summary {output.summary} --limits {output.limits}",
)
analysis_rule(
    "serverless", "serverless_table", script="{name}", names=SL_TABLES, lib=("analysis", "layout"),
    inputs=SL_READS, output={"table": SL_STUDY.table("{name}")},
    args=SL_READ_ARGS + " --out {output.table}",
)
analysis_rule(
    "serverless", "serverless_figure", script="{name}", names=SL_FIGURES, lib=("analysis", "layout", "plots"),
    inputs=SL_READS,
    output={"table": SL_STUDY.table("{name}"), "figure": SL_STUDY.figure("{name}")},
    args=SL_READ_ARGS + " --table {output.table} --out {output.figure}",
)
analysis_rule(
    "serverless", "serverless_claims", script="claims", lib=("analysis", "layout"), inputs=SL_READS,
    output={"claims": SL_OUT["claims"]}, args=SL_READ_ARGS + " --out {output.claims}",
)

