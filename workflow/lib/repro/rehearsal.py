"""The rehearsal: each study's paper-scale path (``profiles/slurm`` + ``config/config.yaml``) run on
the multi-host cluster of this machine with ``config/rehearsal.yaml`` (sizes shrunk, code paths
kept), and checked from what Slurm and the raw records say.

    ./repro rehearse [STUDY...]        # default: every study (repro.config.study_names: the registry)
    python -m repro.rehearsal --analyze WORKDIR STUDY...   # only the checks, on a finished run

It brings the cluster up (``multihost-cluster.sh up``), copies the project into a shared working
directory (the nodes' /tmp is their own), runs ``snakemake <study> --profile profiles/slurm
--configfile config/config.yaml config/rehearsal.yaml`` there, and writes
``results/rehearsal/<study>.json`` and ``results/rehearsal/summary.json``: per Slurm job the nodes
and tasks asked for and the nodes used, the placement each raw record measured, and the checks,
each ``{"ok": bool | None, "evidence": ...}`` (``None``: nothing to judge, said why):

* ``apart``: an n+1 job's records ran on as many distinct nodes as the job holds (driver and system
  sides apart, the system side spread over the system nodes), all of them the job's own;
* ``no_loopback``: no address a multi-node job's record names (a service bound or connected to) is
  loopback;
* ``raw_complete``: every output the plan expects exists (``snakemake -n`` has nothing left to do)
  and no failure record is left;
* ``claims_computed``: every claim has a verdict, and a ``not run`` one says why;
* ``asked_what_used``: the job asked Slurm for the nodes it used, ``--exclusive`` for a benchmark,
  at least as many tasks as ranks, the GPUs the study's configuration asks for.

The checks read only what the run wrote (scontrol's job records, the raw JSON files, the claims
CSV); the test (tests/test_rehearsal.py) feeds them contradicting data and sees them fail.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import fcntl
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "workflow" / "scripts" / "slurm" / "multihost-cluster.sh"
MH_DIR = Path(os.environ.get("REPRO_MH_DIR", "/var/tmp/repro-slurm-mh"))
WORK = Path(os.environ.get("REPRO_REHEARSAL_DIR", "/var/tmp/repro-rehearsal"))
LOCK = Path("/var/tmp/repro-slurm-mh.lock")
# The engine knows no study by name: the studies are the registry's (every study folder), and what
# the rehearsal needs to know of one -- what of it cannot run here (Study.not_rehearsed), its section's
# overlay without containers (Study.no_containers), the GPUs its section asks for (<study>.slurm.gres),
# the rules that build its images (the image jobs of its plan) -- comes from its declaration, its
# configuration or its plan.


def studies() -> list[str]:
    """Every study, in the registry's order (repro.config.study_names: the study folders)."""
    from repro import config as rconfig

    return rconfig.study_names()


def declaration(study: str):
    """The study's declaration (repro.study.Study), or None (a study without one, or one that fails to load)."""
    from repro import study as rstudy

    try:
        return rstudy.declared(study)
    except Exception:  # noqa: BLE001 -- the rehearsal then knows nothing more of it
        return None


def not_rehearsed(study: str) -> str:
    """What of the study cannot run on this machine's cluster (its declaration's not_rehearsed)."""
    decl = declaration(study)
    return decl.not_rehearsed if decl is not None else ""


# what a record stores as the plan (repro.allocation's as_dict(), a layout's plan): evidence of
# where a side was meant to run, never of where it ran, so the placement checks do not read it
PLANNED_KEYS = {"allocation", "plan", "planned"}
NODE_KEYS = {"node", "slurm_node", "nodename", "driver_node", "server_node", "system_node"}
HOST_KEYS = {"host", "hostname", "driver_host", "server_host"}
PLACE_KEY = re.compile(r"node|host")  # slurm_nodes[i], system_hosts[i], ...: a cluster node's name under it
LOOPBACK = re.compile(r"\b(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost)\b")
ADDR_KEY = re.compile(r"(addr|address|bind|listen|url|endpoint|server|peer|connect|host|ip)s?$", re.I)


# ------------------------------------------------------------------------------ Slurm's side
def parse_job_line(line: str) -> dict:
    f = dict(re.findall(r"(?:^|\s)([A-Za-z:/_]+)=(\S*)", line))
    m = re.match(r"rule_(.+?)_wildcards_(.*)$", f.get("Comment", ""))
    if m:
        rule, wc = m.group(1), m.group(2)
    else:
        rule, wc = f.get("Comment", "").removeprefix("rule_") or f.get("JobName", ""), ""
    tres = f.get("TresPerNode", "")
    return {"job_id": f.get("JobId", ""), "rule": rule, "wildcards": wc, "state": f.get("JobState", ""),
            "exit_code": f.get("ExitCode", ""), "nodelist": f.get("NodeList", ""),
            "nodes_asked": int(f.get("NumNodes", "0").split("-")[0] or 0),
            "tasks_asked": int(f.get("NumTasks", "0") or 0), "cpus": int(f.get("NumCPUs", "0") or 0),
            "exclusive": f.get("OverSubscribe", "").upper() in ("NO", "EXCLUSIVE", "USER", "MCS"),
            "gres": re.sub(r"^gres[/:]", "", tres) if tres not in ("", "(null)", "N/A") else "",
            "workdir": f.get("WorkDir", ""), "reason": f.get("Reason", "")}


def expand_nodelist(text: str) -> list[str]:
    """node[0-2,5] -> node0 node1 node2 node5 (what ``scontrol show hostnames`` does)."""
    out = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]+)\])?", text):
        base, rng = m.group(1), m.group(2)
        if not rng:
            out.append(base)
            continue
        for part in rng.split(","):
            if "-" in part:
                a, b = part.split("-")
                out += [f"{base}{i:0{len(a)}d}" for i in range(int(a), int(b) + 1)]
            else:
                out.append(base + part)
    return [n for n in out if n and n not in ("(null)", "None")]


def slurm_jobs(workdir: Path, env: dict | None = None) -> list[dict]:
    """Every job that ran in ``workdir``: what Slurm still knows (MinJobAge keeps finished jobs
    for 10 min) merged into ``workdir/.rehearsal-jobs.json``, which keeps them for a resumed run."""
    r = subprocess.run(["scontrol", "show", "job", "-o"], capture_output=True, text=True, env=env)
    jobs = [parse_job_line(line) for line in r.stdout.splitlines() if line.startswith("JobId=")]
    wd = str(workdir.resolve())
    try:  # a fresh working copy at the same path: only the jobs submitted since it was made
        since = int((workdir / ".rehearsal-since").read_text())
    except (OSError, ValueError):
        since = 0
    mine = {j["job_id"]: j for j in jobs if (j["workdir"] == wd or j["workdir"].startswith(wd + "/"))
            and j["job_id"].isdigit() and int(j["job_id"]) >= since}
    store = workdir / ".rehearsal-jobs.json"
    try:
        kept = {j["job_id"]: j for j in json.loads(store.read_text())}
    except (OSError, ValueError):
        kept = {}
    kept.update(mine)
    try:
        store.write_text(json.dumps(list(kept.values())))
    except OSError:
        pass
    return sorted(kept.values(), key=lambda j: int(j["job_id"]) if j["job_id"].isdigit() else 0)


# ------------------------------------------------------------------------ the records' side
def _walk(obj, path=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, f"{path}.{k}" if path else str(k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _walk(v, f"{path}[{i}]")
    else:
        yield path, obj


def measured_placement(rec: dict, node_names: set[str]) -> dict:
    """Where a raw record says its sides ran: the cluster nodes named under node/host keys (with
    the key path as evidence; never under a planned allocation's keys), the job ids it names, and
    every loopback address under an address-like key (a service bound to or reached at loopback)."""
    nodes: dict[str, list[str]] = {}
    job_ids, loopback = set(), []
    for path, v in _walk(rec):
        key = re.sub(r"\[\d+\]$", "", path).rsplit(".", 1)[-1].lower()
        planned = PLANNED_KEYS & {re.sub(r"\[\d+\]$", "", seg).lower() for seg in path.split(".")[:-1]}
        if (isinstance(v, str) and v in node_names and not planned
                and (key in NODE_KEYS or key in HOST_KEYS or PLACE_KEY.search(key))):
            nodes.setdefault(v, []).append(path)
        if key in ("slurm_job_id", "job_id") and v not in (None, ""):
            job_ids.add(str(v))
        if isinstance(v, str) and ADDR_KEY.search(key) and LOOPBACK.search(v):
            loopback.append(f"{path}={v}")
    return {"nodes": sorted(nodes), "where": {n: p[:4] for n, p in nodes.items()}, "job_ids": sorted(job_ids),
            "loopback": loopback[:20]}


def raw_records(ws: Path, study: str) -> list[tuple[str, dict]]:
    out = []
    for sub in ("raw", "failed"):
        for p in sorted((ws / "results" / study / sub).rglob("*.json")):
            try:
                rec = json.loads(p.read_text())
            except (OSError, ValueError):
                rec = {"status": "unreadable"}
            # a raw record (repro.rawio) has a schema or a status; a tool's own output kept beside
            # it (COSBench's rep~0.out/summary.json) is not one
            if isinstance(rec, dict) and (str(rec.get("schema", "")).startswith("repro.raw")
                                          or ("schema" not in rec and "status" in rec)):
                out.append((str(p.relative_to(ws)), rec))
    return out


def _path_values(relpath: str) -> list[str]:
    return [seg.split("~", 1)[1].removesuffix(".json") for seg in Path(relpath).parts if "~" in seg]


def match_job(relpath: str, rec: dict, jobs: list[dict], node_names: set[str]) -> dict | None:
    """The Slurm job that wrote a record: the job id the record names, else the newest job of the
    study whose wildcards (Snakemake's Comment) hold every key~value of the record's path."""
    ids = set(measured_placement(rec, node_names)["job_ids"])
    for j in jobs:
        if j["job_id"] in ids:
            return j
    vals = _path_values(relpath)
    study = Path(relpath).parts[1]
    if not vals:  # a study with one raw file and no wildcards (the cost models: raw/model.json)
        runs = [j for j in jobs if j["rule"] == f"{study}_run" and not j["wildcards"]]
        return max(runs, key=lambda j: int(j["job_id"])) if runs else None
    # Snakemake's Comment joins the rule's wildcard values with "_"; a record's path may hold more
    # key~value parts than the rule's wildcards (one job writing a file per variant): a job matches
    # when its wildcards are the "_"-join of an in-order subsequence of the path's values
    joins = {"_".join(c) for r in range(1, len(vals) + 1) for c in itertools.combinations(vals, r)}
    cands = [j for j in jobs if j["rule"].startswith(study + "_") and j["wildcards"] in joins]
    # several rules whose wildcards fit: the rule the path names (experiment~ceiling, raw/envelope/...),
    # then the most specific wildcards (IPoIB_<system>_1_0 before IPoIB_1_0)
    words = set(vals) | {p for p in Path(relpath).parts[3:] if "~" not in p}  # after results/<study>/raw/
    named = [j for j in cands if j["rule"].removeprefix(study + "_") in words
             or j["rule"].removeprefix(study + "_").split("_")[0] in words]
    cands = named or cands
    if cands:
        longest = max(len(j["wildcards"]) for j in cands)
        cands = [j for j in cands if len(j["wildcards"]) == longest]
    if len(cands) > 1:  # the same job run twice (a failure, then a resume): the one whose nodes the record names
        used = set(measured_placement(rec, node_names)["nodes"])
        fitting = [j for j in cands if used and used <= set(expand_nodelist(j["nodelist"]))]
        cands = fitting or cands
    return max(cands, key=lambda j: int(j["job_id"])) if cands else None


def check(ok, evidence) -> dict:
    return {"ok": ok, "evidence": evidence}


def judge_job(job: dict, recs: list[tuple[str, dict]], node_names: set[str], gres_wanted: str = "") -> dict:
    """The placement checks of one Slurm job from its records."""
    asked = expand_nodelist(job["nodelist"])
    used: set[str] = set()
    loop, where, ranks = [], {}, 0
    for relpath, rec in recs:
        m = measured_placement(rec, node_names)
        used |= set(m["nodes"])
        loop += [f"{relpath}: {x}" for x in m["loopback"]]
        for n, p in m["where"].items():
            where.setdefault(n, f"{relpath}: {p[0]}")
        rk = (rec.get("extra") or {}).get("ranks") if isinstance(rec.get("extra"), dict) else None
        ranks = max(ranks, len(rk) if isinstance(rk, list) else rk if isinstance(rk, int) else 0)
    multi = job["nodes_asked"] >= 2
    out = {"job_id": job["job_id"], "rule": job["rule"], "wildcards": job["wildcards"], "state": job["state"],
           "exit_code": job["exit_code"], "nodes_asked": job["nodes_asked"], "tasks_asked": job["tasks_asked"],
           "exclusive": job["exclusive"], "gres": job["gres"], "nodes": asked, "records": [r for r, _ in recs],
           "measured_nodes": sorted(used), "measured_where": where, "checks": {}}
    c = out["checks"]
    if not recs:
        c["apart"] = check(None, "no raw record names this job")
    elif not used:
        c["apart"] = check(False if multi else None,
                           "the records name no node of the cluster (placement not measured)")
    else:
        foreign = sorted(used - set(asked))
        if foreign:
            c["apart"] = check(False, f"records name nodes outside the job's allocation {asked}: {foreign}")
        elif multi:
            ok = len(used) == len(asked)
            c["apart"] = check(ok, f"{len(used)} distinct node(s) measured of {len(asked)} asked: {sorted(used)}"
                               + ("" if ok else f"; never used: {sorted(set(asked) - used)}"))
        else:
            c["apart"] = check(None, "a one-node job (driver and system share it by configuration)")
    if multi and recs:
        c["no_loopback"] = check(not loop, loop[:10] or "no address-like field names loopback")
    else:
        c["no_loopback"] = check(None, "one node or no record: loopback is that host")
    problems = []
    if recs and used and len(used) != job["nodes_asked"]:
        problems.append(f"asked {job['nodes_asked']} node(s), used {len(used)}")
    if multi and not job["exclusive"]:
        problems.append("a multi-node benchmark job without --exclusive")
    if ranks and job["tasks_asked"] < ranks:
        problems.append(f"{ranks} ranks but {job['tasks_asked']} tasks asked")
    if gres_wanted and gres_wanted not in job["gres"]:
        problems.append(f"the study asks --gres {gres_wanted}, the job got '{job['gres'] or 'none'}'")
    c["asked_what_used"] = check(not problems if recs else None, problems or (
        f"{job['nodes_asked']} node(s), {job['tasks_asked']} task(s), exclusive={job['exclusive']}, "
        f"gres={job['gres'] or 'none'}" if recs else "no raw record to compare with"))
    return out


def claims_check(ws: Path, study: str) -> dict:
    files = sorted((ws / "results" / study).glob("claims*.csv"))
    if not files:
        return check(None, f"no results/{study}/claims*.csv (the study has no claims or did not get that far)")
    bad, n = [], 0
    for f in files:
        with open(f, newline="") as fh:
            for row in csv.DictReader(fh):
                n += 1
                v = (row.get("verdict") or "").strip()
                if not v:
                    bad.append(f"{row.get('claim_id')}: no verdict")
                elif v == "not run" and not (row.get("note") or "").strip() and \
                        not re.sub(r"^\s*not run\W*", "", row.get("reproduced") or "").strip():
                    bad.append(f"{row.get('claim_id')}: 'not run' without saying why (no note, no reason)")
    return check(not bad and n > 0, bad[:10] or f"{n} claims in {[str(f.relative_to(ws)) for f in files]}, "
                 "each with a verdict")


def judge_study(ws: Path, study: str, jobs: list[dict], node_names: set[str], *, dry_run_clean: bool | None,
                gres_wanted: str = "") -> dict:
    recs = raw_records(ws, study)
    by_job: dict[str, list] = {}
    unmatched = []
    for relpath, rec in recs:
        j = match_job(relpath, rec, jobs, node_names)
        if j is None:
            unmatched.append(relpath)
        else:
            by_job.setdefault(j["job_id"], []).append((relpath, rec))
    study_jobs = [j for j in jobs if j["rule"] == study or j["rule"].startswith(study + "_")]
    judged = [judge_job(j, by_job.get(j["job_id"], []), node_names, gres_wanted if j["nodes_asked"] >= 2 else "")
              for j in sorted(study_jobs, key=lambda j: int(j["job_id"]))]
    failed_recs = [r for r, rec in recs if "/failed/" in f"/{r}" or rec.get("status") not in ("ok", None)]
    checks = {}
    for name in ("apart", "no_loopback", "asked_what_used"):
        vals = [(j["job_id"], j["rule"], j["checks"][name]) for j in judged]
        judged_vals = [v for v in vals if v[2]["ok"] is not None]
        if not judged_vals:
            checks[name] = check(None, "no multi-node job with records to judge")
        else:
            bad = [f"job {i} ({r}): {c['evidence']}" for i, r, c in judged_vals if not c["ok"]]
            checks[name] = check(not bad, bad[:10] or f"{len(judged_vals)} job(s) judged, all true")
    if unmatched:
        checks["records_matched"] = check(False, f"records no Slurm job of this run wrote: {unmatched[:10]}")
    # a failed job whose rule and wildcards a later job completed (a resumed run) no longer counts
    done = {}
    for j in judged:
        if j["state"] == "COMPLETED":
            key = (j["rule"], j["wildcards"])
            done[key] = max(done.get(key, 0), int(j["job_id"]))
    slurm_failed = [f"job {j['job_id']} ({j['rule']} {j['wildcards']}): {j['state']} {j['exit_code']}"
                    for j in judged if j["state"] not in ("COMPLETED", "RUNNING", "PENDING")
                    and done.get((j["rule"], j["wildcards"]), 0) < int(j["job_id"])]
    failed_jobs = [job_failure(j, by_job.get(j["job_id"], []), done, job_log_tail(ws, j)) for j in judged
                   if j["state"] not in ("COMPLETED", "RUNNING", "PENDING")]
    ev = []
    if dry_run_clean is False:
        ev.append("snakemake -n still has jobs to run (outputs missing)")
    ev += [f"failure record {r}" for r in failed_recs[:10]] + slurm_failed[:10]
    ok = dry_run_clean is not False and not failed_recs and not slurm_failed
    checks["raw_complete"] = check(ok, ev or f"{len(recs)} raw record(s), snakemake -n has nothing left to do")
    checks["claims_computed"] = claims_check(ws, study)
    return {"study": study, "jobs": judged, "checks": checks, "records": len(recs), "failed_jobs": failed_jobs,
            "not_rehearsed": not_rehearsed(study)}


def job_log_tail(ws: Path, job: dict, chars: int = 1500) -> str:
    """For a failed job that wrote no failure record: the tail of the rule's own log (the `log:` its
    Slurm log names; the job's error is there), else of the Slurm log itself; "" when neither exists."""
    slurm_logs = sorted((ws / ".snakemake" / "slurm_logs").glob(f"rule_{job['rule']}/**/{job['job_id']}.log"))
    if not slurm_logs:
        return ""
    text = slurm_logs[0].read_text(errors="replace")
    for m in re.finditer(r"^\s+log: (\S+)", text, re.M):
        rule_log = ws / m.group(1)
        if rule_log.is_file() and rule_log.stat().st_size:
            tail = rule_log.read_text(errors="replace")[-chars:]
            return f"{m.group(1)}: ...{tail.strip()}" if tail.strip() else ""
    return f"{slurm_logs[0].relative_to(ws)}: ...{text[-chars:].strip()}"


def job_failure(job: dict, recs: list[tuple[str, dict]], done: dict, log_tail: str = "") -> dict:
    """One failed Slurm job, told apart (issue 27): ``lost_node`` (Slurm's NODE_FAIL, or a record
    that lost a rank or node), ``timeout`` / ``overload`` (past its limit; overloaded when the load
    per CPU measured at the failure was high), ``crash`` (a process died or a tool exited non-zero)
    or ``error``; with the evidence: the failure records' own kind and message, Slurm's state and
    exit code, the nodes; and whether a later job of the same rule and wildcards completed it. A job
    that wrote no failure record is told by its log's tail (``log_tail``: its error is there), never
    by an empty reason."""
    from repro import failures as rfail

    failures = [(r, rec) for r, rec in recs if rec.get("status") == "failed"]
    # one decision for the report and the rehearsal (repro.failures): the record's own kind, else its
    # message's (a clause that only lists guesses is not evidence)
    kinds = [rfail.kind_of(rec.get("failure_kind"), str(rec.get("failure") or ""), rec.get("failure_load"))
             for _, rec in failures]
    state = job["state"]
    if kinds and state not in rfail.SLURM_KINDS:  # the worst the records say: a lost node explains its crashes
        worst = next(k for k in ("lost_node", "crash", "overload", "timeout", "error") if k in kinds)
        kind = rfail.slurm_kind(state, worst)
    else:
        code = job.get("exit_code", "")
        sig = code.split(":", 1)[1] if ":" in code else "0"
        kind = rfail.slurm_kind(state, rfail.classify(log_tail) if log_tail and not failures else "")
        if state not in rfail.SLURM_KINDS and sig not in ("0", ""):  # Slurm says a signal ended it
            kind = "crash"
    evidence = [f"Slurm: {state} exit {job.get('exit_code', '')} on {job.get('nodes') or job.get('nodelist')}"]
    evidence += [f"{r}: [{rec.get('failure_kind') or k}] {str(rec.get('failure') or '')[:400]}"
                 for (r, rec), k in zip(failures[:4], kinds[:4])]
    if not failures:
        evidence.append("no failure record names this job; its log: " + log_tail if log_tail else
                        "no failure record names this job, and no log of it was found under .snakemake/slurm_logs")
    later = done.get((job["rule"], job["wildcards"]), 0)
    return {"job_id": job["job_id"], "rule": job["rule"], "wildcards": job["wildcards"], "state": state,
            "exit_code": job.get("exit_code", ""), "kind": kind, "evidence": evidence,
            "completed_later_by": str(later) if later > int(job["job_id"]) else ""}


# ------------------------------------------------------------------------------------- run it
def cluster_env() -> dict:
    env = dict(os.environ, SLURM_CONF=str(MH_DIR / "slurm.conf"))
    # the working copy names its own code (its stamp): never a caller's
    for k in ("REPRO_SINGLE_HOST", "REPRO_GIT_SHA", "REPRO_GIT_TREE"):
        env.pop(k, None)
    return env


def node_names(env: dict) -> set[str]:
    r = subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True, env=env)
    return set(r.stdout.split())


def prepare_workdir(work: Path, resume: bool) -> Path:
    from repro.testing import copy_repo

    ws = work / "repro"
    if resume and ws.exists():
        return ws
    if ws.exists():
        shutil.rmtree(ws)
    work.mkdir(parents=True, exist_ok=True)
    copy_repo(ws)
    r = subprocess.run(["scontrol", "show", "job", "-o"], capture_output=True, text=True, env=cluster_env())
    ids = [int(x) for x in re.findall(r"^JobId=(\d+)", r.stdout, re.M)]
    (ws / ".rehearsal-since").write_text(str(max(ids, default=0) + 1))
    return ws


def no_containers() -> dict:
    """--no-containers: the systems run from the host's builds instead of their images (a machine where
    the images cannot be built), with each study's own overlay for it (its declaration's no_containers);
    the summary says the containers were not rehearsed."""
    overlay = {"containers": {"use_for_benchmarks": False}}
    for study in studies():
        decl = declaration(study)
        if decl is not None and decl.no_containers:
            overlay[study] = decl.no_containers
    return overlay


IMAGES_OVERLAY = "config/rehearsal-images.yaml"
NOCONTAINERS_OVERLAY = "config/rehearsal-nocontainers.yaml"


def configfiles(ws: Path) -> list[str]:
    extra = [f for f in (IMAGES_OVERLAY, NOCONTAINERS_OVERLAY) if (ws / f).exists()]
    return ["config/config.yaml", "config/rehearsal.yaml", *extra]


def snakemake(ws: Path, env: dict, *args: str, timeout: int) -> subprocess.CompletedProcess:
    # targets and options before --configfile, which takes every word after it
    cmd = ["timeout", "-k", "20", str(timeout), "snakemake", *args, "--profile", "profiles/slurm",
           "--configfile", *configfiles(ws)]
    return subprocess.run(cmd, cwd=ws, env=env, capture_output=True, text=True)


def build_images(ws: Path, study: str, timeout: int) -> subprocess.CompletedProcess:
    """The images a study needs, built here on the head (apptainer build needs the package
    mirrors, which the nodes cannot reach): the study's plan up to ``build_container``, run locally.

    An image layered on another (a stack image's benchmark layer) is downstream of the base's
    build_container job, which ``--until`` stops at: Snakemake ends that run "Out of jobs ready ...
    Remaining jobs: - <the layer's rule>: ..." (exit 1) with the bases built. A further pass, the
    bases now present, builds the layers; the passes end when nothing remains, a rule fails, or a
    pass leaves the same images remaining (the first full rehearsal with the mdbench layer ran
    a study from host builds because of this). The passes' output is returned joined. The rules are
    those of the plan's image jobs (image_rules)."""
    cmd = ["timeout", "-k", "20", str(timeout), "snakemake", study, "--cores", str(os.cpu_count() or 2),
           "--until", *image_rules(ws, study), "--config", "launcher=slurm", "--sdm", "apptainer",
           "--configfile", *configfiles(ws)]
    outs, errs, left = [], [], None
    for _ in range(4):
        r = subprocess.run(cmd, cwd=ws, capture_output=True, text=True, env=cluster_env())
        outs.append(r.stdout)
        errs.append(r.stderr)
        log = r.stdout + r.stderr
        remaining = image_names_in_plan(log.split("Remaining jobs:", 1)[1]) if "Remaining jobs:" in log else []
        if r.returncode == 0 or "Error in rule " in log or not remaining or remaining == left:
            break
        left = remaining
    return subprocess.CompletedProcess(cmd, r.returncode, "\n".join(outs), "\n".join(errs))


# the engine's rule that builds an image (workflow/rules/containers.smk); a study may add its own (a
# benchmark layer on a stack image): the image step's rules are those of the image jobs of its plan
BUILD_RULE = "build_container"
_PLANNED_RULES: dict[tuple[str, str], list[str]] = {}


def planned_images(ws: Path, target: str, timeout: int = 600) -> list[str]:
    """Every image (.sif name) the target's cluster plan runs in, built or not: the image jobs of a
    forced dry run of the whole plan (their rules are kept for the image step: image_rules)."""
    cmd = ["timeout", "-k", "20", str(timeout), "snakemake", target, "-n", "-F",
           "--cores", "1", "--config", "launcher=slurm", "--sdm", "apptainer", "--configfile", *configfiles(ws)]
    r = subprocess.run(cmd, cwd=ws, capture_output=True, text=True, env=cluster_env())
    names = image_names_in_plan(r.stdout + r.stderr)
    _PLANNED_RULES[(str(ws), target)] = image_rules_in_plan(r.stdout + r.stderr)
    if r.returncode != 0 and not names:
        raise RuntimeError(f"the image plan of {target} failed (rc {r.returncode}): "
                           f"{(r.stderr or r.stdout)[-1500:].strip() or 'no output at all'}")
    return names


def image_names_in_plan(text: str) -> list[str]:
    """The images a forced dry run lists: its jobs' outputs, and the jobs it leaves as "Remaining
    jobs" (Snakemake 9's dry run of -F --until stops with "Out of jobs ready to be started" before a
    layer whose base image is forced too: a stack image's <stack>-<layer>.sif)."""
    outs = re.findall(r"output: (\S+\.sif)", text)
    outs += re.findall(r"^ - \w+: (\S+\.sif)$", text, re.M)
    return sorted({Path(m).stem for m in outs})


def image_rules_in_plan(text: str) -> list[str]:
    """The rules of the jobs a dry run lists (or leaves remaining) whose output is an image (.sif)."""
    rules, rule = set(), None
    for line in text.splitlines():
        m = re.match(r"^(?:local)?rule (\S+):$", line)
        if m:
            rule = m.group(1)
        elif rule and re.match(r"^\s+output: (?:\S+, )*\S+\.sif(?:,|$)", line):
            rules.add(rule)
    rules |= set(re.findall(r"^ - (\w+): \S+\.sif$", text, re.M))
    return sorted(rules)


def image_rules(ws: Path, target: str) -> list[str]:
    """The rules that build the target's images: build_container and those of the image jobs of the
    plan planned_images read (prepare_images reads it before any build)."""
    return sorted({BUILD_RULE, *_PLANNED_RULES.get((str(ws), target), [])})


def image_definition(ws: Path, name: str) -> Path:
    """containers/<name>.def, or for a layered image <base>-<layer>.sif the layer's definition."""
    d = ws / "containers" / f"{name}.def"
    if d.exists() or "-" not in name:
        return d
    return ws / "containers" / f"{name.rsplit('-', 1)[1]}.def"


def _merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def image_fallbacks(study: str, names: dict[str, str]) -> tuple[list[str], dict, dict[str, str]]:
    """For images that cannot be built (name -> why): the images whose side runs from the host's
    build (containers.host_build), the study-section overlay its declaration gives for the others
    (repro.study.Study.image_fallbacks), and one line per image saying how its side runs."""
    from repro import study as rstudy

    try:
        decl = rstudy.declared(study)
    except Exception:  # noqa: BLE001 -- a study without a declaration: every side falls back to the host
        decl = None
    host, overlay, sides = [], {}, {}
    for name, why in sorted(names.items()):
        key = name.rsplit("-", 1)[1] if decl and "-" in name and name.rsplit("-", 1)[1] in decl.image_fallbacks \
            else name
        fb = decl.image_fallbacks.get(key) if decl else None
        if fb:
            overlay = _merge(overlay, fb)
            sides[name] = f"not built ({why}); its side runs with {study}: {json.dumps(fb)} (the study's fallback)"
        else:
            host.append(name)
            sides[name] = f"host build ({why})"
    return host, ({study: overlay} if overlay else {}), sides


def write_images_overlay(ws: Path, host_build: list[str], overlay: dict) -> None:
    import yaml

    path = ws / IMAGES_OVERLAY
    if not host_build and not overlay:
        path.unlink(missing_ok=True)
        return
    doc = _merge({"containers": {"host_build": sorted(set(host_build))}} if host_build else {}, overlay)
    path.write_text("# written by repro.rehearsal: the images this machine cannot build and how their sides run\n"
                    + yaml.safe_dump(doc, sort_keys=True))


def prepare_images(ws: Path, study: str, target: str, timeout: int, probe_fn=None) -> dict:
    """The image step of one study: which images its plan needs, which cannot be built here (known
    before any build: repro.images), the fallback for those, then the build of the rest; a build
    that still fails falls back the same way. Returns sides {image: how its side runs}, the
    overlay written, the build's process and seconds."""
    from repro import images

    probe_fn = probe_fn or images.probe
    write_images_overlay(ws, [], {})
    t0 = time.monotonic()
    names = planned_images(ws, target)
    cannot = {n: w for n in names if (w := images.why_not(image_definition(ws, n), probe_fn))}
    host, overlay, sides = image_fallbacks(study, cannot)
    write_images_overlay(ws, host, overlay)
    built = build_images(ws, target, timeout)
    failed = {n.removesuffix(".sif"): "its build failed (the image step's log)"
              for n in failed_images(built.stdout + built.stderr)}
    if failed:
        h2, o2, s2 = image_fallbacks(study, failed)
        host, overlay = host + h2, _merge(overlay, o2)
        sides.update(s2)
        write_images_overlay(ws, host, overlay)
    for n in names:
        sides.setdefault(n, "image")
    return {"sides": sides, "host_build": sorted(set(host)), "overlay": overlay, "proc": built,
            "unbuildable": cannot, "failed": failed, "seconds": round(time.monotonic() - t0, 1),
            "step_failed_unnamed": built.returncode != 0 and not failed}


def failed_images(log: str) -> list[str]:
    """The images whose build failed, from the image step's Snakemake output."""
    out = []
    for block in log.split("Error in rule ")[1:]:
        m = re.search(r"output: (\S+\.sif)", block)
        if m:
            out.append(Path(m.group(1)).name)
    return sorted(set(out))


def _no_containers_overlay(ws: Path, on: bool) -> None:
    nc = ws / "config" / "rehearsal-nocontainers.yaml"
    if on:
        import yaml

        nc.write_text("# written by repro.rehearsal (--no-containers, or images that could not be built)\n"
                      + yaml.safe_dump(no_containers()))
    else:
        nc.unlink(missing_ok=True)


def rehearse(studies: list[str], *, nodes: int = 4, work: Path = WORK, resume: bool = False,
             timeout: int = 3600, out_dir: Path = REPO / "results" / "rehearsal", extra: list[str] = (),
             containers: bool = True) -> dict:
    """Rehearse each of ``studies`` ("study" or "study:target", e.g. "<study>:<study>_kick")."""
    t0 = time.monotonic()
    subprocess.run([str(SCRIPT), "up", str(nodes)], check=True, timeout=300)
    t_up = time.monotonic() - t0
    env = cluster_env()
    names = node_names(env)
    ws = prepare_workdir(work, resume)
    _no_containers_overlay(ws, not containers)
    out_dir.mkdir(parents=True, exist_ok=True)
    try:  # the studies of earlier rehearsals stay in the summary (each with its own time and overlay)
        earlier = json.loads((out_dir / "summary.json").read_text()).get("studies", {})
    except (OSError, ValueError):
        earlier = {}
    summary = {"cluster": {"nodes": sorted(names), "up_s": round(t_up, 1), "state_dir": str(MH_DIR)},
               "workdir": str(ws), "overlay": configfiles(ws)[1:], "studies": earlier,
               "not_rehearsed": [] if containers else ["containers: the systems ran from the host's builds "
                                                       "(--no-containers), not from their Apptainer images"],
               "git": _source(ws), "loadavg_start": _loadavg(),
               "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for spec in studies:
        study, _, target = spec.partition(":")
        target = target or study
        t1 = time.monotonic()
        log = out_dir / f"{study}.log"
        print(f"rehearse {study} ({target}): images", file=sys.stderr, flush=True)
        if containers:
            # an image that cannot be built here (its definition fetches from a host this machine
            # cannot reach) is named before any build and only its side runs from the host's build;
            # every other side runs in its image (issue 27: all-or-nothing lost the images that built)
            try:
                img = prepare_images(ws, study, target, timeout)
            except RuntimeError as e:
                img = {"sides": {}, "host_build": [], "overlay": {}, "unbuildable": {}, "failed": {},
                       "seconds": round(time.monotonic() - t1, 1), "step_failed_unnamed": True,
                       "proc": subprocess.CompletedProcess([], 1, "", str(e))}
            fallback_all = img["step_failed_unnamed"]
        else:
            img = {"sides": {}, "host_build": [], "overlay": {}, "unbuildable": {}, "failed": {}, "seconds": 0.0,
                   "step_failed_unnamed": False, "proc": subprocess.CompletedProcess([], 0, "", "")}
            fallback_all = False
        _no_containers_overlay(ws, fallback_all or not containers)
        print(f"rehearse {study} ({target}): the cluster run", file=sys.stderr, flush=True)
        proc = snakemake(ws, env, target, *extra, timeout=timeout)
        log.write_text("# images (local build on the head)\n" + img["proc"].stdout + img["proc"].stderr +
                       "\n# the cluster run (profiles/slurm)\n" + proc.stdout + proc.stderr)
        dry = snakemake(ws, env, target, "-n", timeout=300)
        clean = dry.returncode == 0 and "Nothing to be done" in (dry.stdout + dry.stderr)
        overlays = configfiles(ws)[1:]
        res = analyze(ws, study, env=env, dry_run_clean=clean, names=names)
        notes = []
        if fallback_all:
            notes.append("containers: the image step failed without naming an image (log: the image step); "
                         "this study ran from the host's builds")
        for name, how in sorted(img["sides"].items()):
            if how != "image":
                notes.append(f"image {name}: {how}")
        res["not_rehearsed"] = "; ".join(x for x in (res["not_rehearsed"], *notes) if x)
        _no_containers_overlay(ws, not containers)
        write_images_overlay(ws, [], {})
        sides = {n: ("host build (--no-containers or the image step failed)" if fallback_all or not containers
                     else how) for n, how in img["sides"].items()}
        res.update({"target": target, "loadavg_end": _loadavg(), "snakemake_rc": proc.returncode,
                    "containers": containers and not fallback_all and any(v == "image" for v in sides.values()),
                    "sides": sides, "images_unbuildable": img["unbuildable"], "images_failed": img["failed"],
                    "images_rc": img["proc"].returncode, "images_s": img["seconds"],
                    "seconds": round(time.monotonic() - t1, 1), "overlay": overlays,
                    "log": str(log.relative_to(REPO)) if log.is_relative_to(REPO) else str(log)})
        (out_dir / f"{study}.json").write_text(json.dumps(res, indent=1))
        summary["studies"][study] = {"seconds": res["seconds"], "images_s": res["images_s"],
                                     "snakemake_rc": proc.returncode,
                                     "jobs": len(res["jobs"]), "records": res["records"],
                                     "checks": {k: v["ok"] for k, v in res["checks"].items()},
                                     "not_rehearsed": res["not_rehearsed"], "containers": res["containers"],
                                     "sides": res["sides"], "failed_jobs": res["failed_jobs"],
                                     "overlay": overlays, "loadavg_end": res["loadavg_end"],
                                     "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    summary["seconds"] = round(time.monotonic() - t0, 1)
    summary["loadavg_end"] = _loadavg()
    summary["all_true"] = all(v is not False for s in summary["studies"].values() for v in s["checks"].values())
    # every job that failed, also one a resumed run completed later: a clean rehearsal has none
    summary["failed_jobs"] = sum(len(s.get("failed_jobs") or []) for s in summary["studies"].values())
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def _source(ws: Path) -> dict:
    """The code the rehearsal ran: the working copy's stamp (commit, tree; repro.provenance)."""
    from repro import provenance

    return provenance.read_source(ws) or {"commit": "unknown", "tree": "", "source": "no stamp in the copy"}


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return ""


def _gres_wanted(ws: Path, study: str) -> str:
    """The GPUs the study's section asks Slurm for (<study>.slurm.gres at the rehearsal's scale), or ""."""
    try:
        from repro import config as rconfig
        import yaml

        overlay = yaml.safe_load((ws / "config" / "rehearsal.yaml").read_text())
        cfg = rconfig.load(ws / "config" / "config.yaml", overlay)
        slurm = (cfg.get(study) or {}).get("slurm") or {}
        return (slurm.get("gres", "") or "") if isinstance(slurm, dict) else ""
    except Exception:  # noqa: BLE001 -- the check then simply asks for nothing
        return ""


def analyze(ws: Path, study: str, *, env: dict | None = None, dry_run_clean: bool | None = None,
            names: set[str] | None = None, jobs: list[dict] | None = None) -> dict:
    env = env or cluster_env()
    names = names if names is not None else node_names(env)
    jobs = jobs if jobs is not None else slurm_jobs(ws, env)
    return judge_study(ws, study, jobs, names, dry_run_clean=dry_run_clean, gres_wanted=_gres_wanted(ws, study))


@contextlib.contextmanager
def cluster_lock(path: Path = LOCK):
    """Hold the multi-host cluster alone (it is one bridge, one set of namespaces): a second rehearsal
    or a test session that uses the cluster waits here instead of taking it down under this one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for the multi-host cluster ({path} is held by another run)", file=sys.stderr, flush=True)
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="./repro rehearse", description=__doc__.split("\n\n")[0])
    ap.add_argument("studies", nargs="*", help="default: every study (the study folders)")
    ap.add_argument("--nodes", type=int, default=4, help="cluster size (cluster.partition_nodes of the overlay)")
    ap.add_argument("--resume", action="store_true", help="reuse the working copy: run only what is missing")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per study")
    ap.add_argument("--analyze", metavar="WORKDIR", help="only the checks, on a finished run in WORKDIR")
    ap.add_argument("--no-containers", action="store_true",
                    help="run the systems from the host's builds (where the images cannot be built); said so")
    a, extra = ap.parse_known_args(argv)
    names = a.studies or studies()
    unknown = [s for s in names if not (REPO / "workflow" / "studies" / s.partition(":")[0]).is_dir()]
    if unknown:
        ap.error(f"unknown studies: {unknown}")
    if a.analyze:
        for s in names:
            print(json.dumps(analyze(Path(a.analyze), s.partition(":")[0]), indent=1))
        return 0
    with cluster_lock():
        summary = rehearse(names, nodes=a.nodes, resume=a.resume, timeout=a.timeout, extra=extra,
                           containers=not a.no_containers)
    for s, v in summary["studies"].items():
        print(f"{s:12s} {v['seconds']:7.1f} s  rc={v['snakemake_rc']}  " +
              "  ".join(f"{k}={v2}" for k, v2 in v["checks"].items()))
    print(f"summary: {REPO / 'results' / 'rehearsal' / 'summary.json'} ({summary['seconds']} s)")
    return 0 if summary["all_true"] else 1


if __name__ == "__main__":
    sys.exit(main())
