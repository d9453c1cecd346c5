"""Shared look of the mpifuse figures (one colour and marker per use case)."""

from __future__ import annotations


import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import seaborn as sns

from repro import plotting

from .layout import VARIANT_ORDER, VARIANTS

PALETTE = dict(zip(VARIANT_ORDER, sns.color_palette("tab10", len(VARIANT_ORDER))))
MARKERS = dict(zip(VARIANT_ORDER, ["o", "s", "^", "v", "D", "P", "h", "X"]))


SOURCE_TITLE = {"home": "Home", "scratch": "Scratch"}


def label(variant: str, source: str | None = None) -> str:
    if variant == "native" and source:
        return f"native ({source})"
    return VARIANTS[variant].label


def setup():
    plotting.theme()  # the one theme of every study
    return plt


def stamp(fig, text: str):
    fig.text(0.005, 0.005, text, fontsize=6, color="0.4", ha="left", va="bottom")


save = plotting.save


def finish(fig, out: str, note: str, rect, table=None) -> None:
    """Stamp the note (what ran, stand-ins), lay the figure out in ``rect``, save it to ``out``; print
    the figure's table, if given."""
    stamp(fig, note)
    fig.tight_layout(rect=rect)
    save(fig, out)
    if table is not None:
        print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
