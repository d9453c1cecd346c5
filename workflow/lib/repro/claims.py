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

Tolerances at a scale (issue 28).  A run is judged at one scale, ``local`` (config/local.yaml),
``rehearsal`` (config/rehearsal.yaml) or ``cluster`` (config/config.yaml alone): the global key
``judging_scale``, handed to every analysis script inside its ``--config`` section (study_json).
A tolerance is an ``x-judging`` key of a study's schema declared per scale, each value with its
one-line reason (``$ref: ../../schemas/tolerance.yaml``)::

    node_band:
      $ref: ../../schemas/tolerance.yaml
      x-judging: true
      default:
        local:     {value: [0.5, 2.0], why: "4 nodes share 2 cores: ..."}
        rehearsal: {value: [0.5, 2.0], why: "..."}
        cluster:   {value: [0.8, 1.25], why: "the paper's Table I: ..."}

``tol(cfg, "node_band")`` returns the one for the scale (``.value``, ``.why``, ``.scale``), and
refuses, naming the key, one missing a scale or a reason, or a cluster reason that cites the local
machine (``LOCAL_WORDS``).  ``judge(claim, t)`` stamps a claim with it: the columns ``scale`` and
``tolerance_why`` of claims.csv.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import asdict, dataclass, field

import pandas as pd

from . import tidy

COLUMNS = [
    "study", "claim_id", "claim", "paper_ref", "target", "output", "kind",
    "published", "reproduced", "unit", "tolerance", "verdict", "system_kind", "note",
    "scale", "tolerance_why",
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
    scale: str = ""           # the scale it was judged at (local | rehearsal | cluster)
    tolerance_why: str = ""   # the reason of its tolerance at that scale (tol(...).why)
    extra: dict = field(default_factory=dict, repr=False)

    def row(self) -> dict:
        d = asdict(self)
        d.pop("extra")
        for key in ("published", "reproduced"):
            d[key] = _fmt(d[key])
        return d


# ---------------------------------------------------------------------------
# tolerances per scale
# ---------------------------------------------------------------------------
SCALES = ("local", "rehearsal", "cluster")
SCALE_KEY = "judging_scale"   # the global key; study_json copies it into every analysis section
# A cluster tolerance comes from the paper (its scatter, its rounding, its wording), never from this
# machine: a cluster reason naming one of these is refused (lower-case substrings).
LOCAL_WORDS = ("2 cores", "two cores", "2 shared cores", "shared cores", "2-core", "one host", "this host",
               "this machine", "emulated", "namespace", "loadavg", "other engineers")


class ToleranceError(ValueError):
    """A tolerance that cannot be used at the scale asked; the message names the key."""


@dataclass(frozen=True)
class Tolerance:
    key: str
    value: object
    why: str
    scale: str


def scale_of(cfg: dict | None, default: str | None = None) -> str | None:
    """The judging scale an analysis section carries (``judging_scale``), else ``default``."""
    s = (cfg or {}).get(SCALE_KEY, default)
    if s is not None and s not in SCALES:
        raise ToleranceError(f"{SCALE_KEY}: {s!r} is not one of {', '.join(SCALES)}")
    return s


def at_scale(cfg: dict, scale: str) -> dict:
    """A copy of an analysis section judged at ``scale`` (tests, the selfcheck)."""
    if scale not in SCALES:
        raise ToleranceError(f"{SCALE_KEY}: {scale!r} is not one of {', '.join(SCALES)}")
    return {**cfg, SCALE_KEY: scale}


def _node(cfg: dict, key: str):
    node = cfg
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ToleranceError(f"{key}: no such tolerance in the section (is it in the study's schema.yaml?)")
        node = node[part]
    return node


def check_tolerance(key: str, node) -> None:
    """Refuse a per-scale tolerance missing a scale or a reason, or whose cluster reason cites the
    local machine; the message names the key (``<key>.<scale>.why``)."""
    if not isinstance(node, dict) or not set(node) & set(SCALES):
        raise ToleranceError(f"{key}: not a per-scale tolerance (give {{{', '.join(SCALES)}}}: "
                             "{value: ..., why: ...} each; workflow/schemas/tolerance.yaml)")
    for scale in SCALES:
        ent = node.get(scale)
        if not isinstance(ent, dict) or "value" not in ent:
            raise ToleranceError(f"{key}.{scale}: missing (every tolerance is declared for {', '.join(SCALES)})")
        why = str(ent.get("why") or "").strip()
        if not why:
            raise ToleranceError(f"{key}.{scale}.why: missing (each scale's value has a one-line reason)")
        if scale == "cluster":
            # whole words: the paper's "512 cores" is not "2 cores"
            hits = [w for w in LOCAL_WORDS if re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", why.lower())]
            if hits:
                cited = ", ".join(repr(h) for h in hits)
                raise ToleranceError(f"{key}.cluster.why: cites the local machine ({cited}): "
                                     f"{why!r}; a cluster tolerance comes from the paper (its scatter, rounding "
                                     "or wording)")
    extra = set(node) - set(SCALES)
    if extra:
        raise ToleranceError(f"{key}: unknown scale(s) {', '.join(sorted(extra))} (scales: {', '.join(SCALES)})")


def tol(cfg: dict, key: str, scale: str | None = None) -> Tolerance:
    """The tolerance ``key`` (dotted path in the study's section) at the section's judging scale
    (or ``scale``): ``.value``, ``.why``, ``.scale``. Refuses, naming the key, a section without a
    scale and a tolerance missing a scale or a reason (check_tolerance)."""
    scale = scale or scale_of(cfg)
    if scale is None:
        raise ToleranceError(f"{key}: no {SCALE_KEY} in the section (analysis rules get it from study_json; "
                             "tests: claims.at_scale(cfg, 'local'))")
    if scale not in SCALES:
        raise ToleranceError(f"{SCALE_KEY}: {scale!r} is not one of {', '.join(SCALES)}")
    node = _node(cfg, key)
    check_tolerance(key, node)
    ent = node[scale]
    return Tolerance(key, ent["value"], str(ent["why"]).strip(), scale)


def judge(c: Claim, t: Tolerance, text: str | None = None) -> Claim:
    """Stamp a claim with the tolerance it was judged by: its scale and reason (and the tolerance
    column's text, when given)."""
    c.scale, c.tolerance_why = t.scale, t.why
    if text is not None:
        c.tolerance = text
    return c


def input_claim(base: Claim, value, source: str) -> Claim:
    """A number the claims take from the paper as an input (a price, a cost item): shown, no
    verdict -- a value compared with itself proves nothing (issue 28)."""
    base.kind = "info"
    base.published = value
    base.reproduced = value
    base.tolerance = "none (an input taken from the paper)"
    base.verdict = INFO if value not in (None, "") else NOT_RUN
    base.note = ("taken from the paper: " + source) if source else "taken from the paper"
    return base


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


def write(claims: list[Claim], path: str | os.PathLike, scale: str | None = None) -> None:
    """claims.csv; a claim not stamped by judge() gets ``scale`` (the section's judging scale) and an
    empty tolerance_why."""
    for c in claims:
        if not c.scale and scale:
            c.scale = scale
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
    write(cl, args.out, scale=scale_of(cfg))
    for c in cl:
        if c.kind in ("shape", "value"):
            print(f"{c.verdict:15s} {c.claim_id}: {c.reproduced}")
    print(summary(study, cl))
    return 0
