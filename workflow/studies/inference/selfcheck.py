"""The inference paper reproduces itself (repro.selfcheck): the study's tidy table built from
published.csv alone, and the study's own claim builders (claims.build) on it at cluster scale.

What the paper gives, and so what the table holds (one repeat: the paper's 5-run averages):
* Table I's throughputs at 100 users; its "-" cells are the paper's gaps (not-run rows with the
  layout's reason, as the pipeline keeps them).
* The text's plateaus: "in the test with 10 and more virtual users, all three frameworks'
  throughputs stay constant" (Sec. IV.B, Wav2Vec2), "plateauing in the tests with more than 10
  users" (Sec. IV.C, truncated), "the results were consistent across different user counts"
  (Sec. V.A, ResNet50): each Table I value at the figures' user counts 10, 25, 50, 75, 100
  (Figure 4's axis: 1 10 25 50 75 100). BART: Table I's 100 users only (no plateau stated).
* Latency from the same numbers by the paper's own closed loop (Sec. III.A: each user fires "the next
  request as soon as the previous one completes"): Little's law, latency = users / throughput, mean
  and median alike. That is how the text's latency statements ("under one second", "around 1.3
  seconds", "almost double") are checked against Table I.
* No 1-user numbers (Figure 1 and the figures' first bars have none in the text) and no generator
  ceiling: the claims that read them are UNCHECKED, with the reason.
* "None of the tests ... showed any failed requests" (Sec. V.B): 0 failures in every run.
"""

from __future__ import annotations

import pandas as pd

from studies.inference import claims as ic
from studies.inference import layout

TABLE1 = "000 inference Table I"
PLATEAU_USERS = (10, 25, 50, 75, 100)   # the figures' user counts from 10 on (Figure 4's axis)
PAPER_USERS = 100                        # Table I: "based on throughput at 100 users"


def _plateau_models(published: pd.DataFrame) -> set[str]:
    rows = published[(published.metric == "throughput") & (published.value.astype(str) == "plateau")]
    return set(rows.model)


def paper_inputs(published: pd.DataFrame, cfg: dict) -> dict:
    """{'throughput': {(model, server, users): req/s}, 'gaps': {(model, server)}, 'failed': set(),
    'failures': n, 'published': published} -- from published.csv alone."""
    t1 = published[(published.source == TABLE1) & (published.metric == "throughput")]
    plateau = _plateau_models(published)
    thr, gaps = {}, set()
    for r in t1.itertuples():
        if pd.isna(r.value_num):
            gaps.add((r.model, r.server))
            continue
        for u in (PLATEAU_USERS if r.model in plateau else (PAPER_USERS,)):
            thr[(r.model, r.server, u)] = float(r.value_num)
    fails = published[published.metric == "failed_requests"]
    return {"throughput": thr, "gaps": gaps, "failed": set(), "failures": float(fails.value_num.iloc[0]),
            "published": published}


def tidy(inputs: dict) -> pd.DataFrame:
    """The tidy table (rows as studies.inference.aggregate writes them) of the paper's numbers."""
    rows = []

    def row(model, server, users, status, **kw):
        raw = f"results/inference/raw/experiment~serve/server~{server}/model~{model}/users~{users}/rep~0.json"
        return {"study": "inference", "experiment": "serve", "server": server, "model": model, "framework": "",
                "users": users, "rep": 0, "system_kind": "real", "raw_file": raw, "weights": "pretrained",
                "reason": "", "failure": "", "status": status, "metric": "", "value": float("nan"), "unit": "", **kw}

    for (model, server, users), x in sorted(inputs["throughput"].items()):
        if (model, server) in inputs["failed"]:
            rows.append(row(model, server, users, "failed", failure="the paper's cell perturbed to a failed run"))
            continue
        lat_ms = 1000.0 * users / x   # the closed loop (Sec. III.A): Little's law
        for metric, value, unit in (("throughput", x, "req/s"), ("latency_median", lat_ms, "ms"),
                                    ("latency_mean", lat_ms, "ms"), ("failures", inputs["failures"], "count"),
                                    ("requests", x * 60, "count")):
            rows.append(row(model, server, users, "ok", metric=metric, value=value, unit=unit))
    for model, server in sorted(inputs["gaps"]):
        for users in PLATEAU_USERS:
            rows.append(row(model, server, users, "not-run", reason=layout.by_design(server, model)))
    df = pd.DataFrame(rows)
    df["users"] = pd.to_numeric(df["users"])
    return df


def claims(inputs: dict, cfg: dict):
    return ic.build(tidy(inputs), inputs["published"], cfg)


def _set(model, server, value, users=None):
    """Table I's (model, server) cell -> value (req/s) at every user count, or at `users` only."""
    def fn(inputs):
        for (m, s, u) in list(inputs["throughput"]):
            if (m, s) == (model, server) and (users is None or u == users):
                inputs["throughput"][(m, s, u)] = value
        return inputs
    return fn


def _both(*fns):
    def fn(inputs):
        for f in fns:
            inputs = f(inputs)
        return inputs
    return fn


def _failed(model, server):
    def fn(inputs):
        inputs["failed"].add((model, server))
        return inputs
    return fn


def _failures(n):
    def fn(inputs):
        inputs["failures"] = n
        return inputs
    return fn


R, W, T = "resnet50", "wav2vec2", "wav2vec2_truncated"
TS, TPT, TTF, TFS = "torchserve", "triton-pytorch", "triton-tensorflow", "tfserving"
PERTURB = [
    ("resnet50_torchserve_leads", "ResNet50 Triton (PyTorch) 99.74 -> 107 req/s (TorchServe 2.7 % behind; "
     "tolerance 2 %)",
     _set(R, TPT, 107.0)),
    ("resnet50_triton_pytorch_close", "ResNet50 Triton (PyTorch) 99.74 -> 85 req/s (0.82 of TorchServe < 0.85)",
     _set(R, TPT, 85.0)),
    ("resnet50_tfserving_slowest", "ResNet50 TF Serving 40.59 -> 80 req/s (above Triton (TF)'s 74.53)",
     _set(R, TFS, 80.0)),
    ("resnet50_tfserving_highest_latency", "ResNet50 TF Serving 40.59 -> 80 req/s (latency 1.25 s < Triton "
     "(TF)'s 1.34)",
     _set(R, TFS, 80.0)),
    ("resnet50_triton_tf_above_tfserving", "ResNet50 Triton (TF) 74.53 -> 40 req/s (below TF Serving's 40.59)",
     _set(R, TTF, 40.0)),
    ("wav2vec2_triton_excels", "Wav2Vec2 Triton (PyTorch) 41.43 -> 38 req/s (1.08 x TorchServe; 'excelled' > 1.10)",
     _set(W, TPT, 38.0)),
    ("wav2vec2_triton_tf_half", "Wav2Vec2 Triton (TF) 24.51 -> 30 req/s (Triton (PyTorch) 1.38 x; band 1.5-2.2)",
     _set(W, TTF, 30.0)),
    ("truncated_order", "truncated Triton (TF) 41.14 -> 50 req/s (TF Serving 1.39 x: not 'much better' > 1.5)",
     _set(T, TTF, 50.0)),
    ("truncated_order", "truncated TorchServe 51.24 -> 45 req/s (TF Serving 1.54 x: not 'slightly better' <= 1.5)",
     _set(T, TS, 45.0)),
    ("truncated_order", "truncated TF Serving 69.34 -> 90 req/s (first, above Triton (PyTorch)'s 83.14)",
     _set(T, TFS, 90.0)),
    ("tf_models_half_of_best", "ResNet50 TorchServe 104.10 -> 230 req/s (both ResNet50 TF ratios below 0.35: "
     "2 of 5 in the band)", _set(R, TS, 230.0)),
    ("latency_queueing_resnet50", "ResNet50 TorchServe at 50 users 104.10 -> 73 req/s (latency / users +43 %)",
     _set(R, TS, 73.0, users=50)),
    ("latency_queueing_wav2vec2", "Wav2Vec2 Triton (TF) at 75 users 24.51 -> 17 req/s (latency / users +44 %)",
     _set(W, TTF, 17.0, users=75)),
    ("latency_queueing_wav2vec2_truncated", "truncated TF Serving at 100 users 69.34 -> 48 req/s (latency / users "
     "+44 %)", _set(T, TFS, 48.0, users=100)),
    ("plateau_resnet50", "ResNet50 TorchServe at 50 users 104.10 -> 73 req/s (-30 %; tolerance 25 %)",
     _set(R, TS, 73.0, users=50)),
    ("plateau_wav2vec2", "Wav2Vec2 Triton (TF) at 75 users 24.51 -> 17 req/s (-31 %)", _set(W, TTF, 17.0, users=75)),
    ("plateau_wav2vec2_truncated", "truncated TF Serving at 100 users 69.34 -> 48 req/s (-31 %)",
     _set(T, TFS, 48.0, users=100)),
    ("bart_torchserve_serves", "Table I's BART TorchServe 1.44 req/s -> a failed run", _failed("bart", TS)),
    ("truncated_vs_full_torchserve", "truncated TorchServe 51.24 -> 50 req/s (1.42 x the full 35.16; band 1.45-2.05)",
     _set(T, TS, 50.0)),
    ("truncated_vs_full_triton-pytorch", "truncated Triton (PyTorch) 83.14 -> 86 req/s (2.08 x the full 41.43)",
     _set(T, TPT, 86.0)),
    ("truncated_vs_full_triton-tensorflow", "truncated Triton (TF) 41.14 -> 35 req/s (1.43 x the full 24.51)",
     _set(T, TTF, 35.0)),
    ("resnet50_latency_100users_under_1s_torchserve", "ResNet50 TorchServe 104.10 -> 90 req/s (1.11 s at 100 users)",
     _set(R, TS, 90.0)),
    ("resnet50_latency_100users_under_1s_triton-pytorch", "ResNet50 Triton (PyTorch) 99.74 -> 90 req/s (1.11 s)",
     _set(R, TPT, 90.0)),
    ("resnet50_tf_worst_latency_triton-tensorflow", "ResNet50 Triton (TF) 74.53 -> 65 req/s (1.54 s; 'around 1.3')",
     _set(R, TTF, 65.0)),
    ("resnet50_tf_worst_latency_tfserving", "ResNet50 TF Serving 40.59 -> 75 req/s (1.33 s: what the text's 'around "
     "1.3 s' needs)", _set(R, TFS, 75.0)),
    ("wav2vec2_triton_tf_latency_double", "Wav2Vec2 Triton (TF) 24.51 -> 35 req/s (latency 1.18 x Triton (PyTorch)'s)",
     _set(W, TTF, 35.0)),
    ("resnet50_latency_triton_pytorch_close", "ResNet50 Triton (PyTorch) 99.74 -> 80 req/s (TorchServe's latency "
     "0.77 of its own at 100 users < 0.85)", _set(R, TPT, 80.0)),
    ("torchserve_overall_best", "Wav2Vec2 TorchServe 35.16 -> 42 and truncated 51.24 -> 84 req/s (what 'consistently "
     "surpassing' needs)", _both(_set(W, TS, 42.0), _set(T, TS, 84.0))),
    ("no_failed_requests", "Sec. V.B's 0 failed requests -> 1 in every run", _failures(1.0)),
]

EXPECTED_CONTRADICTIONS = {
    "resnet50_tf_worst_latency_tfserving": (
        "'TensorFlow and Triton (TensorFlow) also offer a worst-case response time of around 1.3 seconds' (Sec. IV.A), "
        "but Table I's 40.59 req/s for TF Serving with 100 users in the paper's closed loop (Sec. III.A) is "
        "100 / 40.59 = 2.46 s on average, so no worst case is 1.3 s (Triton (TF): 100 / 74.53 = 1.34 s holds)"),
    "torchserve_overall_best": (
        "'the overall best-performing framework, consistently surpassing the other two' (Abstract), but Table I puts "
        "Triton (PyTorch) first on Wav2Vec2 (41.43 vs 35.16 req/s) and on the truncated model (83.14, TF Serving "
        "69.34, vs 51.24), as the paper's own Sec. IV.B ('Triton excelled') and IV.C say"),
}

UNCHECKED = {
    "latency_torchserve_lowest_*": "1-user latencies are Figure 1's, which has no numbers in the text",
    "wav2vec2_latency_1user_under_100ms": "the 1-user latencies are Figure 1's; 'under 100 ms' is the text's only "
                                          "number, the bound itself",
    "latency_queueing_bart": "BART has Table I's 100-user value only (no plateau stated), so no second user count",
    "generator_not_bottleneck": "the paper gives no generator ceiling (Sec. III.D only says Locust was distributed)",
}
