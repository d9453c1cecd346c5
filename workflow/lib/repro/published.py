"""The papers' published values: each study's ``published.csv`` (``source`` names the paper's table,
figure or sentence), read the one way every study reads them -- as text, never a missing cell turned
into NaN, with ``value_num`` the value as a number where it is one (a shape such as "plateau" stays
text) -- and looked up by column values. Published numbers only ever fill their own column."""

from __future__ import annotations

import pandas as pd


def load(*paths) -> pd.DataFrame:
    """The published values of one or more CSV files (columns as in the files, all text) plus
    ``value_num``; files with other columns are concatenated with empty cells where they differ."""
    frames = [pd.read_csv(p, dtype=str, keep_default_na=False) for p in paths]
    pub = pd.concat(frames, ignore_index=True).fillna("") if len(frames) > 1 else frames[0]
    pub["value_num"] = pd.to_numeric(pub["value"], errors="coerce")
    return pub


def lookup(pub: pd.DataFrame, **match: str) -> pd.Series | None:
    """The first row whose columns equal ``match`` (compared as text), or None."""
    sel = pd.Series(True, index=pub.index)
    for col, want in match.items():
        sel &= pub[col] == str(want)
    rows = pub[sel]
    return rows.iloc[0] if len(rows) else None


def number(pub: pd.DataFrame, **match: str) -> float | None:
    """The published value of the first matching row as a number, or None (no row, or not a number)."""
    row = lookup(pub, **match)
    if row is None or pd.isna(row["value_num"]):
        return None
    return float(row["value_num"])
