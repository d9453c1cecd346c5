"""Helpers of the inference study's tests: the validated config section, and synthetic tidy tables for
the claim builders (rows shaped as studies.inference.aggregate writes them)."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import yaml

from repro import config as rc
from repro import testing

REPO = testing.REPO
KIND = {"torchserve": "real", "triton-pytorch": "stand-in:tritonserver-python-backend",
        "triton-tensorflow": "stand-in:tritonserver-python-backend",
        "tfserving": "stand-in:tfserving-rest-on-tf-python"}


def full_config(local: bool = True, **overrides) -> dict:
    cfg = yaml.safe_load((REPO / "config/config.yaml").read_text())
    if local:
        cfg = rc.deep_merge(cfg, yaml.safe_load((REPO / "config/local.yaml").read_text()))
    return rc.deep_merge(cfg, {"inference": {"enabled": True, **overrides}})


def section(local: bool = True, **overrides) -> dict:
    """config/config.yaml (+ config/local.yaml) + {"inference": overrides}, validated, defaults filled, with
    the file's judging_scale (cluster; local with config/local.yaml), as study_json hands it to the analysis."""
    from repro import claims

    v = rc.validate(full_config(local, **overrides))
    return claims.at_scale(v["inference"], v["judging_scale"])


def run_argv(experiment: str, cfg: dict, params: dict, rep: int = 0, models=None) -> list[str]:
    """The run contract's command line of one inference job (as rules.smk builds it): --out the
    layout's raw files of the job (a serve or ceiling job's, one per user count)."""
    import json

    from studies.inference import layout

    if experiment == "serve":
        outs = layout.serve_outputs(cfg, params["server"], params["model"], rep)
    elif experiment == "ceiling":
        outs = layout.ceiling_outputs(cfg, rep)
    else:
        outs = [layout.raw_path(layout.rawrate_params(params["model"], params["framework"]), rep)]
    argv = [experiment, "--config", json.dumps(cfg), "--params", json.dumps(params), "--rep", str(rep), "--out", *outs]
    return argv + (["--input", f"models={models}"] if models else [])


def run_job(experiment: str, cfg: dict, params: dict, rep: int = 0, models=None) -> int:
    """One inference job through the runner (studies.inference.run's RUN), in this process."""
    from studies.inference import run

    return run.RUN.main(run_argv(experiment, cfg, params, rep, models))


def paper_like() -> dict:
    """{(experiment, server, model, users): {metric: value} | "failed: why" | "not-run: reason"}, shaped like
    the paper's results (Table I at 100 users, flat from 10 users on, TorchServe fastest at 1 user)."""
    from studies.inference import layout

    t1 = {("resnet50", "torchserve"): 104.10, ("resnet50", "tfserving"): 40.59,
          ("resnet50", "triton-pytorch"): 99.74, ("resnet50", "triton-tensorflow"): 74.53,
          ("wav2vec2", "torchserve"): 35.16, ("wav2vec2", "triton-pytorch"): 41.43,
          ("wav2vec2", "triton-tensorflow"): 24.51, ("wav2vec2_truncated", "torchserve"): 51.24,
          ("wav2vec2_truncated", "tfserving"): 69.34, ("wav2vec2_truncated", "triton-pytorch"): 83.14,
          ("wav2vec2_truncated", "triton-tensorflow"): 41.14, ("bart", "torchserve"): 1.44}
    # 1-user latency (Figure 1 has no numbers): TorchServe lowest, Triton (PyTorch) close behind, TF Serving
    # highest, every Wav2Vec2 one under 100 ms; above the plateau's per-request time 1000 / Table I (the
    # figures rise from 1 to 10 users). From 10 users on the paper's closed loop (Sec. III.A: the next
    # request as soon as the previous completes) gives latency = users / throughput (Little's law).
    lat1 = {"torchserve": 20.0, "triton-pytorch": 22.0, "triton-tensorflow": 40.0, "tfserving": 60.0}
    scale1 = {"resnet50": 1.0, "wav2vec2": 2.0, "wav2vec2_truncated": 1.5, "bart": 50.0}
    d: dict = {}
    for model in layout.MODELS:
        for server in layout.SERVERS:
            for u in (1, 10, 25, 50, 75, 100):
                key = ("serve", server, model, u)
                if (model, server) not in t1:
                    d[key] = "not-run: " + layout.by_design(server, model)
                    continue
                top = t1[(model, server)]
                thr = top * (0.5 if u == 1 else 1.0)
                lat = lat1[server] * scale1[model] if u == 1 else 1000.0 * u / thr
                d[key] = {"throughput": thr, "latency_median": lat, "latency_mean": lat,
                          "failures": 0.0, "requests": thr * 60, "generator_cpu_cores": 0.05 * u ** 0.5,
                          "locustfile_exceptions": 0.0}
    for model, fw in (("resnet50", "torch"), ("resnet50", "tf"), ("wav2vec2", "torch"), ("wav2vec2", "tf"),
                      ("wav2vec2_truncated", "torch"), ("wav2vec2_truncated", "tf"), ("bart", "torch")):
        d[("raw_rate", fw, model, None)] = {"raw_rate": 150.0}
    d[("ceiling", None, None, 100)] = {"throughput": 2000.0}
    return d


def tidy_df(data: dict, reps: int = 2, real: bool = False) -> pd.DataFrame:
    """real=True: every server's rows as the cluster's real servers (system_kind real), else the local kinds."""
    rows = []
    for (exp, server_or_fw, model, users), vals in data.items():
        for rep in range(reps):
            params = {"experiment": exp}
            if exp == "serve":
                params.update(server=server_or_fw, model=model, users=users)
            elif exp == "raw_rate":
                params.update(model=model, framework=server_or_fw)
            else:
                params.update(users=users)
            raw = "results/inference/raw/" + "/".join(f"{k}~{x}" for k, x in params.items()) + f"/rep~{rep}.json"
            kind = KIND[server_or_fw] if exp == "serve" and not real else "real"
            base = {"study": "inference", "server": "", "model": "", "framework": "", "users": None, **params,
                    "rep": rep, "system_kind": kind, "raw_file": raw, "weights": "random-from-config",
                    "reason": "", "failure": ""}
            if isinstance(vals, str) and vals.startswith("not-run"):
                rows.append({**base, "metric": "", "value": float("nan"), "unit": "", "status": "not-run",
                             "reason": vals.removeprefix("not-run: ")})
                continue
            if isinstance(vals, str):
                rows.append({**base, "metric": "", "value": float("nan"), "unit": "", "status": "failed",
                             "failure": vals.removeprefix("failed: ")})
                continue
            for m, x in vals.items():
                rows.append({**base, "metric": m, "value": float(x) * (1 + 0.01 * rep), "unit": "", "status": "ok"})
    df = pd.DataFrame(rows)
    if len(df):
        df["users"] = pd.to_numeric(df["users"], errors="coerce")
    return df


def published():
    from studies.inference import analysis

    return analysis.read_published(Path(__file__).resolve().parents[1] / "published.csv")


def mutate(data: dict, pred, **metrics) -> dict:
    """A copy of `data` where every configuration matching pred(key) gets `metrics` scaled/overwritten:
    a float multiplies the metric, a string replaces the whole configuration (failed:/not-run:)."""
    out = copy.deepcopy(data)
    for k, v in out.items():
        if not pred(k):
            continue
        if "whole" in metrics:
            out[k] = metrics["whole"]
        elif isinstance(v, dict):
            out[k] = {m: (x * metrics[m] if m in metrics else x) for m, x in v.items()}
    return out
