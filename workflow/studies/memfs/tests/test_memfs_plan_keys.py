"""Plan-only keys (issue 23): the keys that decide which envelope, metadata, sweep, limit and FUSE-gap
runs exist (designs, networks, nodes, sizes, repeats, ...) are marked x-plan in schema.yaml; run.py and
fusegap.py never read them (each job gets its own wildcards), so run_section leaves them out of every
run command. Adding a repeat then adds jobs and re-runs none: every existing run job's command in the
cluster plan is unchanged (Snakemake re-runs a job whose params changed). With the whole section in the
run commands (the old rules) every existing run job's command changes and this fails."""

from memfs_plan import cluster_jobs

from repro import config as rc

OVERLAY = (
    "memfs:\n  envelope: {{repeats: {r}}}\n  metadata: {{repeats: {r}}}\n  sweeps: {{repeats: {r}}}\n"
    "  limit: {{repeats: {r}}}\n  fuse_gap: {{reps: {r}}}\n"
)
RUNS = {"memfs_envelope_run", "memfs_metadata_run", "memfs_stripe_run", "memfs_threads_run", "memfs_limit_run",
        "memfs_fusegap_run"}


def plan(snake, workspace, repeats):
    (workspace / "overlay.yaml").write_text(OVERLAY.format(r=repeats))
    return cluster_jobs(snake, "memfs_envelope", "overlay.yaml")


def test_the_keys_that_decide_which_runs_exist_are_plan_only():
    marked = set(rc.judging_paths(rc.study_schema("memfs"), marker="x-plan"))
    for section in ("envelope", "metadata", "sweeps", "limit"):
        assert (section, "repeats") in marked and (section, "nodes") in marked, section
    assert {("envelope", "designs"), ("envelope", "sizes"), ("fuse_gap", "reps"), ("runtime_minutes",),
            ("kick",)} <= marked
    # what run.py reads stays in the run section
    assert not {("envelope", "procs_per_node"), ("envelope", "files_per_node"), ("limit", "threads"),
                ("sweeps", "size"), ("metadata", "items_per_rank")} & marked


def test_one_more_repeat_re_runs_no_finished_run(snake, workspace):
    a, b = plan(snake, workspace, 2), plan(snake, workspace, 3)
    runs_a = {k for k in a if k[0] in RUNS}
    assert {rule for rule, _ in runs_a} == RUNS, sorted({r for r, _ in a})
    for rule in RUNS:  # each experiment gained jobs
        assert sum(r == rule for r, _ in b) > sum(r == rule for r, _ in runs_a), rule
    missing = runs_a - b.keys()
    assert not missing, sorted(missing)[:3]
    changed = sorted(k for k in runs_a if a[k] != b[k])
    assert not changed, (len(changed), changed[:3])
