#!/usr/bin/env python3
"""The reproduction report: paper/index.html (self-contained) and paper/claims.csv.

Per study: its claims (published beside reproduced, with verdicts), figures,
tables, what ran as a stand-in, and expected vs measured times. Only files the
workflow produced are read; a study that is disabled or has no results is
shown as not run.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import html
import json
import os
from pathlib import Path

import pandas as pd

from repro import claims as claims_mod
from repro import provenance, tidy

VERDICT_CLASS = {
    claims_mod.REPRODUCED: "ok",
    claims_mod.NOT_REPRODUCED: "bad",
    claims_mod.INFO: "info",
    claims_mod.NOT_RUN: "missing",
    claims_mod.FAILED: "bad",
}

CSS = """
body{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
     color:#222;font-size:14px;line-height:1.4}
h1{font-size:1.6em}h2{border-bottom:2px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:12px}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f0f0}
td.ok{background:#d9f2d9}td.bad{background:#f8d0d0}td.info{background:#e6eefa}td.missing{background:#eee;color:#666}
.standin{background:#fff3cd;padding:.5em;border-left:4px solid #e0a800}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #ddd}figcaption{font-size:12px;color:#444}
code{background:#f4f4f4;padding:0 3px}
.muted{color:#666;font-size:12px}
"""


def esc(x) -> str:
    return html.escape("" if x is None else str(x))


def table_html(df: pd.DataFrame, verdict_col: str | None = None) -> str:
    cols = list(df.columns)
    out = ["<table><tr>" + "".join(f"<th>{esc(c)}</th>" for c in cols) + "</tr>"]
    for _, row in df.iterrows():
        cells = []
        for c in cols:
            v = row[c]
            v = "" if (isinstance(v, float) and pd.isna(v)) else v
            cls = f' class="{VERDICT_CLASS.get(str(v), "")}"' if c == verdict_col else ""
            cells.append(f"<td{cls}>{esc(v)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def img_html(path: str, caption: str) -> str:
    p = Path(path)
    if not p.exists():
        return f'<p class="muted">figure not produced: {esc(path)}</p>'
    data = base64.b64encode(p.read_bytes()).decode()
    return (f'<figure><img alt="{esc(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{esc(caption)} <span class=muted>({esc(path)})</span></figcaption></figure>")


def measured_seconds(paths: list[str]) -> float | None:
    total, found = 0.0, False
    for p in paths:
        if os.path.exists(p):
            try:
                df = pd.read_csv(p, sep="\t")
                total += float(df["s"].sum())
                found = True
            except (ValueError, KeyError, pd.errors.ParserError):
                continue
    return total if found else None


def as_list(x) -> list[str]:
    return [] if not x else ([x] if isinstance(x, str) else list(x))


def read_measurements(paths) -> pd.DataFrame:
    frames = [pd.read_csv(p, low_memory=False) for p in as_list(paths) if os.path.exists(p)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def stand_ins(measurements) -> pd.DataFrame:
    df = read_measurements(measurements)
    if df.empty:
        return df
    if "system_kind" not in df.columns:
        return pd.DataFrame()
    si = df[df.system_kind.astype(str).str.startswith("stand-in:")]
    if si.empty:
        return pd.DataFrame()
    keys = [c for c in ("experiment", "system_kind") if c in si.columns]
    return si.groupby(keys).size().reset_index(name="rows")


def status_counts(measurements) -> dict:
    df = read_measurements(measurements)
    if df.empty or "status" not in df.columns:
        return {}
    per_run = df.drop_duplicates(subset=["raw_file"]) if "raw_file" in df.columns else df
    return per_run.status.value_counts().to_dict()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--studies", required=True, help="STUDY_REPORT as JSON")
    ap.add_argument("--title", default="Repro — reproduction report")
    ap.add_argument("--scale", default="")
    ap.add_argument("--html", required=True)
    ap.add_argument("--claims", required=True)
    args = ap.parse_args()
    studies = json.loads(args.studies)

    all_claims = []
    sections = []
    times = []
    standin_rows = []
    for name, st in studies.items():
        sec = [f'<h2 id="{esc(name)}">{esc(st["title"])}</h2>', f"<p><b>Paper:</b> {esc(st.get('paper', ''))}</p>"]
        claims_paths = as_list(st.get("claims"))
        if not st.get("enabled") or not claims_paths or not all(os.path.exists(p) for p in claims_paths):
            why = "disabled in the configuration" if not st.get("enabled") else "no results yet"
            sec.append(f'<p class="muted">Not run ({why}).</p>')
            all_claims.append(pd.DataFrame([{"study": name, "claim_id": "-", "claim": st["title"],
                                             "verdict": claims_mod.NOT_RUN, "note": why}]))
        else:
            cl = pd.concat([claims_mod.read(p) for p in claims_paths], ignore_index=True)
            all_claims.append(cl)
            counts = status_counts(st.get("measurements"))
            if counts:
                sec.append("<p><b>Runs:</b> " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + "</p>")
            shown = cl[["claim", "paper_ref", "published", "reproduced", "unit", "tolerance", "verdict",
                        "system_kind", "output", "note"]]
            sec.append("<h3>Claims</h3>" + table_html(shown, "verdict"))
            si = stand_ins(st.get("measurements"))
            notes = st.get("stand_ins") or []
            if not si.empty or notes:
                sec.append('<div class="standin"><b>Stand-ins in this study.</b> Rows measured on a stand-in say so '
                           "in their <code>system_kind</code> column; a stand-in's number never passes as the real "
                           "system's.<ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>"
                           + (table_html(si) if not si.empty else "") + "</div>")
                for _, r in si.iterrows():
                    standin_rows.append({"study": name, **r.to_dict()})
                for n in notes:
                    standin_rows.append({"study": name, "system_kind": n})
            for fig in st.get("figures", []):
                sec.append(img_html(fig["path"], fig["caption"]))
            for tab in st.get("tables", []):
                if os.path.exists(tab["path"]):
                    sec.append(f"<h4>{esc(tab['caption'])}</h4><p class=muted>{esc(tab['path'])}</p>")
                    sec.append(table_html(pd.read_csv(tab["path"])))
        exp = st.get("expected_times", {})
        m = measured_seconds(st.get("benchmarks", []))
        times.append({"study": name, "set-up (local)": exp.get("setup_local", ""),
                      "run (local, expected)": exp.get("run_local", ""),
                      "analysis (local, expected)": exp.get("analysis_local", ""),
                      "run (cluster, expected)": exp.get("run_cluster", ""),
                      "measured in this run (sum of job times)": f"{m:.1f} s" if m is not None else "not run"})
        sections.append("\n".join(sec))

    claims_df = pd.concat(all_claims, ignore_index=True) if all_claims else pd.DataFrame(columns=claims_mod.COLUMNS)
    for c in claims_mod.COLUMNS:
        if c not in claims_df.columns:
            claims_df[c] = ""
    claims_df = claims_df[claims_mod.COLUMNS]
    tidy.write_csv(claims_df, args.claims)

    verdicts = claims_df.verdict.value_counts().to_dict()
    summary = ", ".join(f"{v}: {k}" for k, v in sorted(verdicts.items(), key=lambda kv: kv[0]))
    head = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{esc(args.title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{esc(args.title)}</h1>",
        f"<p class=muted>Generated {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M UTC} from commit "
        f"<code>{esc(provenance.git_sha())}</code> on <code>{esc(provenance.host())}</code>, "
        f"scale <b>{esc(args.scale)}</b>. Every reproduced number below is read from the run's raw files "
        "under <code>results/</code>; published values come from each study's <code>published.csv</code> "
        "(<code>workflow/studies/&lt;study&gt;/</code>) and are "
        "only ever shown in their own column.</p>",
        f"<p><b>Claims:</b> {esc(summary)}. Verdicts: <i>reproduced</i> (within the stated tolerance, or the "
        "relation holds), <i>not reproduced</i>, <i>informative</i> (absolute numbers on different hardware, "
        "shown side by side without a verdict), <i>not run</i>.</p>",
        "<h2>All claims</h2>",
        table_html(claims_df[["study", "claim", "paper_ref", "target", "output", "published", "reproduced",
                              "unit", "tolerance", "verdict", "system_kind"]], "verdict"),
        "<h2>What ran as a stand-in</h2>",
        (table_html(pd.DataFrame(standin_rows)) if standin_rows else
         "<p>Nothing: every system in this run was the real program (or a cost model).</p>"),
        "<h2>Expected and measured times</h2>",
        table_html(pd.DataFrame(times)),
        "<p class=muted>Set-up once per machine: <code>./repro setup</code> (apt packages, Python venv, "
        "Apptainer from source ≈7 min on 2 cores, the systems' C builds); cached under <code>~/.cache/repro</code> "
        "so a second run does nothing new.</p>",
    ]
    Path(args.html).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(args.html).with_suffix(".html.tmp")
    tmp.write_text("\n".join(head + sections + ["</body></html>"]))
    os.replace(tmp, args.html)
    print(f"report: {args.html} ({summary})")


if __name__ == "__main__":
    main()
