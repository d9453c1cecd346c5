# The inference-framework paper (inside papers/000_...txt): TorchServe vs TF Serving vs Triton on
# ResNet50, Wav2Vec2 (full, truncated) and BART, driven by Locust; the limits measured in the same run.
# What the study is and writes: declaration.py (the experiments' raw paths too); what the
# configuration decides: layout.py. README.md: how to run it, at which scale. Systems:
# systems/inference (models, servers, raw rate), tools/locust (driver, parser, ceiling).

from studies.inference import declaration as inf_declaration
from studies.inference import layout as inf_layout

INF = config["inference"]
try:
    inf_layout.check(INF)
    INF_PREPARE_MEM_MB = inf_layout.prepare_mem_mb(INF, config["cluster"]["mem_mb_per_node"], enabled("inference"))
except inf_layout.LayoutError as _exc:
    raise WorkflowError(str(_exc)) from None
INF_STUDY = inf_declaration.STUDY
INF_PUBLISHED = f"{STUDIES}/inference/published.csv"
INF_OUT = {k: INF_STUDY.out(k) for k in INF_STUDY.outputs}
# the image each side runs in on a cluster (servers.py finds tritonserver / tensorflow_model_server on
# PATH there, the venvs via REPRO_VENV_*); every step that runs a model gets --nv on device cuda
INF_IMAGE_OF = {"torchserve": "torchserve", "triton-pytorch": "triton", "triton-tensorflow": "triton",
                "tfserving": "tfserving", "torch": "torchserve", "tf": "inference-tf", "ceiling": "locust"}


def inf_exec(what):
    return system_exec(INF_IMAGE_OF[what], gpu=INF["device"] == "cuda" and what != "ceiling")


def inf_image_input(what):
    return system_image_input(INF_IMAGE_OF[what])


def inf_resources(runtime=None, gpu=True):
    """n+1 (driver node + server node); the server node's accelerator via --gres (gpu=False: a job
    whose sides use none, the ceiling)."""
    res = n_plus_1_resources(1, runtime=runtime or INF["slurm"]["runtime_minutes"])
    if gpu and INF["slurm"]["gres"]:
        res["slurm_extra"] = f"{res['slurm_extra']} --gres={INF['slurm']['gres']}"
    return res


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


add_benchmarks("inference", [bench_log("inference", "inference_prepare")])

# The experiments run on the host (srun is there): on Slurm run.py starts each side in an srun step on
# its node, in its image (server_exec, driver_exec); locally two processes on this host.
USERS = {"users": inf_layout.users(INF)}
experiment_rule(
    INF_STUDY, "serve", matrix=inf_layout.serve_jobs(INF), each=USERS, resources=inf_resources(),
    input=lambda wc: inf_image_input(wc.server) + inf_image_input("ceiling"), inputs={"models": inf_layout.MODELS_FILE},
    params=lambda wc: {"server_exec": inf_exec(wc.server), "driver_exec": inf_exec("ceiling")},
)
experiment_rule(
    INF_STUDY, "raw_rate", matrix=inf_layout.rawrate_jobs(INF), resources=inf_resources(runtime=30),
    input=lambda wc: inf_image_input(wc.framework), inputs={"models": inf_layout.MODELS_FILE},
    params=lambda wc: {"server_exec": inf_exec(wc.framework)},
)
experiment_rule(
    INF_STUDY, "ceiling", matrix=[{"rep": r} for r in inf_layout.ceiling_jobs(INF)],
    each={"users": sorted(INF["ceiling"]["users"])}, resources=inf_resources(runtime=30, gpu=False),
    input=inf_image_input("ceiling"), params=lambda wc: {"driver_exec": inf_exec("ceiling")},
)

register_study(INF_STUDY, kick=inf_layout.kick(INF), enabled=enabled("inference"), stand_ins=inf_layout.stand_ins(INF))

# The tidy table (every configuration: ok, failed, not run, or not run as in the paper), the summary
# and the limits table, from the raw files only; Tables I-II and Figures 1-4 (with the data each
# draws), the published values beside; the claims.
INF_READS = {"measurements": INF_OUT["measurements"], "published": INF_PUBLISHED}
INF_READ_ARGS = "--measurements {input.measurements} --published {input.published}"
analysis_rule(
    "inference", "inference_aggregate", script="aggregate", lib=("analysis", "layout"), raw=experiment_raw(INF_STUDY),
    output={k: INF_OUT[k] for k in ("measurements", "summary", "limits")},
    args="--measurements {output.measurements} --summary {output.summary} --limits {output.limits}",
)
analysis_rule(
    "inference", "inference_table", script="{name}", names=tuple(INF_STUDY.tables), lib=("analysis", "layout"),
    inputs=INF_READS, output={"table": INF_STUDY.table("{name}")}, args=INF_READ_ARGS + " --out {output.table}",
)
analysis_rule(
    "inference", "inference_figure", script="{name}", names=tuple(INF_STUDY.figures),
    lib=("analysis", "layout", "plots"), inputs=INF_READS,
    output={"table": INF_STUDY.table("{name}"), "figure": INF_STUDY.figure("{name}")},
    args=INF_READ_ARGS + " --table {output.table} --out {output.figure}",
)
analysis_rule(
    "inference", "inference_claims", script="claims", lib=("analysis", "layout"), inputs=INF_READS,
    output={"claims": INF_OUT["claims"]}, args=INF_READ_ARGS + " --out {output.claims}",
)
