"""Helpers of the serverless tests: the validated config section, and synthetic tidy tables for the
claim builders (rows shaped as repro.tidy.collect writes them)."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import yaml

from repro import config as rc
from repro import testing

REPO = testing.REPO


def section(local: bool = True, **overrides) -> dict:
    """config/config.yaml (+ config/local.yaml) + {"serverless": overrides}, validated, defaults filled."""
    cfg = yaml.safe_load((REPO / "config/config.yaml").read_text())
    if local:
        cfg = rc.deep_merge(cfg, yaml.safe_load((REPO / "config/local.yaml").read_text()))
    cfg = rc.deep_merge(cfg, {"serverless": {"enabled": True, **overrides}})
    v = rc.validate(cfg)
    # the judging scale study_json hands every analysis script (local with local.yaml, else cluster)
    return {**v["serverless"], "judging_scale": v["judging_scale"]}


def outs(cfg: dict, experiment: str, params: dict, rep: int = 0) -> list[str]:
    """A run job's --out, as its rule gives it: layout.py's raw paths (a sweep: every declared size)."""
    from studies.serverless import layout

    if experiment == "image":
        return [layout.raw_path(layout.image_params(params["variant"], params["platform"], params["instances"]), rep)]
    if experiment == "bytes":
        return layout.bytes_job_outputs(cfg, params["variant"], params["platform"], params["instances"], rep)
    return layout.limit_outputs(cfg, params["variant"], rep)


def run_argv(cfg: dict, experiment: str, rep: int = 0, inputs: dict | None = None, **params) -> list[str]:
    """The run contract's arguments of one job (what the run rule's command passes)."""
    import json

    argv = [experiment, "--config", json.dumps(cfg), "--params", json.dumps(params), "--rep", str(rep),
            "--out", *outs(cfg, experiment, params, rep)]
    return argv + (["--input", *(f"{k}={v}" for k, v in inputs.items())] if inputs else [])


def run_job(ws, cfg: dict, experiment: str, rep: int = 0, inputs: dict | None = None, env: dict | None = None,
            **params):
    """`python3 -m studies.serverless.run` as the run rule calls it, in the workspace ``ws``."""
    import os
    import subprocess
    import sys

    from repro import pythonpath

    env = dict(env if env is not None else os.environ, PYTHONPATH=pythonpath.value(REPO, ""))
    return subprocess.run([sys.executable, "-m", "studies.serverless.run",
                           *run_argv(cfg, experiment, rep, inputs, **params)],
                          cwd=ws, env=env, capture_output=True, text=True, timeout=120)


KIND = {"openfaas": "stand-in:openfaas-watchdog", "nuclio-cpp": "stand-in:nuclio-cpp-shell",
        "nuclio-go": "stand-in:nuclio-go-inprocess", "baseline": "stand-in:baseline-direct-exec",
        "echo": "stand-in:echo-loopback", "iperf3": "stand-in:iperf3-loopback"}

MiB = 2**20
SIZES = [1, 64, 1024, 16384, 65536, 262144, 1 * MiB, 2 * MiB, 4 * MiB, 16 * MiB]


def paper_like() -> dict:
    """Per configuration the metric values of each repeat (or "failed: why"), shaped like the paper."""
    d: dict = {}
    img = {("processing", "openfaas"): {1: 1.0, 2: 2.0, 4: 3.5, 8: 4.2, 16: 4.58},
           ("processing", "nuclio-cpp"): {1: 1.5, 2: 3.0, 4: 5.5, 8: 6.8, 16: 7.17},
           ("null-processing", "openfaas"): {1: 1.0, 2: 2.0, 4: 4.0, 8: 8.0, 16: 16.04},
           ("null-processing", "nuclio-cpp"): {1: 0.95, 2: 1.9, 4: 3.8, 8: 7.5, 16: 14.93}}
    for (v, p), per in img.items():
        for n, rate in per.items():
            d[("image", v, p, n, None)] = {"images_per_s": rate, "throughput": rate * 3}
    d[("image", "processing", "baseline", 16, None)] = {"images_per_s": 12.58, "throughput": 37.74}
    # byte reversal: rates that saturate with the size (an S against log2 size), single peaks of Table 2
    # at the largest size each handles (16 MiB; Nuclio Go 2 MiB, larger refused), parallel peaks at 4
    # (OpenFaaS) and 8 instances (Nuclio, Nuclio Go)
    sizes = SIZES

    def curve(peak, s, top):
        return peak * (s / (s + 256 * 1024)) / (top / (top + 256 * 1024))

    single = {"openfaas": 7.47, "nuclio-cpp": 9.64, "nuclio-go": 12.71}
    for p, peak in single.items():
        top = 2 * MiB if p == "nuclio-go" else 16 * MiB
        for n in (1, 4):
            for s in sizes:
                if s > top:
                    d[("bytes", "single", p, n, s)] = "failed: HTTP 413: request body exceeds the limit"
                    continue
                x = curve(peak, s, top) * (1.0 if n == (1 if p == "nuclio-go" else 4) else 0.9)
                # the fastest request of a run: Nuclio Go's "up to four times faster than the average"
                d[("bytes", "single", p, n, s)] = {"single_mean": x, "single_gmean": 0.96 * x,
                                                   "single_hmean": 0.92 * x, "throughput": x,
                                                   "single_max": (3.9 if p == "nuclio-go" else 1.8) * x}
    par = {"openfaas": (20.0, {1: 0.3, 2: 0.6, 4: 1.0, 8: 0.95, 16: 0.9}),
           "nuclio-cpp": (33.27, {1: 0.2, 2: 0.4, 4: 0.7, 8: 1.0, 16: 0.97}),
           "nuclio-go": (33.25, {1: 0.2, 2: 0.4, 4: 0.7, 8: 1.0, 16: 0.97})}
    for p, (peak, per_n) in par.items():
        top = 2 * MiB if p == "nuclio-go" else 16 * MiB
        for n, f in per_n.items():
            for s in sizes:
                d[("bytes", "parallel", p, n, s)] = ("failed: HTTP 413: too large" if s > top
                                                      else {"throughput": curve(peak, s, top) * f})
    for s in sizes:
        d[("limit", "echo", None, None, s)] = {"throughput": 300.0}
    d[("limit", "iperf3", None, None, None)] = {"throughput": 700.0}
    return d


def tidy_df(data: dict, reps: int = 2, real: bool = False) -> pd.DataFrame:
    """The rows of `data`; labelled stand-in:<what> as a local run writes them, or `real` (the cluster)."""
    rows = []
    for (w, v, p, n, s), vals in data.items():
        for rep in range(reps):
            params = {"workload": w, "variant": v}
            if p is not None:
                params["platform"] = p
            if n is not None:
                params["instances"] = n
            if s is not None:
                params["size"] = s
            raw = "results/serverless/raw/" + "/".join(f"{k}~{x}" for k, x in params.items()) + f"/rep~{rep}.json"
            kind = "real" if real else (KIND[p] if p else KIND[v])
            base = {"study": "serverless", "experiment": w, "platform": p, "instances": n, "size": s, **params,
                    "rep": rep, "system_kind": kind, "raw_file": raw}
            if isinstance(vals, str):
                rows.append({**base, "metric": "", "value": float("nan"), "unit": "", "status": "failed",
                             "failure": vals.removeprefix("failed: ")})
                continue
            for m, x in vals.items():
                rows.append({**base, "metric": m, "value": float(x) * (1 + 0.01 * rep), "unit": "",
                             "status": "ok", "failure": ""})
    return pd.DataFrame(rows)


def published():
    from studies.serverless import analysis

    return analysis.read_published(Path(__file__).resolve().parents[1] / "published.csv")


def mutate(data: dict, key: tuple, **metrics) -> dict:
    out = copy.deepcopy(data)
    out[key] = metrics if metrics else out[key]
    return out
