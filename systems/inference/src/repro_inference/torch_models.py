"""The PyTorch side of every model: build, preprocess, forward, postprocess (torch venv only).

One implementation shared by the TorchServe handler, the Triton Python-backend stand-in, TorchScript
export and the raw in-process rate, so all of them run the same network on the same input. Never
import TensorFlow here (MACHINE-FACTS: torch and TF in one process abort).
"""

from __future__ import annotations

import io
import os
import wave

import numpy as np
import torch

from repro_inference.spec import SAMPLE_RATE, ctc_decode, word_decode, word_encode

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(3, 1, 1)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(3, 1, 1)


def pin_threads(spec: dict) -> int:
    """One worker, ``spec['threads']`` intra-op threads, one inter-op thread."""
    n = int(spec.get("threads", 1))
    os.environ["OMP_NUM_THREADS"] = str(n)
    torch.set_num_threads(n)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set in this process (only allowed once)
        pass
    return n


def _hf_config(spec: dict):
    import transformers as tr

    model = spec["model"]
    if spec["weights"] == "pretrained":
        return tr.AutoConfig.from_pretrained(spec["hf_id"])
    if model == "resnet50":  # = microsoft/resnet-50's config
        return tr.ResNetConfig(num_labels=1000, depths=[3, 4, 6, 3], hidden_sizes=[256, 512, 1024, 2048],
                               embedding_size=64, layer_type="bottleneck", downsample_in_first_stage=False)
    if model.startswith("wav2vec2"):  # = facebook/wav2vec2-base-960h's config (base, CTC head, 32 symbols)
        return tr.Wav2Vec2Config(vocab_size=32, feat_extract_norm="group", do_stable_layer_norm=False,
                                 ctc_loss_reduction="sum", pad_token_id=0)
    if model == "bart":  # = facebook/bart-large-cnn's config (bart-large, 50264 tokens)
        return tr.BartConfig(vocab_size=50264, d_model=1024, encoder_layers=12, decoder_layers=12,
                             encoder_attention_heads=16, decoder_attention_heads=16, encoder_ffn_dim=4096,
                             decoder_ffn_dim=4096, max_position_embeddings=1024, forced_bos_token_id=0,
                             forced_eos_token_id=2, no_repeat_ngram_size=3, length_penalty=2.0,
                             early_stopping=True)
    raise ValueError(f"unknown model {model!r}")


def build(spec: dict, source: str | None = None) -> torch.nn.Module:
    """The model in eval mode: ``from_pretrained`` (source dir or hub id) or from config with seeded random weights."""
    import transformers as tr

    cls = {"resnet50": tr.ResNetForImageClassification, "wav2vec2": tr.Wav2Vec2ForCTC,
           "wav2vec2_truncated": tr.Wav2Vec2ForCTC, "bart": tr.BartForConditionalGeneration}[spec["model"]]
    if spec["weights"] == "pretrained":
        model = cls.from_pretrained(source or spec["hf_id"])
    else:
        torch.manual_seed(int(spec.get("seed", 0)))
        model = cls(_hf_config(spec))
    return model.eval()


# ---------------------------------------------------------------- preprocessing (bytes -> tensors)

def decode_image(data: bytes, size: int) -> np.ndarray:
    """Image bytes (PNG/JPEG) -> float32 [3, size, size], resized and ImageNet-normalised."""
    from PIL import Image

    img = Image.open(io.BytesIO(data)).convert("RGB").resize((size, size), Image.BILINEAR)
    arr = np.asarray(img, dtype=np.float32).transpose(2, 0, 1) / 255.0
    return (arr - IMAGENET_MEAN) / IMAGENET_STD


def decode_audio(data: bytes) -> np.ndarray:
    """WAV bytes (16 kHz, mono, 16-bit PCM) -> float32 samples in [-1, 1]."""
    with wave.open(io.BytesIO(data)) as w:
        if w.getframerate() != SAMPLE_RATE or w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise ValueError(f"expected 16 kHz mono 16-bit WAV, got {w.getframerate()} Hz, "
                             f"{w.getnchannels()} channel(s), {8 * w.getsampwidth()}-bit")
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0


def fit_audio(samples: np.ndarray, spec: dict) -> np.ndarray:
    """Pad or truncate to the truncated variant's fixed length, then zero-mean/unit-variance (the feature extractor)."""
    samples = np.asarray(samples, dtype=np.float32).reshape(-1)
    n = spec.get("input_samples")
    if n:
        samples = samples[:n] if samples.size >= n else np.pad(samples, (0, n - samples.size))
    if samples.size < 400:  # the conv feature encoder needs one 25 ms window
        raise ValueError(f"audio too short: {samples.size} samples (need >= 400)")
    return (samples - samples.mean()) / np.sqrt(samples.var() + 1e-7)


# ---------------------------------------------------------------- forward + postprocessing

@torch.inference_mode()
def forward(model, spec: dict, batch: torch.Tensor) -> torch.Tensor:
    """The raw forward pass the serving overhead is measured against (logits)."""
    if spec["model"] == "resnet50":
        return model(pixel_values=batch).logits
    if spec["model"].startswith("wav2vec2"):
        return model(input_values=batch).logits
    raise ValueError("bart has no single forward; use summarise()")


@torch.inference_mode()
def summarise(model, spec: dict, texts: list[str]) -> list[dict]:
    """BART-large-CNN summarisation through ``.generate()`` with the spec's new-token budget.

    Returns ``{"summary": text, "new_tokens": n}`` per text (n excludes the decoder's start token).
    """
    ids = [word_encode(t, model.config.vocab_size) for t in texts]
    width = max(len(i) for i in ids)
    pad = model.config.pad_token_id
    input_ids = torch.tensor([i + [pad] * (width - len(i)) for i in ids])
    mask = (input_ids != pad).long()
    n_new = int(spec["max_new_tokens"])
    out = model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=n_new,
                         min_length=min(56, n_new), num_beams=int(spec["num_beams"]), early_stopping=True)
    results = []
    for o in out[:, 1:]:  # drop decoder_start_token_id
        o = o[o != pad]
        text = word_decode(o) if spec.get("tokenizer") == "word-hash-stand-in" else str(o.tolist())
        results.append({"summary": text, "new_tokens": int(o.numel())})
    return results


def classify_result(logits: np.ndarray) -> dict:
    logits = np.asarray(logits, dtype=np.float32).reshape(-1)
    e = np.exp(logits - logits.max())
    probs = e / e.sum()
    top = np.argsort(-probs)[:5]
    return {"classes": int(logits.size), "top5": [[int(i), float(probs[i])] for i in top],
            "logits": [round(float(x), 5) for x in logits]}


def asr_result(logits: np.ndarray) -> dict:
    logits = np.asarray(logits, dtype=np.float32)
    return {"frames": int(logits.shape[0]), "vocab": int(logits.shape[1]),
            "transcript": ctc_decode(logits.argmax(-1))}


def example_batch(spec: dict, batch: int = 1) -> torch.Tensor:
    """A deterministic input of the served shape (for tracing and the raw rate)."""
    g = torch.Generator().manual_seed(1)
    if spec["model"] == "resnet50":
        s = int(spec["image_size"])
        return torch.randn(batch, 3, s, s, generator=g)
    n = spec.get("input_samples") or int(spec["audio_samples_full"])
    return torch.randn(batch, n, generator=g)
