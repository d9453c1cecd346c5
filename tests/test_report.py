"""The report collects every study's claims, shows disabled studies as not run,
and keeps published and reproduced values in separate columns."""

from __future__ import annotations

import json
import re
from html import escape

import pandas as pd
from repro.report import fmt_value
from repro.testing import only_studies


def test_report_collects_claims_and_marks_missing_studies(snake, workspace):
    overlay = workspace / "overlay.yaml"
    overlay.write_text(only_studies("tco", "cloudcost"))
    snake("--profile", "profiles/local", "--configfile", "config/local.yaml", str(overlay))
    front = (workspace / "paper/index.html").read_text()
    combined = pd.read_csv(workspace / "paper/claims.csv", dtype=str, keep_default_na=False)
    pages = {}
    for study in ("tco", "cloudcost"):
        own = pd.read_csv(workspace / f"results/{study}/claims.csv", dtype=str, keep_default_na=False)
        assert len(combined[combined.study == study]) == len(own)
        assert combined[combined.study == study].reproduced.tolist() == own.reproduced.tolist()  # full precision
        pages[study] = page = (workspace / f"paper/{study}.html").read_text()
        # every claim's published and reproduced values appear on the study's page, rounded for reading
        for r in own.itertuples():
            for v in (r.published, r.reproduced):
                shown = escape(fmt_value(v, r.unit))
                assert f'<td class="num">{shown}</td>' in page or f"<td>{shown}</td>" in page, (r.claim_id, shown)
        assert f'href="{study}.html"' in front  # the front page links the study's page
    from repro import config as rc

    off = [s for s in rc.study_names() if s not in ("tco", "cloudcost", "smoke")]
    assert {"mpifuse", "memfs"} <= set(off)
    for study in off:  # every switched-off study with a report entry shows as not run
        row = combined[combined.study == study]
        assert len(row) == 1 and row.verdict.iloc[0] == "not run"
        assert "Not run (disabled in the configuration)" in (workspace / f"paper/{study}.html").read_text()
    both = pages["tco"] + pages["cloudcost"]
    assert len(re.findall(r'<td class="ok">reproduced</td>', both)) >= 13 + 3
    # Figure 2 and Figure 7, copied beside the pages and linked (the render check saw them load)
    assert re.findall(r'<img alt="[^"]*" src="(figures/[^"]+)"', both) == ["figures/tco/figure2.png",
                                                                           "figures/cloudcost/figure7.png"]
    for fig in ("tco/figure2.png", "cloudcost/figure7.png"):
        result = workspace / "results" / fig.replace("/", "/figures/")
        assert (workspace / "paper/figures" / fig).read_bytes() == result.read_bytes()
    assert "measured in this run" in front and "not run" in front
    check = json.loads((workspace / "paper/render-check.json").read_text())
    assert check["ok"] and sum(p["images"] for p in check["pages"]) == 2
    # the rehearsal page is there, linked, and says no rehearsal ran (the workspace has no results/)
    assert '<a href="rehearsal.html">' in front
    assert "No rehearsal was run here" in (workspace / "paper/rehearsal.html").read_text()
    pages = {"index.html", "rehearsal.html", "selfcheck.html"} | {f"{s}.html" for s in rc.study_names() if s != "smoke"}
    assert {p["page"] for p in check["pages"]} == pages
    assert all((workspace / "paper/screenshots" / p["page"].replace(".html", ".png")).exists() for p in check["pages"])
    assert (workspace / "paper/report.pdf").stat().st_size > 10_000


def test_report_from_what_exists_after_a_failed_benchmark_job(snake, workspace, tmp_path):
    """The path `./repro run` takes when jobs failed: the report is still built from what exists,
    the failed configuration is shown as failed (never as a number), nothing is re-run."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the scratch directory should be\n")
    overlay = workspace / "overlay.yaml"
    overlay.write_text(
        only_studies("tco", "cloudcost", "mpifuse")
        + "mpifuse:\n"
        "  nodes: [1]\n  sizes: [1KB]\n  sources: [scratch]\n  repeats: 1\n  variants: [native, osr]\n"
        "  figure4: {nodes: 1, size: 1KB, source: scratch}\n"
        f"  scratch: {{path: {blocker}/scratch}}\n"
        f"  local_dir: {tmp_path}/local\n  mount_dir: {tmp_path}/mnt\n")
    args = ("--profile", "profiles/local", "--configfile", "config/local.yaml", str(overlay))
    first = snake(*args, "--keep-going", timeout=500, check=False)
    assert first.returncode != 0
    assert not (workspace / "paper/index.html").exists()
    # the generator's error ended every rank at once (no rank left waiting for its set-up timeout)
    log = (workspace / "results/mpifuse/log/read_scaling/source~scratch/nodes~1/size~1KB/rep~0.log").read_text()
    assert "rank 0: FATAL: unexpected error NotADirectoryError" in log and "took more than" not in log
    rep = snake("report", *args, "--config", "allow_incomplete=True", timeout=500)
    assert "mpifuse_run" not in re.sub(r"^(?!localrule|rule).*$", "", rep.stdout + rep.stderr, flags=re.M)
    combined = pd.read_csv(workspace / "paper/claims.csv", dtype=str, keep_default_na=False)
    mf = combined[combined.study == "mpifuse"]
    assert len(mf) >= 1 and set(mf.verdict) == {"failed"}, mf[["claim_id", "verdict"]]
    assert not mf.reproduced.str.match(r"^0(\.0+)?$").any()  # a failure never reads as a zero
    assert mf.note.str.contains("failed, so nothing to evaluate").all()
    assert mf.note.str.contains("2 run\\(s\\) on scratch failed").any()
    html = (workspace / "paper/mpifuse.html").read_text()
    assert "<b>Runs:</b> failed: 2" in html  # both use cases of the one configuration
    # each failed use case on its own line of the failed runs, with its kind and its message
    failed = html[html.index('<h2 id="failed">'):]
    assert len(re.findall(r'<td class="(?:bad|info)">(?:crash|lost_node|timeout|overload|error)<br>', failed)) == 2
    assert failed.count("record: <code>results/mpifuse/failed/") == 2
    assert "Failed runs by kind:" in (workspace / "paper/index.html").read_text()
    # the cost models are untouched by the failed benchmark; cloudcost's high_performance tier is never cheaper
    # within 36 months with the assumed prices (the model's result, issue 12): "not reproduced", never failed
    # tco: the inputs taken from the paper are informative rows (issue 28), every judged claim reproduced
    assert set(combined[combined.study == "tco"].verdict) == {"reproduced", "informative"}
    assert set(combined[combined.study == "cloudcost"].verdict) <= {"reproduced", "not reproduced", "informative"}


def test_front_page_names_each_stand_in_once_and_says_why_a_claim_missed():
    """Issue 23's newcomer findings: memfs listed one emulated link four times (claims join several
    kinds in one string), and claims without a note had an empty 'why' on the front page."""
    from types import SimpleNamespace

    from repro import report

    kinds = {"stand-in:ipoib link emulated by netns+tc HTB (10000 Mbit/s)",
             "stand-in: ipoib link emulated by netns+tc HTB (10000 Mbit/s); "
             "1gbe link emulated by netns+tc HTB (1000 Mbit/s)",
             "stand-in:1gbe link emulated by netns+tc HTB (1000 Mbit/s),stand-in:network-namespaces"}
    assert report.standin_names(kinds) == ["1gbe link emulated by netns+tc HTB (1000 Mbit/s)",
                                           "ipoib link emulated by netns+tc HTB (10000 Mbit/s)",
                                           "network-namespaces"]
    r = SimpleNamespace(note="", published="104.10", reproduced="80.2", unit="req/s", tolerance="within 10 %",
                        system_kind="real")
    assert report.why_text(r) == "expected 104.10 req/s, measured 80.2 req/s (tolerance: within 10 %)"
    r.note, r.system_kind = "server bound", "stand-in:tfserving"
    assert report.why_text(r) == "stand-in (stand-in:tfserving). server bound"
