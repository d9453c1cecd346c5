"""Issue 27, parts 6 and 7: the report's rehearsal page (from a summary with and without the new
keys, and with no rehearsal at all), the failed runs told apart by kind with their evidence (records
written with repro.rawio, through repro.tidy into the report), the classification of failure
messages, and the render check on the pages that come out."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
from repro import failures, rawio, report, report_check, report_rehearsal, tidy

needs_browser = pytest.mark.skipif(shutil.which("chromium") is None or shutil.which("pdftoppm") is None,
                                   reason="chromium / poppler-utils not installed (./repro setup installs them)")


# ----------------------------------------------------------------------------- classification
@pytest.mark.parametrize("message, kind", [
    # the mpifuse UCX crash of issue 27, as UCX prints it
    ("[node2:4711:0:4711] Caught signal 11 (Segmentation fault: address not mapped to object at address (nil))",
     "crash"),
    ("rank 3: Killed by signal 9", "crash"),
    ("mdtest exited with rc -6", "crash"),
    ("prterun: exit status 139", "crash"),
    ("srun: error: Node failure on node2", "lost_node"),
    ("job state NODE_FAIL", "lost_node"),
    ("node 3: server 10.10.0.4:11211 unreachable", "lost_node"),
    ("StackError: timed out after 60 s waiting for ceph health", "timeout"),
    ("inference: locust timed out (rc 124)", "timeout"),
    # mpifuse's own timeout: the measured event is the timeout; "or a lost rank" is a guess it offers
    ("timeout: open took more than 600 s on rank 3 (node node2): a hung file system or a lost rank", "timeout"),
    # a fault is the root cause of the timeouts and kills that follow it
    ("rank 1: Caught signal 11; rank 0: timeout: barrier took more than 60 s; Killed by signal 9", "crash"),
    # a timeout's kill comes after the timeout
    ("timed out after 30 s; killed (SIGKILL)", "timeout"),
    # a list of possibilities is not evidence of any of them: what the message states is a non-zero
    # exit (rawio.classify: a crash), not a lost node (rawio.classify on the whole text: lost_node)
    ("the job ended with exit status 1 before this use case finished "
     "(a lost rank, an MPI abort or a time limit; see results/mpifuse/log/x.log)", "crash"),
    ("node 1: mcbench exited 1: get: 12 of 1000 failed, first: SERVER HAS FAILED AND IS DISABLED", "crash"),
    ("hash mismatch on node 2", "error"),
    # what repro.rawio.write_failure appends to an overload's message
    ("mcbench: get timed out after 2 s [overload: load 29.00 on 2 CPUs (14.50 per CPU) at the failure, above "
     "the threshold of 1.5 per CPU]", "overload"),
    ("", "error"),
])
def test_failure_messages_are_classified(message, kind):
    assert failures.classify(message) == kind


def test_a_guess_in_a_message_is_not_read_as_what_happened():
    guess = ("the job ended with exit status 1 before this use case finished "
             "(a lost rank, an MPI abort or a time limit; see results/mpifuse/log/x.log)")
    assert rawio.classify(guess) == "lost_node"  # the whole text names "a lost rank"
    assert failures.classify(guess) == "crash"  # what it states: the job exited 1


def test_kind_of_prefers_the_record_and_turns_a_timeout_under_load_into_overload():
    busy, quiet = {"loadavg_1m": 9.0, "ncpu": 2}, {"loadavg_1m": 1.9, "ncpu": 2}
    assert failures.kind_of("lost_node", "hash mismatch") == "lost_node"  # the record's own kind wins
    assert failures.kind_of("", "hash mismatch") == "error"
    assert failures.kind_of("", "timed out after 3 s", busy) == "overload"
    assert failures.kind_of("timeout", "", json.dumps(busy)) == "overload"  # the tidy table's JSON text
    assert failures.kind_of("timeout", "", quiet) == "timeout"  # 0.95 per CPU: the job itself
    assert failures.kind_of("timeout", "", {"loadavg_1m": 3.0, "ncpu": 2}) == "timeout"  # 1.5: not above
    assert failures.kind_of("crash", "", busy) == "crash"  # a crash under load is still a crash
    assert failures.kind_of("", "x timed out", None) == "timeout"  # load not measured: not overload
    # Slurm's side of a failed job
    assert failures.slurm_kind("NODE_FAIL") == "lost_node"
    assert failures.slurm_kind("TIMEOUT") == "timeout"
    assert failures.slurm_kind("TIMEOUT", load=busy) == "overload"
    assert failures.slurm_kind("FAILED", "", "Caught signal 11") == "crash"
    assert failures.slurm_kind("OUT_OF_MEMORY", "lost_node") == "lost_node"
    assert failures.slurm_kind("OUT_OF_MEMORY") == "crash"
    assert failures.slurm_kind("FAILED") == "error"


# ------------------------------------------------------------------------------ failed runs
def _rec(rep: int, nodes: int = 2) -> dict:
    rec = rawio.new_record("demo", "exp", {"source": "home", "nodes": nodes}, rep, "real")
    rec["metrics"].append(rawio.metric("time", 1.5, "s", node=1))
    return rawio.finish(rec)


# (rep, message, failure_kind given to rawio.write_failure (None: an older record, written without
# failure_kind and failure_load), the load measured at the failure, host)
CASES = [
    (1, "[node2:1:0:1] Caught signal 11 (Segmentation fault: address not mapped to object)", "crash",
     {"loadavg_1m": 0.5, "ncpu": 2}, "node2"),
    (2, "srun: error: Node failure on node3", "lost_node", {"loadavg_1m": 0.2, "ncpu": 2}, "node3"),
    (3, "mcbench: get timed out after 2 s (12 of 1000 operations)", "timeout", {"loadavg_1m": 1.0, "ncpu": 2}, "node1"),
    # a timeout at 14.5 per CPU: rawio.write_failure itself records it as an overload
    (4, "mcbench: get timed out after 2 s (400 of 1000 operations)", "timeout", {"loadavg_1m": 29.0, "ncpu": 2},
     "node1"),
    (5, "hash mismatch on node 0: 4096 bytes read back differ from the source", None, None, "node0"),
    (6, "rank 2: Killed by signal 9", None, None, "node1"),
]
EXPECTED = {1: "crash", 2: "lost_node", 3: "timeout", 4: "overload", 5: "error", 6: "crash"}


def _write_cases(root: Path) -> list[Path]:
    paths = [root / "results/demo/raw/source~home/nodes~2/rep~0.json"]
    rawio.write_json_atomic(paths[0], _rec(0))
    for rep, why, kind, load, host in CASES:
        raw = root / f"results/demo/raw/source~home/nodes~2/rep~{rep}.json"
        rawio.write_failure(raw, {**_rec(rep), "host": host}, why, kind, load=load or {"loadavg_1m": 0.1, "ncpu": 2})
        if kind is None:  # an older record: written before failure_kind and failure_load existed
            fail = rawio.failure_path(raw)
            rec = rawio.read(fail)
            del rec["failure_kind"], rec["failure_load"]
            rawio.write_json_atomic(fail, rec)
        paths.append(raw)
    return paths


def _study(tmp_path: Path, meas: Path) -> report.Study:
    claims = tmp_path / "claims.csv"
    claims.write_text("study,claim_id,claim,paper_ref,target,output,kind,published,reproduced,unit,tolerance,"
                      "verdict,system_kind,note\ndemo,c1,x,ref,t,o,shape,1,,s,,failed,real,runs failed\n")
    return report.Study("demo", {"title": "Demo", "paper": "P", "enabled": True, "claims": str(claims),
                                 "measurements": [str(meas)], "figures": [], "tables": [], "benchmarks": []})


def test_failed_runs_are_told_apart_with_their_evidence(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    df = tidy.collect(_write_cases(tmp_path), "demo")
    meas = tidy.write_csv(df, tmp_path / "results/demo/measurements.csv")
    back = pd.read_csv(meas, dtype=str, keep_default_na=False)
    failed_rows = back[back.status == "failed"].set_index("rep")
    # tidy keeps the record's own kind and load, and leaves an older record's empty
    assert failed_rows.loc["4", "failure_kind"] == "overload"
    assert json.loads(failed_rows.loc["4", "failure_load"]) == {"loadavg_1m": 29.0, "ncpu": 2}
    assert failed_rows.loc["5", "failure_kind"] == "" and failed_rows.loc["5", "failure_load"] == ""
    assert set(back[back.status == "ok"].failure_kind) == {""}

    s = _study(tmp_path, meas)
    got = dict(zip(s.failed.rep.astype(int), s.failed.kind))
    assert got == EXPECTED
    assert dict(zip(s.failed.rep.astype(int), s.failed.kind_from)) == {
        1: "the record", 2: "the record", 3: "the record", 4: "the record", 5: "the message", 6: "the message"}
    row = s.failed[s.failed.rep == "4"].iloc[0]
    assert row.load == "29.0 on 2 CPUs (14.5 per CPU)" and row.node == "node1"
    assert row.configuration == "exp source=home, nodes=2"
    assert s.failed[s.failed.rep == "2"].iloc[0].load == "0.2 on 2 CPUs (0.1 per CPU)"
    assert s.failed[s.failed.rep == "5"].iloc[0].load == "not measured"

    class Args:
        title, scale, configfiles, outdir, rehearsal = "T", "local", "config/local.yaml", "paper", "nowhere"

    ctx = report.Context(Args)
    front = "\n".join(report.front_page(ctx, [s], s.claims, pd.DataFrame(), s.failed))
    section = front[front.index('<h2 id="failed">'):front.index('<h2 id="beside">')]
    assert "crash: 2, lost_node: 1, timeout: 1, overload: 1, error: 1" in section
    lines = re.findall(r"<tr><td><a href=\"demo.html#failed\">demo</a></td>.*?</tr>", section)
    assert len(lines) == 6  # one line per failed configuration, crashes first
    assert [re.search(r'<td class="(?:bad|info)">(\w+)<br>', ln).group(1) for ln in lines] == [
        "crash", "crash", "lost_node", "timeout", "overload", "error"]
    overload = next(ln for ln in lines if ">overload<" in ln)
    assert 'class="info"' in overload and "14.5 per CPU" in overload and "<td>node1</td>" in overload
    assert "400 of 1000 operations" in overload and "results/demo/failed/source~home/nodes~2/rep~4.json" in overload
    assert 'class="bad">crash<br>' in lines[0] and "Caught signal 11" in lines[0]
    page = "\n".join(report.study_page(ctx, s, [s]))
    assert page.count('<td class="bad">crash<br>') == 2 and '<h2 id="failed">' in page

    # a tidy table written before the kinds existed: every kind is read from the message (rep 4's message
    # says its overload: rawio.write_failure appended the load it measured)
    back.drop(columns=["failure_kind", "failure_load"]).to_csv(meas, index=False)
    old = _study(tmp_path, meas).failed
    assert dict(zip(old.rep.astype(int), old.kind)) == EXPECTED
    assert set(old.kind_from) == {"the message"}


# ---------------------------------------------------------------------------- rehearsal page
def _job(job_id, rule, wc, state, nodes, measured, records=(), checks=None):
    return {"job_id": str(job_id), "rule": rule, "wildcards": wc, "state": state, "exit_code": "0:0",
            "nodes_asked": len(nodes), "tasks_asked": len(nodes), "exclusive": True, "gres": "",
            "nodes": nodes, "records": list(records), "measured_nodes": sorted(measured),
            "measured_where": {n: f"{records[0] if records else 'x'}: extra.ranks[{i}].host"
                               for i, n in enumerate(sorted(measured))},
            "checks": checks or {"apart": {"ok": True, "evidence": "2 distinct node(s)"}}}


def _older_rehearsal(folder: Path, workdir: Path) -> None:
    """A summary and a study file as repro.rehearsal writes them before issue 27's new keys."""
    crash = "results/mpifuse/failed/source~home/nodes~3/size~100KB/rep~1.json"
    rec = _rec(1)
    rec.update(status="failed", failure="[node2:1:0:1] Caught signal 11 (Segmentation fault)")
    rawio.write_json_atomic(workdir / crash, rec)
    jobs = [
        _job(120, "mpifuse_run", "home_3_100KB_0", "COMPLETED", ["node0", "node1", "node2", "node3"],
             ["node0", "node1", "node2", "node3"], ["results/mpifuse/raw/source~home/rep~0.json"]),
        _job(121, "mpifuse_run", "home_3_100KB_1", "FAILED", ["node0", "node1", "node2", "node3"],
             ["node0", "node2"], [crash]),
        _job(122, "storage_limit_run", "ceph_1", "NODE_FAIL", ["node0", "node1", "node2", "node3"], []),
        _job(125, "storage_limit_run", "ceph_1", "COMPLETED", ["node0", "node1", "node2", "node3"],
             ["node0", "node1"], ["results/storage/raw/x.json"],
             {"asked_what_used": {"ok": False, "evidence": "asked 4 node(s), used 2"}}),
    ]
    study = {"study": "mpifuse", "jobs": jobs, "records": 3, "not_rehearsed": "",
             "checks": {"apart": {"ok": True, "evidence": "1 job(s) judged, all true"},
                        "asked_what_used": {"ok": False, "evidence": ["job 125 (storage_limit_run): asked 4, used 2"]},
                        "raw_complete": {"ok": None, "evidence": "nothing to judge"}},
             "target": "mpifuse", "loadavg_end": "4.10 3.00 2.00", "log": "results/rehearsal/mpifuse.log"}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mpifuse.json").write_text(json.dumps(study))
    summary = {"cluster": {"nodes": ["node0", "node1", "node2", "node3"], "up_s": 12.5}, "workdir": str(workdir),
               "overlay": ["config/rehearsal.yaml"], "not_rehearsed": [], "loadavg_start": "0.50 0.40 0.30",
               "studies": {
                   "mpifuse": {"seconds": 527.0, "images_s": 335.0, "snakemake_rc": 1, "jobs": 4, "records": 3,
                               "checks": {"apart": True, "asked_what_used": False, "raw_complete": None},
                               "not_rehearsed": "", "containers": True, "overlay": ["config/rehearsal.yaml"],
                               "when": "2026-11-28T10:08:47Z"},
                   # a study with no file of its own (e.g. written by an older rehearsal and since deleted)
                   "tco": {"seconds": 71, "images_s": 0, "snakemake_rc": 0, "jobs": 1, "records": 1,
                           "checks": {"raw_complete": True}, "when": "2026-11-28T10:10:00Z"}},
               "seconds": 600.0, "loadavg_end": "4.10 3.00 2.00", "all_true": False}
    (folder / "summary.json").write_text(json.dumps(summary))


def test_rehearsal_page_without_a_rehearsal_says_so_and_gives_the_command(tmp_path):
    html = "\n".join(report_rehearsal.body(tmp_path / "results/rehearsal"))
    assert "No rehearsal was run here" in html and "<code>./repro rehearse</code>" in html
    assert "summary.json" in html
    assert "./repro rehearse" in report_rehearsal.summary_line(tmp_path / "results/rehearsal")


def test_rehearsal_page_from_an_older_summary(tmp_path):
    folder = tmp_path / "results/rehearsal"
    _older_rehearsal(folder, tmp_path / "work")
    html = "\n".join(report_rehearsal.body(folder))
    assert "2026-11-28 10:00 – 2026-11-28 10:10 UTC" in html  # first start (10:08:47 - 527 s) to last end
    assert "<b>Code:</b> not recorded" in html  # no git key in an older summary
    assert "node0, node1, node2, node3" in html and "600 s (10.0 min)" in html
    assert "527 s (8.8 min)" in html and "335 s (5.6 min)" in html
    # each check with its verdict and evidence (tco: the summary's verdict, its evidence not recorded)
    assert '<td>asked_what_used</td><td class="bad">false</td><td class="long">job 125 (storage_limit_run): ' \
           "asked 4, used 2</td>" in html
    assert '<td>raw_complete</td><td class="missing">not judged</td>' in html
    tco = html[html.index('<h2 id="tco">'):]
    assert '<td>raw_complete</td><td class="ok">true</td><td class="long">not recorded</td>' in tco
    assert "per job: not recorded" in tco and "<b>Not rehearsed:</b> not recorded" in tco
    # sides: not recorded per side, the study as a whole from its images
    assert "per side not recorded; the study as a whole: every side from its image" in html
    # failed jobs: the FAILED one takes its failure record's kind (read from the working copy), the
    # NODE_FAIL one is a lost node, re-run and completed by job 125
    fj = report_rehearsal.failed_jobs(report_rehearsal.load(folder)["studies"]["mpifuse"], str(tmp_path / "work"))
    assert dict(zip(fj.job, fj.kind)) == {"121": "crash", "122": "lost_node"}
    assert "Caught signal 11" in fj.set_index("job").loc["121", "evidence"]
    assert fj.set_index("job").loc["122", "evidence"] == "Slurm: NODE_FAIL (re-run: job 125 completed)"
    # the jobs: nodes asked and measured, where each side ran, the false checks
    assert "<td>4: node0, node1, node2, node3</td><td>2: node0, node2</td>" in html
    assert "node0 (extra.ranks[0].host), node2 (extra.ranks[1].host)" in html
    assert "<td>asked_what_used</td></tr>" in html
    line = report_rehearsal.summary_line(folder)
    assert line.startswith("2 studies, 1 check(s) false, 2 failed job(s);")


def test_rehearsal_page_with_the_new_keys(tmp_path):
    folder = tmp_path / "results/rehearsal"
    _older_rehearsal(folder, tmp_path / "work")
    s = json.loads((folder / "summary.json").read_text())
    s["git"] = {"commit": "f5817d4abc", "tree": "9e1c0ffee", "dirty": True, "source": "copy of /work/main (git)"}
    s["started_at"] = "2026-11-28T09:30:00Z"
    s["studies"]["mpifuse"]["sides"] = {"mpifuse.sif": "image", "homefs": "host build: its image fetches from "
                                                                          "github.com"}
    s["studies"]["mpifuse"]["failed_jobs"] = [
        {"job_id": "121", "rule": "mpifuse_run", "wildcards": "home_3_100KB_1", "state": "FAILED",
         "exit_code": "1:0", "kind": "crash", "evidence": "rank 2 on node2: Caught signal 11"},
        {"job_id": "130", "rule": "memfs_limit_run", "wildcards": "IPoIB_3_1", "state": "TIMEOUT",
         "exit_code": "0:15", "kind": "", "evidence": ["Slurm: TIMEOUT exit 0:15 on ['node0']", "DUE TO TIME LIMIT"],
         "completed_later_by": "131"}]
    (folder / "summary.json").write_text(json.dumps(s))
    html = "\n".join(report_rehearsal.body(folder))
    assert ("commit <code>f5817d4abc</code>, working tree <code>9e1c0ffee</code> (with uncommitted changes); "
            "named by: copy of /work/main (git)") in html
    assert "<b>When:</b> 2026-11-28 09:30 – 2026-11-28 10:10 UTC" in html  # from its started_at
    assert '<td>mpifuse.sif</td><td class="ok">image</td>' in html
    assert '<td>homefs</td><td class="info">host build: its image fetches from github.com</td>' in html
    fj = report_rehearsal.failed_jobs(report_rehearsal.load(folder)["studies"]["mpifuse"], "")
    assert dict(zip(fj.job, fj.kind)) == {"121": "crash", "130": "timeout"}
    assert fj.set_index("job").loc["130", "evidence"] == ("Slurm: TIMEOUT exit 0:15 on ['node0']; DUE TO TIME LIMIT "
                                                          "(re-run: job 131 completed)")
    assert "rank 2 on node2: Caught signal 11" in html


def _report(tmp_path: Path, monkeypatch, rehearsal: Path, njobs: int = 0) -> Path:
    monkeypatch.chdir(tmp_path)
    meas = tidy.write_csv(tidy.collect(_write_cases(tmp_path), "demo"), tmp_path / "results/demo/measurements.csv")
    st = {"title": "Demo", "paper": "P", "enabled": True, "claims": str(_study(tmp_path, meas).st["claims"]),
          "measurements": [str(meas)], "figures": [], "tables": [], "benchmarks": []}
    if njobs:  # many jobs with long wildcards: the jobs table is cut to MAX_ROWS and stays within the page
        d = json.loads((rehearsal / "mpifuse.json").read_text())
        d["jobs"] += [_job(200 + i, "memfs_envelope_run", f"1GbE_memfs_3_1MiB_{i}_with_a_long_wildcard_value",
                           "COMPLETED", [f"node{k}" for k in range(4)], [f"node{k}" for k in range(4)],
                           [f"results/memfs/raw/network~1GbE/system~memfs/rep~{i}.json"]) for i in range(njobs)]
        (rehearsal / "mpifuse.json").write_text(json.dumps(d))
    monkeypatch.setattr(sys, "argv", ["report", "--studies", json.dumps({"demo": st}), "--scale", "local",
                                      "--outdir", "paper", "--claims", "paper/claims.csv",
                                      "--rehearsal", str(rehearsal)])
    report.main()
    return tmp_path / "paper"


def test_the_report_writes_the_rehearsal_page_links_it_and_prints_it(tmp_path, monkeypatch):
    paper = _report(tmp_path, monkeypatch, tmp_path / "no-rehearsal")
    page = (paper / "rehearsal.html").read_text()
    assert "No rehearsal was run here" in page and '<a href="rehearsal.html"><b>cluster rehearsal</b></a>' in page
    front = (paper / "index.html").read_text()
    assert '<a href="rehearsal.html">cluster rehearsal</a>' in front  # the navigation
    assert '<li><a href="rehearsal.html">The cluster path, rehearsed</a>: not run on this machine' in front
    assert '<a href="rehearsal.html">cluster rehearsal</a>' in (paper / "demo.html").read_text()
    printed = (paper / "print.html").read_text()
    assert printed.count("No rehearsal was run here") == 1 and printed.count('<h2 id="failed">') == 2


@needs_browser
def test_render_check_passes_the_rehearsal_page_and_the_failed_list(tmp_path, monkeypatch):
    folder = tmp_path / "results/rehearsal"
    _older_rehearsal(folder, tmp_path / "work")
    paper = _report(tmp_path, monkeypatch, folder, njobs=60)
    page = (paper / "rehearsal.html").read_text()
    assert f"{report.MAX_ROWS} of 64 jobs (those with a problem first)" in page
    assert page.index(">122</td>") < page.index(">120</td>")  # the NODE_FAIL job before a sound one
    rc = report_check.main(["--dir", str(paper), "--studies", "demo", "--out", str(tmp_path / "check.json"),
                            "--screenshots", str(tmp_path / "shots")])
    res = json.loads((tmp_path / "check.json").read_text())
    assert rc == 0, res["problems"]
    assert {"index.html", "demo.html", "rehearsal.html"} <= {p["page"] for p in res["pages"]}  # (and other pages)
    reh = next(p for p in res["pages"] if p["page"] == "rehearsal.html")
    assert reh["tables"] == 5 and not reh["wide"]  # studies; mpifuse: checks, failed jobs, jobs; tco: checks
    # the same pages in the PDF (print.html): nothing runs off an A4 page
    weasyprint = pytest.importorskip("weasyprint")
    weasyprint.HTML(filename=str(paper / "print.html")).write_pdf(str(tmp_path / "report.pdf"))
    pdf = report_check.check_pdf(tmp_path / "report.pdf")
    assert [p for p in pdf if "pdf_page" in p] == [] and pdf[-1]["pdf_pages"] >= 4


def test_the_retry_policy_the_failed_list_cites_holds():
    """The failed list points to workflow/README.md's "Failures and retries": every kind has its row
    there, and no profile retries a failed job (Snakemake's retries would retry a crash too)."""
    import yaml
    from repro.testing import REPO

    readme = (REPO / "workflow/README.md").read_text()
    section = readme[readme.index("### Failures and retries"):readme.index("## Aggregation")]
    assert all(f"| `{k}`" in section for k in failures.KINDS)
    assert re.search(r"\| `crash` \([^|]*\) \| the code's \| \*\*never\*\*", section)
    for profile in ("slurm", "local"):
        cfg = yaml.safe_load((REPO / "profiles" / profile / "config.yaml").read_text())
        assert cfg.get("retries", 0) == 0, profile
        assert not cfg.get("slurm-requeue"), profile  # opt-in for a site; it requeues lost nodes only


def test_rehearsal_page_from_what_repro_rehearsal_judges(tmp_path):
    """The study file as repro.rehearsal.judge_study writes it (not a hand-made fixture): the crashed
    job shows as a crash with its record's message, both jobs with the nodes asked and measured."""
    from repro import rehearsal as rh

    names = {f"node{i}" for i in range(4)}
    base = ("JobId={id} JobName=x UserId=root(0) JobState={state} Reason=None ExitCode={code} NodeList={nl} "
            "NumNodes={n} NumCPUs=8 NumTasks={n} OverSubscribe=NO WorkDir=/var/tmp/w/repro "
            "Comment=rule_smoke_run_wildcards_{wc} TresPerNode=")
    jobs = [rh.parse_job_line(base.format(id=19, state="COMPLETED", code="0:0", nl="node[0-3]", n=4, wc=3)),
            rh.parse_job_line(base.format(id=20, state="FAILED", code="1:0", nl="node[0-1]", n=2, wc=1))]
    ws = tmp_path / "work"

    def ranks(nodes, job_id):
        return {"ranks": [{"rank": i, "node": n, "host": n, "slurm_job_id": job_id} for i, n in enumerate(nodes)]}

    rawio.write_json_atomic(ws / "results/smoke/raw/nodes~3/rep~0.json",
                            {"status": "ok", "host": "node0", "extra": ranks(sorted(names), "19")})
    rawio.write_json_atomic(ws / "results/smoke/failed/nodes~1/rep~0.json",
                            {"status": "failed", "host": "node1", "failure_kind": "crash",
                             "failure": "rank 1 on node1: Caught signal 11 (Segmentation fault)",
                             "extra": ranks(["node0", "node1"], "20")})
    res = rh.judge_study(ws, "smoke", jobs, names, dry_run_clean=True)
    folder = tmp_path / "results/rehearsal"
    folder.mkdir(parents=True)
    (folder / "smoke.json").write_text(json.dumps(res))
    (folder / "summary.json").write_text(json.dumps({"workdir": str(ws), "studies": {"smoke": {
        "seconds": 36.0, "images_s": 0.0, "snakemake_rc": 1, "jobs": len(res["jobs"]), "records": res["records"],
        "checks": {k: v["ok"] for k, v in res["checks"].items()}, "failed_jobs": res["failed_jobs"],
        "not_rehearsed": res["not_rehearsed"], "when": "2026-11-28T12:00:00Z"}}}))
    html = "\n".join(report_rehearsal.body(folder))
    fj = report_rehearsal.failed_jobs(report_rehearsal.load(folder)["studies"]["smoke"], str(ws))
    assert fj.job.tolist() == ["20"] and fj.kind.tolist() == ["crash"]
    assert "Caught signal 11" in fj.evidence.iloc[0]
    assert '<td>raw_complete</td><td class="bad">false</td>' in html
    assert "failure record results/smoke/failed/nodes~1/rep~0.json" in html
    assert "<td>4: node0, node1, node2, node3</td><td>4: node0, node1, node2, node3</td>" in html
    assert "<td>2: node0, node1</td><td>2: node0, node1</td>" in html
    assert "node0 (extra.ranks[0].node), node1 (host)" in html  # the key each node was measured under


def test_a_malformed_rehearsal_summary_is_said_so_never_a_crash(tmp_path):
    folder = tmp_path / "results/rehearsal"
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text('{"studies": {"mpifuse": {"seconds": 5')  # cut off mid-write
    html = "\n".join(report_rehearsal.body(folder))
    assert "cannot be read" in html and "No rehearsal was run" not in html
    assert report_rehearsal.summary_line(folder) == "its summary cannot be read"
    # odd types where dicts and lists are expected: shown as far as they go, "not recorded" for the rest
    (folder / "summary.json").write_text(json.dumps({"studies": {"junk": "x", "odd": {"checks": [1, 2], "jobs": 3}},
                                                     "cluster": "node0", "git": "abc"}))
    (folder / "odd.json").write_text(json.dumps({"jobs": [{"job_id": "5", "nodes": "node0", "checks": None,
                                                           "measured_where": "node0"}, "not a job"]}))
    html = "\n".join(report_rehearsal.body(folder))
    assert '<h2 id="odd">odd</h2>' in html and 'id="junk"' not in html
    assert "<td>?: node0</td>" in html and "<b>Code:</b> not recorded" in html  # nodes_asked not recorded
    assert report_rehearsal.summary_line(folder).startswith("1 studies, checks not recorded, 0 failed job(s)")
