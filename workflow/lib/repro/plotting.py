"""One plotting theme and one way to save a figure, for every study.

``pyplot()`` (or ``theme()`` where a study imports matplotlib itself) sets the theme: seaborn's
white grid, fonts sized to stay readable when a figure is shown at the report's page width,
150 dpi. Published values are drawn with ``PAPER`` (black, hollow markers, dotted) so that a
reader tells the paper's numbers from ours at a glance; a variant of our own (an improvement
beyond the paper) is labelled through ``variant_label(..., ours=True)``.
"""

from __future__ import annotations

from pathlib import Path

DPI = 150
RC = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "legend.title_fontsize": 9,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "figure.titlesize": 12,
    "savefig.dpi": DPI,
}
# the published values, in the same axes as ours
PAPER = {"color": "black", "marker": "o", "markerfacecolor": "none", "linestyle": ":", "linewidth": 1.2}
PAPER_LABEL = "paper (published)"
OURS = " [ours, beyond the paper]"


def variant_label(name: str, ours: bool = False) -> str:
    """A legend entry: a paper-faithful variant as named; one of our own marked so."""
    return f"{name}{OURS}" if ours else name


def save(fig, path: str | Path, dpi: int = DPI) -> None:
    """Write a figure as PNG, creating its directory."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)


def theme() -> None:
    """The figures' theme (seaborn whitegrid, readable fonts)."""
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="paper", rc=RC)


def pyplot():
    """matplotlib's pyplot on the Agg backend (figures are files, never windows) with the theme
    set; returns (plt, sns)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    theme()
    return plt, sns
