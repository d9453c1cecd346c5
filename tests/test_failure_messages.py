"""Every failure says why and what kind of failure it is (issue 27, parts 2 and 7).

repro.procs.failure_message on real processes (exit 1 without output, killed by SIGSEGV, only
stdout, a timeout), repro.rawio.write_failure's kinds and load, and repro.runner's kinds for a
crash, a timeout and a RunFailed that names its kind."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from repro import procs, rawio, runner

LOW = {"loadavg_1m": 0.5, "ncpu": 2}
HIGH = {"loadavg_1m": 9.0, "ncpu": 2}  # 4.5 per CPU: above procs.OVERLOAD_PER_CPU


def test_exit_1_without_output_names_the_command_status_host_and_load():
    r = subprocess.run(["sh", "-c", "exit 1"], capture_output=True, text=True)
    msg = procs.failure_message("quiet-tool", r, node=2)
    assert msg.startswith("quiet-tool exited 1 (node 2, host ")
    assert "no output at all" in msg
    la = procs.load_now()
    assert la["ncpu"] >= 1 and f"on {la['ncpu']} CPUs" in msg


def test_killed_by_sigsegv():
    r = subprocess.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"],
                       capture_output=True)
    assert r.returncode == -signal.SIGSEGV
    msg = procs.failure_message("python3", r)
    assert "python3 killed by SIGSEGV" in msg
    assert rawio.classify(msg, r.returncode, HIGH) == "crash"  # a crash is never an overload


def test_only_stdout_is_kept_when_stderr_is_empty():
    r = subprocess.run(["sh", "-c", "echo 'the only words it said'; exit 3"], capture_output=True, text=True)
    msg = procs.failure_message("talker", r)
    assert "talker exited 3" in msg and "no stderr; stdout: the only words it said" in msg


def test_stderr_tail_wins_and_is_a_tail():
    r = subprocess.run(["sh", "-c", "echo out; i=0; while [ $i -lt 400 ]; do echo line$i >&2; i=$((i+1)); done;"
                        " echo LAST >&2; exit 2"], capture_output=True, text=True)
    msg = procs.failure_message("chatty", r, tail=100)
    assert msg.endswith("LAST") and "line0\n" not in msg and "stdout" not in msg


def test_timeout_and_a_launcher_result_dict():
    try:
        subprocess.run(["sleep", "5"], capture_output=True, timeout=0.2)
    except subprocess.TimeoutExpired as exc:
        msg = procs.failure_message("sleep", exc)
    assert "sleep timed out after 0.2 s (killed)" in msg
    # systems/mtc's agent result: rc 124 on its timeout, the node's own host and load
    d = {"rc": 124, "stdout": "", "stderr": "\ntimeout after 30 s (killed)", "node": 1, "host": "rsc-node1",
         "load": HIGH, "timed_out": True}
    msg = procs.failure_message("mcbench", d)
    assert msg.startswith("mcbench timed out (killed) (node 1, host rsc-node1; load 9.00 on 2 CPUs (4.50 per CPU))")
    assert rawio.classify(msg, 124, HIGH) == "overload" and rawio.classify(msg, 124, LOW) == "timeout"


@pytest.mark.parametrize("why, rc, load, kind", [
    ("srun: error: Node failure on rsc-node2", None, LOW, "lost_node"),
    ("ORTE has lost communication with a remote daemon", None, HIGH, "lost_node"),
    ("rank 2 Caught signal 11 (Segmentation fault: address not mapped)", None, HIGH, "crash"),
    ("iozone exited 1 (host x): no output at all", None, LOW, "crash"),
    ("mcbench exited 1: mcbench: get: 12 of 400 operations failed", None, HIGH, "overload"),
    ("mcbench exited 1: mcbench: get: 12 of 400 operations failed", None, LOW, "crash"),
    ("mcbench exited 1: mcbench: set: 56 of 56 operations failed; 56 x ITEM TOO BIG on h:1", None, HIGH, "crash"),
    ("TimeoutExpired: Command 'x' timed out after 5 seconds", None, LOW, "timeout"),
    ("TimeoutExpired: Command 'x' timed out after 5 seconds", None, HIGH, "overload"),
    ("sha256 of /scratch/f differs from the source", None, HIGH, "error"),
    ("LaunchError: agents [1] did not register in 120 s: ...", None, LOW, "timeout"),
    ("mcbench: set: 3 of 9 operations failed (4 threads, servers h:1, timeout 2000 ms)", None, LOW, "error"),
    ("", -11, LOW, "crash"),
])
def test_classify(why, rc, load, kind):
    assert rawio.classify(why, rc, load) == kind


def _rec():
    return rawio.new_record("smoke", "probe", {"n": 1}, 0, "real", {})


def test_write_failure_records_kind_and_load(tmp_path):
    raw = tmp_path / "results" / "smoke" / "raw" / "probe" / "rep~0.json"
    # the old call signature: (raw_path, rec, why); kind classified, load measured now
    p = rawio.write_failure(raw, _rec(), "iozone exited 1 (host x): no output at all")
    got = json.loads(p.read_text())
    assert p == tmp_path / "results" / "smoke" / "failed" / "probe" / "rep~0.json"
    assert got["failure_kind"] == "crash"
    assert set(got["failure_load"]) == {"loadavg_1m", "ncpu"} and got["failure_load"]["ncpu"] >= 1
    # a kind the caller knows; a timeout under load is an overload, and says so with the load
    got = json.loads(rawio.write_failure(raw, _rec(), "memcached did not answer in 10 s", "timeout",
                                         load=HIGH).read_text())
    assert got["failure_kind"] == "overload" and got["failure_load"] == HIGH
    assert "overload: load 9.00 on 2 CPUs" in got["failure"] and "threshold of 1.5 per CPU" in got["failure"]
    got = json.loads(rawio.write_failure(raw, _rec(), "memcached did not answer in 10 s", "timeout",
                                         load=LOW).read_text())
    assert got["failure_kind"] == "timeout" and "load 0.50 on 2 CPUs" in got["failure"]
    got = json.loads(rawio.write_failure(raw, _rec(), "a rank vanished", "lost_node").read_text())
    assert got["failure_kind"] == "lost_node"
    # never an empty reason
    got = json.loads(rawio.write_failure(raw, _rec(), "  ").read_text())
    assert got["failure"].strip() and got["failure_kind"] == "error"
    with pytest.raises(ValueError):
        rawio.write_failure(raw, _rec(), "x", "bad-kind")


def _run(tmp_path, fn, name="probe"):
    exps = runner.Experiments("smoke")
    exps.experiment(name)(fn)
    out = tmp_path / "results" / "smoke" / "raw" / name / "rep~0.json"
    rc = exps.main([name, "--config", "{}", "--out", str(out)])
    return rc, json.loads(rawio.failure_path(out).read_text())


def test_runner_kinds(tmp_path):
    def crashes(ctx):
        ctx.record()
        return {}["missing"]

    rc, got = _run(tmp_path, crashes)
    assert rc == 1 and got["failure_kind"] == "crash" and got["failure"] == "KeyError: 'missing'"

    def times_out(ctx):
        ctx.record()
        subprocess.run(["sleep", "5"], timeout=0.2)

    rc, got = _run(tmp_path, times_out)
    assert got["failure_kind"] in ("timeout", "overload") and "TimeoutExpired: Command" in got["failure"]
    assert "load " in got["failure"]

    def child_segfaults(ctx):
        ctx.record()
        r = subprocess.run([sys.executable, "-c", "import os; os.kill(os.getpid(), 11)"], capture_output=True)
        raise runner.RunFailed(procs.failure_message("child", r), rc=r.returncode)

    rc, got = _run(tmp_path, child_segfaults)
    assert got["failure_kind"] == "crash" and "child killed by SIGSEGV" in got["failure"]

    def says_lost(ctx):
        ctx.record()
        raise runner.RunFailed("node 2 stopped answering", kind="lost_node")

    rc, got = _run(tmp_path, says_lost)
    assert got["failure_kind"] == "lost_node"

    def empty_reason(ctx):
        ctx.record()
        raise runner.RunFailed("")

    rc, got = _run(tmp_path, empty_reason)
    assert got["failure"] == "probe failed without saying why"


def test_run_child_results_say_exit_and_timeout():
    """The ChildResult of repro.procs.run_child (mpifuse's and fusespeed's readers) through the helper."""
    r = procs.run_child(["sh", "-c", "echo 'short read' >&2; exit 4"], 10)
    assert procs.failure_message("sha256sum /x", r).startswith("sha256sum /x exited 4 (host ")
    assert procs.failure_message("sha256sum /x", r).endswith("short read")
    r = procs.run_child(["sleep", "5"], 0.3)
    msg = procs.failure_message("sleep 5", r, timeout=0.3)
    assert r.timed_out and "sleep 5 timed out after 0.3 s (killed)" in msg and "no output at all" in msg


def test_a_failure_a_later_pass_cleared_stays_on_record(tmp_path):
    """Issue 27: a crash is never hidden by a re-run. When the configuration later passes, its failure
    record leaves failed/ (tidy no longer counts it failed) for failed-history/, with its logs and the
    time of the pass that cleared it."""
    from repro import rawio

    raw = tmp_path / "results" / "smoke" / "raw" / "nodes~1" / "rep~0.json"
    rec = rawio.new_record("smoke", "run", {"nodes": 1}, 0, "real")
    log = tmp_path / "server.log"
    log.write_text("Caught signal 11 (Segmentation fault)\n")
    rawio.write_failure(raw, rec, "rank 1 on node1: Caught signal 11 (Segmentation fault)", rc=-11)
    rawio.keep_logs(raw, [log])
    assert rawio.failure_path(raw).exists() and rawio.logs_path(raw).is_dir()
    kept = rawio.clear_failure(raw)
    assert not rawio.failure_path(raw).exists() and not rawio.logs_path(raw).exists()
    assert kept is not None and kept.parts[-4:-1] == ("smoke", "failed-history", "nodes~1")
    assert kept.name.startswith("rep~0~") and kept.suffix == ".json"
    old = json.loads(kept.read_text())
    assert old["failure_kind"] == "crash" and "Segmentation fault" in old["failure"] and old["cleared_by_pass_at"]
    assert (kept.with_suffix(".logs") / "server.log").read_text().startswith("Caught signal 11")
    # nothing failed: nothing to keep; a second failure and pass keeps both
    assert rawio.clear_failure(raw) is None
    rawio.write_failure(raw, dict(rec, started_at="2026-01-01T00:00:01Z"), "mcbench on node2 timed out after 60 s")
    second = rawio.clear_failure(raw)
    assert second != kept and len(list(kept.parent.glob("rep~0~*.json"))) == 2
