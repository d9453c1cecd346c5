"""Helpers of the storage study's tests: its config section as the workflow sees it."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml
from repro import config as rc

REPO = Path(__file__).resolve().parents[4]


def section(local: bool = True, **overrides) -> dict:
    """config/config.yaml's storage section (merged with config/local.yaml's when `local`), defaults
    filled in by the study's schema, then `overrides` merged recursively."""
    cfg = yaml.safe_load((REPO / "config/config.yaml").read_text())["storage"]
    if local:
        cfg = rc.deep_merge(cfg, yaml.safe_load((REPO / "config/local.yaml").read_text())["storage"])
    cfg = rc.deep_merge(cfg, overrides)
    schema = {"type": "object", "properties": {"storage": rc.study_schema("storage")}}
    return copy.deepcopy(rc.validate({"storage": cfg}, schema=schema)["storage"])
