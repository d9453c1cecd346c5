"""TorchServe's inference API: POST /predictions/<model> with the raw input (image / WAV / text).

Each user fires its next request when the previous one completes (no wait time), as the paper's
multi-stream test; one user is its single-stream test. Settings: see common.py.
"""

import os

import final_csv  # noqa: F401  (the CSVs get the final numbers at quit)
from common import AUDIO_SAMPLES, IMAGE_SIZE, TEXT_WORDS, check_answer, check_kind, loads, make_user, payloads, \
    require_model

MODEL = require_model()
BODY = {"resnet50": lambda: payloads.png(IMAGE_SIZE), "bart": lambda: payloads.text(TEXT_WORDS).encode()}.get(
    MODEL, lambda: payloads.wav(AUDIO_SAMPLES))()
BAD = b"this is not an image or a WAV file" if MODEL != "bart" else b""
HEADERS = {"Content-Type": "application/octet-stream"}


def check(r) -> str | None:
    answer = loads(r.content)
    problem = check_kind(r.headers.get("X-Repro-System-Kind", "real"))
    if problem:
        return problem
    if MODEL == "bart":
        if not isinstance(answer.get("summary"), str):
            return "no summary string"
        want = os.environ.get("REPRO_BART_NEW_TOKENS")  # the stated fixed length (random weights)
        if want and answer.get("new_tokens") != int(want):
            return f"generated {answer.get('new_tokens')} tokens, the stated length is {want}"
        return None
    if MODEL == "resnet50":
        return check_answer(MODEL, answer["logits"])
    return None if answer.get("vocab") == 32 and "transcript" in answer else "no CTC answer"


TorchServeUser = make_user("TorchServeUser", f"/predictions/{MODEL}", (BODY, HEADERS), (BAD, HEADERS), check,
                           __name__)
