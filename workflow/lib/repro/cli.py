"""The one command line of every study script: the study's config section as ``--config``
(JSON text, or ``@file`` holding JSON) plus the paths each script names.

    args, cfg = cli.parse(__doc__, "measurements", "out")        # --config, --measurements, --out
    ap = cli.parser(__doc__, "out"); ap.add_argument("--nodes", type=int, required=True)
    args, cfg = cli.finish(ap)                                     # scripts with typed options
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def load_config(value: str) -> dict:
    """The --config value: JSON text, or @path to a JSON file."""
    return json.loads(Path(value[1:]).read_text() if value.startswith("@") else value)


def parser(doc: str, *paths: str, config: bool = True) -> argparse.ArgumentParser:
    """An ArgumentParser with --config (unless config=False) and one required --<name> per path."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if config:
        ap.add_argument("--config", required=True, help="the study's config section as JSON (or @file)")
    for name in paths:
        ap.add_argument(f"--{name}", required=True)
    return ap


def options(ap: argparse.ArgumentParser, **defaults) -> argparse.ArgumentParser:
    """Add one optional --<name> per keyword (underscores become dashes), of its default's type."""
    for name, default in defaults.items():
        ap.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    return ap


def finish(ap: argparse.ArgumentParser, argv=None) -> tuple[argparse.Namespace, dict]:
    """Parse; returns (args, config) -- config is {} for a parser without --config."""
    a = ap.parse_args(argv)
    return a, (load_config(a.config) if getattr(a, "config", None) is not None else {})


def parse(doc: str, *paths: str, config: bool = True, argv=None) -> tuple[argparse.Namespace, dict]:
    """Parse --config and one required --<name> per entry of `paths`; returns (args, config)."""
    return finish(parser(doc, *paths, config=config), argv)
