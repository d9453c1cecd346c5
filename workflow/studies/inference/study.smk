# The inference-framework paper (inside papers/000_...txt): TorchServe vs TF Serving vs Triton
# (PyTorch and TensorFlow backends) on ResNet50, Wav2Vec2 (full, truncated) and BART, driven by
# Locust; the limits measured in the same run (each model's raw in-process rate, the generator's
# ceiling against a trivial endpoint).
#
#   ./repro snakemake inference_kick --profile profiles/local     # one server x model, one repeat
#   ./repro snakemake inference --profile profiles/local          # the local study (stand-ins)
#   snakemake inference --profile profiles/slurm --configfile config/config.yaml   # the cluster path
#
# One job = one server x model x repeat (server up, Locust at every user count, server down), one
# raw-rate loop (model x framework x repeat) or one ceiling measurement. Raw files: layout.py.
# Systems: systems/inference (models, servers, raw rate), tools/locust (driver, parser, ceiling).

from studies.inference import declaration as inf_declaration
from studies.inference import layout as inf_layout

INF = config["inference"]
try:
    inf_layout.check(INF)
    INF_PREPARE_MEM_MB = inf_layout.prepare_mem_mb(INF, config["cluster"]["mem_mb_per_node"], enabled("inference"))
except inf_layout.LayoutError as _exc:
    raise WorkflowError(str(_exc)) from None
INF_STUDY = inf_declaration.STUDY
INF_DIR = f"{STUDIES}/inference"
INF_PUBLISHED = f"{INF_DIR}/published.csv"
INF_OUT = {k: INF_STUDY.out(k) for k in INF_STUDY.outputs}
INF_FIGURES = INF_STUDY.figures
INF_TABLES = INF_STUDY.tables
INF_BENCH = "results/inference/benchmarks/inference_run"
INF_REAL_KINDS = all(INF["kinds"][s] == s for s in INF["servers"])


def inf_bench_serve(server, model, rep):
    return f"{INF_BENCH}/serve,server~{server},model~{model},rep~{rep}.tsv"


def inf_bench_rawrate(model, framework, rep):
    return f"{INF_BENCH}/raw_rate,model~{model},framework~{framework},rep~{rep}.tsv"


def inf_bench_ceiling(rep):
    return f"{INF_BENCH}/ceiling,rep~{rep}.tsv"


def _inf_kick():
    k = INF["kick"]
    return inf_layout.serve_outputs({**INF, "repeats": 1}, k["server"], k["model"], 0)[:1]


INF_STAND_INS = [
    f"{inf_layout.LABELS[s]}: servers.py kind {INF['kinds'][s]} ({inf_layout.system_kind(INF, s)})"
    + (
        " -- tritonserver 2.51 (nvidia-pytriton) with its Python backend running the same model, "
        "speaking Triton's KServe v2 API; the real libtorch/TensorFlow backends are not available here"
        if INF["kinds"][s].startswith("triton-python")
        else " -- TF Serving's REST API (/v1/models/<m>:predict) over the same versioned SavedModel in "
        "TensorFlow's Python runtime; tensorflow_model_server cannot be installed here"
        if INF["kinds"][s] == "tfserving-standin"
        else ""
    )
    for s in INF["servers"]
    if INF["kinds"][s] != s
] + (
    [
        "weights: every model is the paper's architecture built from its Hugging Face config with seeded "
        "random weights (weights=random-from-config in every row); BART's tokenizer: a word-hash stand-in"
    ]
    if INF["weights"] == "random-from-config"
    else []
)

register_study(
    INF_STUDY,
    kick=_inf_kick(),
    enabled=enabled("inference"),
    stand_ins=INF_STAND_INS,
    benchmarks=[inf_bench_serve(j["server"], j["model"], j["rep"]) for j in inf_layout.serve_jobs(INF)]
    + [inf_bench_rawrate(j["model"], j["framework"], j["rep"]) for j in inf_layout.rawrate_jobs(INF)]
    + [inf_bench_ceiling(r) for r in inf_layout.ceiling_jobs(INF)]
    + [bench_log("inference", f"inference_{n}") for n in ["prepare", "aggregate", "claims", *INF_FIGURES, *INF_TABLES]],
)


def inf_raw_inputs(wildcards):
    expected = inf_layout.job_outputs(INF)
    if ALLOW_INCOMPLETE:
        return [p for p in expected if os.path.exists(p)]
    return expected


def inf_resources(runtime=None, gpu=True):
    """n+1 (driver node + server node); the server node's accelerator via --gres (gpu=False: a job
    whose sides use none, the ceiling)."""
    res = n_plus_1_resources(1, runtime=runtime or INF["slurm"]["runtime_minutes"])
    if gpu and INF["slurm"]["gres"]:
        res["slurm_extra"] = f"{res['slurm_extra']} --gres={INF['slurm']['gres']}"
    return res


INF_IMAGE_OF = {"torchserve": "torchserve", "triton-pytorch": "triton", "triton-tensorflow": "triton",
                "tfserving": "tfserving", "torch": "torchserve", "tf": "inference-tf", "ceiling": "locust"}


def inf_exec(what):
    """The prefix of a run job: on a cluster the server's (or framework's, or Locust's) image, where
    servers.py finds tritonserver / tensorflow_model_server on PATH and the venvs via REPRO_VENV_*;
    locally the host. Every step that runs a model gets --nv on device cuda (Locust's does not)."""
    return system_exec(INF_IMAGE_OF[what], gpu=INF["device"] == "cuda" and what != "ceiling")


def inf_image_input(what):
    return system_image_input(INF_IMAGE_OF[what])
