"""TF Serving's REST API: POST /v1/models/<model>:predict with {"instances": ...} (or {"inputs": ...}).

The local stand-in marks every answer with the header X-Repro-System-Kind; TF Serving itself does not.
Settings: see common.py.
"""

import os

from common import BAD_EVERY, check_answer, check_kind, describe, loads, payloads, require_model, should_be_bad, \
    tensor
from locust import FastHttpUser, constant, task

import final_csv  # noqa: F401  (the CSVs get the final numbers at quit)

MODEL = require_model(("resnet50", "wav2vec2", "wav2vec2_truncated"))
FORM = os.environ.get("REPRO_TF_FORM", "instances")
BODY = payloads.tfserving_request(*tensor(), form=FORM)
BAD_BODY = payloads.tfserving_request(*tensor(bad=True), form=FORM)
KEY = "predictions" if FORM == "instances" else "outputs"


class TFServingUser(FastHttpUser):
    wait_time = constant(0)
    n = [0]

    @task
    def predict(self):
        bad = BAD_EVERY and should_be_bad(self.n)
        with self.client.post(f"/v1/models/{MODEL}:predict", data=BAD_BODY if bad else BODY, name=MODEL,
                              headers={"Content-Type": "application/json"}, catch_response=True) as r:
            if r.status_code != 200:
                r.failure(describe(r))
                return
            problem = check_kind(r.headers.get("X-Repro-System-Kind", "real")) or check_answer(
                MODEL, loads(r.content)[KEY])
            if problem:
                r.failure(problem)
