# The inference-framework paper: the rules. The study's declaration (paths, report entry, helper
# functions) is study.smk; the Snakefile includes this file, which includes it.


include: "study.smk"


rule inference_prepare:
    """Every model in the formats each server needs (systems/inference prepare --cached: the
    directory is keyed by the options and reused); writes where it is and the spec it was made with.
    Memory: what the configured models' preparation needs (layout.prepare_mem_mb), refused at plan
    time when cluster.mem_mb_per_node is smaller."""
    input:
        code=study_code("inference", "run", "layout"),
    output:
        inf_layout.MODELS_FILE,
    log:
        "results/inference/log/prepare.log",
    benchmark:
        bench_log("inference", "inference_prepare")
    resources:
        bench=1,
        runtime=120,
        mem_mb=INF_PREPARE_MEM_MB,
    params:
        cfg=lambda wc: run_json("inference"),
    shell:
        # on the host, both sides in systems/inference/setup.sh's cached venvs (no one image holds both)
        "python3 -m studies.inference.run prepare --config {params.cfg} --out {output} > {log} 2>&1"


rule inference_serve:
    """One server x model x repeat (n+1: on Slurm the server in an srun step on the second node,
    Locust on the first, the driver; locally two processes on this host): the server up, Locust at
    every user count, the server always down."""
    input:
        lambda wc: inf_image_input(wc.server),
        inf_image_input("ceiling"),
        models=inf_layout.MODELS_FILE,
        code=study_code("inference", "run", "layout"),
    output:
        [
            f"{inf_layout.RAW_DIR}/experiment~serve/server~{{server}}/model~{{model}}/users~{u}/rep~{{rep}}.json"
            for u in inf_layout.users(INF)
        ],
    log:
        "results/inference/log/run/serve/server~{server}/model~{model}/rep~{rep}.log",
    benchmark:
        inf_bench_serve("{server}", "{model}", "{rep}")
    wildcard_constraints:
        server="|".join(inf_layout.SERVERS),
        model="|".join(inf_layout.MODELS),
        rep=r"[0-9]+",
    resources:
        **inf_resources(),
    params:
        args=lambda wc: shlex.quote(
            json.dumps(
                {
                    "server": wc.server,
                    "model": wc.model,
                    "server_exec": inf_exec(wc.server),
                    "driver_exec": inf_exec("ceiling"),
                }
            )
        ),
        cfg=lambda wc: run_json("inference"),
    shell:
        # on the host (srun is there): the server and Locust each in their own image, inside their steps
        "python3 -m studies.inference.run serve --config {params.cfg} --params {params.args} --rep {wildcards.rep}"
        " --out {output} --input models={input.models} > {log} 2>&1"


rule inference_raw_rate:
    """The limit: the model's raw in-process rate (a plain forward loop, same threads and batch, no
    server), on the server node (on Slurm an srun step on the job's second node)."""
    input:
        lambda wc: inf_image_input(wc.framework),
        models=inf_layout.MODELS_FILE,
        code=study_code("inference", "run", "layout"),
    output:
        f"{inf_layout.RAW_DIR}/experiment~raw_rate/model~{{model}}/framework~{{framework}}/rep~{{rep}}.json",
    log:
        "results/inference/log/run/raw_rate/model~{model}/framework~{framework}/rep~{rep}.log",
    benchmark:
        inf_bench_rawrate("{model}", "{framework}", "{rep}")
    wildcard_constraints:
        model="|".join(inf_layout.MODELS),
        framework="torch|tf",
        rep=r"[0-9]+",
    resources:
        **inf_resources(runtime=30),
    params:
        args=lambda wc: shlex.quote(
            json.dumps({"model": wc.model, "framework": wc.framework, "server_exec": inf_exec(wc.framework)})
        ),
        cfg=lambda wc: run_json("inference"),
    shell:
        # on the host: on Slurm run.py repeats itself in an srun step on the server node, image inside
        "python3 -m studies.inference.run raw_rate --config {params.cfg} --params {params.args} --rep {wildcards.rep}"
        " --out {output} --input models={input.models} > {log} 2>&1"


rule inference_ceiling:
    """The limit: Locust's own ceiling against a trivial endpoint (every ceiling user count), across the
    serve jobs' n+1 split: the endpoint on the server node, Locust on the driver node (no GPU asked:
    neither side uses one)."""
    input:
        inf_image_input("ceiling"),
        code=study_code("inference", "run", "layout"),
    output:
        inf_layout.ceiling_outputs(INF, "{rep}"),
    log:
        "results/inference/log/run/ceiling/rep~{rep}.log",
    benchmark:
        inf_bench_ceiling("{rep}")
    wildcard_constraints:
        rep=r"[0-9]+",
    resources:
        **inf_resources(runtime=30, gpu=False),
    params:
        args=shlex.quote(json.dumps({"driver_exec": inf_exec("ceiling")})),
        cfg=lambda wc: run_json("inference"),
    shell:
        # on the host (srun is there): the endpoint and Locust each in Locust's image, inside their steps
        "python3 -m studies.inference.run ceiling --config {params.cfg} --params {params.args} --rep {wildcards.rep}"
        " --out {output} > {log} 2>&1"


# The tidy table (every configuration: ok, failed, not run, or not run as in the paper), the summary
# and the limits table, from the raw files only; Tables I-II (tables/{name}.csv) and Figures 1-4
# (figures/{name}.png with the data each draws in tables/{name}.csv), the published values beside;
# the claims. The engine's analysis_rule gives each its log, benchmark, image and resources.
INF_READS = {"measurements": INF_OUT["measurements"], "published": INF_PUBLISHED}
analysis_rule(
    "inference", "inference_aggregate", script="aggregate", lib=("analysis", "layout"), raw=inf_raw_inputs,
    output={k: INF_OUT[k] for k in ("measurements", "summary", "limits")},
    args="--measurements {output.measurements} --summary {output.summary} --limits {output.limits}",
)
analysis_rule(
    "inference", "inference_table", script="{name}", names=INF_TABLES, lib=("analysis", "layout"), inputs=INF_READS,
    output={"table": "results/inference/tables/{name}.csv"},
    args="--measurements {input.measurements} --published {input.published} --out {output.table}",
)
analysis_rule(
    "inference", "inference_figure", script="{name}", names=INF_FIGURES, lib=("analysis", "layout", "plots"),
    inputs=INF_READS,
    output={"table": "results/inference/tables/{name}.csv", "figure": "results/inference/figures/{name}.png"},
    args="--measurements {input.measurements} --published {input.published} --table {output.table}"
    " --out {output.figure}",
)
analysis_rule(
    "inference", "inference_claims", script="claims", lib=("analysis", "layout"), inputs=INF_READS,
    output={"claims": INF_OUT["claims"]},
    args="--measurements {input.measurements} --published {input.published} --out {output.claims}",
)
