"""Helpers of the inference tests (imported by plain name: test folders have no __init__.py)."""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

SYSTEM = Path(__file__).resolve().parents[1]
ROOT = SYSTEM.parents[1]
for p in (str(SYSTEM / "src"), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)

# small enough for a busy 2-core machine; the architectures are the paper's
TINY = {"image_size": 32, "audio_samples": 8000, "max_new_tokens": 2, "num_beams": 2, "text_words": 20}


def post(url: str, body: bytes, headers: dict | None = None) -> tuple[int, dict, dict]:
    """(status, JSON answer, headers); HTTP errors are returned, not raised."""
    req = urllib.request.Request(url, data=body, headers=headers or {}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read()), dict(r.headers)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}"), dict(err.headers)


def group_gone(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False
