"""The report's selfcheck page (``paper/selfcheck.html``): the papers' own numbers through every
claim at cluster scale, and each perturbed input's verdict (repro.selfcheck).

It reads ``results/selfcheck.csv`` (``./repro selfcheck`` or ``snakemake selfcheck``) if it exists:
one table, failures first. Without it the page says how to make it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from repro.report import esc, table_html

FILE, LABEL, TITLE = "selfcheck.html", "selfcheck", "The papers reproduce themselves (selfcheck)"
DEFAULT = Path("results/selfcheck.csv")
SHOWN = ["status", "study", "claim", "verdict", "perturbation", "verdict_perturbed", "flipped", "why"]  # 8: fits A4


def load(path: Path = DEFAULT) -> pd.DataFrame | None:
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError):
        return None


def ordered(df: pd.DataFrame) -> pd.DataFrame:
    """Failures first, then each study's claims, then its perturbations (the file's order within)."""
    key = pd.DataFrame({"fail": (df.status != "FAIL").astype(int), "pert": (df.perturbation != "").astype(int),
                        "pos": range(len(df))}, index=df.index)
    return df.loc[key.sort_values(["fail", "pert", "pos"]).index]


def summary_line(path: Path = DEFAULT) -> str:
    """One line for the front page."""
    df = load(path)
    if df is None:
        return "not run (<code>./repro selfcheck</code>)"
    claims, pert = df[(df.perturbation == "") & (df.claim != "-")], df[df.perturbation != ""]
    nfail = int((df.status == "FAIL").sum())
    scales = ", ".join(sorted(set(df.scale) - {""})) or "cluster"
    return (f"{claims.study.nunique()} studies checked, {len(claims)} claims on the papers' own numbers at "
            f"{esc(scales)} scale, {len(pert)} perturbations ({int((pert.flipped == 'yes').sum())} flipped): "
            + ("no failures" if not nfail else f"<b>{nfail} failure(s)</b>"))


def body(path: Path = DEFAULT) -> list[str]:
    """The page's sections (after its title, navigation and provenance)."""
    df = load(path)
    if df is None:
        return [f"<p>No selfcheck here: there is no <code>{esc(path)}</code>. The selfcheck builds each study's "
                "inputs from its <code>published.csv</code> alone, runs the study's own claim builders on them at "
                "cluster scale (every claim must reproduce, or say why the paper contradicts itself), then moves "
                "each published input a verdict depends on past its tolerance (the verdict must flip).</p>",
                "<p><code>./repro selfcheck</code>, then rebuild the report.</p>"]
    shown = ordered(df)[[c for c in SHOWN if c in df.columns]]
    return [f"<p>{summary_line(path)}. Read from <code>{esc(path)}</code> (<code>./repro selfcheck</code>). "
            "A row without a perturbation is a claim on the paper's own numbers; a row with one is that claim "
            "with one published input moved past its tolerance. <i>FAIL</i>: not reproduced without a declared "
            "contradiction, not run without a reason, no perturbation that moves it, or a perturbation that does "
            "not flip it.</p>",
            table_html(shown, "verdict")]
