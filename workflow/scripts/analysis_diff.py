#!/usr/bin/env python3
"""Analysis outputs byte-identical (issue 29, part 5): one fixed raw tree, two checkouts, every
study's analysis run in both, every output compared byte for byte.

    python3 workflow/scripts/analysis_diff.py run BEFORE AFTER RESULTS [--study S ...]
        [--configfile F ...] [--rehearsal-json DIR] [--json OUT]
    python3 workflow/scripts/analysis_diff.py compare DIR_A DIR_B     # two output trees, nothing run

BEFORE and AFTER are checkouts (git worktrees, each with its .venv), RESULTS a results tree with raw
files (a rehearsal's ``results/``). For each study (default: every study folder of RESULTS that has
a ``raw/``), in each checkout, one after the other:

1. the plan: ``./repro snakemake <study> -n -F --cores 1 --config launcher=slurm --configfile ...``
   (the cluster path's launcher, without containers). Its analysis jobs are those that are not
   benchmark jobs (no ``bench`` resource), write nothing under ``results/<study>/raw/`` and write
   only under ``results/``; every other job (runs, preparation, images, builds) is not run: its
   outputs are inputs taken from RESULTS.
2. a fresh results dir: the checkout's untracked files under ``results/<study>/`` are removed, and
   RESULTS' ``results/<study>/`` is copied in (modification times kept) except the analysis jobs'
   outputs, ``log/`` and ``benchmarks/``; an analysis input under another study's results folder is
   copied too.
3. the analysis alone: ``./repro snakemake <study> --cores 1 --config launcher=slurm --allowed-rules
   <analysis rules> --rerun-triggers mtime --configfile ...`` (the other rules are not part of the
   run, so their outputs are plain input files).

Then every file under ``results/<study>/`` of either checkout is compared byte for byte, except
``log/``, ``benchmarks/`` and the copied inputs an analysis left as they were. A differing file is
explained where it can be: JSON with the same data in another key order, a CSV with the same rows
in another order (or the same columns in another order), text equal once each checkout's path and
git sha are masked, a PNG whose image chunks (IHDR, PLTE, decompressed IDAT) are equal and only its
metadata chunks (tEXt, iTXt, zTXt, tIME) differ; otherwise the first lines of a unified diff.
PNGs are reported apart from the data files. As a check of the method, BEFORE's outputs are also
compared with the same files in RESULTS (the outputs of the analysis that ran with the raw files).

The configuration is the same in both checkouts: each ``--configfile`` (default the checkout's
``config/config.yaml`` and ``config/rehearsal.yaml``, the rehearsal's) is copied into both as
``config/analysis-diff/<i>-<name>``. ``--rehearsal-json DIR`` (a rehearsal's ``results/rehearsal``)
adds, per study, the overlay the rehearsal wrote for its images (``containers.host_build`` and the
study's fallback section, from ``<study>.json``'s ``sides``), so the analysis reads the sections the
rehearsal's did.

Prints one verdict per study (identical / differing files with a short diff) and, with ``--json``,
writes them all; exits 1 when any data file differs or an analysis failed.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

SKIP_DIRS = ("log", "benchmarks")
PNG_META = {b"tEXt", b"iTXt", b"zTXt", b"tIME"}
JOB_HEAD = re.compile(r"^(?:local)?rule (\S+):$")
FIELD = re.compile(r"^    (input|output|resources): (.*)$")


# ----------------------------------------------------------------------------- comparison
def _png_chunks(data: bytes) -> list[tuple[bytes, bytes]] | None:
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return None
    out, i = [], 8
    while i + 8 <= len(data):
        (n,) = struct.unpack(">I", data[i:i + 4])
        kind = data[i + 4:i + 8]
        out.append((kind, data[i + 8:i + 8 + n]))
        i += 12 + n
    return out


def png_parts(data: bytes) -> tuple[bytes, list] | None:
    """(the image: IHDR, PLTE and the decompressed IDAT stream; the metadata chunks) of a PNG."""
    chunks = _png_chunks(data)
    if chunks is None:
        return None
    image = b"".join(k + c for k, c in chunks if k in (b"IHDR", b"PLTE", b"tRNS"))
    try:
        image += zlib.decompress(b"".join(c for k, c in chunks if k == b"IDAT"))
    except zlib.error:
        return None
    return image, [(k, c) for k, c in chunks if k in PNG_META]


def _mask(text: str, masks: dict[str, str]) -> str:
    for old, new in sorted(masks.items(), key=lambda kv: -len(kv[0])):
        if old:
            text = text.replace(old, new)
    return text


def _short_diff(a: str, b: str, name: str, lines: int = 24) -> str:
    d = list(difflib.unified_diff(a.splitlines(), b.splitlines(), f"before/{name}", f"after/{name}", n=1,
                                  lineterm=""))
    more = f"\n... ({len(d) - lines} more diff lines)" if len(d) > lines else ""
    return "\n".join(line[:300] for line in d[:lines]) + more


def _csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def explain(name: str, a: bytes, b: bytes, masks_a: dict | None = None, masks_b: dict | None = None) -> dict:
    """Why two different files differ: {"why": one line, "shape_only": bool, "diff": text}."""
    if name.endswith(".png"):
        pa, pb = png_parts(a), png_parts(b)
        if pa and pb and pa[0] == pb[0]:
            return {"why": "PNG: same image (IHDR, PLTE, decompressed IDAT); only metadata chunks differ "
                           f"({sorted({k.decode() for k, _ in pa[1] + pb[1]})})", "shape_only": True, "diff": ""}
        return {"why": "PNG: the image itself differs" if pa and pb else "PNG: not readable", "shape_only": False,
                "diff": ""}
    try:
        ta, tb = a.decode(), b.decode()
    except UnicodeDecodeError:
        return {"why": f"binary, {len(a)} vs {len(b)} bytes", "shape_only": False, "diff": ""}
    if name.endswith(".json"):
        try:
            ja, jb = json.loads(ta), json.loads(tb)
        except ValueError:
            ja = jb = None
        if ja is not None and ja == jb:
            return {"why": "JSON: same data, other key order or formatting", "shape_only": True,
                    "diff": _short_diff(ta, tb, name, 12)}
    if name.endswith(".csv"):
        ra, rb = _csv_rows(ta), _csv_rows(tb)
        if ra and rb and ra[0] == rb[0] and sorted(ra[1:]) == sorted(rb[1:]):
            return {"why": f"CSV: same {len(ra) - 1} rows, other row order", "shape_only": True,
                    "diff": _short_diff(ta, tb, name, 12)}
        if ra and rb and sorted(ra[0]) == sorted(rb[0]) and len(set(ra[0])) == len(ra[0]):
            idx = [ra[0].index(c) for c in rb[0]]
            if sorted([r[i] for i in idx] for r in ra[1:] if len(r) == len(idx)) == sorted(rb[1:]):
                return {"why": "CSV: same rows and columns, other column order", "shape_only": True,
                        "diff": _short_diff(ta, tb, name, 6)}
    if masks_a is not None and masks_b is not None and _mask(ta, masks_a) == _mask(tb, masks_b):
        return {"why": "equal once each checkout's path and git sha are masked", "shape_only": True,
                "diff": _short_diff(ta, tb, name, 12)}
    return {"why": "content differs", "shape_only": False, "diff": _short_diff(ta, tb, name)}


def compare_trees(a: Path, b: Path, files: list[str] | None = None, masks_a: dict | None = None,
                  masks_b: dict | None = None) -> list[dict]:
    """Every file (relative path) of ``files`` (default: every file under either tree) compared byte
    for byte: [{"file", "status": identical|differs|only-before|only-after, "why", "shape_only", "diff"}]."""
    if files is None:
        files = sorted({str(p.relative_to(t)) for t in (a, b) if t.is_dir() for p in t.rglob("*") if p.is_file()})
    out = []
    for rel in files:
        fa, fb = a / rel, b / rel
        if not fa.is_file() or not fb.is_file():
            out.append({"file": rel, "status": "only-after" if fb.is_file() else "only-before",
                        "why": "written by one checkout only", "shape_only": False, "diff": ""})
            continue
        da, db = fa.read_bytes(), fb.read_bytes()
        if da == db:
            out.append({"file": rel, "status": "identical", "bytes": len(da)})
        else:
            out.append({"file": rel, "status": "differs", **explain(rel, da, db, masks_a, masks_b)})
    return out


def verdict(rows: list[dict]) -> dict:
    """A study's verdict from its compared files: PNGs apart from the data files."""
    data = [r for r in rows if not r["file"].endswith(".png")]
    pngs = [r for r in rows if r["file"].endswith(".png")]
    bad = [r for r in data if r["status"] != "identical"]
    bad_png = [r for r in pngs if r["status"] != "identical"]
    if not rows:
        word = "nothing compared"
    elif not bad and not bad_png:
        word = "identical"
    elif not bad and all(r.get("shape_only") for r in bad_png):
        word = "data identical; PNGs differ only in metadata"
    elif all(r.get("shape_only") for r in bad + bad_png):
        word = "differs in shape only (order, formatting, path); same data"
    else:
        word = "differs"
    return {"verdict": word, "files": len(rows), "data_files": len(data), "pngs": len(pngs),
            "identical": sum(r["status"] == "identical" for r in rows), "differing": bad + bad_png}


# ----------------------------------------------------------------------------- running
def _env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def parse_plan(text: str) -> list[dict]:
    """The jobs of a ``snakemake -n`` output: [{"rule", "input": [...], "output": [...], "resources": str}]."""
    jobs, job = [], None
    for line in text.splitlines():
        m = JOB_HEAD.match(line)
        if m:
            job = {"rule": m.group(1), "input": [], "output": [], "resources": ""}
            jobs.append(job)
            continue
        f = FIELD.match(line) if job is not None else None
        if f:
            val = f.group(2)
            job[f.group(1)] = val if f.group(1) == "resources" else [x.strip() for x in val.split(", ") if x.strip()]
        elif not line.startswith("    "):
            job = None
    return jobs


def analysis_jobs(jobs: list[dict], study: str) -> tuple[set[str], set[str]]:
    """(the analysis rules, their outputs) of a study's plan: no benchmark resource, nothing under
    results/<study>/raw/, every output under results/; a target rule without outputs is one too."""
    rules, outs, not_analysis = set(), set(), set()
    for j in jobs:
        bench = re.search(r"(?:^|, )bench=", j["resources"]) is not None
        raw = any(o.startswith(f"results/{study}/raw/") or o == f"results/{study}/raw" for o in j["output"])
        elsewhere = any(not o.startswith("results/") for o in j["output"])
        if bench or raw or elsewhere:
            not_analysis.add(j["rule"])
        else:
            rules.add(j["rule"])
            outs.update(j["output"])
    mixed = rules & not_analysis
    if mixed:
        raise ValueError(f"rules with both analysis and run jobs: {sorted(mixed)}")
    return rules, outs


def snakemake(root: Path, args: list[str], configs: list[str], timeout: int) -> subprocess.CompletedProcess:
    cmd = ["./repro", "snakemake", *args, "--config", "launcher=slurm", "--configfile", *configs]
    return subprocess.run(cmd, cwd=root, env=_env(), capture_output=True, text=True, timeout=timeout)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True).stdout


def _src(src: Path, rel: str) -> Path:
    """A checkout-relative results/... path in the results tree RESULTS (whatever its folder's name)."""
    return src / rel.removeprefix("results/")


def _under(rel: str, outs: set[str]) -> bool:
    return any(rel == o or rel.startswith(o.rstrip("/") + "/") for o in outs)


def fresh_results(root: Path, src: Path, study: str, outs: set[str], inputs: set[str]) -> list[str]:
    """Remove the checkout's untracked files under results/<study>/ and copy RESULTS' in (not the
    analysis outputs, log/, benchmarks/); other studies' files an analysis job reads too. Returns the
    copied files (relative to the checkout)."""
    tracked = set(git(root, "ls-files", "results").splitlines())
    dest = root / "results" / study
    if dest.exists():
        for p in sorted(dest.rglob("*"), reverse=True):
            rel = str(p.relative_to(root))
            if p.is_symlink() or p.is_file():
                if rel not in tracked:
                    p.unlink()
            elif p.is_dir() and not any(p.iterdir()):
                p.rmdir()
    copied = []

    def copy(rel: str) -> None:
        s, d = _src(src, rel), root / rel
        if _under(rel, outs) or not (s.is_file() or s.is_symlink()):
            return
        d.parent.mkdir(parents=True, exist_ok=True)
        if d.exists() or d.is_symlink():
            d.unlink()
        shutil.copy2(s, d, follow_symlinks=False)
        copied.append(rel)

    base = src / study
    for p in sorted(base.rglob("*")) if base.is_dir() else []:
        rel = f"results/{p.relative_to(src)}"
        parts = p.relative_to(base).parts
        if parts and parts[0] in SKIP_DIRS:
            continue
        copy(rel)
    for rel in sorted(inputs):  # another study's results an analysis job reads
        if rel.startswith("results/") and not rel.startswith(f"results/{study}/"):
            s = _src(src, rel)
            for p in ([s] if s.is_file() else sorted(s.rglob("*")) if s.is_dir() else []):
                copy(f"results/{p.relative_to(src)}")
    return copied


def images_overlay(rehearsal_json: Path, study: str) -> dict:
    """The overlay the rehearsal wrote for a study's images (repro.rehearsal.image_fallbacks), read
    back from <study>.json's sides: the images run from the host's build, the study's fallback section."""
    try:
        sides = json.loads((rehearsal_json / f"{study}.json").read_text()).get("sides", {})
    except (OSError, ValueError):
        return {}
    host, section = [], {}
    for name, how in sorted(sides.items()):
        if how.startswith("host build (") and not how.startswith("host build (--no-containers"):
            host.append(name)
        m = re.search(rf"its side runs with {re.escape(study)}: (\{{.*\}}) \(the study's fallback\)$", how)
        if m:
            for k, v in json.loads(m.group(1)).items():
                section[k] = {**section.get(k, {}), **v} if isinstance(v, dict) else v
    out = {}
    if host:
        out["containers"] = {"host_build": sorted(host)}
    if section:
        out[study] = section
    return out


def prepare_configs(root: Path, configfiles: list[Path], overlay: dict) -> list[str]:
    d = root / "config" / "analysis-diff"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    out = []
    for i, f in enumerate(configfiles):
        shutil.copyfile(f, d / f"{i}-{f.name}")
        out.append(f"config/analysis-diff/{i}-{f.name}")
    if overlay:  # JSON is YAML
        (d / "images-overlay.yaml").write_text(json.dumps(overlay, indent=1, sort_keys=True) + "\n")
        out.append("config/analysis-diff/images-overlay.yaml")
    return out


def run_side(root: Path, src: Path, study: str, configfiles: list[Path], overlay: dict, timeout: int) -> dict:
    t0 = time.monotonic()
    configs = prepare_configs(root, configfiles, overlay)
    plan = snakemake(root, [study, "-n", "-F", "--cores", "1"], configs, timeout)
    if plan.returncode != 0:
        return {"ok": False, "error": "plan failed:\n" + (plan.stdout + plan.stderr)[-3000:], "configs": configs}
    jobs = parse_plan(plan.stdout + plan.stderr)
    rules, outs = analysis_jobs(jobs, study)
    inputs = {i for j in jobs if j["rule"] in rules for i in j["input"]}
    runnable = sorted(r for r in rules if r != study)
    res = {"rules": sorted(rules), "analysis_rules": runnable, "outputs": sorted(outs), "configs": configs,
           "jobs": sum(j["rule"] in rules and j["rule"] != study for j in jobs)}
    copied = fresh_results(root, src, study, outs, inputs)
    res["copied"] = copied
    if not runnable:
        return {**res, "ok": True, "seconds": round(time.monotonic() - t0, 1), "ran": 0}
    r = snakemake(root, [study, "--cores", "1", "--allowed-rules", *sorted(rules), "--rerun-triggers", "mtime",
                         "--rerun-incomplete"], configs, timeout)
    text = r.stdout + r.stderr
    ran = re.findall(r"^(?:local)?rule (\S+):$", text, re.M)
    res.update({"ok": r.returncode == 0, "rc": r.returncode, "ran": len(ran), "ran_rules": sorted(set(ran)),
                "seconds": round(time.monotonic() - t0, 1)})
    if r.returncode != 0:
        res["error"] = text[-3000:]
    return res


def study_files(root: Path, study: str, copied: list[str], src: Path) -> set[str]:
    """The files of results/<study>/ to compare: all but log/, benchmarks/ and the copied inputs left as
    they were (relative to results/<study>/)."""
    base = root / "results" / study
    keep, copied = set(), set(copied)
    tracked = set(git(root, "ls-files", "results").splitlines())
    for p in base.rglob("*") if base.is_dir() else []:
        if not p.is_file():
            continue
        rel = p.relative_to(base)
        full = str(p.relative_to(root))
        if rel.parts[0] in SKIP_DIRS:
            continue
        if full in copied or full in tracked:
            s = _src(src, full)
            if s.is_file() and s.read_bytes() == p.read_bytes():
                continue
            if not s.is_file() and full in tracked:
                continue
        keep.add(str(rel))
    return keep


def masks(root: Path) -> dict:
    sha = git(root, "rev-parse", "HEAD").strip()
    m = {str(root): "<CHECKOUT>", str(root.resolve()): "<CHECKOUT>"}
    if sha:
        for n in (40, 12, 10, 8, 7):
            m[sha[:n]] = "<SHA>"
    return m


def run(before: Path, after: Path, results: Path, studies: list[str], configfiles: list[Path],
        rehearsal_json: Path | None, timeout: int) -> dict:
    report = {"before": {"dir": str(before), "head": git(before, "rev-parse", "HEAD").strip()},
              "after": {"dir": str(after), "head": git(after, "rev-parse", "HEAD").strip()},
              "results": str(results), "configfiles": [str(f) for f in configfiles], "studies": {}}
    for study in studies:
        t0 = time.monotonic()
        overlay = images_overlay(rehearsal_json, study) if rehearsal_json else {}
        print(f"[analysis_diff] {study}: before ...", file=sys.stderr, flush=True)
        rb = run_side(before, results, study, configfiles, overlay, timeout)
        print(f"[analysis_diff] {study}: after ...", file=sys.stderr, flush=True)
        ra = run_side(after, results, study, configfiles, overlay, timeout)
        entry = {"overlay": overlay, "before": {k: v for k, v in rb.items() if k != "copied"},
                 "after": {k: v for k, v in ra.items() if k != "copied"},
                 "copied_inputs": len(ra.get("copied", []))}
        if not (rb.get("ok") and ra.get("ok")):
            entry.update({"verdict": "analysis failed", "files": 0, "differing": []})
        elif not rb.get("analysis_rules") and not ra.get("analysis_rules"):
            entry.update({"verdict": "no analysis", "files": 0, "differing": []})
        else:
            files = sorted(study_files(before, study, rb["copied"], results)
                           | study_files(after, study, ra["copied"], results))
            rows = compare_trees(before / "results" / study, after / "results" / study, files,
                                 masks(before), masks(after))
            entry.update(verdict(rows))
            entry["compared"] = [{k: r[k] for k in ("file", "status")} for r in rows]
            # the same files as RESULTS holds them (the analysis that ran with the raw files, if any)
            ref = [r for r in compare_trees(results / study, before / "results" / study, files)
                   if r["status"] != "only-after"]
            entry["before_vs_results"] = {"files": len(ref), "identical": sum(r["status"] == "identical" for r in ref),
                                          "differing": [r["file"] for r in ref if r["status"] != "identical"]}
            if rb["rules"] != ra["rules"]:
                entry["rules_differ"] = {"before": rb["rules"], "after": ra["rules"]}
        entry["seconds"] = round(time.monotonic() - t0, 1)
        report["studies"][study] = entry
        print_study(study, entry)
    return report


def print_study(study: str, e: dict) -> None:
    head = f"{study}: {e['verdict']}"
    if e.get("files"):
        head += (f" ({e['files']} files compared: {e['data_files']} data, {e['pngs']} PNG; "
                 f"{e['identical']} identical)")
    print(head + f" [{e.get('seconds', 0)} s]", flush=True)
    ref = e.get("before_vs_results")
    if ref and ref["files"]:
        print(f"  BEFORE's outputs vs RESULTS' own: {ref['identical']} of {ref['files']} identical"
              + (f" (differ: {', '.join(ref['differing'][:8])})" if ref["differing"] else ""))
    for side in ("before", "after"):
        s = e.get(side, {})
        if s.get("error"):
            print(f"  {side} failed:\n    " + s["error"][-1500:].replace("\n", "\n    "))
    if e.get("rules_differ"):
        print(f"  analysis rules differ: {e['rules_differ']}")
    for r in e.get("differing", []):
        print(f"  {r['status']}: {r['file']}: {r['why']}")
        if r.get("diff"):
            print("    " + r["diff"].replace("\n", "\n    "))


def default_studies(results: Path) -> list[str]:
    return sorted(p.name for p in results.iterdir() if (p / "raw").is_dir())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run each study's analysis in both checkouts on RESULTS' raw files, compare")
    r.add_argument("before", type=Path)
    r.add_argument("after", type=Path)
    r.add_argument("results", type=Path, help="a results tree with raw files (results/<study>/raw)")
    r.add_argument("--study", action="append", help="only these studies (default: every one with raw/)")
    r.add_argument("--configfile", action="append", type=Path,
                   help="config files for both checkouts (default: AFTER's config/config.yaml, config/rehearsal.yaml)")
    r.add_argument("--rehearsal-json", type=Path, help="a rehearsal's results/rehearsal: its per-study images overlay")
    r.add_argument("--timeout", type=int, default=1800, help="seconds per snakemake call")
    r.add_argument("--json", type=Path, help="write every verdict here")
    c = sub.add_parser("compare", help="compare two output trees byte for byte (nothing run)")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    a = ap.parse_args(argv)
    if a.cmd == "compare":
        e = verdict(compare_trees(a.a, a.b))
        print_study(f"{a.a} vs {a.b}", e)
        return 0 if e["verdict"] in ("identical", "data identical; PNGs differ only in metadata") else 1
    before, after, results = a.before.resolve(), a.after.resolve(), a.results.resolve()
    configs = [f.resolve() for f in (a.configfile or [after / "config/config.yaml", after / "config/rehearsal.yaml"])]
    studies = a.study or default_studies(results)
    t0 = time.monotonic()
    report = run(before, after, results, studies, configs, a.rehearsal_json, a.timeout)
    report["seconds"] = round(time.monotonic() - t0, 1)
    if a.json:
        a.json.write_text(json.dumps(report, indent=1))
    good = ("identical", "no analysis", "data identical; PNGs differ only in metadata")
    bad = [s for s, e in report["studies"].items() if e["verdict"] not in good]
    print(f"[analysis_diff] {len(studies)} studies in {report['seconds']} s; not identical: {bad or 'none'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
