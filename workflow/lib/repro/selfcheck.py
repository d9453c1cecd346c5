"""The papers reproduce themselves (issue 28): each study's claims run on the paper's own numbers at
cluster scale, and each perturbed published input flips its verdict.

    ./repro selfcheck [STUDY...]            # = python3 -m repro.selfcheck --out results/selfcheck.csv
    snakemake selfcheck                     # the same, as a target

The contract, per study: an optional ``workflow/studies/<study>/selfcheck.py`` with

    def paper_inputs(published: pd.DataFrame, cfg: dict):
        '''What the study's claim builders take (its tidy table, a model's raw record, ...), built
        from the study's published.csv values alone (``published``: repro.published.load of it).'''

    def claims(inputs, cfg: dict) -> list[repro.claims.Claim]:
        '''The study's own claim builders on ``inputs`` (never a copy of their logic).'''

    PERTURB = [                             # one published input a verdict depends on, moved past
        (claim_id, "what moves", fn),       # the tolerance: fn(inputs) -> the perturbed inputs
    ]                                       # (it gets a deep copy; it may change it in place and return it)
    EXPECTED_CONTRADICTIONS = {claim_id: "why the paper contradicts itself"}   # optional
    UNCHECKED = {"pattern*": "why the paper gives no number this claim reads"} # optional (fnmatch)

or, for a study whose paper gives no number its claims read, only
``NO_PUBLISHED_INPUTS = "why"`` (one row says so; nothing is judged).

``cfg`` is the study's section of ``config/config.yaml`` (validated, defaults filled) judged at
``cluster`` scale (``cfg["judging_scale"] == "cluster"``), so the cluster tolerances are the ones
checked.  The engine records one row per claim and one per perturbation in ``results/selfcheck.csv``
(study, claim, scale, verdict on the paper's numbers, perturbation, verdict perturbed, flipped,
status, why) and fails (exit 1, naming each) on:

* a claim not reproduced on the paper's numbers without a declared contradiction (and a declared
  contradiction that reproduces: the declaration is stale);
* a claim ``not run`` (or ``failed``) on the paper's numbers that ``UNCHECKED`` does not explain;
* a reproduced shape/value claim that no perturbation moves (nothing shows that its verdict
  depends on the paper's numbers);
* a perturbation that does not flip its claim's verdict, or names a claim that is not there;
* a selfcheck module that raises.

A run over every study also lists each study without a selfcheck.py (status ``none``, not a failure),
so the page shows what the selfcheck does not cover yet.

Informative claims (``info``: shown, no verdict; inputs taken from the paper) are recorded, never judged.
"""

from __future__ import annotations

import argparse
import copy
import fnmatch
import importlib
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from repro import claims as C
from repro import config as rconfig
from repro import published as pubvals
from repro import tidy

SCALE = "cluster"
COLUMNS = ["study", "claim", "scale", "verdict", "perturbation", "verdict_perturbed", "flipped", "status", "why",
           "claim_text"]
OK, FAIL, NONE = "ok", "FAIL", "none"
JUDGED = (C.REPRODUCED, C.NOT_REPRODUCED)


@dataclass
class Row:
    study: str
    claim: str
    scale: str = SCALE
    verdict: str = ""
    perturbation: str = ""
    verdict_perturbed: str = ""
    flipped: str = ""
    status: str = OK
    why: str = ""
    claim_text: str = ""


def studies_with_selfcheck(studies_dir: Path = rconfig.STUDIES_DIR) -> list[str]:
    """Every study folder with a selfcheck.py, sorted."""
    return [s for s in rconfig.study_names(studies_dir) if (studies_dir / s / "selfcheck.py").exists()]


def _match(table: dict, claim_id: str) -> str | None:
    for pattern, why in (table or {}).items():
        if fnmatch.fnmatchcase(claim_id, pattern):
            return why
    return None


def check_study(study: str, module, published: pd.DataFrame, section: dict) -> list[Row]:
    """The rows of one study: its claims on the paper's numbers, then each perturbation."""
    cfg = C.at_scale(copy.deepcopy(section), SCALE)
    if getattr(module, "NO_PUBLISHED_INPUTS", None):
        return [Row(study, "-", why=f"no published inputs: {module.NO_PUBLISHED_INPUTS}")]
    inputs = module.paper_inputs(published, cfg)
    got = module.claims(copy.deepcopy(inputs), cfg)
    by_id = {c.claim_id: c for c in got}
    contra = getattr(module, "EXPECTED_CONTRADICTIONS", {}) or {}
    unchecked = getattr(module, "UNCHECKED", {}) or {}
    perturb = list(getattr(module, "PERTURB", []) or [])
    perturbed_ids = {p[0] for p in perturb}
    rows: list[Row] = []
    for c in got:
        r = Row(study, c.claim_id, c.scale or SCALE, c.verdict, claim_text=c.claim)
        declared = contra.get(c.claim_id)
        if c.verdict == C.REPRODUCED:
            if declared:
                r.status, r.why = FAIL, f"declared a contradiction of the paper ({declared}) but reproduces"
            elif c.kind in ("shape", "value") and c.claim_id not in perturbed_ids:
                r.status, r.why = FAIL, ("no perturbation moves it: nothing shows its verdict depends on the "
                                         "paper's numbers")
            else:
                r.why = "reproduced on the paper's own numbers" + (f" ({c.tolerance})" if c.tolerance else "")
        elif c.verdict == C.NOT_REPRODUCED:
            if declared:
                r.why = f"the paper contradicts itself: {declared}"
            else:
                r.status, r.why = FAIL, (f"not reproduced on the paper's own numbers, and no contradiction declared "
                                         f"(published {C._fmt(c.published)}, got {C._fmt(c.reproduced)}, tolerance "
                                         f"{c.tolerance or '-'})")
        elif c.verdict == C.INFO:
            r.why = c.note or "informative: shown beside the paper's number, no verdict"
        else:  # not run, failed, cluster-only
            why = _match(unchecked, c.claim_id)
            if why:
                r.why = f"not checked: {why}"
            else:
                r.status, r.why = FAIL, (f"{c.verdict} on the paper's own numbers and not in UNCHECKED "
                                         "(which published number does it read?)")
        rows.append(r)
    for cid, what, fn in perturb:
        base = by_id.get(cid)
        r = Row(study, cid, perturbation=what)
        if base is None:
            r.status, r.why = FAIL, "perturbation names a claim the study's builders did not return"
            rows.append(r)
            continue
        r.verdict, r.scale, r.claim_text = base.verdict, base.scale or SCALE, base.claim
        moved = fn(copy.deepcopy(inputs))
        after = {c.claim_id: c for c in module.claims(moved, cfg)}.get(cid)
        r.verdict_perturbed = after.verdict if after is not None else "(claim gone)"
        flipped = after is not None and base.verdict in JUDGED and after.verdict in JUDGED \
            and after.verdict != base.verdict
        r.flipped = "yes" if flipped else "no"
        if flipped:
            r.why = f"flips: {base.verdict} -> {after.verdict} (got {C._fmt(after.reproduced)})"
        else:
            r.status = FAIL
            r.why = (f"does not flip: {base.verdict} -> {r.verdict_perturbed}"
                     + (f" (got {C._fmt(after.reproduced)})" if after is not None else ""))
        rows.append(r)
    return rows


def run(studies: list[str] | None = None, config_path: str | Path = "config/config.yaml",
        studies_dir: Path = rconfig.STUDIES_DIR, package: str = "studies") -> pd.DataFrame:
    """The selfcheck of ``studies`` (default: every study with a selfcheck.py) as a table."""
    cfg_all = rconfig.load(config_path)
    rows: list[Row] = []
    if not studies:
        rows += [Row(s, "-", scale="", status=NONE, why="no selfcheck.py yet: its claims are not checked on the "
                     "paper's own numbers") for s in rconfig.study_names(studies_dir)
                 if s not in studies_with_selfcheck(studies_dir) and (studies_dir / s / "published.csv").exists()]
    for study in studies or studies_with_selfcheck(studies_dir):
        print(f"selfcheck {study}: running its claims on the paper's numbers and each perturbation", file=sys.stderr,
              flush=True)
        try:
            module = importlib.import_module(f"{package}.{study}.selfcheck")
            published = pubvals.load(studies_dir / study / "published.csv")
            rows += check_study(study, module, published, cfg_all.get(study, {}))
        except Exception as exc:  # noqa: BLE001 -- a broken selfcheck is a failure row, named, not a crash
            tb = traceback.format_exc(limit=-2).strip().splitlines()
            rows.append(Row(study, "-", status=FAIL,
                            why=f"selfcheck raised {type(exc).__name__}: {exc} ({' / '.join(tb[-3:-1])})"))
    df = pd.DataFrame([r.__dict__ for r in rows], columns=COLUMNS)
    return df


def failures(df: pd.DataFrame) -> pd.DataFrame:
    return df[df.status == FAIL]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("studies", nargs="*", help="studies to check (default: every study with a selfcheck.py)")
    ap.add_argument("--config", default="config/config.yaml", help="the cluster configuration (judged at cluster)")
    ap.add_argument("--out", default="results/selfcheck.csv")
    ap.add_argument("--studies-dir", default=str(rconfig.STUDIES_DIR), help=argparse.SUPPRESS)  # tests
    ap.add_argument("--package", default="studies", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    studies_dir = Path(a.studies_dir)
    known = studies_with_selfcheck(studies_dir)
    unknown = [s for s in a.studies if s not in known]
    if unknown:
        print(f"selfcheck: no workflow/studies/<study>/selfcheck.py for {', '.join(unknown)} "
              f"(have: {', '.join(known) or 'none'})", file=sys.stderr)
        return 2
    df = run(a.studies or None, a.config, studies_dir, a.package)
    tidy.write_csv(df, a.out)
    bad = failures(df)
    claims_rows = df[(df.perturbation == "") & (df.claim != "-")]
    pert = df[df.perturbation != ""]
    for study, sub in df.groupby("study", sort=False):
        c, p = sub[(sub.perturbation == "") & (sub.claim != "-")], sub[sub.perturbation != ""]
        if c.empty and p.empty:
            print(f"selfcheck {study}: {sub.why.iloc[0]}")
            continue
        print(f"selfcheck {study}: {len(c)} claims ({(c.verdict == C.REPRODUCED).sum()} reproduced, "
              f"{c.why.str.startswith('the paper contradicts').sum()} declared contradictions, "
              f"{(c.verdict == C.INFO).sum()} informative), {len(p)} perturbations "
              f"({(p.flipped == 'yes').sum()} flipped), {(sub.status == FAIL).sum()} failures")
    for r in bad.itertuples():
        print(f"FAIL {r.study} {r.claim}" + (f" [{r.perturbation}]" if r.perturbation else "") + f": {r.why}")
    print(f"selfcheck: {len(claims_rows)} claims, {len(pert)} perturbations, {len(bad)} failures -> {a.out}")
    return 1 if len(bad) else 0


if __name__ == "__main__":
    sys.exit(main())
