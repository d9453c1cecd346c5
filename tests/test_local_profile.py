"""A timed job runs alone on this machine: with the local profile's resources, no other job
(analysis, build, generation) overlaps a benchmark job, while two ordinary jobs may overlap;
and every raw record carries the load average at its start and end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml
from repro import rawio

REPO = Path(__file__).resolve().parents[1]

SNAKEFILE = """
rule all:
    input: expand("t/{n}.txt", n=["bench", "a1", "a2", "a3"])

rule bench:
    output: "t/bench.txt"
    resources: bench=1, host_share=2
    shell: "date +%s.%N > {output}; sleep 3; date +%s.%N >> {output}"

rule other:
    output: "t/{n}.txt"
    wildcard_constraints: n="a[0-9]"
    shell: "date +%s.%N > {output}; sleep 3; date +%s.%N >> {output}"
"""


def _profile_args() -> list[str]:
    prof = yaml.safe_load((REPO / "profiles/local/config.yaml").read_text())
    return (["--cores", str(prof["cores"]), "--resources", *prof["resources"],
             "--default-resources", *prof["default-resources"]])


def test_a_benchmark_job_has_the_machine_to_itself(tmp_path):
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    out = subprocess.run([sys.executable, "-m", "snakemake", *_profile_args(), "--quiet"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    spans = {p.stem: tuple(float(x) for x in p.read_text().split()) for p in (tmp_path / "t").glob("*.txt")}
    b0, b1 = spans.pop("bench")
    for name, (s0, s1) in spans.items():
        assert s1 <= b0 or s0 >= b1, f"{name} ran beside the benchmark job: {s0}-{s1} vs {b0}-{b1}"
    # ordinary jobs still share the two cores: at least one pair of them overlapped
    ordinary = sorted(spans.values())
    assert any(ordinary[i + 1][0] < ordinary[i][1] for i in range(len(ordinary) - 1)), ordinary


def test_the_profile_and_the_n_plus_1_jobs_agree():
    text = (REPO / "workflow/rules/common.smk").read_text()
    assert '"host_share": 2' in text  # every n+1 benchmark job asks for the whole machine
    assert "host_share=2" in _profile_args() and "host_share=1" in _profile_args()


def test_raw_records_carry_the_load_average_at_start_and_end():
    rec = rawio.new_record("s", "e", {}, 0, "real")
    assert len(rec["load_start"]) == 3 and all(x >= 0 for x in rec["load_start"])
    rec["metrics"].append(rawio.metric("wall", 1.0, "s"))
    rawio.finish(rec)
    assert len(rec["load_end"]) == 3
