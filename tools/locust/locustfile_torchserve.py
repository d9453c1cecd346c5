"""TorchServe's inference API: POST /predictions/<model> with the raw input (image / WAV / text).

Each user fires its next request when the previous one completes (no wait time), as the paper's
multi-stream test; one user is its single-stream test. Settings: see common.py.
"""

from common import AUDIO_SAMPLES, BAD_EVERY, IMAGE_SIZE, TEXT_WORDS, check_answer, check_kind, describe, loads, \
    payloads, require_model, should_be_bad
from locust import FastHttpUser, constant, task

import final_csv  # noqa: F401  (the CSVs get the final numbers at quit)

MODEL = require_model()
BODY = {"resnet50": lambda: payloads.png(IMAGE_SIZE), "bart": lambda: payloads.text(TEXT_WORDS).encode()}.get(
    MODEL, lambda: payloads.wav(AUDIO_SAMPLES))()
BAD = b"this is not an image or a WAV file" if MODEL != "bart" else b""


class TorchServeUser(FastHttpUser):
    wait_time = constant(0)
    n = [0]

    @task
    def predict(self):
        bad = BAD_EVERY and should_be_bad(self.n)
        with self.client.post(f"/predictions/{MODEL}", data=BAD if bad else BODY, name=MODEL,
                              headers={"Content-Type": "application/octet-stream"}, catch_response=True) as r:
            if r.status_code != 200:
                r.failure(describe(r))
                return
            answer = loads(r.content)
            problem = check_kind(r.headers.get("X-Repro-System-Kind", "real"))
            if not problem and MODEL == "bart":
                problem = None if isinstance(answer.get("summary"), str) else "no summary string"
            elif not problem:
                problem = check_answer(MODEL, answer["logits"]) if MODEL == "resnet50" else (
                    None if answer.get("vocab") == 32 and "transcript" in answer else "no CTC answer")
            if problem:
                r.failure(problem)
