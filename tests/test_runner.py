"""The one run contract (repro.runner): arguments, the recording block, failure records, SIGTERM."""
import codecs
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from repro import rawio, runner
from repro.testing import REPO, project_env

RUN = runner.Experiments("toy")
CLEANED = []


@RUN.experiment("ok", system_kind="stand-in:toy")
def _ok(ctx):
    rec = ctx.record({"toy": "1"})
    rec["metrics"] = [rawio.metric("x", float(ctx.params["x"]) * ctx.cfg["scale"], "s")]
    return rec


@RUN.experiment("bad")
def _bad(ctx):
    rec = ctx.record()
    rec["metrics"] = [rawio.metric("x", 1.0, "s")]
    raise runner.RunFailed("the check failed", rec)


@RUN.experiment("crash")
def _crash(ctx):
    ctx.record()
    raise KeyError("boom")


@RUN.experiment("terminated")
def _terminated(ctx):
    ctx.record()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)  # the handler raises Terminated here
        raise AssertionError("SIGTERM did not stop the experiment")
    finally:
        CLEANED.append(ctx.experiment)


def _signal_codec(name):
    """A codec whose encoding is where SIGTERM lands, as the idna codec was in stop 33's CI run."""
    if name != "repro_test_signal":
        return None

    def encode(text, errors="strict"):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)
        return text.encode("ascii"), len(text)

    return codecs.CodecInfo(encode, lambda b, errors="strict": (bytes(b).decode("ascii"), len(b)), name=name)


codecs.register(_signal_codec)


@RUN.experiment("terminated_in_codec")
def _terminated_in_codec(ctx):
    """The CI failure of stop 33: SIGTERM arrived while a host name was encoded; CPython's codec
    machinery re-raises the handler's exception as "encoding with 'idna' codec failed (Terminated: ...)"."""
    ctx.record()
    "host".encode("repro_test_signal")
    raise AssertionError("SIGTERM did not stop the experiment")


@RUN.experiment("terminated_wrapped")
def _terminated_wrapped(ctx):
    rec = ctx.record()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)
    except Exception as exc:  # an experiment that turns whatever it caught into its own failure
        raise runner.RunFailed(f"the server did not answer: {exc!r}", rec) from None
    raise AssertionError("SIGTERM did not stop the experiment")


@RUN.experiment("inputs")
def _inputs(ctx):
    rec = ctx.record()
    rec["metrics"] = [rawio.metric("inputs", len(ctx.inputs), "count")]
    rec["extra"] = {"inputs": ctx.inputs}
    return rec


def test_every_input_flag_is_kept(tmp_path):
    """The engine writes one --input per named input (memfs's workflow runs: manifest and image); with
    the flag given twice argparse kept only the last (the rehearsal's 36 memfs_wf_run jobs: 'no --input
    manifest=PATH' whenever the image was an input too)."""
    for flags in (["--input", "manifest=m.json", "--input", "image=x.sif"],
                  ["--input", "manifest=m.json", "image=x.sif"]):
        out = tmp_path / f"raw/n~{len(flags)}/rep~0.json"
        assert RUN.main(["inputs", "--config", "{}", "--out", str(out), *flags]) == 0
        assert rawio.read(out)["extra"]["inputs"] == {"manifest": "m.json", "image": "x.sif"}


def _argv(exp, out, **params):
    return [exp, "--config", json.dumps({"scale": 2}), "--params", json.dumps(params or {"x": 3}),
            "--rep", "1", "--out", str(out)]


def test_a_returned_record_is_the_raw_file(tmp_path):
    out = tmp_path / "raw/x~3/rep~1.json"
    rawio.write_failure(out, rawio.new_record("toy", "ok", {}, 1, "real"), "an earlier failure")
    assert RUN.main(_argv("ok", out)) == 0
    rec = rawio.read(out)
    assert (rec["study"], rec["experiment"], rec["params"], rec["rep"]) == ("toy", "ok", {"x": 3}, 1)
    assert rec["system_kind"] == "stand-in:toy" and rawio.value(rec, "x") == 6.0
    assert not rawio.failure_path(out).exists()  # the earlier failure record is gone


@pytest.mark.parametrize("exp,why", [("bad", "the check failed"), ("crash", "KeyError: 'boom'")])
def test_a_failure_is_a_failure_record_never_a_raw_file(tmp_path, exp, why):
    out = tmp_path / "raw/x~3/rep~1.json"
    assert RUN.main(_argv(exp, out)) == 1
    assert not out.exists()
    rec = json.loads(rawio.failure_path(out).read_text())
    assert rec["status"] == "failed" and rec["failure"] == why and rec["experiment"] == exp


def test_sigterm_runs_the_clean_up_and_records_a_failure(tmp_path):
    out = tmp_path / "raw/x~3/rep~1.json"
    assert RUN.main(_argv("terminated", out)) == 143
    assert CLEANED == ["terminated"]
    assert json.loads(rawio.failure_path(out).read_text())["failure"] == "stopped by SIGTERM"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is given back


@pytest.mark.parametrize("exp", ["terminated_in_codec", "terminated_wrapped"])
def test_a_signal_is_the_reason_whatever_wraps_it(tmp_path, exp):
    """Code between the handler and the runner may turn Terminated into another exception (the idna
    codec, an experiment's own except): the record still says the signal stopped the run, in the
    exact words the --after step recognises, and the job exits 143."""
    out = tmp_path / "raw/x~3/rep~1.json"
    assert RUN.main(_argv(exp, out)) == 143
    rec = json.loads(rawio.failure_path(out).read_text())
    assert rec["failure"] == "stopped by SIGTERM" and rec["failure_kind"] == "error"
    assert not out.exists()


def test_bad_arguments_fail_naming_what(tmp_path, capsys):
    with pytest.raises(SystemExit):
        RUN.main(["nope", "--config", "{}", "--out", str(tmp_path / "raw/a.json")])
    assert "invalid choice" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        RUN.main(["ok", "--config", "{}", "--params", "[1]", "--out", str(tmp_path / "raw/a.json")])
    assert "--params must be a JSON object" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        RUN.main(["ok", "--config", "{}"])
    assert "missing: out" in capsys.readouterr().err


def test_the_smoke_study_runs_on_the_contract(tmp_path):
    """A real MPI run of studies.smoke.run (2 ranks), then its injected fault as a failure record."""
    out = tmp_path / "raw/nodes~1/rep~0.json"
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-n", "2", sys.executable, "-m", "studies.smoke.run",
           "layout_probe", "--config", json.dumps({"bcast_mib": 1, "fail_if_exists": str(tmp_path / "fault-{n}")}),
           "--params", '{"nodes": 1}', "--out", str(out)]
    env = dict(project_env(), OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rec = rawio.read(out)
    assert rawio.value(rec, "ranks") == 2 and rec["sanity"]["ranks_match"] is True
    assert "[smoke layout_probe rep 0]" in proc.stdout
    (tmp_path / "fault-1").touch()
    out.unlink()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and not out.exists()
    assert "no_injected_fault" in json.loads(rawio.failure_path(out).read_text())["failure"]


MULTI = runner.Experiments("toy")


@MULTI.experiment("many")
def _many(ctx):
    out = {}
    for i, path in enumerate(ctx.outs):
        if ctx.params.get("skip") == i:
            continue
        rec = ctx.record()
        rec["metrics"] = [rawio.metric("i", float(i), "count")]
        out[path] = rec
    return out


def test_one_job_many_raw_files_and_a_missing_one_is_a_failure(tmp_path):
    outs = [str(tmp_path / f"raw/i~{i}/rep~0.json") for i in range(3)]
    assert MULTI.main(["many", "--config", "{}", "--out", *outs]) == 0
    assert [rawio.value(rawio.read(p), "i") for p in outs] == [0.0, 1.0, 2.0]
    for p in outs:
        os.unlink(p)
    assert MULTI.main(["many", "--config", "{}", "--params", '{"skip": 1}', "--out", *outs]) == 1
    assert os.path.exists(outs[0]) and os.path.exists(outs[2]) and not os.path.exists(outs[1])
    assert json.loads(rawio.failure_path(outs[1]).read_text())["failure"] == "the run wrote no record for it"
    assert not rawio.failure_path(outs[0]).exists()


def test_a_failure_of_a_many_file_job_records_every_file(tmp_path):
    outs = [str(tmp_path / f"raw/i~{i}/rep~0.json") for i in range(2)]
    assert RUN.main(["bad", "--config", "{}", "--out", *outs]) == 1
    assert all(json.loads(rawio.failure_path(p).read_text())["failure"] == "the check failed" for p in outs)
    # a one-record experiment given two paths is refused, recorded as a failure of both
    assert RUN.main(["ok", "--config", '{"scale": 1}', "--params", '{"x": 1}', "--out", *outs]) == 1
    assert not any(os.path.exists(p) for p in outs)


SWEEP = runner.Experiments("toy")


@SWEEP.experiment("sweep")
def _sweep(ctx):
    """One record per size (its own params and path); size 2 fails alone; size 3 is not an output
    (ctx.beside) and is refused as expected (or not: "unexpected"); "die" fails the whole job after
    the records were made; "refuse" is refused before anything runs. A log directory is kept beside
    every failure record."""
    if ctx.params.get("refuse"):
        raise runner.Refused("set site.key first")
    ctx.logs.append(ctx.inputs["logs"])
    ctx.beside.append(ctx.outs[0].replace("size~1", "size~3"))
    recs = {}
    for path in ctx.outs + ctx.beside:
        size = int(path.split("size~")[1].split("/")[0])
        rec = ctx.record(params={"size": size}, out=path)
        rec["metrics"] = [rawio.metric("size", float(size), "B")]
        recs[path] = (runner.RunFailed(f"size {size} refused", rec, expected=not ctx.params.get("unexpected"))
                      if size >= 2 else rec)
    if ctx.params.get("die"):
        raise runner.RunFailed("the server died")
    if ctx.params.get("only_beside_fails"):
        recs = {p: r for p, r in recs.items() if "size~2" not in p}
        recs[ctx.outs[1]] = ctx._records[ctx.outs[1]]
    return recs


def _sweep_argv(tmp_path, **params):
    outs = [str(tmp_path / f"raw/size~{s}/rep~0.json") for s in (1, 2)]
    return outs, ["sweep", "--config", "{}", "--params", json.dumps(params), "--out", *outs,
                  "--input", f"logs={tmp_path / 'daemon'}"]


def test_one_configuration_of_many_fails_alone_and_beside_records_do_not_fail_the_job(tmp_path):
    (tmp_path / "daemon").mkdir()
    (tmp_path / "daemon/server.log").write_text("bind: address in use\n")
    outs, argv = _sweep_argv(tmp_path)
    refused = outs[0].replace("size~1", "size~3")
    assert SWEEP.main(argv) == 1  # size 2 is an output and failed
    assert rawio.read(outs[0])["params"] == {"size": 1} and not os.path.exists(outs[1])
    for path, size in ((outs[1], 2), (refused, 3)):
        rec = json.loads(rawio.failure_path(path).read_text())
        assert rec["failure"] == f"size {size} refused" and rec["params"] == {"size": size}
        assert rawio.value(rec, "size") == float(size)
        assert (rawio.logs_path(path) / "server.log").read_text() == "bind: address in use\n"
    assert not rawio.failure_path(outs[0]).exists()
    # every output recorded, only the configuration beside them refused: the job passed
    outs, argv = _sweep_argv(tmp_path, only_beside_fails=True)
    assert SWEEP.main(argv) == 0
    assert rawio.read(outs[1])["params"] == {"size": 2} and not rawio.failure_path(outs[1]).exists()
    assert rawio.failure_path(refused).exists() and not os.path.exists(refused)
    # a configuration beside the outputs that failed other than as expected fails the job
    outs, argv = _sweep_argv(tmp_path, only_beside_fails=True, unexpected=True)
    assert SWEEP.main(argv) == 1
    assert rawio.read(outs[1])["params"] == {"size": 2} and rawio.failure_path(refused).exists()


def test_a_whole_job_failure_records_each_configuration_at_its_own_path(tmp_path):
    outs, argv = _sweep_argv(tmp_path, die=True)
    assert SWEEP.main(argv) == 1
    for path, size in zip(outs, (1, 2)):
        rec = json.loads(rawio.failure_path(path).read_text())
        assert rec["failure"] == "the server died" and rec["params"] == {"size": size}
    assert not rawio.failure_path(outs[0].replace("size~1", "size~3")).exists()  # beside: never asked for


def test_a_refused_job_exits_2_and_records_nothing(tmp_path, capsys):
    outs, argv = _sweep_argv(tmp_path, refuse=True)
    assert SWEEP.main(argv) == 2
    assert "set site.key first" in capsys.readouterr().err
    assert not (tmp_path / "raw").exists() and not (tmp_path / "failed").exists()
    with pytest.raises(SystemExit):
        SWEEP.main(["sweep", "--config", "{}", "--out", outs[0], "--input", "nothing"])
    assert "--input takes NAME=PATH" in capsys.readouterr().err


LAUNCHED = runner.Experiments("toy")
AFTER_CLEANED = []


@LAUNCHED.experiment("staged")
def _staged(ctx):
    """An MPI-like job: each configuration settled as it finishes; "crash_at" dies in that one (the
    settled ones stand), "fail_at" settles a failure and goes on."""
    for i, path in enumerate(ctx.outs):
        rec = ctx.record(params={"i": i}, out=path)
        if ctx.params.get("crash_at") == i:
            raise OSError("the file system hung")
        rec["metrics"] = [rawio.metric("i", float(i), "count")]
        ctx.settle(path, runner.RunFailed("wrong hash", rec) if ctx.params.get("fail_at") == i else rec)
    return {}


@LAUNCHED.after("staged")
def _staged_after(ctx, rc):
    AFTER_CLEANED.append((ctx.tag, rc))
    for i, path in enumerate(ctx.outs):
        ctx.record(params={"i": i}, out=path)["extra"] = {"job_tag": ctx.tag}


def _staged_argv(tmp_path, n=3, **params):
    outs = [str(tmp_path / f"raw/i~{i}/rep~0.json") for i in range(n)]
    return outs, ["staged", "--config", "{}", "--params", json.dumps(params), "--tag", "t-1", "--out", *outs]


def test_settled_configurations_stand_when_the_job_fails_later(tmp_path):
    outs, argv = _staged_argv(tmp_path)
    assert LAUNCHED.main(argv) == 0 and [rawio.value(rawio.read(p), "i") for p in outs] == [0.0, 1.0, 2.0]
    outs, argv = _staged_argv(tmp_path / "crash", crash_at=1)
    assert LAUNCHED.main(argv) == 1
    assert rawio.read(outs[0])["params"] == {"i": 0} and not rawio.failure_path(outs[0]).exists()
    for i in (1, 2):  # the one that crashed and the one never reached: each with its own params
        rec = json.loads(rawio.failure_path(outs[i]).read_text())
        assert rec["failure"] == "OSError: the file system hung" and not os.path.exists(outs[i])
    assert json.loads(rawio.failure_path(outs[1]).read_text())["params"] == {"i": 1}
    outs, argv = _staged_argv(tmp_path / "fail", fail_at=0)
    assert LAUNCHED.main(argv) == 1  # a settled failure fails the job; the others are results
    assert json.loads(rawio.failure_path(outs[0]).read_text())["failure"] == "wrong hash"
    assert [os.path.exists(p) for p in outs] == [False, True, True]
    with pytest.raises(ValueError, match="not one of this job's raw files"):
        runner.Context("toy", "staged", {}, {}, 0, outs).settle(str(tmp_path / "elsewhere.json"), {})


def test_after_a_killed_launcher_every_unfinished_configuration_says_why(tmp_path, capsys):
    outs, argv = _staged_argv(tmp_path)
    done = rawio.new_record("toy", "staged", {"i": 0}, 0, "real")
    done["metrics"] = [rawio.metric("i", 0.0, "count")]
    rawio.write_json_atomic(outs[0], rawio.finish(done))
    rawio.write_failure(outs[1], rawio.new_record("toy", "staged", {"i": 1}, 0, "real"), "wrong hash")
    log = tmp_path / "job.log"
    log.write_text("[toy staged rep 0] +0.0s FAILED: stopped by SIGTERM (a lost cause)\n"
                   "[toy] started\nprterun noticed that process rank 2 with PID 77 on node n1 exited on signal 9"
                   " (Killed).\nmore output\n")
    AFTER_CLEANED.clear()
    assert LAUNCHED.main(argv + ["--after", "0", "--log", str(log)]) == 0
    assert AFTER_CLEANED == [("t-1", 0)] and not rawio.failure_path(outs[2]).exists()  # rc 0: clean-up only
    assert LAUNCHED.main(argv + ["--after", "137", "--log", str(log)]) == 0  # the rule exits with rc itself
    assert AFTER_CLEANED[-1] == ("t-1", 137)
    assert rawio.read(outs[0])["status"] == "ok"  # a result and an earlier failure record are left alone
    assert json.loads(rawio.failure_path(outs[1]).read_text())["failure"] == "wrong hash"
    rec = json.loads(rawio.failure_path(outs[2]).read_text())
    assert rec["params"] == {"i": 2} and rec["extra"] == {"job_tag": "t-1", "launcher_rc": 137, "log": str(log)}
    assert "exit status 137" in rec["failure"] and "rank 2 with PID 77" in rec["failure"]
    assert "more output" not in rec["failure"] and rec["failure_kind"] in rawio.FAILURE_KINDS
    assert "lost cause" not in rec["failure"]  # the runner's own progress lines are not evidence
    assert "1 failure record(s) written" in capsys.readouterr().err
    # a record that says only that a signal stopped the recording rank gets the launcher's reason
    rec = rawio.new_record("toy", "staged", {"i": 1}, 0, "real")
    rawio.write_failure(outs[1], rec, "stopped by SIGTERM", "error")
    assert LAUNCHED.main(argv + ["--after", "137", "--log", str(log)]) == 0
    rec = json.loads(rawio.failure_path(outs[1]).read_text())
    assert rec["failure"].startswith("stopped by SIGTERM: the job ended with exit status 137")
    assert "rank 2 with PID 77" in rec["failure"] and rec["failure_kind"] != "error" and rec["params"] == {"i": 1}
    assert rec["extra"] == {"job_tag": "t-1", "launcher_rc": 137, "log": str(log)}
    # no log: it says so, never an empty reason
    os.unlink(rawio.failure_path(outs[2]))
    assert LAUNCHED.main(argv + ["--after", "1"]) == 0
    assert json.loads(rawio.failure_path(outs[2]).read_text())["failure"].endswith("says: (no log named)")


USES = runner.Experiments("toy")


@USES.experiment("uses")
def _uses(ctx):
    rec = ctx.record()
    rec["metrics"] = [rawio.metric("max_read", float(ctx.uses["other"]["max_read"]), "B")]
    return rec


def test_a_used_studys_run_section_arrives_as_ctx_uses(tmp_path, capsys):
    out = tmp_path / "raw/rep~0.json"
    (tmp_path / "other.json").write_text('{"max_read": 4096}')
    assert USES.main(["uses", "--config", "{}", "--uses", 'other={"max_read": 1024}', "--out", str(out)]) == 0
    assert rawio.value(rawio.read(out), "max_read") == 1024.0
    assert USES.main(["uses", "--config", "{}", "--uses", f"other=@{tmp_path / 'other.json'}", "--out", str(out)]) == 0
    assert rawio.value(rawio.read(out), "max_read") == 4096.0
    for bad in ("other", "other={nope"):
        with pytest.raises(SystemExit):
            USES.main(["uses", "--config", "{}", "--uses", bad, "--out", str(out)])
        assert "--uses" in capsys.readouterr().err


OWN = runner.Experiments("toy")


@OWN.experiment("own", own_format=True)
def _own(ctx):
    if ctx.params.get("fail"):
        ctx.record(params={"rep": ctx.rep})
        raise runner.RunFailed("the tool said no")
    return {"rep": ctx.rep, "measurements": [{"mib_s": 1.5}]}  # no schema, no metrics: the study's own format


def test_an_own_format_record_is_written_as_it_is_and_its_failure_is_a_failure_record(tmp_path):
    out = tmp_path / "raw/own/rep~2.json"
    argv = ["own", "--config", "{}", "--rep", "2", "--out", str(out)]
    assert OWN.main([*argv, "--params", '{"fail": true}']) == 1
    assert not out.exists()
    failed = rawio.read(rawio.failure_path(out))  # a repro.raw/1 failure record, with the params it made
    assert failed["failure"] == "the tool said no" and failed["params"] == {"rep": 2}
    assert OWN.main(argv) == 0
    assert json.loads(out.read_text()) == {"rep": 2, "measurements": [{"mib_s": 1.5}]}  # nothing added
    assert not rawio.failure_path(out).exists()
