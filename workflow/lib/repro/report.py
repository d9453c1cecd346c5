#!/usr/bin/env python3
"""The reproduction report under paper/.

- ``index.html``: the front page. One line per study (paper, verdict counts, measured run time,
  stand-ins used, link), then every claim that did *not* reproduce (or whose runs failed) with
  the paper's statement, our number and the reason given, before anything else.
- ``<study>.html``: one page per study. Each figure (copied to ``figures/<study>/``) with the
  claims drawn from it underneath, the raw files it was computed from and the command that
  regenerates it; each table the same way, rounded and split so that no column is cut; the
  study's other claims, its stand-ins and its times.
- ``print.html``: every page in one document, the source of ``report.pdf`` (repro.report_pdf).
- ``claims.csv``: every claim of every study, full precision (the CSVs under ``results/`` stay
  the full-precision record; the pages round for reading).
- Pages beside the studies' (``extra_pages()``): ``rehearsal.html``, the cluster rehearsal's
  evidence (repro.report_rehearsal), read from ``results/rehearsal/`` when a rehearsal ran.

The front page and each study page list the failed runs (one line per failure record), each with
its kind -- crash, lost_node, timeout, overload, error (repro.failures) -- and its evidence: the
record's message, the load it measured, the node.

Provenance (commit, configuration files, scale, host, date, the command) is on every page. Only
files the workflow produced are read; a study that is disabled or has no results shows as not run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import html
import json
import math
import os
import re
import shutil
from pathlib import Path

import pandas as pd

from repro import claims as claims_mod
from repro import failures, provenance, tidy

VERDICTS = list(claims_mod.VERDICTS)
VERDICT_CLASS = {
    claims_mod.REPRODUCED: "ok",
    claims_mod.NOT_REPRODUCED: "bad",
    claims_mod.INFO: "info",
    claims_mod.NOT_RUN: "missing",
    claims_mod.FAILED: "bad",
    claims_mod.CLUSTER_ONLY: "missing",
}
MISSED = (claims_mod.NOT_REPRODUCED, claims_mod.FAILED)

# Tables wider than this many columns are split into parts that repeat the label columns, so
# that no column is cut off on an A4 page (the render check, repro.report_check, verifies it).
MAX_COLS = 8
# A data table longer than this is shown by its first HEAD_ROWS rows and a link to the CSV (the
# claims tables are always shown whole).
MAX_ROWS = 40
HEAD_ROWS = 15
MONEY_UNITS = ("EUR", "€", "USD", "$")

CSS = """
body{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;max-width:1100px;margin:1.5em auto;padding:0 1em;
     color:#222;font-size:14px;line-height:1.4}
h1{font-size:1.5em;margin-bottom:.2em}h2{border-bottom:2px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
h3{margin-top:1.4em}
nav{font-size:13px;margin:.4em 0 1em}nav a{margin-right:.8em}
table{border-collapse:collapse;margin:.5em 0 1.1em;font-size:12px;max-width:100%}
th,td{border:1px solid #ccc;padding:2px 5px;text-align:left;vertical-align:top;overflow-wrap:break-word}
td.long{overflow-wrap:anywhere}
td.num{text-align:right;white-space:nowrap}
th{background:#f0f0f0}
td.ok{background:#d9f2d9}td.bad{background:#f8d0d0}td.info{background:#e6eefa}td.missing{background:#eee;color:#666}
.standin{background:#fff3cd;padding:.5em;border-left:4px solid #e0a800;margin:.8em 0}
.prov{font-size:11px;color:#555;border:1px solid #ddd;background:#fafafa;padding:.4em .6em;margin:.4em 0 1em}
.prov code{background:none}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #ddd}figcaption{font-size:12px;color:#444}
code{background:#f4f4f4;padding:0 3px;overflow-wrap:anywhere}
.muted{color:#666;font-size:12px}
.part{font-size:11px;color:#666;margin:.2em 0 0}
@page{size:A4;margin:14mm 12mm}
@media print{body{max-width:none;margin:0;padding:0;font-size:11px}table{font-size:9px}
 .page{break-before:page}figure img{max-height:150mm}}
"""


def esc(x) -> str:
    return html.escape("" if x is None else str(x))


# ---------------------------------------------------------------------------
# numbers
# ---------------------------------------------------------------------------
def _as_float(v):
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    s = str(v).strip()
    # "1_0" is a wildcard (Python's float() would read it as 10), not a number
    if not s or s.lower() in ("nan", "inf", "-inf") or s[0] not in "+-.0123456789" or "_" in s:
        return None
    try:
        return float(s)
    except ValueError:
        return None


def fmt_value(v, unit: str = "") -> str:
    """A number as a reader should see it: 3 significant digits, integers as they are (counts,
    published totals), money to the cent; anything that is not a number unchanged."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    x = _as_float(v)
    if x is None or math.isinf(x):
        return str(v)
    if any(m in str(unit) for m in MONEY_UNITS):
        return f"{x:,.2f}"
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}" if abs(x) >= 10_000 else str(int(x))
    if x == 0:
        return "0"
    mag = math.floor(math.log10(abs(x)))
    if -4 <= mag < 6:
        decimals = max(0, 2 - mag)
        return f"{round(x, decimals):,.{decimals}f}"
    return f"{x:.3g}"


def fmt_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Every cell as display text; a row's `unit` column (if any) decides money formatting."""
    out = df.copy().astype(object)
    unit = df["unit"].astype(str) if "unit" in df.columns else pd.Series([""] * len(df), index=df.index)
    for c in df.columns:
        col_unit = "EUR" if any(m in str(c) for m in MONEY_UNITS) else None
        out[c] = [fmt_value(v, col_unit or u) for v, u in zip(df[c], unit)]
    return out


# ---------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------
def split_wide(df: pd.DataFrame, max_cols: int = MAX_COLS) -> list[pd.DataFrame]:
    """Parts of at most max_cols columns, each repeating the leading label columns."""
    cols = list(df.columns)
    if len(cols) <= max_cols:
        return [df]
    labels = []
    for c in cols[:2]:
        if not pd.api.types.is_numeric_dtype(df[c]):
            labels.append(c)
    rest = [c for c in cols if c not in labels]
    width = max(1, max_cols - len(labels))
    return [df[labels + rest[i:i + width]] for i in range(0, len(rest), width)]


def _cell(v: str, verdict: bool) -> str:
    if verdict:
        return f'<td class="{VERDICT_CLASS.get(v, "")}">{esc(v)}</td>'
    if _as_float(v.replace(",", "")) is not None:
        return f'<td class="num">{esc(v)}</td>'
    if len(v) > 24 and max(map(len, v.split())) > 24:  # a path or an identifier: may break anywhere
        return f'<td class="long">{esc(v)}</td>'
    return f"<td>{esc(v)}</td>"


def header(name) -> str:
    """A column name that may break after '_', '/' or '.' (long names would widen the table)."""
    return re.sub(r"([_/.])", r"\1<wbr>", esc(name))


def table_html(df: pd.DataFrame, verdict_col: str | None = "verdict", max_cols: int = MAX_COLS) -> str:
    if df.empty:
        return '<p class="muted">(no rows)</p>'
    parts = split_wide(df, max_cols)
    out = []
    for i, part in enumerate(parts):
        shown = fmt_frame(part)
        if len(parts) > 1:
            out.append(f'<p class="part">part {i + 1} of {len(parts)} (columns '
                       f'{esc(", ".join(map(str, part.columns)))})</p>')
        rows = ["<table><tr>" + "".join(f"<th>{header(c)}</th>" for c in shown.columns) + "</tr>"]
        for rec in shown.itertuples(index=False):
            rows.append("<tr>" + "".join(_cell(v, c == verdict_col) for c, v in zip(shown.columns, rec)) + "</tr>")
        rows.append("</table>")
        out.append("\n".join(rows))
    return "\n".join(out)


# ---------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------
def as_list(x) -> list[str]:
    return [] if not x else ([x] if isinstance(x, str) else list(x))


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


def read_measurements(paths) -> pd.DataFrame:
    frames = [pd.read_csv(p, low_memory=False) for p in as_list(paths) if os.path.exists(p)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def stand_ins(meas: pd.DataFrame) -> pd.DataFrame:
    if meas.empty or "system_kind" not in meas.columns:
        return pd.DataFrame()
    si = meas[meas.system_kind.astype(str).str.startswith("stand-in:")]
    if si.empty:
        return pd.DataFrame()
    keys = [c for c in ("experiment", "system_kind") if c in si.columns]
    return si.groupby(keys).size().reset_index(name="rows")


def standin_names(kinds) -> list[str]:
    """Each stand-in named once: a claim's system_kind may join several (``stand-in: a; b`` or
    ``stand-in:a,stand-in:b``), and the runs' kinds repeat the same ones."""
    names: set[str] = set()
    for k in kinds:
        for part in str(k).replace(",stand-in:", ";").split(";"):
            part = part.strip().removeprefix("stand-in:").strip()
            if part:
                names.add(part)
    return sorted(names)


def why_text(r) -> str:
    """Why a claim missed: its note, else what was expected against what was seen and the tolerance
    (a claim without a note still says something a reader can check)."""
    why = str(r.note or "").strip()
    if not why:
        why = (f"expected {r.published} {r.unit or ''}".rstrip() + f", measured {r.reproduced} {r.unit or ''}".rstrip()
               + (f" (tolerance: {r.tolerance})" if str(r.tolerance or "").strip() else ""))
    if str(r.system_kind).startswith("stand-in:"):
        why = f"stand-in ({r.system_kind}). {why}"
    return why


def status_counts(meas: pd.DataFrame) -> dict:
    if meas.empty or "status" not in meas.columns:
        return {}
    per_run = meas.drop_duplicates(subset=["raw_file"]) if "raw_file" in meas.columns else meas
    return per_run.status.value_counts().to_dict()


# ---------------------------------------------------------------------------
# failed runs, told apart (repro.failures)
# ---------------------------------------------------------------------------
MACHINE_KINDS = ("lost_node", "timeout", "overload")
FAILED_COLS = ["study", "configuration", "rep", "kind", "kind_from", "failure", "load", "node", "raw_file"]


def _text(v) -> str:
    """A cell as text: empty for NaN, 4 for 4.0 (a column pandas read as float because of empty cells)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v).strip()


def failed_runs(meas: pd.DataFrame) -> pd.DataFrame:
    """One row per failure record in a tidy table: its configuration (the parameters it has), its
    kind (the record's own ``failure_kind``, else classified from the message: repro.failures.kind_of)
    and the evidence -- the message, the load per CPU it measured, the node (host) it ran on."""
    if meas.empty or "status" not in meas.columns:
        return pd.DataFrame(columns=FAILED_COLS)
    bad = meas[meas.status == "failed"]
    if "raw_file" in bad.columns:
        bad = bad.drop_duplicates(subset=["raw_file"])
    tail = set(tidy.BASE_COLUMNS + tidy.TAIL_COLUMNS) | {"reason"}
    params = [c for c in meas.columns if c not in tail]
    rows = []
    for r in bad.to_dict("records"):
        recorded, load = _text(r.get("failure_kind")), _text(r.get("failure_load"))
        per_cpu = failures.load_per_cpu(load)
        cfg = ", ".join(f"{c}={_text(r[c])}" for c in params if _text(r.get(c)))
        rows.append({"study": _text(r.get("study")),
                     "configuration": " ".join(x for x in (_text(r.get("experiment")), cfg) if x) or "—",
                     "rep": _text(r.get("rep")), "kind": failures.kind_of(recorded, _text(r.get("failure")), load),
                     "kind_from": "the record" if recorded else "the message",
                     "failure": _text(r.get("failure")),
                     "load": (f"{json.loads(load)['loadavg_1m']} on {json.loads(load)['ncpu']} CPUs "
                              f"({per_cpu:.1f} per CPU)" if per_cpu is not None else "not measured"),
                     "node": _text(r.get("host")) or "—", "raw_file": _text(r.get("raw_file"))})
    return pd.DataFrame(rows, columns=FAILED_COLS)


def kind_counts(failed: pd.DataFrame) -> str:
    if failed.empty:
        return "none"
    counts = failed.kind.value_counts().to_dict()
    return ", ".join(f"{k}: {counts[k]}" for k in failures.KINDS if k in counts)


def failed_table(failed: pd.DataFrame, link: bool, limit: int = MAX_ROWS) -> str:
    """The failed runs, each kind on its own line with its evidence (crashes first)."""
    if failed.empty:
        return "<p>None: no failure record in the runs' results.</p>"
    order = {k: i for i, k in enumerate(failures.KINDS)}
    rows = failed.assign(_o=failed.kind.map(order)).sort_values(["_o", "study", "configuration"], kind="stable")
    out = [f"<p><b>Failed runs by kind:</b> {esc(kind_counts(failed))}. <i>crash</i> (a fault or a kill signal) and "
           "<i>error</i> are the code's: never retried, always shown; <i>lost_node</i>, <i>timeout</i> and "
           "<i>overload</i> (a timeout while the load per CPU exceeded "
           f"{failures.OVERLOAD_LOAD_PER_CPU}) are the machine's: a lost node may be requeued by Slurm, a timeout is "
           "re-run by the next pass and listed here until then (workflow/README.md, \"Failures and retries\").</p>",
           "<table><tr><th>study</th><th>configuration</th><th>rep</th><th>kind</th><th>evidence (the failure "
           "message)</th><th>load</th><th>node</th></tr>"]
    for r in rows.head(limit).itertuples(index=False):
        study = f'<a href="{esc(r.study)}.html#failed">{esc(r.study)}</a>' if link else esc(r.study)
        msg = r.failure if len(r.failure) <= 400 else r.failure[:400] + " …"
        cls = "info" if r.kind in MACHINE_KINDS else "bad"
        out.append(f"<tr><td>{study}</td><td>{esc(r.configuration)}</td><td>{esc(r.rep)}</td>"
                   f'<td class="{cls}">{esc(r.kind)}<br><span class=muted>from {esc(r.kind_from)}</span></td>'
                   f'<td class="long">{esc(msg)}<br><span class=muted>record: <code>{esc(r.raw_file)}</code>'
                   f"</span></td><td>{esc(r.load)}</td><td>{esc(r.node)}</td></tr>")
    out.append("</table>")
    if len(rows) > limit:
        out.append(f'<p class="muted">the first {limit} of {len(rows)} failed runs; each study\'s page lists '
                   "its own.</p>")
    return "\n".join(out)


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "not run"
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


class Study:
    """What the report knows of one study, read once."""

    def __init__(self, name: str, st: dict):
        self.name, self.st = name, st
        self.title = st.get("title", name)
        self.paper = st.get("paper", "")
        claims_paths = as_list(st.get("claims"))
        self.ran = bool(st.get("enabled")) and bool(claims_paths) and all(os.path.exists(p) for p in claims_paths)
        if self.ran:
            self.claims = pd.concat([claims_mod.read(p) for p in claims_paths], ignore_index=True)
            self.why = ""
        else:
            self.why = "disabled in the configuration" if not st.get("enabled") else "no results yet"
            self.claims = pd.DataFrame([{"study": name, "claim_id": "-", "claim": self.title,
                                         "verdict": claims_mod.NOT_RUN, "note": self.why}])
        for c in claims_mod.COLUMNS:
            if c not in self.claims.columns:
                self.claims[c] = ""
        self.claims = self.claims[claims_mod.COLUMNS]
        meas = read_measurements(st.get("measurements")) if self.ran else pd.DataFrame()
        self.runs = status_counts(meas)
        self.failed = failed_runs(meas)
        self.standin_table = stand_ins(meas)
        kinds = set(self.standin_table.system_kind) if not self.standin_table.empty else set()
        kinds |= {k for k in self.claims.system_kind.astype(str) if k.startswith("stand-in:")}
        self.standin_kinds = sorted(kinds)
        self.standin_names = standin_names(kinds)
        self.seconds = measured_seconds(st.get("benchmarks", []))
        self.counts = self.claims.verdict.value_counts().to_dict()

    @property
    def page(self) -> str:
        return f"{self.name}.html"


# ---------------------------------------------------------------------------
# pages
# ---------------------------------------------------------------------------
class Context:
    def __init__(self, args):
        self.title = args.title
        self.scale = args.scale
        self.configfiles = [c for c in (args.configfiles or "").split() if c]
        self.sha = provenance.git_sha()
        self.host = provenance.host()
        self.date = f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC"
        self.outdir = Path(args.outdir)
        self.rehearsal = Path(getattr(args, "rehearsal", None) or "results/rehearsal")

    def command(self, target: str | None = None) -> str:
        if self.scale == "local" and target is None:
            return "./repro run"
        cfg = " ".join(f"--configfile {c}" for c in self.configfiles)
        profile = "profiles/local" if self.scale == "local" else "profiles/slurm"
        return f"snakemake --profile {profile} {cfg} {target or 'all'}".replace("  ", " ")

    def provenance(self, target: str) -> str:
        return (f'<div class="prov">commit <code>{esc(self.sha)}</code> · configuration '
                f"<code>{esc(', '.join(self.configfiles) or 'config/config.yaml')}</code> · scale "
                f"<b>{esc(self.scale)}</b> · host <code>{esc(self.host)}</code> · {esc(self.date)}<br>"
                f"regenerate this page: <code>{esc(self.command(target))}</code>"
                + (f" (or everything: <code>{esc(self.command())}</code>)" if self.scale == "local" else "")
                + "</div>")


class ExtraPage:
    """A page beside the studies' pages: its file, its label in the navigation, its title, its sections
    ``body(ctx)`` and the one line the front page shows for it ``summary(ctx)``."""

    def __init__(self, file: str, label: str, title: str, body, summary):
        self.file, self.label, self.title, self.body, self.summary = file, label, title, body, summary

    @property
    def name(self) -> str:
        return self.file.removesuffix(".html")


def extra_pages() -> list[ExtraPage]:
    """The pages beside the studies' (each in its own module; a new one is one more entry here)."""
    from repro import report_rehearsal as rh
    from repro import report_selfcheck as sc

    return [ExtraPage(rh.FILE, rh.LABEL, rh.TITLE, lambda ctx: rh.body(ctx.rehearsal),
                      lambda ctx: rh.summary_line(ctx.rehearsal)),
            ExtraPage(sc.FILE, sc.LABEL, sc.TITLE, lambda ctx: sc.body(sc.DEFAULT),
                      lambda ctx: sc.summary_line(sc.DEFAULT))]


def nav(studies: list[Study], here: str | None) -> str:
    links = ['<a href="index.html">front page</a>'] + [
        f'<a href="{s.page}">{"<b>" + esc(s.name) + "</b>" if s.name == here else esc(s.name)}</a>'
        for s in studies] + [
        f'<a href="{p.file}">{"<b>" + esc(p.label) + "</b>" if p.name == here else esc(p.label)}</a>'
        for p in extra_pages()]
    return "<nav>" + " ".join(links) + "</nav>"


def extra_page(ctx: Context, page: ExtraPage, studies: list[Study]) -> list[str]:
    return [f'<h1 id="{esc(page.name)}">{esc(page.title)}</h1>', nav(studies, page.name),
            ctx.provenance(f"paper/{page.file}"), *page.body(ctx)]


def doc(title: str, body: list[str]) -> str:
    return "\n".join(["<!doctype html><html><head><meta charset='utf-8'>",
                      f"<title>{esc(title)}</title><style>{CSS}</style></head><body>", *body, "</body></html>"])


def counts_cells(s: Study) -> dict:
    return {v: int(s.counts.get(v, 0)) for v in VERDICTS}


def missed_table(claims: pd.DataFrame, link: bool) -> str:
    rows = claims[claims.verdict.isin(MISSED)]
    if rows.empty:
        return "<p>None: every evaluated claim reproduced (or is informative, or was not run; see the counts).</p>"
    out = ["<table><tr><th>study</th><th>the paper says</th><th>published</th><th>ours</th><th>verdict</th>"
           "<th>why (as the claim's note gives it)</th></tr>"]
    for r in rows.itertuples(index=False):
        unit = str(r.unit or "")
        study = f'<a href="{esc(r.study)}.html#claims">{esc(r.study)}</a>' if link else esc(r.study)
        why = why_text(r)
        out.append(
            f"<tr><td>{study}</td><td>{esc(r.claim)} <span class=muted>({esc(r.paper_ref)})</span></td>"
            f"<td>{esc(fmt_value(r.published, unit))} {esc(unit)}</td>"
            f"<td>{esc(fmt_value(r.reproduced, unit))} {esc(unit)}</td>"
            f'<td class="{VERDICT_CLASS[r.verdict]}">{esc(r.verdict)}</td><td>{esc(why)}</td></tr>')
    out.append("</table>")
    return "\n".join(out)


def front_page(ctx: Context, studies: list[Study], claims: pd.DataFrame, times: pd.DataFrame,
               failed: pd.DataFrame | None = None) -> list[str]:
    rows = []
    for s in studies:
        c = counts_cells(s)
        rows.append(
            f'<tr><td><a href="{s.page}">{esc(s.name)}</a></td><td>{esc(s.title)}<br>'
            f'<span class=muted>{esc(s.paper)}</span></td>'
            + "".join(f'<td class="num">{c[v]}</td>' for v in VERDICTS)
            + f"<td>{esc(fmt_seconds(s.seconds))}</td>"
            f"<td>{esc(', '.join(s.standin_names) or '—')}</td></tr>")
    totals = claims.verdict.value_counts().to_dict()
    summary = ", ".join(f"{v}: {int(totals.get(v, 0))}" for v in VERDICTS)
    return [
        f"<h1>{esc(ctx.title)}</h1>", nav(studies, None), ctx.provenance("paper/index.html"),
        f"<p><b>Claims:</b> {esc(summary)}. <i>reproduced</i>: within the stated tolerance, or the relation "
        "holds; <i>not reproduced</i>: it does not; <i>informative</i>: absolute numbers on other hardware, or a "
        "relation that a local stand-in imposes by construction (the reason is in the claim's note), shown side by "
        "side without a verdict; <i>failed</i>: the runs it needs failed; <i>not run</i>: switched off "
        "or no results; <i>cluster-only</i>: a statement about a scale only the cluster configuration runs (its "
        "number and tolerance are stated). Published values come from each study's <code>published.csv</code> and are "
        "only ever shown in their own column.</p>",
        '<h2 id="studies">Studies</h2>',
        "<table><tr><th>study</th><th>paper</th>" + "".join(f"<th>{esc(v)}</th>" for v in VERDICTS)
        + "<th>run time (sum of job times)</th><th>stand-ins used</th></tr>" + "\n".join(rows) + "</table>",
        '<h2 id="missed">Claims that did not reproduce</h2>',
        missed_table(claims, link=True),
        '<h2 id="failed">Failed runs</h2>',
        failed_table(failed if failed is not None else pd.DataFrame(columns=FAILED_COLS), link=True),
        '<h2 id="beside">Beside the studies</h2>',
        "<ul>" + "".join(f'<li><a href="{p.file}">{esc(p.title)}</a>: {p.summary(ctx)}</li>'
                         for p in extra_pages()) + "</ul>",
        '<h2 id="times">Expected and measured times</h2>', table_html(times, None),
        "<p class=muted>Set-up once per machine: <code>./repro setup</code> (apt packages, Python venvs, "
        "Apptainer from source, the systems' builds), cached under <code>~/.cache/repro</code>. Every number on "
        "these pages is read from the run's raw files under <code>results/</code>; <code>claims.csv</code> "
        "beside this page has every claim at full precision.</p>",
    ]


def copy_figure(ctx: Context, study: str, path: str) -> str | None:
    p = Path(path)
    if not p.exists():
        return None
    dest = ctx.outdir / "figures" / study / p.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(p, dest)
    return f"figures/{study}/{p.name}"


def claims_for(claims: pd.DataFrame, paths: list[str]) -> pd.DataFrame:
    return claims[claims.output.astype(str).isin(paths)]


CLAIM_COLS = ["claim", "paper_ref", "published", "reproduced", "unit", "tolerance", "verdict", "system_kind", "note"]


def claim_view(claims: pd.DataFrame, extra: tuple = ()) -> pd.DataFrame:
    """The claims as a page shows them: CLAIM_COLS (+ extra), the tolerance cell beside the verdict
    with the scale it was judged at and its reason (claims.csv's scale, tolerance_why; issue 28)."""
    view = claims[CLAIM_COLS + list(extra)].copy()
    scale = claims["scale"].astype(str) if "scale" in claims else pd.Series("", index=claims.index)
    why = claims["tolerance_why"].astype(str) if "tolerance_why" in claims else pd.Series("", index=claims.index)
    view["tolerance"] = [t + (f" ({s}: {w})" if w.strip() else "")
                         for t, s, w in zip(view["tolerance"].astype(str), scale, why)]
    return view


def study_page(ctx: Context, s: Study, studies: list[Study]) -> list[str]:
    st = s.st
    body = [f'<h1 id="{esc(s.name)}">{esc(s.title)}</h1>', nav(studies, s.name),
            ctx.provenance(f"paper/{s.page}"), f"<p><b>Paper:</b> {esc(s.paper)}</p>"]
    if not s.ran:
        body.append(f'<p class="muted">Not run ({esc(s.why)}).</p>')
        return body
    c = counts_cells(s)
    body.append("<p><b>Claims:</b> " + ", ".join(f"{v}: {c[v]}" for v in VERDICTS)
                + (" · <b>Runs:</b> " + ", ".join(f"{k}: {v}" for k, v in sorted(s.runs.items())) if s.runs else "")
                + f" · <b>run time:</b> {esc(fmt_seconds(s.seconds))}</p>")
    missed = s.claims[s.claims.verdict.isin(MISSED)]
    if not missed.empty:
        body += ["<h2>Did not reproduce</h2>", missed_table(s.claims, link=False)]
    if not s.failed.empty:
        body += ['<h2 id="failed">Failed runs</h2>', failed_table(s.failed, link=False, limit=200)]
    if s.standin_kinds or st.get("stand_ins"):
        body.append('<div class="standin"><b>Stand-ins in this study.</b> Rows measured on a stand-in say so in '
                    "their <code>system_kind</code> column; a stand-in's number never passes as the real system's."
                    "<ul>" + "".join(f"<li>{esc(n)}</li>" for n in st.get("stand_ins") or [])
                    + "</ul>" + (table_html(s.standin_table, None) if not s.standin_table.empty else "") + "</div>")
    shown = set()
    raw = ", ".join(as_list(st.get("measurements"))) or "—"
    for fig in st.get("figures", []):
        path = fig["path"]
        body.append(f"<h2>{esc(fig['caption'].split(':')[0])}</h2>")
        src = copy_figure(ctx, s.name, path)
        if src is None:
            body.append(f'<p class="muted">figure not produced: {esc(path)}</p>')
        else:
            body.append(f'<figure><img alt="{esc(fig["caption"])}" src="{esc(src)}">'
                        f"<figcaption>{esc(fig['caption'])}</figcaption></figure>")
        table = str(Path(path).parent.parent / "tables" / (Path(path).stem + ".csv"))
        mine = claims_for(s.claims, [path, table])
        shown |= set(mine.index)
        body.append(f'<p class="muted">file: <code>{esc(path)}</code>'
                    + (f" · its data: <code>{esc(table)}</code>" if os.path.exists(table) else "")
                    + f" · from the raw measurements in <code>{esc(raw)}</code> · regenerate: "
                    f"<code>{esc(ctx.command(path))}</code></p>")
        if not mine.empty:
            body += ["<h3>Claims drawn from this figure</h3>", table_html(claim_view(mine))]
    for tab in st.get("tables", []):
        path = tab["path"]
        body.append(f"<h2>{esc(tab['caption'])}</h2>")
        if not os.path.exists(path):
            body.append(f'<p class="muted">table not produced: {esc(path)}</p>')
            continue
        data = pd.read_csv(path)
        if len(data) > MAX_ROWS:
            body.append(table_html(data.head(HEAD_ROWS), None))
            body.append(f'<p class="muted">the first {HEAD_ROWS} of {len(data)} rows; every row at full precision: '
                        f"<code>{esc(path)}</code> · regenerate: <code>{esc(ctx.command(path))}</code></p>")
        else:
            body.append(table_html(data, None))
            body.append(f'<p class="muted">full precision: <code>{esc(path)}</code> · regenerate: '
                        f"<code>{esc(ctx.command(path))}</code></p>")
        mine = claims_for(s.claims, [path]).drop(index=list(shown), errors="ignore")
        shown |= set(mine.index)
        if not mine.empty:
            body += ["<h3>Claims drawn from this table</h3>", table_html(claim_view(mine))]
    rest = s.claims.drop(index=list(shown))
    body.append('<h2 id="claims">' + ("Other claims" if shown else "Claims") + "</h2>")
    body.append(table_html(claim_view(rest, ("output",))) if not rest.empty else "<p>(all shown above)</p>")
    body.append(f'<p class="muted">every claim of this study at full precision: '
                f"<code>{esc(', '.join(as_list(st.get('claims'))))}</code></p>")
    return body


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--studies", required=True, help="STUDY_REPORT as JSON")
    ap.add_argument("--title", default="Repro — reproduction report")
    ap.add_argument("--scale", default="")
    ap.add_argument("--configfiles", default="", help="the configuration files of the run, space-separated")
    ap.add_argument("--outdir", default="paper")
    ap.add_argument("--claims", required=True)
    ap.add_argument("--rehearsal", default="results/rehearsal",
                    help="the cluster rehearsal's summary.json and <study>.json (optional: read if present)")
    args = ap.parse_args()
    ctx = Context(args)
    if (ctx.outdir / "figures").exists():
        shutil.rmtree(ctx.outdir / "figures")
    # an output of report_html even when no enabled study has a figure (a study of tables alone)
    (ctx.outdir / "figures").mkdir(parents=True)
    studies = [Study(name, st) for name, st in json.loads(args.studies).items()]

    claims_df = pd.concat([s.claims for s in studies], ignore_index=True) if studies else \
        pd.DataFrame(columns=claims_mod.COLUMNS)
    tidy.write_csv(claims_df, args.claims)

    times = pd.DataFrame([{
        "study": s.name,
        "set-up (local)": s.st.get("expected_times", {}).get("setup_local", ""),
        "run (local, expected)": s.st.get("expected_times", {}).get("run_local", ""),
        "analysis (local, expected)": s.st.get("expected_times", {}).get("analysis_local", ""),
        "run (cluster, expected)": s.st.get("expected_times", {}).get("run_cluster", ""),
        "measured in this run (sum of job times)": fmt_seconds(s.seconds),
    } for s in studies])

    failed = [s.failed for s in studies if not s.failed.empty]
    failed = pd.concat(failed, ignore_index=True) if failed else None
    front = front_page(ctx, studies, claims_df, times, failed)
    pages = {s.name: study_page(ctx, s, studies) for s in studies}
    for s in studies:
        write_atomic(ctx.outdir / s.page, doc(f"{s.title} — {ctx.title}", pages[s.name]))
    extras = {p.file: extra_page(ctx, p, studies) for p in extra_pages()}
    for p in extra_pages():
        write_atomic(ctx.outdir / p.file, doc(f"{p.title} — {ctx.title}", extras[p.file]))
    printed = front + [f'<div class="page">{"".join(pages[s.name])}</div>' for s in studies] + [
        f'<div class="page">{"".join(body)}</div>' for body in extras.values()]
    write_atomic(ctx.outdir / "print.html", doc(ctx.title, printed).replace("<nav>", '<nav style="display:none">'))
    write_atomic(ctx.outdir / "index.html", doc(ctx.title, front))
    totals = claims_df.verdict.value_counts().to_dict()
    print(f"report: {ctx.outdir}/index.html + {len(studies)} study pages + {', '.join(extras)} ("
          + ", ".join(f"{v}: {int(totals.get(v, 0))}" for v in VERDICTS) + ")")


if __name__ == "__main__":
    main()
