#!/usr/bin/env python3
"""The inference study's GPU check: the cluster path's device code on one lent GPU, short (issue 20).

    python3 -m studies.inference.gpu_check config --device cuda --out CFG.json   # the cluster config, shortened
    python3 -m studies.inference.gpu_check models --dir M --out models.json       # models.json of prepared M
    python3 -m studies.inference.gpu_check summary --results results/inference --out DIR  # CSV + Table I beside

`config` takes config/config.yaml's inference section (device cuda, threads 0 = the frameworks'
defaults, the paper's sizes), validated by the study's schema, and shortens only what the device
budget forces (one repeat, user counts 1/10/50, 20 s runs, 10 s raw-rate loops; weights
random-from-config: no model hub on the GPU machine; TorchServe only). `summary` reads the raw
records run.py wrote (raw rate: every model on the device; serve: TorchServe x ResNet50) and writes
`gpu.csv`: each number with the device it was measured on (name, driver, memory), the GPU's
utilisation and memory sampled during the run, BART's tokens per request, and the paper's Table I
value and hardware (one NVIDIA Quadro RTX 5000) beside. Run by gpu_check.sh.
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
PAPER_HW = "NVIDIA Quadro RTX 5000 (16 GB), the paper's (Sec. III)"
SHORT = {"repeats": 1, "users": [1, 10, 50], "run_time_s": 12, "servers": ["torchserve"],
         "weights": "random-from-config", "torchscript": False, "raw_rate": {"seconds": 10, "warmup": 3},
         "locust": {"processes": 4, "stop_timeout_s": 10}, "server_start_timeout_s": 300,
         "kick": {"server": "torchserve", "model": "resnet50"}}


def make_config(device: str) -> dict:
    from repro import config as rconfig  # the project's Python path (gpu_check.sh exports it)

    over = {"inference": dict(SHORT, device=device)}
    if device == "cpu":  # the CPU rehearsal of the same script: small sizes, one thread
        over["inference"].update(threads=1, sizes={"image_size": 64, "audio_samples": 16000,
                                                  "audio_samples_full": 16000, "max_new_tokens": 4,
                                                  "text_words": 50}, users=[1, 2], run_time_s=4,
                                 raw_rate={"seconds": 2, "warmup": 1})
    return rconfig.load(REPO / "config" / "config.yaml", over)["inference"]


def make_models(mdir: Path) -> dict:
    specs = {}
    for man in sorted(mdir.glob("manifest-torch-*.json")):
        m = json.loads(man.read_text())
        specs[m["spec"]["model"]] = m["spec"]
    return {"dir": str(mdir.resolve()), "command": ["prepare_torch (gpu_check.sh)"], "specs": specs}


def _value(rec: dict, metric: str):
    for m in rec.get("metrics", []):
        if m["metric"] == metric:
            return m["value"]
    return None


def _published() -> dict:
    out = {}
    with open(REPO / "workflow" / "studies" / "inference" / "published.csv") as fh:
        for r in csv.DictReader(fh):
            if r["source"] == "000 inference Table I" and r["value"]:
                out[(r["model"], r["server"])] = float(r["value"])
    return out


COLUMNS = ["experiment", "model", "server", "framework", "users", "status", "rate", "unit", "latency_median_ms",
           "requests", "failures", "new_tokens_per_request", "device", "gpu_name", "gpu_driver",
           "gpu_memory_total_mib", "gpu_samples", "gpu_util_mean_pct", "gpu_util_max_pct", "gpu_mem_used_max_mib",
           "threads", "image_size", "audio_samples", "max_new_tokens", "num_beams", "weights", "tokenizer",
           "input_encoding", "paper_table1_req_s", "paper_hardware", "failure", "raw_file"]


def summary_rows(results: Path) -> list[dict]:
    """Every raw record (ok) and failure record (failed/) under results/inference."""
    pub = _published()
    rows = []
    files = sorted(glob.glob(f"{results}/raw/**/rep~*.json", recursive=True)) + sorted(
        glob.glob(f"{results}/failed/**/rep~*.json", recursive=True))
    for f in files:
        rec = json.loads(Path(f).read_text())
        failed = rec.get("status") == "failed" or "/failed/" in f
        p, ex = rec.get("params", {}), rec.get("extra", {})
        if p.get("experiment") not in ("raw_rate", "serve"):
            continue
        dev, gpu, spec = ex.get("device", {}) or {}, ex.get("gpu", {}) or {}, ex.get("spec", {}) or {}
        serve = p["experiment"] == "serve"
        rows.append({
            "experiment": p["experiment"], "model": p.get("model"), "server": p.get("server", ""),
            "framework": p.get("framework", "torch"), "users": p.get("users", ""),
            "status": "failed" if failed or rec.get("failure") else "ok",
            "rate": _value(rec, "throughput" if serve else "raw_rate"),
            "unit": "req/s" if serve else "inferences/s", "latency_median_ms": _value(rec, "latency_median"),
            "requests": _value(rec, "requests"), "failures": _value(rec, "failures"),
            "new_tokens_per_request": _value(rec, "new_tokens_per_request") or ex.get("generated_tokens", ""),
            "device": dev.get("device", ex.get("device_asked", "")), "gpu_name": dev.get("gpu_name", ""),
            "gpu_driver": dev.get("gpu_driver", ""), "gpu_memory_total_mib": dev.get("gpu_memory_total_mib"),
            "gpu_samples": gpu.get("gpu_samples"), "gpu_util_mean_pct": gpu.get("gpu_util_mean_pct"),
            "gpu_util_max_pct": gpu.get("gpu_util_max_pct"), "gpu_mem_used_max_mib": gpu.get("gpu_mem_used_max_mib"),
            "threads": ex.get("threads", spec.get("threads", "")), "image_size": spec.get("image_size"),
            "audio_samples": spec.get("input_samples") or spec.get("audio_samples_full"),
            "max_new_tokens": spec.get("max_new_tokens"), "num_beams": spec.get("num_beams"),
            "weights": spec.get("weights", ""), "tokenizer": ex.get("tokenizer") or spec.get("tokenizer", ""),
            "input_encoding": ex.get("input_encoding", "in-process tensor (no server)"),
            "paper_table1_req_s": pub.get((p.get("model"), p.get("server") or "torchserve")),
            "paper_hardware": PAPER_HW, "failure": str(rec.get("failure", ""))[:300],
            "raw_file": str(Path(f).relative_to(results)),
        })
    return rows


def write_summary(results: Path, out: Path) -> list[dict]:
    """OUT/gpu.csv: one row per raw or failure record of the GPU check (summary_rows), each also printed."""
    rows = summary_rows(results)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "gpu.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, COLUMNS)
        w.writeheader()
        w.writerows(rows)
    for r in rows:
        print(f"{r['experiment']:8s} {r['model']:18s} {r['server'] or r['framework']:10s} u={r['users']!s:3s} "
              f"{r['status']:6s} {r['rate']} {r['unit']} on {r['device']} {r['gpu_name']} "
              f"util {r['gpu_util_mean_pct']} (paper {r['paper_table1_req_s']})")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("config")
    c.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    c.add_argument("--out", type=Path, required=True)
    m = sub.add_parser("models")
    m.add_argument("--dir", type=Path, required=True)
    m.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("summary")
    s.add_argument("--results", type=Path, required=True, help="the study's results dir (raw/, failed/)")
    s.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    if a.cmd == "config":
        a.out.write_text(json.dumps(make_config(a.device), indent=1, sort_keys=True) + "\n")
    elif a.cmd == "models":
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(make_models(a.dir), indent=1) + "\n")
    else:
        write_summary(a.results, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
