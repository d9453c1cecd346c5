"""What the inference study serves, independent of any framework (stdlib only).

A *spec* is a small JSON-able dict that says which model, at which size, with which weights, and
how many threads one server worker may use. Model preparation writes it into every artifact
(``repro-spec.json``), every server reads it back, and the study copies its ``weights`` and
``tokenizer`` fields into every result row, so a number measured on random weights can never pass
for one measured on the published checkpoints.

The paper's sizes are the defaults (ResNet50 at 224x224, the truncated Wav2Vec2 at 50,000 samples,
BART-large-CNN's own generation settings); a local configuration shrinks image size, audio length
and new tokens (documented in README.md). Architectures never shrink.
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

SPEC_FILE = "repro-spec.json"

# Hugging Face ids of the paper's checkpoints; offline, the same architectures are built from
# configs with random weights (``weights: random-from-config``).
MODELS = {
    "resnet50": {"task": "image-classification", "hf_id": "microsoft/resnet-50", "frameworks": ["torch", "tf"]},
    "wav2vec2": {"task": "speech-recognition", "hf_id": "facebook/wav2vec2-base-960h", "frameworks": ["torch", "tf"]},
    "wav2vec2_truncated": {
        "task": "speech-recognition",
        "hf_id": "facebook/wav2vec2-base-960h",
        "frameworks": ["torch", "tf"],
    },
    "bart": {"task": "summarization", "hf_id": "facebook/bart-large-cnn", "frameworks": ["torch"]},
}

DEFAULTS = {
    "image_size": 224,  # ResNet50's ImageNet resolution
    "audio_samples": 50000,  # the truncated variant: the TF signature's fixed input length (paper Sec. IV.D)
    "audio_samples_full": 80000,  # what the (untruncated) Wav2Vec2 payload sends: 5 s at 16 kHz
    "max_new_tokens": 142,  # bart-large-cnn's generation max_length
    "num_beams": 4,  # bart-large-cnn's generation config
    "threads": 1,  # intra-op threads of the one server worker (MACHINE-FACTS: 1 on 2 busy cores)
    "seed": 0,  # random-from-config weights are reproducible
    "weights": "random-from-config",  # or "pretrained" (needs the network: from_pretrained)
}

SAMPLE_RATE = 16000

# facebook/wav2vec2-base-960h's CTC vocabulary (its vocab.json), so a transcript can be decoded offline.
W2V_VOCAB = ["<pad>", "<s>", "</s>", "<unk>", "|", "E", "T", "A", "O", "N", "I", "H", "S", "R", "D", "L", "U", "M",
             "W", "C", "F", "G", "Y", "P", "B", "V", "K", "'", "X", "J", "Q", "Z"]

SYSTEM_KINDS = {
    "torchserve": "real",
    "triton-pytorch": "real",
    "triton-tensorflow": "real",
    "triton-python-torch": "stand-in:tritonserver-python-backend",
    "triton-python-tf": "stand-in:tritonserver-python-backend",
    "tfserving": "real",
    "tfserving-standin": "stand-in:tfserving-rest-on-tf-python",
}


def make_spec(model: str, **overrides) -> dict:
    """A full spec for ``model`` with the paper's defaults, ``overrides`` applied (None = default)."""
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; known: {', '.join(MODELS)}")
    spec = {"model": model, **MODELS[model], **DEFAULTS}
    for key, value in overrides.items():
        if value is None:
            continue
        if key not in DEFAULTS:
            raise ValueError(f"unknown spec key {key!r}; known: {', '.join(DEFAULTS)}")
        spec[key] = value
    if spec["weights"] not in ("random-from-config", "pretrained"):
        raise ValueError(f"weights must be random-from-config or pretrained, not {spec['weights']!r}")
    if model == "wav2vec2_truncated":
        spec["input_samples"] = int(spec["audio_samples"])  # fixed: pad or truncate to this
    elif model == "wav2vec2":
        spec["input_samples"] = None  # any length
    # no tokenizer files offline: BART's is a word-hash stand-in unless pretrained files are fetched
    spec["tokenizer"] = "pretrained" if spec["weights"] == "pretrained" else (
        "word-hash-stand-in" if model == "bart" else "none-needed")
    return spec


def runtime_files(framework: str) -> tuple[str, ...]:
    """The modules of this package that a ``framework`` (torch|tf) server worker imports."""
    return ("__init__.py", "spec.py", "device.py", f"{framework}_models.py")


def copy_runtime(dest: Path, framework: str) -> None:
    """Copy those modules into ``dest/repro_inference/`` (an artifact carries the code that serves it)."""
    import shutil

    here = Path(__file__).resolve().parent
    (Path(dest) / "repro_inference").mkdir(parents=True, exist_ok=True)
    for name in runtime_files(framework):
        shutil.copy2(here / name, Path(dest) / "repro_inference" / name)


def write_spec(spec: dict, directory: Path) -> Path:
    path = Path(directory) / SPEC_FILE
    path.write_text(json.dumps(spec, indent=1, sort_keys=True) + "\n")
    return path


def read_spec(directory: Path) -> dict:
    return json.loads((Path(directory) / SPEC_FILE).read_text())


def ctc_decode(ids) -> str:
    """Greedy CTC decoding with wav2vec2-base-960h's vocabulary: collapse repeats, drop <pad>, '|' = space."""
    out, prev = [], None
    for i in ids:
        i = int(i)
        if i != prev and i != 0:
            tok = W2V_VOCAB[i] if i < len(W2V_VOCAB) else "<unk>"
            out.append(" " if tok == "|" else ("" if tok.startswith("<") else tok))
        prev = i
    return "".join(out).strip()


def word_encode(text: str, vocab_size: int, max_len: int = 1022) -> list[int]:
    """BART's tokenizer stand-in (no vocab files offline): one id per word or punctuation mark, hashed.

    About one token per word, like BART's BPE (about 1.3 per English word), so the encoder sees as
    many positions as it would for the same article; a byte-level stand-in would make it ~5x longer.
    Ids 0-3 are BART's specials (<s>, <pad>, </s>, <unk>).
    """
    words = re.findall(r"\w+|[^\w\s]", text)[:max_len]
    return [0] + [4 + zlib.crc32(w.lower().encode()) % (vocab_size - 4) for w in words] + [2]


SPECIAL = {0: "<s>", 2: "</s>", 3: "<unk>"}


def word_decode(ids) -> str:
    """Generated ids as text: with no vocabulary offline, specials by name and each other id as ``t<id>``."""
    return " ".join(SPECIAL.get(int(i), f"t{int(i)}") for i in ids if int(i) != 1)
