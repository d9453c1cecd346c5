"""The report collects every study's claims, shows disabled studies as not run,
and keeps published and reproduced values in separate columns."""

from __future__ import annotations

import re
from html import escape

import pandas as pd


def test_report_collects_claims_and_marks_missing_studies(snake, workspace):
    overlay = workspace / "overlay.yaml"
    overlay.write_text("mpifuse: {enabled: false}\nmemfs: {enabled: false}\n")
    snake("--profile", "profiles/local", "--configfile", "config/local.yaml", str(overlay))
    html = (workspace / "paper/index.html").read_text()
    combined = pd.read_csv(workspace / "paper/claims.csv", dtype=str, keep_default_na=False)
    for study in ("tco", "cloudcost"):
        own = pd.read_csv(workspace / f"results/{study}/claims.csv", dtype=str, keep_default_na=False)
        assert len(combined[combined.study == study]) == len(own)
        # every claim's published and reproduced values appear in the HTML as written in the CSV
        for r in own.itertuples():
            assert f"<td>{escape(r.published)}</td>" in html and f"<td>{escape(r.reproduced)}</td>" in html
    for study in ("mpifuse", "memfs"):
        row = combined[combined.study == study]
        assert len(row) == 1 and row.verdict.iloc[0] == "not run"
    assert len(re.findall(r'<td class="ok">reproduced</td>', html)) >= 2 * 13
    assert "Not run (disabled in the configuration)" in html
    assert html.count("data:image/png;base64,") == 2  # Figure 2 and Figure 7, embedded
    assert "measured in this run" in html and "not run" in html
    assert (workspace / "paper/report.pdf").stat().st_size > 10_000
