"""The throw-away study `toy` of tests/test_add_a_study.py, written from workflow/README.md's list
"Adding a study: what its commit touches" and nothing else: the files its folder holds (FILES, under
workflow/studies/toy/) and the two edits (SNAKEFILE_LINE, CONFIG, LOCAL). One experiment (`hash`:
SHA-256 of N MiB, raw path size~{size}/rep~{rep}.json), one claim with a direction."""

from __future__ import annotations

import re
from pathlib import Path

STUDY = "toy"

DECLARATION = '''\
"""The toy study, declared once (repro.study): SHA-256 of N MiB -- the throw-away study that
tests/test_add_a_study.py builds from workflow/README.md's list."""

from repro.study import Experiment, Study

STUDY = Study(
    name="toy",
    title="Toy: SHA-256 of N MiB (the add-a-study test)",
    paper="none (tests/test_add_a_study.py)",
    outputs={"measurements": "measurements.csv", "summary": "tables/summary.csv", "claims": "claims.csv"},
    output_tables={"summary": "Every configuration: count/mean/std/min/max, failed, not run"},
    expected_times={"setup_local": "none", "run_local": "< 10 s", "analysis_local": "< 10 s",
                    "run_cluster": "< 1 min"},
    readme={"local": "< 10 s", "cluster": "< 1 min (6 one-node jobs)"},
    experiments=(Experiment("hash", "size~{size}/rep~{rep}.json", constraints={"size": r"[0-9]+"}),),
)
'''

SCHEMA = """\
type: object
description: The add-a-study test's toy study (SHA-256 of N MiB).
additionalProperties: false
default: {}
properties:
  enabled:
    type: boolean
    default: true
  sizes:
    type: array
    items: {type: integer, minimum: 1}
    default: [1, 4]
    description: MiB hashed by one run
  repeats:
    type: integer
    minimum: 1
    default: 2
  ratio_band:
    $ref: ../../schemas/tolerance.yaml
    x-judging: true
    description: bytes hashed per MiB of size, largest over smallest size, as a ratio
    default:
      local: {value: [0.99, 1.01], why: "a MiB is 2^20 bytes at any scale"}
      rehearsal: {value: [0.99, 1.01], why: "a MiB is 2^20 bytes at any scale"}
      cluster: {value: [0.99, 1.01], why: "a MiB is 2^20 bytes at any scale"}
"""

LAYOUT = '''\
"""The toy study's configuration matrix: a function of its config section."""

from __future__ import annotations

from repro import paramspace
from studies.toy.declaration import STUDY


def matrix(cfg: dict) -> list[dict]:
    """One job per (size, rep)."""
    return paramspace.expand({"size": cfg["sizes"], "rep": list(range(cfg["repeats"]))})


def expected_raw(cfg: dict) -> list[str]:
    return [STUDY.raw_path("hash", **job) for job in matrix(cfg)]


def kick(cfg: dict) -> list[str]:
    return [STUDY.raw_path("hash", size=min(cfg["sizes"]), rep=0)]
'''

RUN = '''\
#!/usr/bin/env python3
"""The toy study's one experiment on the run contract (repro.runner):
    python3 -m studies.toy.run hash --config '<toy JSON>' --params '{"size": N}' --rep I --out PATH
SHA-256 of N MiB of zeros; records where it ran (host, Slurm job) and the bytes and time."""

from __future__ import annotations

import hashlib
import os
import socket
import sys
import time

from repro import rawio, runner

RUN = runner.Experiments("toy")


@RUN.experiment("hash", system_kind="real")
def hash_mib(ctx: runner.Context):
    size = int(ctx.params["size"])
    rec = ctx.record({"hashlib": "sha256"})
    h, done, chunk = hashlib.sha256(), 0, bytes(1 << 20)
    t0 = time.perf_counter()
    for _ in range(size):
        h.update(chunk)
        done += len(chunk)
    seconds = time.perf_counter() - t0
    rec["metrics"] = [rawio.metric("bytes_hashed", done, "B"), rawio.metric("seconds", seconds, "s")]
    rec["sanity"] = {"all_bytes": done == size << 20}
    rec["extra"] = {"digest": h.hexdigest(), "hostname": socket.gethostname(), "pid": os.getpid(),
                    "slurm_job_id": os.environ.get("SLURM_JOB_ID", ""),
                    "slurmd_nodename": os.environ.get("SLURMD_NODENAME", "")}
    ctx.progress(f"{size} MiB in {seconds:.4f} s")
    if not rec["sanity"]["all_bytes"]:
        raise runner.RunFailed(f"hashed {done} bytes of {size << 20}", rec)
    return rec


if __name__ == "__main__":
    sys.exit(RUN.main())
'''

RULES = '''\
# The toy study (tests/test_add_a_study.py): SHA-256 of N MiB, one experiment, one claim.

from studies.toy import declaration as toy_declaration
from studies.toy import layout as toy_layout

TOY = config["toy"]
TOY_STUDY = toy_declaration.STUDY
TOY_PUBLISHED = f"{STUDIES}/toy/published.csv"

experiment_rule(
    TOY_STUDY, "hash", matrix=toy_layout.matrix(TOY),
    resources={"runtime": 5, "mem_mb": 500, "bench": 1, "host_share": 2},
)
register_study(TOY_STUDY, kick=toy_layout.kick(TOY), enabled=enabled("toy"), stand_ins=[])

analysis_rule(
    "toy", "toy_aggregate", script="aggregate", lib=("layout", "declaration"), raw=experiment_raw(TOY_STUDY),
    output={k: TOY_STUDY.out(k) for k in ("measurements", "summary")},
    args="--measurements {output.measurements} --summary {output.summary}",
)
analysis_rule(
    "toy", "toy_claims", script="claims", lib=("declaration",),
    inputs={"measurements": TOY_STUDY.out("measurements"), "published": TOY_PUBLISHED},
    output={"out": TOY_STUDY.out("claims")},
    args="--measurements {input.measurements} --published {input.published} --out {output.out}",
)
'''

AGGREGATE = '''\
#!/usr/bin/env python3
"""toy: raw files -> the tidy table (results/toy/measurements.csv) and a summary per size."""

from __future__ import annotations

import sys

from repro import tidy
from studies.toy import layout


def build(cfg: dict):
    df = tidy.collect(layout.expected_raw(cfg), "toy", experiment_of=lambda p: "hash",
                      system_kind_of=lambda p: "real")
    return df, tidy.summarize(df, ["size"])


if __name__ == "__main__":
    sys.exit(tidy.aggregate_main(__doc__, build, label="toy_aggregate", tables={}))
'''

CLAIMS = '''\
#!/usr/bin/env python3
"""toy claims (results/toy/claims.csv): one claim with a direction, from the tidy table."""

from __future__ import annotations

import sys

import pandas as pd
from repro import claims as C
from repro import published
from studies.toy.declaration import STUDY


def bytes_grow_with_size(df: pd.DataFrame, cfg: dict, pub: pd.DataFrame) -> C.Claim:
    per_mib = published.number(pub, claim_id="bytes_grow_with_size", metric="bytes_per_mib")
    c = C.Claim(study="toy", claim_id="bytes_grow_with_size", claim="A larger input hashes more bytes, in proportion",
                paper_ref="published.csv", target="toy_claims", output=STUDY.out("measurements"), unit="B")
    ok = df[(df["status"] == "ok") & (df["metric"] == "bytes_hashed")]
    means = ok.groupby("size")["value"].mean()
    t = C.tol(cfg, "ratio_band")
    if len(means) < 2:
        return C.judge(C.shape_claim(c, None, "fewer than two sizes ran", "grows"), t)
    lo, hi = means.index.min(), means.index.max()
    ratio = (means[hi] / means[lo]) / (hi / lo)
    holds = means[hi] > means[lo] and t.value[0] <= ratio <= t.value[1]
    observed = f"{means[lo]:.0f} B at {lo} MiB -> {means[hi]:.0f} B at {hi} MiB (per-MiB ratio {ratio:.4f})"
    return C.judge(C.shape_claim(c, holds, observed, f"grows, {per_mib:.0f} B per MiB"), t,
                   text=f"per-MiB ratio in {t.value}")


def build(args, cfg):
    df = pd.read_csv(args.measurements)
    return [bytes_grow_with_size(df, cfg, published.load(args.published))]


if __name__ == "__main__":
    sys.exit(C.main(__doc__, "toy", build))
'''

PUBLISHED = '''\
claim_id,metric,value,unit,source
bytes_grow_with_size,bytes_per_mib,1048576,B,"a MiB is 2^20 bytes (the toy study's paper)"
'''

README = """\
# Study `toy`: SHA-256 of N MiB

The throw-away study of `tests/test_add_a_study.py`, made from `workflow/README.md`'s list.

| claim | rule | output |
|---|---|---|
| a larger input hashes more bytes, in proportion | `toy_claims` | `results/toy/claims.csv` |
"""

TEST = '''\
from studies.toy import layout


def test_the_matrix_is_sizes_times_repeats():
    cfg = {"sizes": [1, 4], "repeats": 2}
    assert len(layout.matrix(cfg)) == 4
    assert layout.expected_raw(cfg)[0] == "results/toy/raw/size~1/rep~0.json"
'''

# what the study's folder holds, by the README's items (workflow/studies/toy/<path>)
FILES = {
    "declaration.py": DECLARATION,
    "schema.yaml": SCHEMA,
    "layout.py": LAYOUT,
    "run.py": RUN,
    "rules.smk": RULES,
    "aggregate.py": AGGREGATE,
    "claims.py": CLAIMS,
    "published.csv": PUBLISHED,
    "README.md": README,
    "tests/test_toy_layout.py": TEST,
}

SNAKEFILE_LINE = 'include: "workflow/studies/toy/rules.smk"\n'
# the top-level README.md: its table of studies, and the declaration's readme= row of its expected times
README_STUDY_ROW = "| `toy` | none (tests/test_add_a_study.py) | SHA-256 of N MiB: the add-a-study test's study |\n"
README_TIMES_ROW = "| `toy` | < 10 s | < 1 min (6 one-node jobs) |\n"
# config/config.yaml: the papers' scale; config/local.yaml: what differs on one 2-core machine
CONFIG = "\ntoy:\n  enabled: true\n  sizes: [16, 64]\n  repeats: 3\n"
LOCAL = "\ntoy:\n  sizes: [1, 4]\n  repeats: 2\n"


def readme_list(readme: Path) -> str:
    """workflow/README.md's section "Adding a study: what its commit touches" (up to the next heading)."""
    text = readme.read_text()
    m = re.search(r"^## Adding a study: what its commit touches\n(.*?)^## ", text, re.S | re.M)
    assert m, "workflow/README.md has no section 'Adding a study: what its commit touches'"
    return m.group(1)


def listed(section: str) -> tuple[set[str], set[str]]:
    """What the section's numbered items say a study's commit touches: the files its folder gets
    (items 1-7: file names in backquotes, and `tests/`) and the files it edits (item 8)."""
    items = re.findall(r"^\d+\. (.*?)(?=^\d+\. |^\n|\Z)", section, re.S | re.M)
    assert len(items) >= 8, items
    quoted = [re.findall(r"`([^`]+)`", item) for item in items]
    created = {q for item in quoted[:7] for q in item if re.fullmatch(r"[\w-]+\.(py|yaml|smk|csv|md)|tests/", q)}
    edited = {q for q in quoted[7] if re.fullmatch(r"Snakefile|config/[\w-]+\.yaml|README\.md", q)}
    return created, edited


def write_study(ws: Path, leave_out: str | None = None) -> list[str]:
    """Create the study's files and make the two edits in the scratch copy ``ws``; ``leave_out``: a
    file of FILES not written (the negative check). The paths written or edited, relative to ``ws``."""
    folder = ws / "workflow" / "studies" / STUDY
    touched = []
    for rel, text in FILES.items():
        if rel == leave_out:
            continue
        p = folder / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        touched.append(str(p.relative_to(ws)))
    # the Snakefile: the study's include beside the other studies' (before the engine's containers and
    # report, which read the registry)
    snakefile = ws / "Snakefile"
    lines = snakefile.read_text().splitlines(keepends=True)
    last = max(i for i, ln in enumerate(lines) if re.match(r'include: "workflow/studies/[^/]+/rules\.smk"', ln))
    lines.insert(last + 1, SNAKEFILE_LINE)
    snakefile.write_text("".join(lines))
    with open(ws / "config" / "config.yaml", "a") as f:
        f.write(CONFIG)
    with open(ws / "config" / "local.yaml", "a") as f:
        f.write(LOCAL)
    readme = ws / "README.md"
    lines = readme.read_text().splitlines(keepends=True)
    first = next(i for i, ln in enumerate(lines) if re.match(r"\| \[?`\w+`", ln))  # the table of studies
    end = next(i for i in range(first, len(lines)) if not lines[i].startswith("|"))
    lines.insert(end, README_STUDY_ROW)
    times = lines.index("## Expected times\n")
    last = max(i for i, ln in enumerate(lines) if i > times and re.match(r"\| `\w+` \|", ln))
    lines.insert(last + 1, README_TIMES_ROW)
    readme.write_text("".join(lines))
    return touched + ["Snakefile", "config/config.yaml", "config/local.yaml", "README.md"]
