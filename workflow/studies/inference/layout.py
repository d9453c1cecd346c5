"""The inference study's parameter space and raw-file paths (the inference-framework paper).

Everything takes the study's config section (``config["inference"]``); the matrix is in the
config, never here. Raw files (``repro.raw/1``):

  results/inference/raw/experiment~serve/server~<s>/model~<m>/users~<u>/rep~<r>.json
  results/inference/raw/experiment~raw_rate/model~<m>/framework~<torch|tf>/rep~<r>.json
  results/inference/raw/experiment~ceiling/users~<u>/rep~<r>.json

One serve job (server x model x repeat) starts the server, runs Locust once per user count and
writes one raw file per user count; Locust's own CSVs and generator.json lie under
results/inference/locust/server~<s>/model~<m>/rep~<r>/users~<u>/. Configurations the paper could
not run are in the matrix but never jobs: TF Serving with the full-length Wav2Vec2 ("not run, as
in the paper") and BART on anything but TorchServe ("not servable, as in the paper").
"""

from __future__ import annotations

from repro import paramspace
from studies.inference.declaration import MODELS, SERVERS  # noqa: F401 (the layout's names, declared once)
from studies.inference.declaration import STUDY as DECLARATION
from repro_inference.spec import SYSTEM_KINDS  # the stdlib-only spec of systems/inference (one list of kinds)

STUDY = "inference"
RAW_DIR = "results/inference/raw"
LOCUST_DIR = "results/inference/locust"
RAWRATE_DIR = "results/inference/rawrate"
MODELS_FILE = "results/inference/models.json"
WORK_DIR = "results/inference/work"  # the server's shared work dir (server.json, logs); removed after a job


LABELS = {"torchserve": "TorchServe", "triton-pytorch": "Triton (PyTorch)",
          "triton-tensorflow": "Triton (TensorFlow)", "tfserving": "TF Serving"}
MODEL_LABELS = {"resnet50": "ResNet50", "wav2vec2": "Wav2Vec2", "wav2vec2_truncated": "Wav2Vec2 truncated",
                "bart": "BART"}
PROTOCOL = {"torchserve": "torchserve", "triton-pytorch": "triton", "triton-tensorflow": "triton",
            "tfserving": "tfserving"}
FRAMEWORK = {"torchserve": "torch", "triton-pytorch": "torch", "triton-tensorflow": "tf", "tfserving": "tf"}
# kinds that may serve each of the paper's servers (same protocol, same framework)
ALLOWED_KINDS = {"torchserve": ("torchserve",), "triton-pytorch": ("triton-pytorch", "triton-python-torch"),
                 "triton-tensorflow": ("triton-tensorflow", "triton-python-tf"),
                 "tfserving": ("tfserving", "tfserving-standin")}
# the paper's configurations that were never measured, and why (shown as such, never filled)
BY_DESIGN = {
    ("tfserving", "wav2vec2"): "not run (as in the paper): TF Hub's SavedModel fixes 50,000 samples (Sec. IV.D)",
    **{(s, "bart"): "not servable (as in the paper): .generate() cannot be traced/exported (Sec. IV.D)"
       for s in SERVERS if s != "torchserve"},
}


# What each server's requests carry (tools/locust/locustfile_*.py), recorded in every serve record and
# named in the README: it can decide the TF Serving ranking (JSON parsing of a 224x224x3 tensor).
INPUT_ENCODING = {
    "torchserve": {"resnet50": "PNG bytes (decoded + resized + normalised in the handler)",
                   "wav2vec2": "WAV bytes (16 kHz, 16-bit PCM; decoded in the handler)",
                   "wav2vec2_truncated": "WAV bytes (16 kHz, 16-bit PCM; decoded, padded/truncated in the handler)",
                   "bart": "UTF-8 text (tokenised in the handler)"},
    "triton": "binary tensor (KServe v2 binary tensor extension: JSON header + raw little-endian FP32)",
    "tfserving": 'JSON {"instances": [...]} (every FP32 value as a JSON number)',
}


def input_encoding(server: str, model: str) -> str:
    enc = INPUT_ENCODING[PROTOCOL[server]]
    return enc[model] if isinstance(enc, dict) else enc


def generated_tokens(spec: dict) -> str:
    """BART: how many tokens each request generates (random weights: fixed to max_new_tokens)."""
    if spec.get("model") != "bart":
        return ""
    if spec.get("weights") == "pretrained":
        return f"checkpoint's own stop, at most {spec['max_new_tokens']}"
    return f"exactly {spec['max_new_tokens']} (min_new_tokens = max_new_tokens: random weights)"


class LayoutError(ValueError):
    """A configuration the study cannot run; the message names the key."""


def check(cfg: dict) -> None:
    """Start-up checks beyond the schema (each names its key)."""
    for server, kind in cfg["kinds"].items():
        if kind not in ALLOWED_KINDS[server]:
            raise LayoutError(f"inference.kinds.{server}: {kind!r} cannot serve {server} "
                              f"(allowed: {', '.join(ALLOWED_KINDS[server])})")
    if cfg["device"] == "cuda" and "gpu" not in cfg["slurm"]["gres"]:
        raise LayoutError(f"inference.slurm.gres: device cuda needs a GPU from Slurm (e.g. gpu:1), "
                          f"not {cfg['slurm']['gres']!r}")
    if cfg["kick"]["server"] not in cfg["servers"]:
        raise LayoutError(f"inference.kick.server: {cfg['kick']['server']!r} is not in inference.servers")
    if cfg["kick"]["model"] not in cfg["models"]:
        raise LayoutError(f"inference.kick.model: {cfg['kick']['model']!r} is not in inference.models")
    if (cfg["kick"]["server"], cfg["kick"]["model"]) in BY_DESIGN:
        raise LayoutError(f"inference.kick: {cfg['kick']} is a configuration the paper could not run")
    for server in cfg["usability"]["scores"]:
        n = len(cfg["usability"]["criteria"])
        if len(cfg["usability"]["scores"][server]) != n:
            raise LayoutError(f"inference.usability.scores.{server}: {n} scores expected (one per criterion)")


# Memory of the model preparation (inference_prepare's mem_mb). Peak RSS of the largest preparation
# process per model (sides run one after the other), measured 2026-11-27 with /usr/bin/time -v over
# `python -m repro_inference.prepare --models M` at the paper's sizes, random-from-config weights,
# --torchscript (this 2-core machine, load 1-6; BART's torch side only packs its handler and config):
PREPARE_PEAK_MB = {"resnet50": 1047, "wav2vec2": 1799, "wav2vec2_truncated": 1799, "bart": 23}
# fp32 weights of the checkpoints (parameters x 4 B: 25.6 M, 94.4 M, 406 M); with weights=pretrained a
# preparation holds them twice (the loaded state dict and the model) -- an estimate, never measured
# here (no model hub)
WEIGHTS_MB = {"resnet50": 98, "wav2vec2": 361, "wav2vec2_truncated": 361, "bart": 1550}
PREPARE_HEADROOM = 2.0  # other library versions, page cache of the exports, the archiver


def prepare_mem_mb(cfg: dict, node_mem_mb: int, refuse: bool = True) -> int:
    """What inference_prepare asks Slurm for (MB): the configured models' largest preparation with
    headroom, in 500 MB steps; refused (naming the key) when one node has less than that, unless
    ``refuse`` is false (the study is switched off: its plan is not this configuration's business)."""
    def need(m):
        return PREPARE_PEAK_MB[m] + (2 * WEIGHTS_MB[m] if cfg["weights"] == "pretrained" else 0)

    biggest = max(cfg["models"], key=need)
    mb = -(-int(need(biggest) * PREPARE_HEADROOM) // 500) * 500
    if refuse and mb > node_mem_mb:
        raise LayoutError(f"cluster.mem_mb_per_node: {node_mem_mb} MB per node is less than inference_prepare needs "
                          f"for inference.models {list(cfg['models'])} with weights {cfg['weights']}: {mb} MB "
                          f"({biggest}: {need(biggest)} MB peak x {PREPARE_HEADROOM} headroom)")
    return mb


def kind_of(cfg: dict, server: str) -> str:
    return cfg["kinds"][server]


def system_kind(cfg: dict, server: str) -> str:
    return SYSTEM_KINDS[kind_of(cfg, server)]


def reps(cfg: dict) -> list[int]:
    return list(range(cfg["repeats"]))


def users(cfg: dict) -> list[int]:
    return sorted(cfg["users"])


def by_design(server: str, model: str) -> str:
    return BY_DESIGN.get((server, model), "")


# ------------------------------------------------------------------ serve
def serve_params(server: str, model: str, n_users) -> dict:
    return {"experiment": "serve", "server": server, "model": model, "users": int(n_users)}


def raw_path(params: dict, rep, raw_dir: str = RAW_DIR) -> str:
    """One raw file: ``params`` holds the experiment and its fields (the declaration spells the path)."""
    fields = {k: v for k, v in params.items() if k != "experiment"}
    p = DECLARATION.raw_path(params["experiment"], **fields, rep=rep)
    return raw_dir + p[len(RAW_DIR):]


def locust_dir(server: str, model: str, rep) -> str:
    return f"{LOCUST_DIR}/server~{server}/model~{model}/rep~{rep}"


def node_roles(nodes: list[str]) -> tuple[str, str]:
    """(driver, server) of a serve job's n+1 allocation, as Slurm lists its nodes: the first node
    drives (Locust; the engine's rank 0), the second runs the server (on a cluster the one whose
    --gres GPU the server uses)."""
    if len(nodes) < 2:
        raise LayoutError(f"an n+1 serve job needs 2 nodes, Slurm gave {nodes}")
    return nodes[0], nodes[1]


def work_dir(server: str, model: str, rep) -> str:
    return f"{WORK_DIR}/server~{server}/model~{model}/rep~{rep}"


def serve_pairs(cfg: dict) -> list[tuple[str, str]]:
    """Every (server, model) of the matrix, the ones the paper could not run included."""
    return [(s, m) for m in cfg["models"] for s in cfg["servers"]]


def serve_jobs(cfg: dict) -> list[dict]:
    """One job per server x model x repeat that runs (the by-design gaps are not jobs)."""
    return [{"server": s, "model": m, "rep": r} for s, m in serve_pairs(cfg) if not by_design(s, m)
            for r in reps(cfg)]


def serve_outputs(cfg: dict, server: str, model: str, rep) -> list[str]:
    return [raw_path(serve_params(server, model, u), rep) for u in users(cfg)]


# ------------------------------------------------------------------ limits
def rawrate_params(model: str, framework: str) -> dict:
    return {"experiment": "raw_rate", "model": model, "framework": framework}


def rawrate_pairs(cfg: dict) -> list[tuple[str, str]]:
    """(model, framework) of every served configuration: the same model in each framework it is served in."""
    out = []
    for s, m in serve_pairs(cfg):
        if not by_design(s, m) and (m, FRAMEWORK[s]) not in out:
            out.append((m, FRAMEWORK[s]))
    return out


def rawrate_jobs(cfg: dict) -> list[dict]:
    if not cfg["raw_rate"]["enabled"]:
        return []
    return [{"model": m, "framework": f, "rep": r} for m, f in rawrate_pairs(cfg) for r in reps(cfg)]


def ceiling_params(n_users) -> dict:
    return {"experiment": "ceiling", "users": int(n_users)}


def ceiling_outputs(cfg: dict, rep) -> list[str]:
    return [raw_path(ceiling_params(u), rep) for u in sorted(cfg["ceiling"]["users"])]


def ceiling_jobs(cfg: dict) -> list[int]:
    return reps(cfg) if cfg["ceiling"]["enabled"] else []


# ------------------------------------------------------------------ everything
def expected_raw(cfg: dict) -> list[str]:
    """Every raw file of the matrix (the aggregation's rows: ok, failed, not run or not run by design)."""
    out = [raw_path(serve_params(s, m, u), r) for s, m in serve_pairs(cfg) for r in reps(cfg) for u in users(cfg)]
    out += [raw_path(rawrate_params(j["model"], j["framework"]), j["rep"]) for j in rawrate_jobs(cfg)]
    for r in ceiling_jobs(cfg):
        out += ceiling_outputs(cfg, r)
    return out


def job_outputs(cfg: dict) -> list[str]:
    """What the run jobs must write (expected_raw minus the configurations the paper could not run)."""
    return [p for p in expected_raw(cfg) if not by_design_path(p)]


def by_design_path(path: str) -> str:
    p = paramspace.parse_path(path)
    return by_design(p.get("server", ""), p.get("model", "")) if p.get("experiment") == "serve" else ""


def system_kind_of_path(cfg: dict, path: str) -> str:
    p = paramspace.parse_path(path)
    return system_kind(cfg, p["server"]) if p.get("experiment") == "serve" else "real"


def experiment_of(path: str) -> str:
    return paramspace.parse_path(path).get("experiment", "")


def stand_ins(cfg: dict) -> list[str]:
    """What stands in for the paper's systems in this configuration (the report's rows): each server
    run by another kind than its own, and the models' weights."""
    def why(kind: str) -> str:
        if kind.startswith("triton-python"):
            return (" -- tritonserver 2.51 (nvidia-pytriton) with its Python backend running the same model, "
                    "speaking Triton's KServe v2 API; the real libtorch/TensorFlow backends are not available here")
        if kind == "tfserving-standin":
            return (" -- TF Serving's REST API (/v1/models/<m>:predict) over the same versioned SavedModel in "
                    "TensorFlow's Python runtime; tensorflow_model_server cannot be installed here")
        return ""

    out = [f"{LABELS[s]}: servers.py kind {cfg['kinds'][s]} ({system_kind(cfg, s)})" + why(cfg["kinds"][s])
           for s in cfg["servers"] if cfg["kinds"][s] != s]
    if cfg["weights"] == "random-from-config":
        out.append("weights: every model is the paper's architecture built from its Hugging Face config with "
                   "seeded random weights (weights=random-from-config in every row); BART's tokenizer: a "
                   "word-hash stand-in")
    return out


def kick(cfg: dict) -> list[str]:
    """The kick-the-tires target: the kick server x model, one repeat, its first user count."""
    k = cfg["kick"]
    return serve_outputs({**cfg, "repeats": 1}, k["server"], k["model"], 0)[:1]
