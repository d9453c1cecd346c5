"""Request bodies for the three inference protocols (stdlib only: the Locust venv has no numpy).

Deterministic synthetic inputs of the paper's kinds: an RGB image (PNG), 16 kHz speech-like audio
(WAV for TorchServe, raw FP32 samples for tensor APIs) and an English news-like text for BART.
TorchServe decodes images/audio itself (its handlers do the preprocessing); Triton and TF Serving
take tensors, so for them the client sends the already-preprocessed tensor, built once per user.
"""

from __future__ import annotations

import array
import io
import json
import math
import random
import struct
import wave
import zlib

SAMPLE_RATE = 16000
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
WORDS = ("the council said on tuesday that the new bridge over the river would open next spring after "
         "years of delays and rising costs officials expect thousands of commuters to use it every day").split()


def png(size: int, seed: int = 0) -> bytes:
    """A size x size RGB PNG (smooth gradients plus noise, so it is not trivially compressible)."""
    rng = random.Random(seed)
    rows = bytearray()
    for y in range(size):
        rows.append(0)  # filter: none
        for x in range(size):
            rows += bytes(((x * 255 // max(size - 1, 1) + rng.randrange(32)) & 255,
                           (y * 255 // max(size - 1, 1) + rng.randrange(32)) & 255, rng.randrange(256)))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    ihdr = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    idat = zlib.compress(bytes(rows), 6)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def audio_samples(n: int, seed: int = 0) -> list[float]:
    """n samples of a voiced-speech-like signal (two formants, amplitude envelope, noise) in [-1, 1]."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        t = i / SAMPLE_RATE
        env = 0.5 + 0.5 * math.sin(2 * math.pi * 3 * t)
        out.append(0.4 * env * (math.sin(2 * math.pi * 220 * t) + 0.5 * math.sin(2 * math.pi * 880 * t))
                   + 0.02 * rng.uniform(-1, 1))
    return out


def wav(n: int, seed: int = 0) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(array.array("h", (max(-32768, min(32767, int(s * 32767))) for s in audio_samples(n, seed)))
                      .tobytes())
    return buf.getvalue()


def text(words: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def image_tensor(size: int, seed: int = 0) -> tuple[list[int], list[float]]:
    """[1, 3, size, size] ImageNet-normalised pixels (what an image decodes and normalises to), flat."""
    rng = random.Random(seed)
    flat = [(rng.random() - MEAN[c]) / STD[c] for c in range(3) for _ in range(size * size)]
    return [1, 3, size, size], flat


def nest(shape: list[int], flat: list[float]) -> list:
    """A flat list as nested lists of ``shape`` (TF Serving's JSON)."""
    if len(shape) == 1:
        return list(flat)
    step = len(flat) // shape[0]
    return [nest(shape[1:], flat[i * step:(i + 1) * step]) for i in range(shape[0])]


def triton_request(shape: list[int], flat: list[float], binary: bool = True) -> tuple[bytes, dict]:
    """A KServe v2 infer request for INPUT__0 (FP32); every output comes back as JSON.

    No ``outputs`` list: the server returns all the model's outputs, so the Python-backend stand-in's
    SYSTEM_KIND arrives beside OUTPUT__0 while the same request suits the real backends.

    binary=True uses Triton's binary tensor extension (JSON header + raw little-endian floats), what
    Triton's own clients send; False puts the numbers in the JSON ``data`` field.
    """
    inp = {"name": "INPUT__0", "shape": shape, "datatype": "FP32"}
    req = {"inputs": [inp]}
    if not binary:
        inp["data"] = flat
        return json.dumps(req).encode(), {"Content-Type": "application/json"}
    raw = array.array("f", flat)
    if raw.itemsize != 4 or struct.pack("=f", 1.0) != struct.pack("<f", 1.0):
        raise RuntimeError("this platform's float is not little-endian FP32")
    inp["parameters"] = {"binary_data_size": len(raw) * 4}
    head = json.dumps(req).encode()
    return head + raw.tobytes(), {"Content-Type": "application/octet-stream",
                                  "Inference-Header-Content-Length": str(len(head))}


def tfserving_request(shape: list[int], flat: list[float], form: str = "instances") -> bytes:
    """TF Serving REST predict body: row form {"instances": [...]} or columnar {"inputs": [...]}."""
    if form not in ("instances", "inputs"):
        raise ValueError(f"form must be instances or inputs, not {form!r}")
    return json.dumps({form: nest(shape, flat)}).encode()
