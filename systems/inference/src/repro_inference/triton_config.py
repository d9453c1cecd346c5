"""Triton ``config.pbtxt`` text for every backend (stdlib only).

All Triton models, whatever their backend, share one tensor contract, so the Locust file and the
analysis are the same for the real backends (cluster) and the Python-backend stand-in (here):
  INPUT__0   FP32  resnet50: [3, S, S] ImageNet-normalised pixels (NCHW); wav2vec2: [N] raw 16 kHz samples
  OUTPUT__0  FP32  resnet50: [1000] logits; wav2vec2: [frames, 32] CTC logits
with ``max_batch_size: 1`` (requests carry a leading batch dimension of 1) and one instance: KIND_GPU
on ``device: cuda`` (the paper's GPU; ``servers.py`` renders the served copy with the run's device),
KIND_CPU on ``cpu``. ``threads: 0`` leaves the backends' thread pools at their defaults.
The Python-backend stand-in adds SYSTEM_KIND (BYTES) to every answer: ``stand-in:tritonserver-python-backend``.
"""

from __future__ import annotations

PLATFORMS = {
    "triton-pytorch": 'backend: "pytorch"\nplatform: "pytorch_libtorch"',
    "triton-tensorflow": 'platform: "tensorflow_savedmodel"',
    "triton-python-torch": 'backend: "python"',
    "triton-python-tf": 'backend: "python"',
}


def io_dims(spec: dict) -> tuple[list[int], list[int]]:
    if spec["model"] == "resnet50":
        s = int(spec["image_size"])
        return [3, s, s], [1000]
    if spec["model"].startswith("wav2vec2"):
        return [int(spec.get("input_samples") or -1)], [-1, 32]
    raise ValueError(f"Triton does not serve {spec['model']} (paper Sec. IV.D: .generate() cannot be traced)")


INSTANCE_KIND = {"cuda": "KIND_GPU", "cpu": "KIND_CPU"}


def instance_group(device: str) -> str:
    kind = INSTANCE_KIND[device]
    return f"instance_group [ {{ count: 1 kind: {kind}" + (" gpus: [ 0 ]" if kind == "KIND_GPU" else "") + " } ]"


def with_device(text: str, device: str) -> str:
    """A config.pbtxt's text with its instance_group set for ``device`` (cuda: one KIND_GPU instance on GPU 0)."""
    import re

    lines = [instance_group(device) if re.match(r"\s*instance_group\b", ln) else ln for ln in text.splitlines()]
    if not any(re.match(r"\s*instance_group\b", ln) for ln in text.splitlines()):
        lines.append(instance_group(device))
    return "\n".join(lines) + "\n"


def config_pbtxt(spec: dict, flavour: str, device: str | None = None) -> str:
    device = device or spec.get("device", "cpu")
    in_dims, out_dims = io_dims(spec)
    lines = [
        f'name: "{spec["model"]}"',
        PLATFORMS[flavour],
        "max_batch_size: 1",
        f'input [ {{ name: "INPUT__0" data_type: TYPE_FP32 dims: {in_dims} }} ]',
        "output [",
        f'  {{ name: "OUTPUT__0" data_type: TYPE_FP32 dims: {out_dims} }}'
        + (',\n  { name: "SYSTEM_KIND" data_type: TYPE_STRING dims: [ 1 ] }' if "python" in flavour else ""),
        "]",
        instance_group(device),
        f'parameters {{ key: "threads" value: {{ string_value: "{int(spec["threads"])}" }} }}',
        f'parameters {{ key: "weights" value: {{ string_value: "{spec["weights"]}" }} }}',
    ]
    n = int(spec["threads"])
    if flavour == "triton-pytorch" and n:  # intra/inter-op threads of libtorch, as the worker's
        lines.append(f'parameters {{ key: "INTRA_OP_THREAD_COUNT" value: {{ string_value: "{n}" }} }}')
        lines.append('parameters { key: "INTER_OP_THREAD_COUNT" value: { string_value: "1" } }')
    if flavour == "triton-tensorflow" and n:
        lines.append(f'parameters {{ key: "TF_NUM_INTRA_THREADS" value: {{ string_value: "{n}" }} }}')
        lines.append('parameters { key: "TF_NUM_INTER_THREADS" value: { string_value: "1" } }')
    return "\n".join(lines) + "\n"
