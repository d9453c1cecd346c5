"""Command line shared by the mpifuse analysis scripts: the study's config section (JSON, or
@file holding JSON) plus the paths each script names, all required."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def load_config(value: str) -> dict:
    """The --config value: JSON text, or @path to a JSON file."""
    return json.loads(Path(value[1:]).read_text() if value.startswith("@") else value)


def parse(doc: str, *paths: str) -> tuple[argparse.Namespace, dict]:
    """Parse --config and one required --<name> per entry of `paths`; returns (args, config)."""
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--config", required=True, help="the mpifuse config section as JSON (or @file)")
    for name in paths:
        ap.add_argument(f"--{name}", required=True)
    a = ap.parse_args()
    return a, load_config(a.config)
