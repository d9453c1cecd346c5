"""TorchServe handler for all four models (packed into every .mar; no captum, no built-in handlers).

Request bodies, one per request (TorchServe may batch; we handle each row):
  resnet50            image bytes (PNG/JPEG), resized to the spec's image size
  wav2vec2[_truncated] 16 kHz mono 16-bit WAV bytes (truncated variant: padded/truncated to 50,000 samples)
  bart                UTF-8 text (or JSON {"text": ...}); summarised through ``.generate()``
Answers are JSON; every answer names the weights (``random-from-config`` offline). Malformed input
raises TorchServe's PredictionException with status 400: the worker answers the error and keeps serving.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import torch

# TorchServe puts the extracted archive (this handler beside the repro_inference package that
# prepare_torch packs with --extra-files) on its worker's PYTHONPATH: the package imports from there
from repro_inference import torch_models as tm
from repro_inference.spec import read_spec

try:
    from ts.utils.util import PredictionException
except ImportError:  # outside TorchServe (unit use)
    class PredictionException(Exception):
        def __init__(self, message, error_code=500):
            super().__init__(message)
            self.error_code = error_code


class ReproHandler:
    def __init__(self):
        self.model = None
        self.spec = None

    def initialize(self, context):
        model_dir = context.system_properties.get("model_dir")
        self.spec = read_spec(model_dir)
        if os.environ.get("REPRO_THREADS"):
            self.spec["threads"] = int(os.environ["REPRO_THREADS"])
        # servers.py --device: cuda puts the model on the GPU TorchServe gives this worker (number_of_gpu),
        # and a worker that was given none fails (device.NoGPU names the node), never a silent CPU run
        self.spec["device"] = os.environ.get("REPRO_DEVICE", "cpu")
        gpu_id = context.system_properties.get("gpu_id")
        if self.spec["device"] == "cuda" and gpu_id is None:
            raise RuntimeError("REPRO_DEVICE=cuda but TorchServe gave this worker no GPU (gpu_id None; "
                               "number_of_gpu 0?): refusing to run on the CPU")
        tm.pin_threads(self.spec)
        t0 = time.time()
        source = os.path.join(model_dir, "hf") if self.spec["weights"] == "pretrained" else None
        self.model = tm.build(self.spec, source=source, gpu_id=gpu_id if self.spec["device"] == "cuda" else None)
        print(f"repro: {self.spec['model']} built ({self.spec['weights']}) on {next(self.model.parameters()).device} "
              f"in {time.time() - t0:.1f} s, threads={torch.get_num_threads()}", flush=True)

    def _body(self, row):
        body = row.get("data") if row.get("data") is not None else row.get("body")
        if body is None:
            raise PredictionException("empty request: no body", 400)
        return body

    def _one(self, body):
        model = self.spec["model"]
        if model == "bart":
            if isinstance(body, (bytes, bytearray)):
                body = body.decode("utf-8", errors="strict")
            text = body.get("text") if isinstance(body, dict) else body
            if not isinstance(text, str) or not text.strip():
                raise PredictionException("bart expects non-empty UTF-8 text (or JSON {'text': ...})", 400)
            return tm.summarise(self.model, self.spec, [text])[0]
        if not isinstance(body, (bytes, bytearray)):
            raise PredictionException(f"{model} expects a binary body (image or WAV bytes), got JSON", 400)
        try:
            if model == "resnet50":
                x = tm.decode_image(bytes(body), int(self.spec["image_size"]))
            else:
                x = tm.fit_audio(tm.decode_audio(bytes(body)), self.spec)
        except Exception as err:  # PIL/wave errors: the client's fault
            raise PredictionException(f"cannot decode {model} input: {err}", 400) from err
        logits = tm.forward(self.model, self.spec, torch.from_numpy(np.ascontiguousarray(x))[None]).numpy()[0]
        return tm.classify_result(logits) if model == "resnet50" else tm.asr_result(logits)

    def handle(self, data, context):
        out = []
        for row in data:
            result = self._one(self._body(row))
            result.setdefault("tokenizer", self.spec["tokenizer"])  # BART: the one that really tokenised
            result.update(model=self.spec["model"], weights=self.spec["weights"], device=self.spec["device"])
            out.append(json.dumps(result))
        return out


_service = ReproHandler()


def handle(data, context):
    if _service.model is None:
        _service.initialize(context)
    if data is None:
        return None
    return _service.handle(data, context)
