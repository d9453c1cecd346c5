#!/usr/bin/env python3
"""fusespeed claims -- issues 13's and 22's targets (ours, not the paper's) from the raw file only.

One claim per row of the report's issue-13 and issue-22 tables that has a target (the per-round ratio
to native reads of the same file in the same job, median over the rounds): met -> reproduced, not met
-> not reproduced, a failed or missing measurement -> failed / not run, a median above 1.0 of a limit
(issue 22: a measurement error, never a result) -> informative, with the reason in the note. Rows
without a target (shown for context in the report) make no claim. The numbers are the report's
(report.issue13 / report.issue22 on the same raw file), so claims and report never disagree."""

from __future__ import annotations

import sys

import pandas as pd

from repro import claims as cl
from repro import cli, rawio
from studies.fusespeed import report
from studies.fusespeed.declaration import STUDY

# the report's verdicts -> the claim's
VERDICTS = {"met": cl.REPRODUCED, "not met": cl.NOT_REPRODUCED, "failed": cl.FAILED, "not run": cl.NOT_RUN}


def verdict(state: str) -> str:
    """The claim's verdict for a row's verdict; a measurement error (or anything else) is informative."""
    return VERDICTS.get(state, cl.INFO)


def _claim(cid: str, text: str, ref: str, target: str, output: str, reproduced: str, state: str,
           system_kind: str, note: str) -> cl.Claim:
    return cl.Claim(study=STUDY.name, claim_id=cid, claim=text, paper_ref=ref, target=target, output=output,
                    kind="shape", published=target, reproduced=reproduced, unit="x native",
                    tolerance="the per-round ratio's median at or above the target", verdict=verdict(state),
                    system_kind=system_kind, note=note if verdict(state) != cl.INFO else f"{state}: {note}")


def _num(v) -> str:
    return "" if v is None or pd.isna(v) else f"{float(v):.2f}x"


def build(rec: dict) -> list[cl.Claim]:
    thr = report.throughput(rec)
    kind = rec.get("system_kind", "real")
    out = []
    for spec, row in zip(report.ISSUE13, report.issue13(rec, thr).to_dict("records")):
        if not spec["target"]:
            continue
        spread = " / ".join(_num(row[k]) or "-" for k in ("x native per round: min", "median", "max"))
        out.append(_claim(f"issue13_{spec['variant']}_{spec['tool']}",
                          f"{row['row']}: reads at {row['target']} native (issue 13's target; ours, not the paper's)",
                          "issue 13 (not in the paper)", f"{row['target']} native", STUDY.out("issue13"),
                          _num(row["median"]), row["verdict"], kind,
                          f"per-round ratio to native, min / median / max: {spread}; earlier: "
                          f"{row['earlier (issue 13)']}"))
    i22 = report.issue22(rec, thr)
    for row in (i22.to_dict("records") if len(i22) else []):
        if row["verdict"] == "no target" or row["target"] in ("-", ""):  # context rows: no claim
            continue
        ratios = row.get("x native: min / median / max", "-")
        median = ratios.split(" / ")[1] + "x" if ratios.count(" / ") == 2 else ""
        out.append(_claim(f"issue22_{row['variant']}_{row['tool']}",
                          f"{row['path']}, {row['tool']}: reads at {row['target']} (issue 22's target; ours, "
                          "not the paper's)", "issue 22 (not in the paper)", row["target"], STUDY.out("issue22"),
                          median, row["verdict"], kind,
                          f"x native per round {ratios}; x the FUSE ceiling "
                          f"{row.get('x ceiling: min / median / max', '-')}; bound: {row.get('bound', '-')}"))
    return out


def main() -> int:
    a, _ = cli.parse(__doc__, "raw", "out")
    claims = build(rawio.read(a.raw))
    cl.write(claims, a.out)
    for c in claims:
        print(f"{c.claim_id}: {c.verdict} ({c.reproduced})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
