"""Model preparation, PyTorch side (torch venv): TorchServe .mar, Triton TorchScript and Python-backend models.

    python -m repro_inference.prepare_torch --out DIR --model resnet50 [--image-size 64] \
        [--formats torchserve,triton-python-torch,triton-pytorch]

writes
    DIR/torchserve/<model>.mar                     handler + repro-spec.json (+ hf/ weights when pretrained)
    DIR/triton-python-torch/<model>/config.pbtxt   + 1/model.py (Python backend: the local stand-in)
    DIR/triton-pytorch/<model>/config.pbtxt        + 1/model.pt (TorchScript, libtorch backend: the cluster)
Offline (``weights: random-from-config``) the .mar and the Python-backend model carry only the spec:
the worker rebuilds the architecture from its config with the spec's seed, so nothing large is
written. With ``--weights pretrained`` the checkpoint is fetched (``from_pretrained``) and packed.
BART is TorchServe-only (paper Sec. IV.D).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from repro_inference.common_cli import prepare_args
from repro_inference.spec import copy_runtime, write_spec
from repro_inference.triton_config import config_pbtxt

PKG = Path(__file__).resolve().parent
FORMATS = ("torchserve", "triton-python-torch", "triton-pytorch")


def copy_package(dest: Path) -> None:
    copy_runtime(dest, "torch")


def save_pretrained(spec: dict, dest: Path) -> None:
    if spec["weights"] == "pretrained":
        from repro_inference import torch_models as tm

        model = tm.build(spec)
        model.save_pretrained(dest / "hf")
        if model.repro_tokenizer is not None:  # BART: the tokenizer that really tokenises travels with it
            model.repro_tokenizer.save_pretrained(dest / "hf")


def make_mar(spec: dict, out: Path) -> Path:
    export = out / "torchserve"
    export.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp)
        # torch-model-archiver copies a directory's *contents* into the archive root: wrap each one
        write_spec(spec, stage)
        copy_package(stage / "pkg")
        save_pretrained(spec, stage / "weights")
        extra = [str(stage / "repro-spec.json"), str(stage / "pkg")]
        if (stage / "weights").exists():
            extra.append(str(stage / "weights"))
        # the archiver through this interpreter (its console script need not sit beside it: a carried --target)
        cmd = [sys.executable, "-c", "import sys; from model_archiver.model_packaging import generate_model_archive "
               "as g; sys.argv[0] = 'torch-model-archiver'; sys.exit(g())", "--model-name", spec["model"],
               "--version", "1.0", "--handler", str(PKG / "torchserve_handler.py"),
               "--extra-files", ",".join(extra), "--export-path", str(export), "--force"]
        subprocess.run(cmd, check=True)
    return export / f"{spec['model']}.mar"


def make_triton_python(spec: dict, out: Path) -> Path:
    mdir = out / "triton-python-torch" / spec["model"]
    shutil.rmtree(mdir, ignore_errors=True)
    (mdir / "1").mkdir(parents=True)
    write_spec(spec, mdir / "1")
    copy_package(mdir / "1")
    shutil.copy2(PKG / "triton_python_model.py", mdir / "1" / "model.py")
    save_pretrained(spec, mdir / "1")
    (mdir / "config.pbtxt").write_text(config_pbtxt(spec, "triton-python-torch"))
    return mdir


def make_torchscript(spec: dict, out: Path) -> Path:
    import torch

    from repro_inference import torch_models as tm

    class Served(torch.nn.Module):  # the tensor contract of triton_config.py, normalisation included
        def __init__(self, model, is_audio):
            super().__init__()
            self.model, self.is_audio = model, is_audio

        def forward(self, x):
            if self.is_audio:
                x = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-7)
                return self.model(input_values=x, return_dict=False)[0]
            return self.model(pixel_values=x, return_dict=False)[0]

    mdir = out / "triton-pytorch" / spec["model"]
    shutil.rmtree(mdir, ignore_errors=True)
    (mdir / "1").mkdir(parents=True)
    model = tm.build(spec)
    model.config.torchscript = True
    served = Served(model, spec["model"].startswith("wav2vec2")).eval()
    with torch.inference_mode():
        traced = torch.jit.trace(served, tm.example_batch(spec), strict=False, check_trace=False)
    traced.save(str(mdir / "1" / "model.pt"))
    write_spec(spec, mdir)
    (mdir / "config.pbtxt").write_text(config_pbtxt(spec, "triton-pytorch"))
    return mdir


def main(argv=None) -> int:
    _, a, spec, formats = prepare_args(__doc__, FORMATS, "torch", argv)
    if spec["model"] == "bart":
        formats = [f for f in formats if f == "torchserve"]  # Triton cannot trace .generate() (paper Sec. IV.D)
    makers = {"torchserve": make_mar, "triton-python-torch": make_triton_python, "triton-pytorch": make_torchscript}
    made = {}
    for fmt in formats:
        t0 = time.time()
        print(f"prepare_torch: {spec['model']} -> {fmt} ({spec['weights']})", flush=True)
        made[fmt] = str(makers[fmt](spec, a.out))
        print(f"prepare_torch: {fmt} done in {time.time() - t0:.1f} s: {made[fmt]}", flush=True)
    manifest = a.out / f"manifest-torch-{spec['model']}.json"
    manifest.write_text(json.dumps({"spec": spec, "artifacts": made}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
