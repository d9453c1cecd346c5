"""The Montage and BLAST workflows as stages of tasks with explicit files.

A task is a shell command template with two placeholders, ``{fs}`` (the root
of the runtime file system as seen by the slot that runs the task: a MemFS
mount point, or the node's local directory) and ``{tmp}`` (a node-local
scratch directory, removed after the task), plus its input and output files
as paths relative to ``{fs}``.  The *first* input is the one a locality-aware
scheduler places the task by (AMFS Shell's rule).

``where="scheduler"`` marks the aggregation tasks (mImgtbl, mOverlaps,
mConcatFit, mBgModel, mAdd, merge): they run on the scheduler node, system
node 1, as in the paper (Table 2.3).  The parallel stages the paper times are
``TIMED[workflow]``.

Stages are produced one at a time (``Workflow.stages`` is a generator that
receives a ``ctx``), because some depend on files the workflow made: the
mDiffFit tasks are the pairs in mOverlaps's ``diffs.tbl``.

MemFS is write-once (a file cannot be re-opened for writing): tools that
rewrite their output (mImgtbl writes its table twice) write into ``{tmp}``
and the result is copied into the file system; the parallel stages write
straight into it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

TIMED = {
    "montage": ["mProjectPP", "mDiffFit", "mBackground"],
    "blast": ["formatdb", "blastall"],
}


@dataclass
class Task:
    id: str
    stage: str
    cmd: str
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    where: str = "any"            # any | scheduler
    cwd: str | None = None        # relative to {fs}
    source: str | None = None     # stage-in: driver-visible path of the file copied in


@dataclass
class Stage:
    name: str
    tasks: list[Task]
    parallel: bool = True
    dirs: list[str] = field(default_factory=list)   # directories the stage writes into


def q(s: str) -> str:
    return shlex.quote(s)


def fs(rel: str) -> str:
    """A path inside the runtime file system, for a command template."""
    return "{fs}/" + rel


def ipac_awk_statfiles(diffs_tbl: str, out: str) -> str:
    """awk that turns mOverlaps' diffs.tbl into mConcatFit's statfiles table."""
    prog = (
        'BEGIN{printf "|%8s|%8s|%40s|\\n|%8s|%8s|%40s|\\n","cntr1","cntr2","stat","int","int","char"}'
        ' /^[|\\\\]/{next} NF>=2{printf " %8s %8s %40s \\n",$1,$2,"fit."$1"."$2".txt"}'
    )
    return f"awk {q(prog)} {diffs_tbl} > {out}"


# ------------------------------------------------------------------ Montage
class Montage:
    name = "montage"
    root = "montage"

    def __init__(self, inputs_dir: str, manifest: dict):
        self.inputs = Path(inputs_dir)
        self.manifest = manifest
        self.tiles = [t["name"] for t in manifest["tiles"]]

    def stages(self, ctx):
        r = self.root
        # stage-in: the raw tiles into the file system (uniform, round-robin)
        yield Stage("stage_in", [
            Task(f"stage_in:{t}", "stage_in", f"cp {q(str(self.inputs / 'raw' / t))} {fs(f'{r}/raw/{t}')}",
                 inputs=[], outputs=[f"{r}/raw/{t}"], source=str(self.inputs / "raw" / t))
            for t in self.tiles], dirs=[f"{r}/raw"])
        # mImgtbl + mMakeHdr: the mosaic's header, from the input table (scheduler node)
        yield Stage("mMakeHdr", [Task(
            "mMakeHdr", "mMakeHdr",
            f"mImgtbl {q(str(self.inputs / 'raw'))} {{tmp}}/images.tbl && "
            f"mMakeHdr {{tmp}}/images.tbl {{tmp}}/template.hdr && "
            f"cp {{tmp}}/images.tbl {fs(f'{r}/images.tbl')} && cp {{tmp}}/template.hdr {fs(f'{r}/template.hdr')}",
            inputs=[], outputs=[f"{r}/images.tbl", f"{r}/template.hdr"], where="scheduler")], parallel=False)
        # mProjectPP: one per tile (parallel)
        proj = []
        for t in self.tiles:
            out = f"{r}/proj/p_{t}"
            area = out[:-5] + "_area.fits"
            proj.append(Task(
                f"mProjectPP:{t}", "mProjectPP",
                f"mProjectPP -X {fs(f'{r}/raw/{t}')} {fs(out)} {fs(f'{r}/template.hdr')}",
                inputs=[f"{r}/raw/{t}", f"{r}/template.hdr"], outputs=[out, area]))
        yield Stage("mProjectPP", proj, dirs=[f"{r}/proj"])
        proj_files = [o for tk in proj for o in tk.outputs]
        proj_imgs = [tk.outputs[0] for tk in proj]
        # mImgtbl of the projected images + mOverlaps (scheduler node)
        yield Stage("mImgtbl", [Task(
            "mImgtbl:proj", "mImgtbl",
            # run inside proj/: the table then holds bare names (mBackground -t needs them)
            f"mImgtbl . {{tmp}}/pimages.tbl && mOverlaps {{tmp}}/pimages.tbl {{tmp}}/diffs.tbl && "
            f"cp {{tmp}}/pimages.tbl {fs(f'{r}/pimages.tbl')} && cp {{tmp}}/diffs.tbl {fs(f'{r}/diffs.tbl')}",
            inputs=proj_imgs, outputs=[f"{r}/pimages.tbl", f"{r}/diffs.tbl"], where="scheduler",
            cwd=f"{r}/proj")],
            parallel=False)
        # mDiffFit: one per overlapping pair (parallel; reads two projected images + areas)
        pairs = parse_diffs(ctx.read_text(f"{r}/diffs.tbl"))
        if not pairs:
            raise RuntimeError("mOverlaps found no overlapping pairs")
        diff = []
        for c1, c2, plus, minus, dname in pairs:
            p1, p2 = f"{r}/proj/{plus}", f"{r}/proj/{minus}"
            a1, a2 = p1[:-5] + "_area.fits", p2[:-5] + "_area.fits"
            d = f"{r}/diffs/{dname}"
            st = f"{r}/stat/fit.{c1}.{c2}.txt"
            diff.append(Task(
                f"mDiffFit:{c1}.{c2}", "mDiffFit",
                f"mDiffFit -s {fs(st)} {fs(p1)} {fs(p2)} {fs(d)} {fs(f'{r}/template.hdr')}",
                inputs=[p1, p2, a1, a2, f"{r}/template.hdr"], outputs=[d, d[:-5] + "_area.fits", st]))
        yield Stage("mDiffFit", diff, dirs=[f"{r}/diffs", f"{r}/stat"])
        stats = [tk.outputs[2] for tk in diff]
        # mConcatFit + mBgModel (scheduler node)
        yield Stage("mConcatFit", [Task(
            "mConcatFit", "mConcatFit",
            ipac_awk_statfiles(fs(f"{r}/diffs.tbl"), "{tmp}/statfiles.tbl") + " && "
            f"mConcatFit {{tmp}}/statfiles.tbl {{tmp}}/fits.tbl {fs(f'{r}/stat')} && "
            f"cp {{tmp}}/fits.tbl {fs(f'{r}/fits.tbl')}",
            inputs=[f"{r}/diffs.tbl", *stats], outputs=[f"{r}/fits.tbl"], where="scheduler")],
            parallel=False)
        yield Stage("mBgModel", [Task(
            "mBgModel", "mBgModel",
            f"mBgModel {fs(f'{r}/pimages.tbl')} {fs(f'{r}/fits.tbl')} {{tmp}}/corrections.tbl && "
            f"cp {{tmp}}/corrections.tbl {fs(f'{r}/corrections.tbl')}",
            inputs=[f"{r}/pimages.tbl", f"{r}/fits.tbl"], outputs=[f"{r}/corrections.tbl"],
            where="scheduler")], parallel=False)
        # mBackground: one per projected image (parallel); -t must run inside proj/
        bg = []
        for tk in proj:
            p = tk.outputs[0]
            base = Path(p).name
            c = f"{r}/corr/c_{base[2:]}"
            bg.append(Task(
                f"mBackground:{base}", "mBackground",
                f"mBackground -t {q(base)} ../corr/{q(Path(c).name)} ../pimages.tbl ../corrections.tbl",
                inputs=[p, tk.outputs[1], f"{r}/pimages.tbl", f"{r}/corrections.tbl"],
                outputs=[c, c[:-5] + "_area.fits"], cwd=f"{r}/proj"))
        yield Stage("mBackground", bg, dirs=[f"{r}/corr"])
        corr = [o for tk in bg for o in tk.outputs]
        # mImgtbl + mAdd: the mosaic (scheduler node)
        yield Stage("mAdd", [Task(
            "mAdd", "mAdd",
            f"mImgtbl . {{tmp}}/cimages.tbl && "
            f"mAdd -p {fs(f'{r}/corr')} {{tmp}}/cimages.tbl {fs(f'{r}/template.hdr')} {{tmp}}/mosaic.fits && "
            f"cp {{tmp}}/cimages.tbl {fs(f'{r}/cimages.tbl')} && cp {{tmp}}/mosaic.fits {fs(f'{r}/mosaic.fits')}"
            f" && cp {{tmp}}/mosaic_area.fits {fs(f'{r}/mosaic_area.fits')}",
            inputs=[*corr, f"{r}/template.hdr"],
            outputs=[f"{r}/cimages.tbl", f"{r}/mosaic.fits", f"{r}/mosaic_area.fits"],
            where="scheduler", cwd=f"{r}/corr")], parallel=False)
        self._proj_files, self._corr = proj_files, corr

    def verify_task(self) -> Task:
        """mExamine the mosaic and every corrected tile (reads only; after the memory snapshot)."""
        r = self.root
        cmd = (f"mExamine {fs(f'{r}/mosaic.fits')} && grep -E 'NAXIS[12] ' {fs(f'{r}/template.hdr')} && "
               f"for f in {fs(f'{r}/corr')}/c_*.fits; do case $f in *_area.fits) continue;; esac; "
               "echo \"TILE $(basename $f) $(mExamine $f)\"; done")
        return Task("verify", "verify", cmd, inputs=[f"{r}/mosaic.fits", f"{r}/template.hdr", *self._corr],
                    where="scheduler")

    def check(self, out: str) -> dict:
        return check_montage(out, self.manifest)


def parse_diffs(text: str) -> list[tuple[str, str, str, str, str]]:
    rows = []
    for ln in text.splitlines():
        if not ln.strip() or ln.startswith(("|", "\\")):
            continue
        p = ln.split()
        if len(p) >= 5:
            rows.append((p[0], p[1], p[2], p[3], p[4]))
    return rows


def svc(line: str) -> dict:
    """Montage's '[struct stat="OK", a=1, ...]' status line as a dict."""
    body = line.strip()
    if body.startswith("[struct") and body.endswith("]"):
        body = body[len("[struct"):-1]
    out = {}
    for part in body.split(","):
        if "=" in part:
            k, _, v = part.partition("=")
            out[k.strip()] = v.strip().strip('"')
    return out


def check_montage(out: str, manifest: dict, min_coverage: float = 0.95, max_bg_ratio: float = 0.35) -> dict:
    """Mosaic exists, has the template's size and non-NaN coverage; backgrounds were matched."""
    import statistics

    mosaic, naxis, tiles = None, {}, []
    for ln in out.splitlines():
        if ln.startswith("[struct") and mosaic is None and "mExamine" in ln:
            mosaic = svc(ln)
        elif ln.startswith("NAXIS"):
            k, _, v = ln.partition("=")
            naxis[k.strip()] = int(v.split("/")[0])
        elif ln.startswith("TILE "):
            _, name, rest = ln.split(" ", 2)
            tiles.append((name, svc(rest)))
    res = {"ok": False}
    if not mosaic or mosaic.get("stat") != "OK":
        res["why"] = "no mosaic (mExamine failed)"
        return res
    n1, n2 = int(mosaic["naxis1"]), int(mosaic["naxis2"])
    npix, nnull = float(mosaic["npixel"]), float(mosaic["nnull"])
    coverage = 1.0 - nnull / max(npix, 1.0)
    planted = [t["bg"][0] for t in manifest["tiles"]]
    fluxes = [float(s["aveflux"]) for _, s in tiles if s.get("stat") == "OK"]
    bg_raw = statistics.pstdev(planted) if len(planted) > 1 else 0.0
    bg_corr = statistics.pstdev(fluxes) if len(fluxes) > 1 else 0.0
    res.update(mosaic_naxis1=n1, mosaic_naxis2=n2, template_naxis1=naxis.get("NAXIS1"),
               template_naxis2=naxis.get("NAXIS2"), coverage=coverage, tiles_corrected=len(fluxes),
               tiles_expected=len(manifest["tiles"]), bg_spread_planted=bg_raw, bg_spread_corrected=bg_corr)
    problems = []
    if (n1, n2) != (naxis.get("NAXIS1"), naxis.get("NAXIS2")):
        problems.append(f"mosaic is {n1}x{n2}, template {naxis.get('NAXIS1')}x{naxis.get('NAXIS2')}")
    if coverage < min_coverage:
        problems.append(f"coverage {coverage:.3f} < {min_coverage}")
    if len(fluxes) != len(manifest["tiles"]):
        problems.append(f"{len(fluxes)} corrected tiles, expected {len(manifest['tiles'])}")
    if len(planted) > 1 and bg_corr > max_bg_ratio * bg_raw:
        problems.append(f"background spread {bg_corr:.2f} not reduced from {bg_raw:.2f}")
    res["ok"] = not problems
    if problems:
        res["why"] = "; ".join(problems)
    return res


# ------------------------------------------------------------------ BLAST
class Blast:
    name = "blast"
    root = "blast"

    def __init__(self, inputs_dir: str, manifest: dict, evalue: str = "1e-10"):
        self.inputs = Path(inputs_dir)
        self.manifest = manifest
        self.frags = [f["name"] for f in manifest["fragments"]]
        self.queries = list(manifest["queries"])
        self.evalue = evalue

    def stages(self, ctx):
        r = self.root
        stage = [Task(f"stage_in:{f}", "stage_in", f"cp {q(str(self.inputs / 'db' / f))} {fs(f'{r}/db/{f}')}",
                      outputs=[f"{r}/db/{f}"], source=str(self.inputs / "db" / f)) for f in self.frags]
        stage += [Task(f"stage_in:{x}", "stage_in",
                       f"cp {q(str(self.inputs / 'queries' / x))} {fs(f'{r}/queries/{x}')}",
                       outputs=[f"{r}/queries/{x}"], source=str(self.inputs / "queries" / x)) for x in self.queries]
        yield Stage("stage_in", stage, dirs=[f"{r}/db", f"{r}/queries"])
        # formatdb (makeblastdb, what legacy_blast maps formatdb to); v4: no LMDB files
        fmt = []
        for f in self.frags:
            base = f"{r}/fdb/{f[:-3]}"
            fmt.append(Task(
                f"formatdb:{f}", "formatdb",
                f"makeblastdb -blastdb_version 4 -dbtype nucl -in {fs(f'{r}/db/{f}')} -out {fs(base)}"
                f" -title {q(f[:-3])} > /dev/null",
                inputs=[f"{r}/db/{f}"], outputs=[base + ".nhr", base + ".nin", base + ".nsq"]))
        yield Stage("formatdb", fmt, dirs=[f"{r}/fdb"])
        # blastall (blastn -task blastn): one per (query file, fragment); the fragment is the first input
        bl = []
        for x in self.queries:
            for f in self.frags:
                base = f"{r}/fdb/{f[:-3]}"
                out = f"{r}/out/{x[:-3]}.{f[:-3]}.tsv"
                bl.append(Task(
                    f"blastall:{x[:-3]}.{f[:-3]}", "blastall",
                    f"blastn -task blastn -db {fs(base)} -query {fs(f'{r}/queries/{x}')} -outfmt 6"
                    f" -evalue {self.evalue} -max_target_seqs 5 -num_threads 1 -out {fs(out)}",
                    inputs=[base + ".nin", base + ".nhr", base + ".nsq", f"{r}/queries/{x}"], outputs=[out]))
        yield Stage("blastall", bl, dirs=[f"{r}/out"])
        # merge: one per query file, on the scheduler node
        mg = []
        for x in self.queries:
            ins = [f"{r}/out/{x[:-3]}.{f[:-3]}.tsv" for f in self.frags]
            out = f"{r}/merged/{x[:-3]}.tsv"
            mg.append(Task(
                f"merge:{x[:-3]}", "merge",
                "cat " + " ".join(fs(i) for i in ins) + " | sort -k1,1 -k12,12gr > {tmp}/m.tsv && "
                f"cp {{tmp}}/m.tsv {fs(out)}",
                inputs=ins, outputs=[out], where="scheduler"))
        yield Stage("merge", mg, parallel=False, dirs=[f"{r}/merged"])
        self._merged = [t.outputs[0] for t in mg]

    def verify_task(self) -> Task:
        return Task("verify", "verify", "cat " + " ".join(fs(m) for m in self._merged),
                    inputs=list(self._merged), where="scheduler")

    def check(self, out: str) -> dict:
        return check_blast(out, self.manifest)


def check_blast(out: str, manifest: dict, slack: int = 10) -> dict:
    """Every planted query's best hit is its true contig, at its true offset."""
    best: dict[str, tuple[float, str, int, int]] = {}
    for ln in out.splitlines():
        p = ln.split("\t")
        if len(p) < 12:
            continue
        qid, sid, sstart, send, bits = p[0], p[1], int(p[8]), int(p[9]), float(p[11])
        if qid not in best or bits > best[qid][0]:
            best[qid] = (bits, sid, min(sstart, send), max(sstart, send))
    missing, wrong = [], []
    for t in manifest["truth"]:
        b = best.get(t["seq"])
        if b is None:
            missing.append(t["seq"])
            continue
        _, sid, s0, _ = b
        if sid != t["contig"] or abs((s0 - 1) - t["offset"]) > slack:
            wrong.append(f"{t['seq']}->{sid}:{s0}")
    res = {"queries": len(manifest["truth"]), "found": len(manifest["truth"]) - len(missing) - len(wrong),
           "missing": missing[:20], "wrong": wrong[:20]}
    res["ok"] = not missing and not wrong
    if not res["ok"]:
        res["why"] = f"{len(missing)} planted queries not found, {len(wrong)} with a wrong best hit"
    return res
