"""TF Serving's REST API: POST /v1/models/<model>:predict with {"instances": ...} (or {"inputs": ...}).

The local stand-in marks every answer with the header X-Repro-System-Kind; TF Serving itself does not.
Settings: see common.py.
"""

import os

import final_csv  # noqa: F401  (the CSVs get the final numbers at quit)
from common import check_answer, check_kind, loads, make_user, payloads, require_model, tensor

MODEL = require_model(("resnet50", "wav2vec2", "wav2vec2_truncated"))
FORM = os.environ.get("REPRO_TF_FORM", "instances")
BODY = payloads.tfserving_request(*tensor(), form=FORM)
BAD_BODY = payloads.tfserving_request(*tensor(bad=True), form=FORM)
KEY = "predictions" if FORM == "instances" else "outputs"
HEADERS = {"Content-Type": "application/json"}


def check(r) -> str | None:
    return check_kind(r.headers.get("X-Repro-System-Kind", "real")) or check_answer(MODEL, loads(r.content)[KEY])


TFServingUser = make_user("TFServingUser", f"/v1/models/{MODEL}:predict", (BODY, HEADERS), (BAD_BODY, HEADERS), check,
                          __name__)
