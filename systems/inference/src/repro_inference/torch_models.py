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

from repro_inference import device as dev
from repro_inference.spec import SAMPLE_RATE, ctc_decode, word_decode, word_encode

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(3, 1, 1)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(3, 1, 1)


def pin_threads(spec: dict) -> int:
    """One worker, ``spec['threads']`` intra-op threads, one inter-op thread; 0 = the framework's default
    (the paper ran every server in its default configuration: the cluster path on the GPU)."""
    n = int(spec.get("threads", 1))
    if n == 0:
        return torch.get_num_threads()
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


def torch_device(spec: dict, gpu_id=None) -> torch.device:
    """The spec's device (``cuda`` | ``cpu``); cuda where torch sees no GPU raises device.NoGPU (never a CPU run)."""
    want = spec.get("device", "cpu")
    if want == "cuda":
        dev.require("cuda", probe=torch.cuda.is_available)
        return torch.device(f"cuda:{int(gpu_id)}" if gpu_id is not None else "cuda")
    return torch.device("cpu")


def build(spec: dict, source: str | None = None, gpu_id=None) -> torch.nn.Module:
    """The model in eval mode on the spec's device: ``from_pretrained`` (source dir or hub id) or from
    config with seeded random weights. BART with pretrained weights carries its own tokenizer
    (``model.repro_tokenizer``); with random weights the word-hash stand-in tokenises (spec's label)."""
    import transformers as tr

    cls = {"resnet50": tr.ResNetForImageClassification, "wav2vec2": tr.Wav2Vec2ForCTC,
           "wav2vec2_truncated": tr.Wav2Vec2ForCTC, "bart": tr.BartForConditionalGeneration}[spec["model"]]
    if spec["weights"] == "pretrained":
        model = cls.from_pretrained(source or spec["hf_id"])
    else:
        torch.manual_seed(int(spec.get("seed", 0)))
        model = cls(_hf_config(spec))
    model.repro_tokenizer = None
    if spec["model"] == "bart" and spec.get("tokenizer") == "pretrained":
        model.repro_tokenizer = tr.AutoTokenizer.from_pretrained(source or spec["hf_id"])
    return model.eval().to(torch_device(spec, gpu_id))


def _device_of(model) -> torch.device:
    return next(model.parameters()).device


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
    """The raw forward pass the serving overhead is measured against: the input to the model's device,
    the logits back on the CPU (as a server must answer them; on cuda this synchronises)."""
    batch = batch.to(_device_of(model), non_blocking=False)
    if spec["model"] == "resnet50":
        return model(pixel_values=batch).logits.cpu()
    if spec["model"].startswith("wav2vec2"):
        return model(input_values=batch).logits.cpu()
    raise ValueError("bart has no single forward; use summarise()")


def generation_lengths(spec: dict) -> dict:
    """``.generate()``'s length settings. Random weights never emit the end token at the right time, so the
    generated length is fixed: exactly ``max_new_tokens`` (min_new_tokens = max_new_tokens), stated in
    every record. Pretrained weights stop where the checkpoint stops (bart-large-cnn: 56..142 tokens)."""
    n_new = int(spec["max_new_tokens"])
    if spec["weights"] == "pretrained":
        return {"max_new_tokens": n_new, "min_length": min(56, n_new), "rule": f"checkpoint's own stop, <= {n_new}"}
    return {"max_new_tokens": n_new, "min_new_tokens": n_new, "rule": f"fixed: exactly {n_new} new tokens"}


def encode_texts(model, spec: dict, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor, str]:
    """(input_ids, attention_mask, the tokenizer that really tokenised) -- the label follows the code path."""
    tok = getattr(model, "repro_tokenizer", None)
    if spec.get("tokenizer") == "pretrained":
        if tok is None:
            raise RuntimeError("spec says tokenizer 'pretrained' but the model carries no tokenizer")
        enc = tok(texts, return_tensors="pt", padding=True, truncation=True, max_length=1024)
        return enc["input_ids"], enc["attention_mask"], "pretrained"
    ids = [word_encode(t, model.config.vocab_size) for t in texts]
    width = max(len(i) for i in ids)
    pad = model.config.pad_token_id
    input_ids = torch.tensor([i + [pad] * (width - len(i)) for i in ids])
    return input_ids, (input_ids != pad).long(), "word-hash-stand-in"


@torch.inference_mode()
def summarise(model, spec: dict, texts: list[str]) -> list[dict]:
    """BART-large-CNN summarisation through ``.generate()`` with the spec's length rule (generation_lengths).

    Returns ``{"summary", "new_tokens", "input_tokens", "tokenizer"}`` per text (new_tokens excludes the
    decoder's start token).
    """
    input_ids, mask, used = encode_texts(model, spec, texts)
    d = _device_of(model)
    lengths = {k: v for k, v in generation_lengths(spec).items() if k != "rule"}
    out = model.generate(input_ids=input_ids.to(d), attention_mask=mask.to(d),
                         num_beams=int(spec["num_beams"]), early_stopping=True, **lengths).cpu()
    pad = model.config.pad_token_id
    results = []
    for o, i in zip(out[:, 1:], mask.sum(-1)):  # drop decoder_start_token_id
        keep = (o != pad).nonzero()
        o = o[: int(keep[-1]) + 1] if len(keep) else o[:0]  # trailing padding only (a shorter row in a batch)
        tok = getattr(model, "repro_tokenizer", None)
        text = tok.decode(o, skip_special_tokens=True) if used == "pretrained" else word_decode(o)
        results.append({"summary": text, "new_tokens": int(o.numel()), "input_tokens": int(i), "tokenizer": used})
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
