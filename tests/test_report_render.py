"""The report as a reader sees it: numbers rounded to what they support, wide tables split so
no column is cut, and a render check (headless Chromium, pdftoppm) that passes on a sound page
and fails on a broken image, an over-wide table or a study missing from the front page."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from repro import report, report_check

needs_browser = pytest.mark.skipif(shutil.which("chromium") is None or shutil.which("pdftoppm") is None,
                                   reason="chromium / poppler-utils not installed (./repro setup installs them)")


@pytest.mark.parametrize("value, unit, shown", [
    (4.216040184333333, "s", "4.22"),
    ("4.216040184333333", "", "4.22"),
    (0.000123456, "", "0.000123"),
    (123.456, "MiB/s", "123"),
    (1234567.891, "", "1.23e+06"),
    (200000, "EUR", "200,000.00"),
    (1.4892, "EUR", "1.49"),
    (221175, "ops/s", "221,175"),
    (10, "", "10"),
    ("> 0", "", "> 0"),
    ("488–510", "ops/s", "488–510"),
    (float("nan"), "", ""),
    ("1_0", "", "1_0"),  # a wildcard, not the number 10
    ("not run", "", "not run"),
])
def test_numbers_are_rounded_to_what_they_support(value, unit, shown):
    assert report.fmt_value(value, unit) == shown


def test_wide_tables_are_split_and_keep_their_label_columns():
    df = pd.DataFrame({"server": ["a", "b"], "model": ["m", "n"],
                       **{f"users_{u}": [u * 1.123456, u * 2.5] for u in range(1, 15)}})
    parts = report.split_wide(df, max_cols=8)
    assert len(parts) == 3 and all(len(p.columns) <= 8 for p in parts)
    assert all(list(p.columns[:2]) == ["server", "model"] for p in parts)
    assert sorted({c for p in parts for c in p.columns}) == sorted(df.columns)  # nothing lost
    html = report.table_html(df, None, max_cols=8)
    assert html.count("<table>") == 3 and "part 3 of 3" in html
    assert "1.12" in html and "1.123456" not in html


def _page(folder: Path, name: str, body: str) -> None:
    (folder / name).write_text(f"<!doctype html><html><head><meta charset='utf-8'><style>{report.CSS}</style>"
                               f"</head><body>{body}</body></html>")


def _png(path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([1, 2, 3], [1, 4, 9])
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def _sound_report(folder: Path) -> None:
    _png(folder / "figures/s1/fig.png")
    wide = pd.DataFrame({"k": ["x"], **{f"column_{i}": [i * 1.5] for i in range(30)}})
    _page(folder, "index.html", '<a href="s1.html">s1</a> <a href="s2.html">s2</a>')
    _page(folder, "s1.html", '<figure><img src="figures/s1/fig.png" alt="f"></figure>' + report.table_html(wide, None))
    _page(folder, "s2.html",
          "<p>" + "a-long-unbroken-token" * 40 + "</p>" + report.table_html(wide.T.reset_index(), None))


@needs_browser
def test_render_check_passes_a_sound_report_and_keeps_screenshots(tmp_path):
    _sound_report(tmp_path)
    rc = report_check.main(["--dir", str(tmp_path), "--studies", "s1 s2", "--screenshots", str(tmp_path / "shots"),
                            "--out", str(tmp_path / "check.json")])
    res = json.loads((tmp_path / "check.json").read_text())
    assert rc == 0, res["problems"]
    assert {p["page"] for p in res["pages"]} == {"index.html", "s1.html", "s2.html"}
    assert sum(p["images"] for p in res["pages"]) == 1 and sum(p["tables"] for p in res["pages"]) >= 5
    for page in ("index", "s1", "s2"):
        assert (tmp_path / "shots" / f"{page}.png").stat().st_size > 1000


@needs_browser
def test_render_check_fails_on_a_broken_image_a_wide_table_and_a_missing_study(tmp_path):
    _sound_report(tmp_path)
    (tmp_path / "figures/s1/fig.png").write_bytes(b"not a png")  # a figure that does not decode
    cells = "".join(f"<td style='white-space:nowrap'>column-number-{i}</td>" for i in range(40))
    _page(tmp_path, "s2.html", f"<table><tr>{cells}</tr></table>")
    rc = report_check.main(["--dir", str(tmp_path), "--studies", "s1 s2 s3", "--out", str(tmp_path / "c.json")])
    problems = json.loads((tmp_path / "c.json").read_text())["problems"]
    assert rc == 1
    assert any(p.startswith("s1.html: image did not load: figures/s1/fig.png") for p in problems), problems
    assert any(p.startswith("s2.html: table 0") and "overflows the page" in p for p in problems), problems
    assert any("does not link the study 's3'" in p for p in problems), problems
    assert len(problems) == 3


@needs_browser
def test_pdf_check_sees_a_table_cut_off_at_the_page_edge(tmp_path):
    weasyprint = pytest.importorskip("weasyprint")
    wide = pd.DataFrame({"k": ["x"], **{f"column_{i}": [i * 1.5] for i in range(30)}})
    good, bad = tmp_path / "good.html", tmp_path / "bad.html"
    _page(tmp_path, "good.html", report.table_html(wide, None))
    cells = "".join(f"<td style='white-space:nowrap'>column-number-{i}</td>" for i in range(30))
    _page(tmp_path, "bad.html", f"<p>first page</p><table><tr>{cells}</tr></table>")
    for h in (good, bad):
        weasyprint.HTML(filename=str(h)).write_pdf(str(h.with_suffix(".pdf")))
    assert all("pdf_page" not in p for p in report_check.check_pdf(good.with_suffix(".pdf")))
    cut = [p for p in report_check.check_pdf(bad.with_suffix(".pdf")) if "pdf_page" in p]
    assert [p["pdf_page"] for p in cut] == [1]


def test_a_long_data_table_shows_its_head_and_links_the_csv(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"config": [f"c{i}" for i in range(100)], "value": [i / 3 for i in range(100)]}).to_csv(
        "long.csv", index=False)
    pd.DataFrame({"config": ["a", "b"], "value": [1.23456, 2.0]}).to_csv("short.csv", index=False)
    claims = tmp_path / "claims.csv"
    claims.write_text("study,claim_id,claim,paper_ref,target,output,kind,published,reproduced,unit,tolerance,verdict,"
                      "system_kind,note\ns,c1,x,ref,t,short.csv,shape,1,1.23456,s,,reproduced,real,\n")
    st = {"title": "S", "paper": "P", "enabled": True, "claims": str(claims), "measurements": [], "figures": [],
          "tables": [{"path": "long.csv", "caption": "Long"}, {"path": "short.csv", "caption": "Short"}],
          "benchmarks": []}

    class Args:
        title, scale, configfiles, outdir = "T", "local", "config/local.yaml", str(tmp_path / "paper")

    ctx = report.Context(Args)
    study = report.Study("s", st)
    html = "\n".join(report.study_page(ctx, study, [study]))
    assert "the first 15 of 100 rows" in html and "<td>c14</td>" in html and "<td>c15</td>" not in html
    assert "<td>b</td>" in html  # the short table whole, its claim under it
    assert html.index("Claims drawn from this table") > html.index("<h2>Short</h2>")
