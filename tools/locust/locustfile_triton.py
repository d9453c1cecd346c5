"""Triton's KServe v2 API: POST /v2/models/<model>/infer with INPUT__0 (binary tensor extension by default).

The Python-backend stand-in answers a SYSTEM_KIND output beside OUTPUT__0; the real backends do not.
Settings: see common.py.
"""

import os

from common import BAD_EVERY, check_answer, check_kind, describe, loads, payloads, require_model, should_be_bad, \
    tensor
from locust import FastHttpUser, constant, task

import final_csv  # noqa: F401  (the CSVs get the final numbers at quit)

MODEL = require_model(("resnet50", "wav2vec2", "wav2vec2_truncated"))
BINARY = os.environ.get("REPRO_TRITON_BINARY", "1") != "0"
BODY, HEADERS = payloads.triton_request(*tensor(), binary=BINARY)
BAD_BODY, BAD_HEADERS = payloads.triton_request(*tensor(bad=True), binary=BINARY)


class TritonUser(FastHttpUser):
    wait_time = constant(0)
    n = [0]

    @task
    def infer(self):
        bad = BAD_EVERY and should_be_bad(self.n)
        with self.client.post(f"/v2/models/{MODEL}/infer", data=BAD_BODY if bad else BODY, name=MODEL,
                              headers=BAD_HEADERS if bad else HEADERS, catch_response=True) as r:
            if r.status_code != 200:
                r.failure(describe(r))
                return
            outs = {o["name"]: o for o in loads(r.content)["outputs"]}
            kind = outs["SYSTEM_KIND"]["data"][0] if "SYSTEM_KIND" in outs else "real"
            problem = check_kind(kind) or check_answer(MODEL, nest_output(outs["OUTPUT__0"]))
            if problem:
                r.failure(problem)


def nest_output(out):
    shape, data = out["shape"], out["data"]
    return [data[i:i + shape[-1]] for i in range(0, len(data), shape[-1])] if len(shape) == 3 else data
