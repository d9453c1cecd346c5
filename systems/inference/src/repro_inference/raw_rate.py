"""The raw model rate: an in-process forward loop, same threads and batch size as the server, no server.

    python -m repro_inference.raw_rate --framework torch --models DIR --model resnet50 [--threads 1] \
        [--batch 1] [--seconds 20] [--warmup 3] [--device cuda|cpu] --out raw.json
torch: the model the TorchServe handler / Triton stand-in builds (same spec, read from
DIR/torchserve/<m>.mar's twin DIR/triton-python-torch/<m>/1 or rebuilt from the spec); BART runs
``.generate()`` exactly as the handler does. tf: the SavedModel TF Serving serves (DIR/tfserving/<m>/1).
The result (``repro.raw-rate/1``): iterations, seconds, rate (inferences/s = iterations * batch / s),
per-iteration latencies (ms) and the spec (weights, sizes), so the study can give every server's
throughput as a fraction of it. ``--device cuda``: the model and every input on the GPU (the logits
back on the CPU each iteration, as a server answers them); no GPU visible fails (exit 3, device.NoGPU
naming the node) before anything is measured. Every result names the device it measured on
(``device``: GPU name, driver, memory) and the GPU's utilisation/memory sampled during the loop.
BART: the tokens generated per request (``bart``: new_tokens per iteration, the length rule).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from repro_inference import device as devmod
from repro_inference.spec import read_spec


def _loop(step, seconds: float, warmup: int) -> list[float]:
    for _ in range(warmup):
        step()
    lat, t_end = [], time.perf_counter() + seconds
    while True:
        t0 = time.perf_counter()
        step()
        t1 = time.perf_counter()
        lat.append(t1 - t0)
        if t1 >= t_end:
            return lat


def torch_step(spec: dict, batch: int, text_words: int = 400, info: dict | None = None):
    import torch

    from repro_inference import torch_models as tm

    tm.pin_threads(spec)
    model = tm.build(spec)
    if spec["model"] == "bart":
        texts = [" ".join(["bridge"] * text_words) + "."] * batch  # as many tokens as Locust's article
        info = {} if info is None else info
        info.update(bart_length_rule=tm.generation_lengths(spec)["rule"], bart_new_tokens=[])

        def step():
            r = tm.summarise(model, spec, texts)
            info["bart_new_tokens"].append(r[0]["new_tokens"])
            info["tokenizer_used"], info["input_tokens"] = r[0]["tokenizer"], r[0]["input_tokens"]
        return step
    x = tm.example_batch(spec, batch)
    if spec["model"].startswith("wav2vec2"):
        x = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + 1e-7)
    return lambda: tm.forward(model, spec, x)  # input to the device, logits back (synchronises on cuda)


def tf_step(path: Path, spec: dict, batch: int):
    import numpy as np

    from repro_inference import tf_models

    tf_models.pin_threads(spec)
    if spec.get("device") == "cuda":
        import tensorflow as tf

        devmod.require("cuda", probe=lambda: tf.config.list_physical_devices("GPU"))
    fn = tf_models.load_signature(str(path))
    rng = np.random.default_rng(1)
    if spec["model"] == "resnet50":
        s = int(spec["image_size"])
        x = rng.standard_normal((batch, 3, s, s), dtype=np.float32)
    else:
        x = rng.standard_normal((batch, spec.get("input_samples") or spec["audio_samples_full"]), dtype=np.float32)
    return lambda: fn(INPUT__0=x)["OUTPUT__0"].numpy()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--framework", required=True, choices=["torch", "tf"])
    p.add_argument("--models", required=True, type=Path, help="the prepared models' directory")
    p.add_argument("--model", required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--text-words", type=int, default=400, help="BART: words of the article (as REPRO_TEXT_WORDS)")
    p.add_argument("--device", choices=devmod.DEVICES, default="cpu", help="cuda: the GPU (fails without one)")
    p.add_argument("--out", type=Path)
    a = p.parse_args(argv)
    if a.threads:
        os.environ["OMP_NUM_THREADS"] = str(a.threads)
    try:
        devmod.require(a.device)  # before anything is built: no GPU, no run
        info: dict = {}
        if a.framework == "torch":
            manifest = json.loads((a.models / f"manifest-torch-{a.model}.json").read_text())
            spec = dict(manifest["spec"], threads=a.threads, device=a.device)
            step = torch_step(spec, a.batch, a.text_words, info)
        else:
            path = a.models / "tfserving" / a.model / "1"
            spec = dict(read_spec(path), threads=a.threads, device=a.device)
            step = tf_step(path, spec, a.batch)
    except devmod.NoGPU as err:
        print(f"raw_rate: FAILED: {err}", file=sys.stderr, flush=True)
        return 3
    print(f"raw_rate: {a.framework} {a.model} on {a.device} threads={a.threads} batch={a.batch} "
          f"for {a.seconds:.0f} s", flush=True)
    sampler = devmod.GpuSampler(a.device).start()
    try:
        lat = _loop(step, a.seconds, a.warmup)
    finally:
        gpu = sampler.stop()
    if info.get("bart_new_tokens"):
        info["bart_new_tokens"] = info["bart_new_tokens"][a.warmup:] or info["bart_new_tokens"]
    total = sum(lat)
    ms = sorted(x * 1000 for x in lat)
    result = {
        "schema": "repro.raw-rate/1", "framework": a.framework, "model": a.model, "threads": a.threads,
        "batch": a.batch, "iterations": len(lat), "seconds": round(total, 4),
        "rate": len(lat) * a.batch / total, "unit": "inferences/s",
        "latency_ms": {"median": statistics.median(ms), "mean": statistics.fmean(ms),
                       "p95": ms[min(len(ms) - 1, int(0.95 * len(ms)))], "min": ms[0], "max": ms[-1]},
        "weights": spec["weights"], "tokenizer": info.get("tokenizer_used", spec.get("tokenizer")),
        "spec": spec, "device": devmod.describe(a.device), "gpu": gpu, **({"bart": info} if info else {}),
    }
    text = json.dumps(result, indent=1) + "\n"
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text)
    print(f"raw_rate: {result['rate']:.2f} inferences/s over {len(lat)} iterations "
          f"(median {result['latency_ms']['median']:.1f} ms)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
