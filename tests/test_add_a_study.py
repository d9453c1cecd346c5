"""workflow/README.md's "Adding a study: what its commit touches" is true: a throw-away study `toy`
made from exactly that list (tests/add_a_study_testlib.py: one experiment, SHA-256 of N MiB, one
claim) in a scratch copy runs end to end -- raw files, the tidy table, the claim, its report page --
on the local profile and on the one-host Slurm cluster; a copy missing one listed file fails."""

from __future__ import annotations

import difflib
import hashlib
import re
import socket
import subprocess

import add_a_study_testlib as T
import pandas as pd
import pytest
from repro import rawio
from repro.testing import REPO, only_studies

SIZES, REPEATS = [1, 4], 2  # config/local.yaml's toy section (add_a_study_testlib.LOCAL)


def test_the_readme_lists_what_the_toy_study_writes_and_edits():
    created, edited = T.listed(T.readme_list(REPO / "workflow" / "README.md"))
    assert created == {f.split("/")[0] + ("/" if "/" in f else "") for f in T.FILES}
    assert edited == {"Snakefile", "config/config.yaml", "config/local.yaml", "README.md"}


def _make(ws, leave_out=None):
    touched = T.write_study(ws, leave_out)
    # the Snakefile edit is one added line, nothing else
    diff = [ln for ln in difflib.unified_diff((REPO / "Snakefile").read_text().splitlines(),
                                              (ws / "Snakefile").read_text().splitlines(), lineterm="", n=0)
            if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert diff == ["+" + T.SNAKEFILE_LINE.strip()]
    overlay = ws / "only-toy.yaml"
    overlay.write_text(only_studies("toy"))  # every other study off (REPO's list: toy is on)
    return touched, str(overlay)


def _check_results(ws) -> list[dict]:
    """Raw files, the tidy table recomputed from them, the summary and the claim; the records."""
    res = ws / "results" / "toy"
    records = []
    for size in SIZES:
        for rep in range(REPEATS):
            path = f"results/toy/raw/size~{size}/rep~{rep}.json"
            rec = rawio.read(ws / path)
            assert rec["status"] == "ok" and rec["params"] == {"size": size} and rec["rep"] == rep, path
            assert rec["study"] == "toy" and rec["experiment"] == "hash" and rec["sanity"] == {"all_bytes": True}
            assert rawio.values(rec, "bytes_hashed") == [size << 20]
            assert rec["extra"]["digest"] == hashlib.sha256(bytes(size << 20)).hexdigest()
            # the engine's files of the job: its log (the runner's progress line) and benchmark
            assert f"[toy hash rep {rep}]" in (res / f"log/hash/size~{size}/rep~{rep}.log").read_text()
            assert (res / f"benchmarks/toy_hash/size~{size},rep~{rep}.tsv").exists()
            records.append({**rec, "path": path})
    # the tidy table: one row per metric per raw file, every value, host and parameter from the records
    df = pd.read_csv(res / "measurements.csv")
    assert len(df) == 2 * len(records) and set(df["status"]) == {"ok"}
    for rec in records:
        rows = df[df["raw_file"] == rec["path"]]
        assert dict(zip(rows["metric"], rows["value"])) == {m["metric"]: m["value"] for m in rec["metrics"]}
        assert set(rows["host"]) == {rec["host"]} and set(rows["size"]) == {rec["params"]["size"]}
        assert set(rows["rep"]) == {rec["rep"]}
    summary = pd.read_csv(res / "tables/summary.csv")
    by = summary[summary["metric"] == "bytes_hashed"].set_index("size")
    assert by["mean"].to_dict() == {s: float(s << 20) for s in SIZES} and set(by["count"]) == {REPEATS}
    # the claim, its direction recomputed from the raw files
    claims = pd.read_csv(res / "claims.csv", dtype=str, keep_default_na=False)
    assert list(claims["claim_id"]) == ["bytes_grow_with_size"]
    c = claims.iloc[0]
    lo, hi = min(SIZES), max(SIZES)
    mean = {s: sum(rawio.values(r, "bytes_hashed")[0] for r in records if r["params"]["size"] == s) / REPEATS
            for s in SIZES}
    assert mean[hi] > mean[lo]
    assert c["reproduced"].startswith(f"{mean[lo]:.0f} B at {lo} MiB -> {mean[hi]:.0f} B at {hi} MiB")
    assert c["verdict"] == "reproduced" and c["kind"] == "shape" and c["scale"] == "local"
    assert c["published"] == "grows, 1048576 B per MiB"  # from published.csv
    return records


def test_toy_study_from_the_list_runs_on_the_local_profile(workspace, snake):
    _, overlay = _make(workspace)
    # `toy` (the whole study) and its kick target are derived from the registry; its report page too
    snake("toy", "toy_kick", "paper/toy.html", "--profile", "profiles/local", "--configfile", "config/local.yaml",
          overlay, timeout=400)
    for rec in _check_results(workspace):
        assert rec["host"] == socket.gethostname() and rec["extra"]["slurm_job_id"] == ""
    page = (workspace / "paper/toy.html").read_text()
    assert "A larger input hashes more bytes, in proportion" in page and "reproduced" in page
    # the claim can go the other way: the same claims rule on a tidy table in which the larger size
    # hashed no more bytes than the smaller one says so
    tidy = workspace / "results/toy/measurements.csv"
    df = pd.read_csv(tidy)
    df.loc[(df["metric"] == "bytes_hashed") & (df["size"] == max(SIZES)), "value"] = float(min(SIZES) << 20)
    df.to_csv(tidy, index=False)
    snake("results/toy/claims.csv", "--profile", "profiles/local", "--configfile", "config/local.yaml", overlay,
          "--allowed-rules", "toy_claims", "--forcerun", "toy_claims", timeout=200)
    c = pd.read_csv(workspace / "results/toy/claims.csv", dtype=str, keep_default_na=False).iloc[0]
    assert c["verdict"] == "not reproduced", dict(c)
    assert 'href="toy.html"' in (workspace / "paper/index.html").read_text()
    # nothing else to edit: in the copy, the study's own tests/ pass, and so do the project's checks
    # that span every study folder (declarations and README rows, targets, boundaries, tolerances)
    r = subprocess.run(["python3", "-m", "pytest", "-v", "-p", "no:cacheprovider", "workflow/studies/toy/tests",
                        "tests/test_engine_rules.py", "tests/test_study_boundaries.py", "tests/test_tolerances.py",
                        "tests/test_config.py::test_changing_every_judging_key_leaves_the_benchmarks_params_alone"],
                       cwd=workspace, env=snake.env, capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "test_toy_layout.py::test_the_matrix_is_sizes_times_repeats PASSED" in out
    assert "test_changing_every_judging_key_leaves_the_benchmarks_params_alone[toy] PASSED" in out


def _job(job_id: str) -> dict:
    out = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, check=True)
    return dict(re.findall(r"(\w+)=(\S*)", out.stdout))


def test_toy_study_from_the_list_runs_on_the_slurm_cluster(workspace, snake, slurm_cluster):
    _, overlay = _make(workspace)
    snake("toy", "--profile", "profiles/slurm", "--configfile", "config/local.yaml", overlay, timeout=500)
    runs = set()
    for rec in _check_results(workspace):
        size, rep = rec["params"]["size"], rec["rep"]
        job_id, node = rec["extra"]["slurm_job_id"], rec["extra"]["slurmd_nodename"]
        assert job_id and node and rec["host"] == f"{socket.gethostname()}/{node}", rec["extra"]
        job = _job(job_id)  # the job the record names is this configuration's Snakemake job
        assert job["Comment"] == f"rule_toy_hash_wildcards_{size}_{rep}" and job["NodeList"] == node, job
        assert job["JobState"] == "COMPLETED"
        runs.add(job["JobName"])  # Snakemake's run id
    assert len(runs) == 1
    run = runs.pop()
    # the analysis ran as Slurm jobs of the same run
    out = subprocess.run(["scontrol", "show", "job", "-o"], capture_output=True, text=True, check=True).stdout
    ours = [dict(re.findall(r"(\w+)=(\S*)", ln)) for ln in out.splitlines() if f"JobName={run} " in ln]
    assert {(j["Comment"], j["JobState"]) for j in ours if "toy_hash" not in j["Comment"]} == {
        ("rule_toy_aggregate", "COMPLETED"), ("rule_toy_claims", "COMPLETED")}


@pytest.mark.parametrize("leave_out, says", [("run.py", r"Missing input files for rule toy_hash(.|\n)*"
                                                         r"workflow/studies/toy/run\.py")], ids=["run.py"])
def test_a_study_missing_a_listed_file_fails_naming_it(workspace, snake, leave_out, says):
    _, overlay = _make(workspace, leave_out=leave_out)
    r = snake("toy", "-n", "--profile", "profiles/local", "--configfile", "config/local.yaml", overlay,
              timeout=300, check=False)
    assert r.returncode != 0 and re.search(says, r.stdout + r.stderr), r.stdout[-3000:] + r.stderr[-3000:]
