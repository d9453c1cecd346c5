"""The inference study, declared once (repro.study): what it is, what it writes, how long it takes."""

from repro.study import AGGREGATE_OUTPUTS, Experiment, Study

SERVERS = ("torchserve", "triton-pytorch", "triton-tensorflow", "tfserving")
MODELS = ("resnet50", "wav2vec2", "wav2vec2_truncated", "bart")

STUDY = Study(
    name="inference",
    title="ML inference servers under load: TorchServe vs TensorFlow Serving vs Triton",
    paper="000 (the inference-framework paper): Sections III-V, Figures 1-4, Tables I-II",
    figures={
        "figure1": "Figure 1: latency at 1 user (single-stream), median per request, mean of repeats "
        "(error bars: std), per model and server",
        "figure2": "Figure 2: throughput of ResNet50 vs virtual users (req/s, mean of repeats, error bars: std)",
        "figure3": "Figure 3: throughput of Wav2Vec2 (full length) vs virtual users",
        "figure4": "Figure 4: throughput of the truncated Wav2Vec2 vs virtual users",
    },
    tables={
        "table1": "Table I: throughput at the largest user count (req/s) per model and server, the published "
        "100-user values beside; configurations the paper could not run shown as such",
        "table2": "Table II: usability scores (1-5) from the config, the published scores beside",
    },
    outputs=AGGREGATE_OUTPUTS,
    output_tables={
        "limits": "Every server's throughput as a fraction of the model's raw in-process rate "
        "(same framework, threads, batch); the generator's CPU and its ceiling against a trivial endpoint",
        "summary": "Every configuration: count/mean/std/min/max, failed, not run",
    },
    images=("torchserve", "triton", "tfserving", "inference-tf", "locust"),
    # n+1 jobs (the driver node runs Locust, the second node the server): one server x model x repeat,
    # every user count (a raw file each); the limits in the same run: each model's raw in-process rate
    # (a plain forward loop on the server node) and Locust's ceiling against a trivial endpoint
    experiments=(
        Experiment("serve", "experiment~serve/server~{server}/model~{model}/users~{users}/rep~{rep}.json",
                   each=("users",),
                   constraints={"server": "|".join(SERVERS), "model": "|".join(MODELS)}),
        Experiment("raw_rate", "experiment~raw_rate/model~{model}/framework~{framework}/rep~{rep}.json",
                   constraints={"model": "|".join(MODELS), "framework": "torch|tf"}),
        Experiment("ceiling", "experiment~ceiling/users~{users}/rep~{rep}.json", each=("users",)),
    ),
    not_rehearsed="the GPU part (device cuda, --gres gpu) cannot run here: CPU device, no GPU asked",
    expected_times={
        "setup_local": "systems/inference/setup.sh (cold about 9 min: torch and TF venvs), the model "
        "preparation at the local sizes (cold about 1-5 min: the TF SavedModel exports), cached",
        "run_local": "about 8 min on 2 cores (1 repeat): 472-481 s of job time measured twice (9 serve jobs "
        "366 s, 5 raw-rate jobs 94 s, ceiling 12 s); 2 repeats 17 min (quiet) to 33 min (load 8-15)",
        "analysis_local": "< 1 min",
        "run_cluster": "16 served pairs minus the paper's gaps x 5 repeats, each 6 user counts x 60 s "
        "plus server start-up: about 8 min per job, roughly 9 h of job time",
    },
    readme={
        "local": "≈8 min (1 repeat: 472–481 s of job time measured; set-up: `systems/inference/setup.sh` ≈9 min "
        "cold, model preparation 1–5 min cold, both cached)",
        "cluster": "60 serve jobs (6 user counts × 60 s), 35 raw-rate, 5 ceiling: ≈9 h of job time, one GPU "
        "per server node",
    },
)
