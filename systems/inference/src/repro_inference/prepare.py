"""Prepare every model for every server, each side in its own venv (stdlib driver).

    python -m repro_inference.prepare --out DIR [--models resnet50,wav2vec2_truncated,bart] \
        [--image-size 64] [--audio-samples 8000] [--max-new-tokens 4] [--num-beams 4] [--threads 1] \
        [--torchscript] [--weights random-from-config|pretrained]
    python -m repro_inference.prepare --cached ...   (same, into ${REPRO_CACHE}/inference-models-<options hash>/,
                                                      printing the directory on the last line)

torch side (torch venv): TorchServe .mar, Triton Python-backend torch models (and TorchScript with
--torchscript: the cluster's libtorch backend); TF side (tf venv): TF Serving SavedModels, Triton
TensorFlow and Python-backend TF models. BART only for TorchServe (paper Sec. IV.D). The cache
directory is keyed by the options; inside it each (model, side) is marked done with a hash of the
sources that side's artifacts are made from, so a changed handler re-prepares only the torch side
(seconds) and leaves the slow TF exports alone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from repro_inference.servers import SRC, venv
from repro_inference.spec import MODELS

PKG = Path(__file__).resolve().parent


def digest(args: dict, sources: tuple[str, ...] = ()) -> str:
    h = hashlib.sha256(json.dumps(args, sort_keys=True).encode())
    for name in sources:
        h.update(name.encode() + (PKG / name).read_bytes())
    return h.hexdigest()[:12]


# the files each side's artifacts are made from (stdlib-readable lists, no torch/TF import needed)
SIDE_SOURCES = {
    "torch": ("__init__.py", "spec.py", "torch_models.py", "prepare_torch.py", "triton_config.py",
              "torchserve_handler.py", "triton_python_model.py", "common_cli.py"),
    "tf": ("__init__.py", "spec.py", "tf_models.py", "prepare_tf.py", "triton_config.py", "triton_python_model.py",
           "common_cli.py"),
}


def prepare(out: Path, models: list[str], opts: dict, torchscript: bool = False, cached: bool = False) -> None:
    """Prepare each (model, side); with ``cached``, skip those whose marker names the current sources."""
    out.mkdir(parents=True, exist_ok=True)
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in opts.items() if v is not None]
    env = dict(os.environ, PYTHONPATH=str(SRC), OMP_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="2")
    for model in models:
        torch_formats = "torchserve,triton-python-torch" + (",triton-pytorch" if torchscript else "")
        steps = [("torch", "prepare_torch", torch_formats)]
        if "tf" in MODELS[model]["frameworks"]:
            steps.append(("tf", "prepare_tf", "tfserving,triton-tensorflow,triton-python-tf"))
        for stack, module, formats in steps:
            marker = out / f".done-{model}-{stack}-{digest({}, SIDE_SOURCES[stack])}"
            if cached and marker.exists():
                print(f"prepare: {model} ({stack}) cached", flush=True)
                continue
            for old in out.glob(f".done-{model}-{stack}-*"):
                old.unlink()
            t0 = time.time()
            cmd = [str(venv(stack) / "bin" / "python"), "-m", f"repro_inference.{module}", "--out", str(out),
                   "--model", model, "--formats", formats, *flags]
            print(f"prepare: {model} ({stack}) ...", flush=True)
            subprocess.run(cmd, env=env, check=True)
            marker.touch()
            print(f"prepare: {model} ({stack}) done in {time.time() - t0:.0f} s", flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path)
    p.add_argument("--cached", action="store_true", help="prepare into the cache (keyed by sources + options)")
    p.add_argument("--models", default="resnet50,wav2vec2,wav2vec2_truncated,bart")
    for opt in ("image-size", "audio-samples", "audio-samples-full", "max-new-tokens", "num-beams", "threads",
                "seed"):
        p.add_argument(f"--{opt}", type=int)
    p.add_argument("--weights", choices=["random-from-config", "pretrained"])
    p.add_argument("--torchscript", action="store_true", help="also trace TorchScript for Triton's libtorch backend")
    a = p.parse_args(argv)
    models = [m for m in a.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        p.error(f"unknown model(s) {unknown}; known: {', '.join(MODELS)}")
    opts = {k: getattr(a, k) for k in ("image_size", "audio_samples", "audio_samples_full", "max_new_tokens",
                                       "num_beams", "threads", "seed", "weights")}
    if a.cached:
        key = digest({"models": models, "torchscript": a.torchscript, **opts})
        out = Path(os.environ.get("REPRO_CACHE", Path.home() / ".cache" / "repro")) / f"inference-models-{key}"
        prepare(out, models, opts, a.torchscript, cached=True)
        print(out)
        return 0
    if not a.out:
        p.error("--out or --cached is required")
    prepare(a.out, models, opts, a.torchscript)
    return 0


if __name__ == "__main__":
    sys.exit(main())
