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


def pyplot(style: str = "whitegrid", context: str = "paper"):
    """matplotlib's pyplot on the Agg backend (figures are files, never windows) and seaborn with
    the figures' theme set; returns (plt, sns)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style=style, context=context)
    return plt, sns
