"""The report's rehearsal page (``paper/rehearsal.html``): the cluster path's evidence beside the
local results.

It reads what ``./repro rehearse`` (repro.rehearsal) wrote, if it ran: ``results/rehearsal/
summary.json`` (when, the cluster, the wall time, per study its times, job and record counts,
the checks' verdicts, what was not rehearsed) and ``results/rehearsal/<study>.json`` (per Slurm
job: rule, wildcards, state, the nodes asked for and the nodes the records measured, and each
check with its evidence). Every key is optional -- a summary from an older rehearsal lacks the
sides, the failed jobs and the commit -- and what is missing reads "not recorded". Without a
summary the page says no rehearsal was run and gives the command.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pandas as pd

from repro import failures
from repro.report import MAX_ROWS, esc, table_html

NOT_RECORDED = "not recorded"
DONE_STATES = ("COMPLETED", "RUNNING", "PENDING", "")
FILE, LABEL, TITLE = "rehearsal.html", "cluster rehearsal", "The cluster path, rehearsed"


def _json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def load(folder: Path) -> dict | None:
    """summary.json with each study's own file under ``detail`` (None: no rehearsal here)."""
    summary = _json(Path(folder) / "summary.json")
    if summary is None:
        return None
    studies = summary.get("studies") if isinstance(summary.get("studies"), dict) else {}
    summary["studies"] = {name: st for name, st in studies.items() if isinstance(st, dict)}
    for name, st in summary["studies"].items():
        st["detail"] = _json(Path(folder) / f"{name}.json") or {}
    return summary


def _when(s: str):
    try:
        return dt.datetime.strptime(str(s), "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None


def span(summary: dict) -> str:
    """When the rehearsal ran: from its ``started_at`` (else the first study's start: each study's
    ``when`` is its end, ``seconds`` its length) to the last study's end."""
    ends, starts = [], []
    if _when(summary.get("started_at", "")) is not None:
        starts.append(_when(summary["started_at"]))
    for st in summary["studies"].values():
        end = _when(st.get("when", ""))
        if end is not None:
            ends.append(end)
            starts.append(end - dt.timedelta(seconds=float(st.get("seconds") or 0)))
    if not ends:
        return NOT_RECORDED
    return f"{min(starts):%Y-%m-%d %H:%M} – {max(ends):%Y-%m-%d %H:%M} UTC"


def fmt_s(s) -> str:
    try:
        s = float(s)
    except (TypeError, ValueError):
        return NOT_RECORDED
    return f"{s:.0f} s" if s < 120 else f"{s:.0f} s ({s / 60:.1f} min)"


def commit(summary: dict) -> str:
    g = summary.get("git")
    if not isinstance(g, dict) or not g:
        return NOT_RECORDED
    out = f"commit <code>{esc(g.get('commit') or NOT_RECORDED)}</code>"
    if g.get("tree"):
        out += f", working tree <code>{esc(g['tree'])}</code>"
    if g.get("dirty") is not None:
        out += " (with uncommitted changes)" if g["dirty"] else " (as committed)"
    if g.get("source"):
        out += f"; named by: {esc(g['source'])}"
    return out


def _load(x) -> str:
    if x in (None, "", []):
        return NOT_RECORDED
    return esc(" ".join(map(str, x)) if isinstance(x, list) else x)


def _verdict(ok) -> tuple[str, str]:
    return ("true", "ok") if ok is True else ("false", "bad") if ok is False else ("not judged", "missing")


def _evidence(ev) -> str:
    if ev is None:
        return NOT_RECORDED
    if isinstance(ev, list):
        return "; ".join(map(str, ev)) or "—"
    return str(ev)


def checks_html(st: dict) -> str:
    """Each check: its verdict (the study's own file, else the summary's) and its evidence."""
    detail = st["detail"].get("checks") if isinstance(st["detail"].get("checks"), dict) else {}
    verdicts = st.get("checks") if isinstance(st.get("checks"), dict) else {}
    names = list(dict.fromkeys([*verdicts, *detail]))
    if not names:
        return f'<p class="muted">checks: {NOT_RECORDED}</p>'
    rows = ["<table><tr><th>check</th><th>verdict</th><th>evidence</th></tr>"]
    for n in names:
        d = detail.get(n) if isinstance(detail.get(n), dict) else None
        text, cls = _verdict(d.get("ok") if d else verdicts.get(n))
        rows.append(f'<tr><td>{esc(n)}</td><td class="{cls}">{text}</td>'
                    f'<td class="long">{esc(_evidence(d.get("evidence")) if d else NOT_RECORDED)}</td></tr>')
    return "\n".join(rows + ["</table>"])


def sides_html(st: dict) -> str:
    """Which side (image) ran from its image, which from a host build and why."""
    sides = st.get("sides") or st["detail"].get("sides")
    if isinstance(sides, dict) and sides:
        rows = ["<table><tr><th>side (image)</th><th>how it ran</th></tr>"]
        for side, how in sides.items():
            cls = "ok" if str(how).strip() == "image" else "info"
            rows.append(f'<tr><td>{esc(side)}</td><td class="{cls}">{esc(how)}</td></tr>')
        return "\n".join(rows + ["</table>"])
    containers = st.get("containers", st["detail"].get("containers"))
    how = ("every side from its image" if containers is True else
           "the systems from the host's builds (see what was not rehearsed)" if containers is False else NOT_RECORDED)
    return f"<p><b>Sides:</b> per side {NOT_RECORDED}; the study as a whole: {esc(how)}.</p>"


def _records_failure(rec_paths: list, workdir: str) -> tuple[str, str, object]:
    """The kind, message and load of a job's failure record, read from the rehearsal's working copy."""
    for rel in rec_paths or []:
        if "/failed/" not in f"/{rel}":
            continue
        rec = _json(Path(workdir or ".") / rel)
        if rec:
            return rec.get("failure_kind") or "", rec.get("failure") or "", rec.get("failure_load")
        return "", f"failure record {rel}", None
    return "", "", None


def failed_jobs(st: dict, workdir: str) -> pd.DataFrame:
    """The study's failed Slurm jobs, each with its kind (repro.failures.slurm_kind) and evidence:
    the rehearsal's ``failed_jobs`` where it wrote them, else the jobs whose state is not COMPLETED.
    A job that a later job of the same rule and wildcards completed (a resumed run) says so."""
    jobs = [j for j in st["detail"].get("jobs") or [] if isinstance(j, dict)]
    done = {}
    for j in jobs:
        if j.get("state") == "COMPLETED" and str(j.get("job_id", "")).isdigit():
            key = (j.get("rule"), j.get("wildcards"))
            done[key] = max(done.get(key, 0), int(j["job_id"]))
    listed = st.get("failed_jobs", st["detail"].get("failed_jobs"))
    if not isinstance(listed, list):
        listed = [j for j in jobs if str(j.get("state", "")).split(" ")[0] not in DONE_STATES]
    rows = []
    for j in listed:
        if not isinstance(j, dict):
            continue
        rkind, msg, load = _records_failure(j.get("records"), workdir)
        given = j.get("kind") or rkind
        kind = failures.slurm_kind(j.get("state", ""), given, j.get("evidence") or msg, load)
        evidence = _evidence(j.get("evidence")) if j.get("evidence") else (msg or f"Slurm: {j.get('state', '')}")
        later = int(j.get("completed_later_by") or 0) or done.get((j.get("rule"), j.get("wildcards")), 0)
        if str(j.get("job_id", "")).isdigit() and later > int(j["job_id"]):
            evidence += f" (re-run: job {later} completed)"
        rows.append({"job": str(j.get("job_id", "")), "rule": j.get("rule", ""), "wildcards": j.get("wildcards", ""),
                     "state": j.get("state", ""), "exit": str(j.get("exit_code", "")), "kind": kind,
                     "evidence": evidence})
    return pd.DataFrame(rows)


def _where(measured: dict) -> str:
    """{node: "results/...json: extra.ranks[1].host"} -> "node1 (extra.ranks[1].host)"."""
    if not isinstance(measured, dict) or not measured:
        return "—"
    return ", ".join(f"{n} ({str(p).rsplit(': ', 1)[-1]})" for n, p in sorted(measured.items()))


def _names(x) -> str:
    x = [x] if isinstance(x, str) else list(x or [])
    return ", ".join(map(str, x)) or "—"


def jobs_table(st: dict) -> tuple[pd.DataFrame, int]:
    """One row per Slurm job (those with a problem first when there are more than MAX_ROWS)."""
    jobs = [j for j in st["detail"].get("jobs") or [] if isinstance(j, dict)]
    rows = []
    for j in jobs:
        bad = [n for n, c in (j.get("checks") or {}).items() if isinstance(c, dict) and c.get("ok") is False]
        rows.append({"job": str(j.get("job_id", "")), "rule": j.get("rule", ""),
                     "wildcards": j.get("wildcards", "") or "—", "state": j.get("state", ""),
                     "nodes asked": f"{j.get('nodes_asked', '?')}: {_names(j.get('nodes'))}",
                     "nodes measured": f"{len(j.get('measured_nodes') or [])}: {_names(j.get('measured_nodes'))}",
                     "where each side ran (measured)": _where(j.get("measured_where")),
                     "checks false": ", ".join(bad) or "—",
                     "_problem": bool(bad) or str(j.get("state", "")).split(" ")[0] not in DONE_STATES})
    df = pd.DataFrame(rows)
    if df.empty:
        return df, 0
    if len(df) > MAX_ROWS:
        df = df.sort_values("_problem", ascending=False, kind="stable").head(MAX_ROWS)
    return df.drop(columns="_problem"), len(rows)


def overview(summary: dict) -> pd.DataFrame:
    rows = []
    for name, st in summary["studies"].items():
        fj = failed_jobs(st, summary.get("workdir", ""))
        rows.append({"study": name, "ended": str(st.get("when") or NOT_RECORDED).replace("T", " "),
                     "time": fmt_s(st.get("seconds")), "of which images": fmt_s(st.get("images_s")),
                     "snakemake rc": str(st.get("snakemake_rc", NOT_RECORDED)),
                     "jobs": str(st.get("jobs", NOT_RECORDED)), "records": str(st.get("records", NOT_RECORDED)),
                     "failed jobs": str(len(fj))})
    return pd.DataFrame(rows)


def study_section(name: str, st: dict, summary: dict) -> list[str]:
    d = st["detail"]
    out = [f'<h2 id="{esc(name)}">{esc(name)}</h2>',
           f"<p><b>Time:</b> {esc(fmt_s(st.get('seconds')))}, of which images {esc(fmt_s(st.get('images_s')))}"
           f" · <b>jobs:</b> {esc(st.get('jobs', NOT_RECORDED))}"
           f" · <b>records:</b> {esc(st.get('records', NOT_RECORDED))}"
           f" · <b>snakemake rc:</b> {esc(st.get('snakemake_rc', NOT_RECORDED))}"
           f" · <b>ended:</b> {esc(st.get('when') or NOT_RECORDED)}"
           f" · <b>load at its end:</b> {_load(d.get('loadavg_end'))}"
           + (f"<br><span class=muted>target <code>{esc(d.get('target'))}</code>, configuration "
              f"<code>{esc(' '.join(st.get('overlay') or []))}</code>, log <code>{esc(d.get('log'))}</code>"
              "</span>" if d.get("target") or st.get("overlay") else "") + "</p>",
           "<h3>Checks</h3>", checks_html(st), "<h3>Where each side ran</h3>", sides_html(st)]
    nr = st.get("not_rehearsed", d.get("not_rehearsed"))
    out.append(f"<p><b>Not rehearsed:</b> {esc(nr) if nr else ('nothing' if nr == '' else NOT_RECORDED)}</p>")
    fj = failed_jobs(st, summary.get("workdir", ""))
    if not fj.empty:
        out += ["<h3>Failed jobs</h3>", table_html(fj, None)]
    jobs, n = jobs_table(st)
    out.append("<h3>Jobs: nodes asked and used</h3>")
    if jobs.empty:
        out.append(f'<p class="muted">per job: {NOT_RECORDED} (no results/rehearsal/{esc(name)}.json)</p>')
    else:
        out.append(table_html(jobs, None))
        if n > len(jobs):
            out.append(f'<p class="muted">{len(jobs)} of {n} jobs (those with a problem first); every job: '
                       f"<code>results/rehearsal/{esc(name)}.json</code></p>")
    return out


def summary_line(folder: Path) -> str:
    """One line for the front page."""
    s = load(folder)
    if s is None:
        return ("its summary cannot be read" if (Path(folder) / "summary.json").exists()
                else "not run on this machine (<code>./repro rehearse</code>)")
    checks = [v for st in s["studies"].values() if isinstance(st.get("checks"), dict) for v in st["checks"].values()]
    nfail = sum(len(failed_jobs(st, s.get("workdir", ""))) for st in s["studies"].values())
    verdict = ("every check true" if checks and all(v is not False for v in checks)
               else f"{sum(v is False for v in checks)} check(s) false" if checks else f"checks {NOT_RECORDED}")
    return (f"{len(s['studies'])} studies, {verdict}, {nfail} failed job(s); {esc(span(s))}, wall time "
            f"{esc(fmt_s(s.get('seconds')))}")


def body(folder: Path) -> list[str]:
    """The page's sections (after its title, navigation and provenance)."""
    s = load(folder)
    if s is None and (Path(folder) / "summary.json").exists():
        return [f"<p>A rehearsal wrote <code>{esc(Path(folder) / 'summary.json')}</code>, but it cannot be read "
                "(not a JSON object: a run cut off while writing it?). Run <code>./repro rehearse</code> again, "
                "then rebuild the report.</p>"]
    if s is None:
        return [f"<p>No rehearsal was run here: there is no <code>{esc(Path(folder) / 'summary.json')}</code>. "
                "The rehearsal runs each study's paper-scale path (<code>profiles/slurm</code>, "
                "<code>config/config.yaml</code> with <code>config/rehearsal.yaml</code>) on this machine's "
                "emulated multi-host Slurm cluster and checks where each side ran:</p>",
                "<p><code>./repro rehearse</code> (every study; <code>./repro rehearse STUDY...</code> for some), "
                "then rebuild the report.</p>"]
    cluster = s.get("cluster") if isinstance(s.get("cluster"), dict) else {}
    nodes = cluster.get("nodes")
    top = [f"<b>When:</b> {esc(span(s))}", f"<b>Code:</b> {commit(s)}",
           f"<b>Cluster:</b> {esc(', '.join(nodes)) if nodes else NOT_RECORDED}"
           + (f" (up in {esc(fmt_s(cluster.get('up_s')))})" if cluster.get("up_s") is not None else ""),
           f"<b>Wall time of the last run:</b> {esc(fmt_s(s.get('seconds')))}",
           f"<b>Load average (1, 5, 15 min):</b> {_load(s.get('loadavg_start'))} at the start, "
           f"{_load(s.get('loadavg_end'))} at the end",
           f"<b>Configuration:</b> <code>{esc(' '.join(s.get('overlay') or []) or NOT_RECORDED)}</code>",
           "<b>Every check true:</b> " + ({True: "yes", False: "no"}.get(s.get("all_true"), NOT_RECORDED))]
    out = ["<p>" + "<br>".join(top) + "</p>"]
    if s.get("not_rehearsed"):
        out.append("<p><b>Not rehearsed (the whole run):</b> " + esc("; ".join(map(str, s["not_rehearsed"]))
                                                                     if isinstance(s["not_rehearsed"], list)
                                                                     else s["not_rehearsed"]) + "</p>")
    out += ['<h2 id="studies">Studies</h2>', table_html(overview(s), None),
            '<p class="muted">A study rehearsed in an earlier run keeps its own time and end; the checks: '
            "<i>apart</i> (an n+1 job's sides ran on distinct nodes of its own allocation), <i>no_loopback</i> "
            "(no service bound to or reached at loopback), <i>asked_what_used</i> (the job asked Slurm for the "
            "nodes it used), <i>raw_complete</i> (every planned output exists, no failure record left), "
            "<i>claims_computed</i> (every claim has a verdict). Kinds of failure: see the front page.</p>"]
    for name, st in s["studies"].items():
        out += study_section(name, st, s)
    return out
