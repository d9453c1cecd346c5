"""Triton's KServe v2 API: POST /v2/models/<model>/infer with INPUT__0 (binary tensor extension by default).

The Python-backend stand-in answers a SYSTEM_KIND output beside OUTPUT__0; the real backends do not.
Settings: see common.py.
"""

import os

import final_csv  # noqa: F401  (the CSVs get the final numbers at quit)
from common import check_answer, check_kind, loads, make_user, payloads, require_model, tensor

MODEL = require_model(("resnet50", "wav2vec2", "wav2vec2_truncated"))
BINARY = os.environ.get("REPRO_TRITON_BINARY", "1") != "0"
BODY, HEADERS = payloads.triton_request(*tensor(), binary=BINARY)
BAD_BODY, BAD_HEADERS = payloads.triton_request(*tensor(bad=True), binary=BINARY)


def nest_output(out):
    shape, data = out["shape"], out["data"]
    return [data[i:i + shape[-1]] for i in range(0, len(data), shape[-1])] if len(shape) == 3 else data


def check(r) -> str | None:
    outs = {o["name"]: o for o in loads(r.content)["outputs"]}
    kind = outs["SYSTEM_KIND"]["data"][0] if "SYSTEM_KIND" in outs else "real"
    return check_kind(kind) or check_answer(MODEL, nest_output(outs["OUTPUT__0"]))


TritonUser = make_user("TritonUser", f"/v2/models/{MODEL}/infer", (BODY, HEADERS), (BAD_BODY, BAD_HEADERS), check,
                       __name__)
