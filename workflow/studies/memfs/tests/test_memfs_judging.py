"""Run config apart from judging config (issue 23): a key memfs's schemas mark x-judging (read by the
analysis only) changes no run job's command in the cluster plan -- Snakemake re-runs a job whose
params changed -- and does change the command of the analysis job that reads it."""

from memfs_plan import cluster_jobs

from repro import config as rc

OVERLAY = "memfs:\n  workflows:\n    memlimit: {{enabled: true, limits_mb: [22, 24], claim_limit_mb: {mb}}}\n"
READER = "memfs_wf_memlimit"  # the claims M1, M2 (judged at claim_limit_mb)
ANALYSIS = {READER, "memfs_wf_table23", "memfs_wf_figure", "memfs_wf_claims"}  # given all of memfs.workflows


def plan(snake, workspace, mb):
    (workspace / "overlay.yaml").write_text(OVERLAY.format(mb=mb))
    return cluster_jobs(snake, "memfs", "overlay.yaml")


def test_the_judging_keys_are_the_claims_own():
    assert rc.judging_paths(rc.study_schema("memfs")) == [  # claims: every tolerance per scale (issue 28)
        ("workflows", "memlimit", "claim_limit_mb"), ("workflows", "claims"), ("claims",)]


def test_a_judging_key_changes_no_run_job(snake, workspace):
    a, b = plan(snake, workspace, 22), plan(snake, workspace, 24)
    assert a.keys() == b.keys()
    runs = [k for k in a if k[0].endswith("_run")]
    assert len(runs) > 200 and any(r == "memfs_wf_memlimit_run" for r, _ in runs), sorted({r for r, _ in a})
    changed = {rule for rule, out in a if a[rule, out] != b[rule, out]}
    assert READER in changed and changed <= ANALYSIS, changed  # never a run job (nor the tidy table)
