"""A failed job that wrote no failure record is told by its log (issue 27: "never an empty reason").
The full rehearsal on a busy machine (2026-11-29) listed memfs_fusegap_run rep 0 as "no failure
record names this job": its error (dd: Input/output error, MemFS: stripe missing) sat in the rule's
log. The rehearsal now quotes that log's tail, found through the `log:` line of the job's Slurm log."""

from __future__ import annotations

from pathlib import Path

from repro import rehearsal as rh

SLURM_LOG = """localrule memfs_fusegap_run:
    output: results/memfs/raw/fusegap/rep~0.json
    log: results/memfs/log/fusegap/rep~0.log (check log file(s) for error details)
RuleException:
CalledProcessError in file "workflow/studies/memfs/rules.smk", line 105:
srun: error: node0: task 0: Exited with exit code 1
"""
RULE_LOG = """[memfs_fusegap 23:49:49] rep 0 1MiB x8 read  fuseceiling direct-io-stripe-1m   2768.2 MiB/s  load 36.1
RuntimeError: memfs direct-io-stripe-1m read x8: dd if=/tmp/m/s7 of=/dev/null bs=1048576: rc=1: \
dd: error reading '/tmp/m/s7': Input/output error
memfs: stripe S/s7#407283556cfd5f8c.22 missing on 127.0.0.1:45183: EIO
"""
JOB = {"job_id": "1338", "rule": "memfs_fusegap_run", "wildcards": "0", "state": "FAILED", "exit_code": "1:0",
       "nodes": ["node0"]}


def _ws(tmp_path: Path, rule_log: str | None) -> Path:
    d = tmp_path / ".snakemake" / "slurm_logs" / "rule_memfs_fusegap_run" / "0"
    d.mkdir(parents=True)
    (d / "1338.log").write_text(SLURM_LOG)
    if rule_log is not None:
        p = tmp_path / "results/memfs/log/fusegap/rep~0.log"
        p.parent.mkdir(parents=True)
        p.write_text(rule_log)
    return tmp_path


def test_a_failed_job_without_a_record_quotes_its_rules_log(tmp_path):
    ws = _ws(tmp_path, RULE_LOG)
    tail = rh.job_log_tail(ws, JOB)
    assert tail.startswith("results/memfs/log/fusegap/rep~0.log: ") and "stripe S/s7" in tail
    f = rh.job_failure(JOB, [], {}, tail)
    why = f["evidence"][-1]
    assert "Input/output error" in why and "missing on 127.0.0.1:45183" in why
    assert f["kind"] == "crash"  # a tool (dd) exited non-zero: the rules every record is classified by


def test_without_the_rules_log_the_slurm_log_is_quoted_and_without_either_it_says_so(tmp_path):
    ws = _ws(tmp_path, None)
    tail = rh.job_log_tail(ws, JOB)
    assert ".snakemake/slurm_logs/rule_memfs_fusegap_run/0/1338.log" in tail and "Exited with exit code 1" in tail
    other = dict(JOB, job_id="999")
    assert rh.job_log_tail(ws, other) == ""
    f = rh.job_failure(other, [], {}, "")
    assert f["evidence"][-1].startswith("no failure record names this job, and no log of it was found")
    assert f["kind"] == "error"
