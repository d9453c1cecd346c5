"""What the three locustfiles share: settings from the environment, the payload and the answer checks.

Environment (the runner sets them; all optional except REPRO_MODEL):
  REPRO_MODEL          resnet50 | wav2vec2 | wav2vec2_truncated | bart
  REPRO_IMAGE_SIZE     image side sent (TorchServe: PNG side; tensor APIs: the model's input side) [224]
  REPRO_AUDIO_SAMPLES  samples sent [wav2vec2_truncated: 50000, wav2vec2: 80000]
  REPRO_TEXT_WORDS     words of the article sent to BART [400]
  REPRO_BART_NEW_TOKENS  BART: an answer that generated another number of tokens fails (fixed length)
  REPRO_SYSTEM_KIND    expected system kind: an answer that does not identify itself as this stand-in
                       (or identifies as a stand-in when "real" is expected) counts as a failure
  REPRO_BAD_EVERY      N > 0: every Nth request is deliberately wrong-shaped (tests the error path)
  REPRO_TRITON_BINARY  1 (default): Triton's binary tensor extension; 0: JSON data
  REPRO_TF_FORM        instances (default) | inputs
"""

from __future__ import annotations

import json
import os

try:
    from . import payloads  # imported as tools.locust.common
except ImportError:  # loaded by Locust from this directory
    import payloads

MODEL = os.environ.get("REPRO_MODEL", "")
IMAGE_SIZE = int(os.environ.get("REPRO_IMAGE_SIZE", "224"))
AUDIO_SAMPLES = int(os.environ.get("REPRO_AUDIO_SAMPLES", "50000" if MODEL == "wav2vec2_truncated" else "80000"))
TEXT_WORDS = int(os.environ.get("REPRO_TEXT_WORDS", "400"))
EXPECT_KIND = os.environ.get("REPRO_SYSTEM_KIND", "")
BAD_EVERY = int(os.environ.get("REPRO_BAD_EVERY", "0"))
MODELS = ("resnet50", "wav2vec2", "wav2vec2_truncated", "bart")


def require_model(allowed=MODELS) -> str:
    if MODEL not in allowed:
        raise SystemExit(f"REPRO_MODEL must be one of {', '.join(allowed)} for this protocol, not {MODEL!r}")
    return MODEL


def tensor(bad: bool = False) -> tuple[list[int], list[float]]:
    """The model's input tensor; ``bad``: a wrong-shaped one (image side - 1 / 100 samples short of 400)."""
    if MODEL == "resnet50":
        return payloads.image_tensor(IMAGE_SIZE - 1 if bad else IMAGE_SIZE)
    n = 100 if bad else AUDIO_SAMPLES
    return [1, n], payloads.audio_samples(n)


def check_answer(model: str, outputs) -> str | None:
    """None if the model's output has the right shape, else what is wrong."""
    if model == "resnet50":
        flat = outputs if not isinstance(outputs[0], list) else outputs[0]
        return None if len(flat) == 1000 else f"expected 1000 class scores, got {len(flat)}"
    rows = outputs[0] if outputs and isinstance(outputs[0][0], list) else outputs
    if not rows or len(rows[0]) != 32:
        return f"expected [frames, 32] CTC logits, got {len(rows)} x {len(rows[0]) if rows else 0}"
    return None


def check_kind(seen: str) -> str | None:
    want = EXPECT_KIND or "real"
    if seen != want:
        return f"system kind mismatch: the answer says {seen!r}, the run expects {want!r}"
    return None


def describe(r) -> str:
    """A failed answer in one line: the server's status and the start of its body, or why none came."""
    if not r.status_code:
        return f"no answer: {r.error!r}"
    return f"HTTP {r.status_code}: {(r.content or b'')[:200].decode('utf-8', 'replace')}"


def post_and_check(client, path: str, body: bytes, headers: dict, check) -> None:
    """POST as one request named after the model; a non-200 answer or ``check(response)`` naming a problem fails it."""
    with client.post(path, data=body, name=MODEL, headers=headers, catch_response=True) as r:
        if r.status_code != 200:
            r.failure(describe(r))
            return
        problem = check(r)
        if problem:
            r.failure(problem)


def make_user(name: str, path: str, good: tuple[bytes, dict], bad: tuple[bytes, dict], check, module: str):
    """The locustfile's user class: no wait time (the next request when the previous completes), one task
    posting ``good`` (every REPRO_BAD_EVERY-th request ``bad``), each answer checked by ``check``."""
    from locust import FastHttpUser, constant, task

    counter = [0]

    def request(self):
        body, headers = bad if BAD_EVERY and should_be_bad(counter) else good
        post_and_check(self.client, path, body, headers, check)

    return type(name, (FastHttpUser,), {"wait_time": constant(0), "request": task(request), "__module__": module})


def should_be_bad(counter: list[int]) -> bool:
    counter[0] += 1
    return BAD_EVERY > 0 and counter[0] % BAD_EVERY == 0


def loads(body: bytes):
    return json.loads(body)
