"""The project's Python path: the folders named once in ``workflow/pythonpath.txt``, put on
``PYTHONPATH`` -- by ``./repro`` (every command), by the engine for its jobs (workflow/rules/common.smk:
local jobs, Slurm jobs, which get the submitting process's environment) and by
``workflow/scripts/in-image.sh`` inside images. Code never edits ``sys.path``; this module is for
what starts Python processes of another checkout (a test's scratch copy) or with a clean
environment. Standard library only."""

from __future__ import annotations

import os
from pathlib import Path

LIST = "workflow/pythonpath.txt"
ROOT = Path(__file__).resolve().parents[3]


def folders(root: str | os.PathLike = ROOT) -> list[str]:
    """The absolute folders of a checkout's Python path, in order (the first word of each line of
    workflow/pythonpath.txt that is not a comment)."""
    root = Path(root).resolve()
    out = []
    for line in (root / LIST).read_text().splitlines():
        words = line.split()
        if words and not words[0].startswith("#"):
            out.append(os.path.normpath(root / words[0]))
    return out


def value(root: str | os.PathLike = ROOT, current: str | None = None) -> str:
    """A PYTHONPATH with ``root``'s folders first, then the entries of ``current`` (default: this
    process's PYTHONPATH) that are not among them."""
    mine = folders(root)
    rest = os.environ.get("PYTHONPATH", "") if current is None else current
    return os.pathsep.join(mine + [p for p in rest.split(os.pathsep) if p and p not in mine])
