#!/usr/bin/env python3
"""Plans equal (issue 29): the jobs, resources and outputs of the forced dry runs of two checkouts.

A change that only moves code around must leave every study's plan as it was: the same jobs, each
with the same outputs, log, benchmark, wildcards, inputs and resources (the command lines may change).
This takes a snapshot of the plans of one checkout and compares two snapshots:

    python3 workflow/scripts/plan_diff.py snapshot DIR OUT.json     # DIR: a checkout (a git worktree)
    python3 workflow/scripts/plan_diff.py compare BEFORE.json AFTER.json [--ignore input]

A snapshot runs, for every study folder of DIR (workflow/studies/*/rules.smk) and each of its
targets ``<study>`` and ``<study>_kick``, plus ``all`` and ``kick_the_tires``:

* the cluster plan: ``./repro plan -p -F <target>`` (snakemake -n --profile profiles/slurm
  --configfile config/config.yaml), and
* the local plan: ``./repro snakemake -n -p -F <target> --profile profiles/local`` (config/local.yaml),

and keeps every job block as {rule, output, input, log, benchmark, wildcards, resources, shell}. A
checkout without a ``.venv`` gets a link to the running interpreter's venv. Paths under DIR are
written ``<DIR>`` so two checkouts compare. ``compare`` exits 1 and names every difference in jobs,
outputs, resources (and the other fields) per plan; differing shell commands are listed, not failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

FIELDS = ("input", "output", "log", "benchmark", "wildcards", "resources")
PROFILES = {
    "slurm": ["-n", "-p", "-F", "{target}", "--profile", "profiles/slurm", "--configfile", "config/config.yaml"],
    "local": ["-n", "-p", "-F", "{target}", "--profile", "profiles/local"],
}
JOB_HEAD = re.compile(r"^(?:local)?rule (\S+):$")
FIELD_LINE = re.compile(r"^    (\w+): (.*)$")


def parse_plan(text: str) -> dict:
    """{"jobs": {key: job}, "counts": {rule: n}} of one ``snakemake -n -p`` output. A job's key is its
    rule and outputs (a target rule without outputs: its rule and inputs)."""
    jobs: dict[str, dict] = {}
    job = None

    def done(job):
        key = f"{job['rule']} -> {job.get('output') or '[no output] ' + job.get('input', '')}"
        job.pop("jobid", None)
        job.pop("reason", None)
        if key in jobs and jobs[key] != job:
            raise ValueError(f"two different jobs with the key {key}")
        jobs[key] = job

    for line in text.splitlines():
        m = JOB_HEAD.match(line)
        if m or line.startswith("Job stats:"):
            if job is not None:
                done(job)
            job = {"rule": m.group(1)} if m else None
            continue
        if job is None:
            continue
        f = FIELD_LINE.match(line)
        if f and f.group(1) in (*FIELDS, "jobid", "reason"):
            job[f.group(1)] = f.group(2)
        elif line.startswith("Shell command: "):
            job["shell"] = line.removeprefix("Shell command: ")
    if job is not None:
        done(job)
    counts = {}
    stats = text.split("Job stats:", 1)
    if len(stats) == 2:
        for line in stats[1].splitlines()[3:]:
            parts = line.split()
            if len(parts) != 2 or parts[0] == "total":
                break
            counts[parts[0]] = int(parts[1])
    return {"jobs": jobs, "counts": counts}


def resources(text: str | None) -> list[str]:
    """A job's resources as sorted, unique ``key=value`` items: Snakemake prints them in an order that
    depends on where each was set (a rule's own, the profile's defaults), sometimes one twice."""
    return sorted(set(re.findall(r"(\w+)=(.*?)(?:, (?=\w+=)|$)", text or "")))


def _normalize(text: str, root: Path) -> str:
    return text.replace(str(root.resolve()), "<DIR>").replace(str(root), "<DIR>")


def study_names(root: Path) -> list[str]:
    return sorted(p.parent.name for p in (root / "workflow" / "studies").glob("*/rules.smk"))


def plan(root: Path, profile: str, target: str, timeout: int = 600) -> dict:
    args = [a.replace("{target}", target) for a in PROFILES[profile]]
    cmd = ["./repro", "snakemake", *args]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    r = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout, env=env)
    text = _normalize(r.stdout + r.stderr, root)
    out = parse_plan(text)
    out["rc"] = r.returncode
    if r.returncode != 0:
        out["error"] = text[-3000:]
    return out


def snapshot(root: Path, targets: list[str] | None = None, profiles: tuple[str, ...] = ("slurm", "local")) -> dict:
    root = root.resolve()
    venv = root / ".venv"
    if not venv.exists():
        venv.symlink_to(Path(sys.prefix))
    if targets is None:
        targets = [t for s in study_names(root) for t in (s, f"{s}_kick")] + ["all", "kick_the_tires"]
    snap = {}
    for profile in profiles:
        for target in targets:
            p = plan(root, profile, target)
            snap[f"{profile}:{target}"] = p
            print(f"{profile}:{target}: rc {p['rc']}, {len(p['jobs'])} jobs", file=sys.stderr, flush=True)
    return snap


def _items(text):
    """A job's inputs as a set (their order is not part of the plan)."""
    return None if text is None else sorted(text.split(", "))


def compare(before: dict, after: dict, ignore: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """(differences, changed commands): every plan, job and field of ``before`` not in ``after`` the
    same way, and the other way round; the commands that differ are listed apart (allowed to)."""
    diffs, commands = [], []
    for name in sorted(set(before) | set(after)):
        b, a = before.get(name), after.get(name)
        if b is None or a is None:
            diffs.append(f"{name}: only {'after' if b is None else 'before'}")
            continue
        if b["rc"] != a["rc"]:
            diffs.append(f"{name}: exit status {b['rc']} before, {a['rc']} after: {a.get('error', '')[-500:]}")
        if b["counts"] != a["counts"]:
            diffs.append(f"{name}: job counts {b['counts']} before, {a['counts']} after")
        for key in sorted(set(b["jobs"]) - set(a["jobs"])):
            diffs.append(f"{name}: job gone: {key}")
        for key in sorted(set(a["jobs"]) - set(b["jobs"])):
            diffs.append(f"{name}: new job: {key}")
        for key in sorted(set(a["jobs"]) & set(b["jobs"])):
            jb, ja = b["jobs"][key], a["jobs"][key]
            for f in FIELDS:
                same = (resources(jb.get(f)) == resources(ja.get(f))) if f == "resources" else \
                    (_items(jb.get(f)) == _items(ja.get(f))) if f == "input" else jb.get(f) == ja.get(f)
                if f not in ignore and not same:
                    diffs.append(f"{name}: {key}: {f}: {jb.get(f)!r} before, {ja.get(f)!r} after")
            if jb.get("shell") != ja.get("shell"):
                commands.append(f"{name}: {key}:\n  before: {jb.get('shell')}\n  after:  {ja.get('shell')}")
    return diffs, commands


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("snapshot", help="the plans of a checkout, as JSON")
    s.add_argument("dir", type=Path)
    s.add_argument("out", type=Path)
    s.add_argument("--targets", nargs="*", help="default: every study, its kick, all, kick_the_tires")
    s.add_argument("--profiles", nargs="*", default=list(PROFILES), choices=list(PROFILES))
    c = sub.add_parser("compare", help="two snapshots: exit 1 on any difference but the commands")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    c.add_argument("--ignore", nargs="*", default=[], choices=FIELDS, help="fields not compared")
    c.add_argument("--commands", action="store_true", help="also print the commands that changed")
    a = ap.parse_args(argv)
    if a.cmd == "snapshot":
        snap = snapshot(a.dir, a.targets, tuple(a.profiles))
        a.out.write_text(json.dumps(snap, indent=1, sort_keys=True))
        failed = [k for k, v in snap.items() if v["rc"] != 0]
        print(f"{len(snap)} plans, {sum(len(v['jobs']) for v in snap.values())} jobs in all -> {a.out}"
              + (f"; plans that failed: {failed}" if failed else ""))
        return 0
    diffs, commands = compare(json.loads(a.before.read_text()), json.loads(a.after.read_text()),
                              tuple(a.ignore))
    for d in diffs:
        print(d)
    if a.commands:
        for cm in commands:
            print("command changed:", cm)
    n = len(json.loads(a.before.read_text()))
    print(f"{n} plans compared: {len(diffs)} difference(s), {len(commands)} job(s) with a changed command")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
