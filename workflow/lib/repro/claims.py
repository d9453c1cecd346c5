"""Claims: a paper's statement, its published value, ours, and a verdict.

Kinds of claim (ReFrame-style references, Ramble-style success criteria):

* ``value``  -- an absolute number compared within a tolerance; only where the
  hardware does not matter (cost models) or matches.
* ``shape``  -- a relation that should hold on any hardware (who beats whom,
  a scaling trend, a ratio band); ``reproduced`` is the observed relation and
  ``holds`` says whether it held.
* ``info``   -- shown side by side, no verdict (absolute timings on other hardware).

A claim whose inputs are missing gets the verdict ``not run``; one whose
inputs came from a failed run, ``failed``.  A stand-in's result is labelled
with its ``system_kind`` and never passes as the real system's.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field

import pandas as pd

from . import tidy

COLUMNS = [
    "study", "claim_id", "claim", "paper_ref", "target", "output", "kind",
    "published", "reproduced", "unit", "tolerance", "verdict", "system_kind", "note",
]

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INFO = "informative"
NOT_RUN = "not run"
FAILED = "failed"
# a statement about a scale the configuration does not run (e.g. 16-64 nodes): the paper's number
# and the tolerance are stated, the cluster configuration gives it a verdict
CLUSTER_ONLY = "cluster-only"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INFO, FAILED, NOT_RUN, CLUSTER_ONLY)


@dataclass
class Claim:
    study: str
    claim_id: str
    claim: str
    paper_ref: str
    target: str
    output: str
    kind: str = "value"
    published: object = ""
    reproduced: object = ""
    unit: str = ""
    tolerance: str = ""
    verdict: str = ""
    system_kind: str = "real"
    note: str = ""
    extra: dict = field(default_factory=dict, repr=False)

    def row(self) -> dict:
        d = asdict(self)
        d.pop("extra")
        for key in ("published", "reproduced"):
            d[key] = _fmt(d[key])
        return d


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        if v.is_integer():
            return str(int(v))
        return f"{v:.10g}"
    return str(v)


def within(reproduced: float | None, published: float, abs_tol: float = 0.0, rel_tol: float = 0.0) -> str:
    if reproduced is None or (isinstance(reproduced, float) and math.isnan(reproduced)):
        return NOT_RUN
    bound = max(abs_tol, rel_tol * abs(published))
    return REPRODUCED if abs(reproduced - published) <= bound + 1e-12 else NOT_REPRODUCED


def tolerance_text(abs_tol: float = 0.0, rel_tol: float = 0.0, unit: str = "") -> str:
    parts = []
    if abs_tol:
        parts.append(f"±{abs_tol:g} {unit}".strip())
    if rel_tol:
        parts.append(f"±{rel_tol * 100:g} %")
    return " or ".join(parts) if parts else "exact"


def value_claim(base: Claim, reproduced: float | None, published: float,
                abs_tol: float = 0.0, rel_tol: float = 0.0) -> Claim:
    base.kind = "value"
    base.published = published
    base.reproduced = reproduced
    base.tolerance = tolerance_text(abs_tol, rel_tol, base.unit)
    base.verdict = within(reproduced, published, abs_tol, rel_tol)
    return base


def shape_claim(base: Claim, holds: bool | None, observed: str, expected: str) -> Claim:
    base.kind = "shape"
    base.published = expected
    base.reproduced = observed
    base.tolerance = "relation"
    if holds is None:
        base.verdict = NOT_RUN
    else:
        base.verdict = REPRODUCED if holds else NOT_REPRODUCED
    return base


def info_claim(base: Claim, reproduced, published) -> Claim:
    base.kind = "info"
    base.published = published
    base.reproduced = reproduced
    base.tolerance = "none (hardware differs)"
    base.verdict = INFO if reproduced not in (None, "") else NOT_RUN
    return base


def write(claims: list[Claim], path: str | os.PathLike) -> None:
    df = pd.DataFrame([c.row() for c in claims], columns=COLUMNS)
    tidy.write_csv(df, path)


def read(path: str | os.PathLike) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def run_builders(builders, *args) -> list[Claim]:
    """The claims of every builder, in order: each is called with the same arguments."""
    out: list[Claim] = []
    for b in builders:
        out += b(*args)
    return out


def summary(study: str, cl: list[Claim]) -> str:
    """One line: how many claims, how many shape claims, and the count of every verdict."""
    n = {v: sum(c.verdict == v for c in cl) for v in VERDICTS}
    return (f"{study}_claims: {len(cl)} claims, {sum(c.kind == 'shape' for c in cl)} shape, "
            + ", ".join(f"{k} {v}" for k, v in n.items()))


def main(doc: str, study: str, builder, paths=("measurements", "published", "out"), argv=None) -> int:
    """The command line of a study's claims script: ``--config`` plus one ``--<name>`` per entry of
    `paths` (one of them ``out``); ``builder(args, cfg)`` returns the claims, written to ``--out``
    (claims.csv), each shape/value verdict printed, then one summary line. Returns 0 (a claim that
    is not reproduced is a result, not an error)."""
    from . import cli  # cli does not import claims; kept local so claims stays importable alone

    args, cfg = cli.parse(doc, *paths, argv=argv)
    cl = builder(args, cfg)
    write(cl, args.out)
    for c in cl:
        if c.kind in ("shape", "value"):
            print(f"{c.verdict:15s} {c.claim_id}: {c.reproduced}")
    print(summary(study, cl))
    return 0
