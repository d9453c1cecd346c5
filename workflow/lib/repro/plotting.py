"""The one way a study saves a figure (``save``), so every figure is written the same way.

The resolution is a parameter for now: the pure move of the studies into their folders
(issue 8) keeps every figure byte-identical, so memfs keeps its 130 dpi and the others 150;
the report issue (one plotting theme for all studies) settles one value.
"""

from __future__ import annotations

from pathlib import Path

DPI = 150


def save(fig, path: str | Path, dpi: int = DPI) -> None:
    """Write a figure as PNG, creating its directory."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
