"""The n+1 split of a serve job (run.py): which node runs the server and which runs Locust, the
commands each gets (srun from the host, the image inside the step), and a server that never
becomes ready ends the job with its own log and leaves no process behind."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time

import inference_study_testlib as tl
import pytest
from studies.inference import layout, run

from repro import pythonpath
from repro import rawio


def test_slurm_placement_server_on_the_second_node_locust_on_the_batch_node():
    pl = run.placement(["node3", "node4"], here="node3", cpus="2")
    assert (pl["launcher"], pl["driver_node"], pl["server_node"], pl["bind"]) == ("slurm", "node3", "node4", "0.0.0.0")
    srv = run.step_prefix(pl, "server", "rinf-server-7")
    assert srv[:2] == ["srun", "--overlap"] and "--nodelist=node4" in srv and "--nodes=1" in srv
    assert "--ntasks=1" in srv and "--cpus-per-task=2" in srv and "--job-name=rinf-server-7" in srv
    assert run.step_prefix(pl, "driver", "d") == []  # the batch step already runs on the driver node


def test_slurm_placement_driver_in_its_own_step_when_the_batch_step_is_elsewhere():
    pl = run.placement(["node3", "node4", "node5"], here="node5")
    drv = run.step_prefix(pl, "driver", "d")
    assert drv[0] == "srun" and "--nodelist=node3" in drv and not any(a.startswith("--cpus") for a in drv)
    assert "--nodelist=node4" in run.step_prefix(pl, "server", "s")


@pytest.mark.parametrize("nodes", [[], ["node0"]])
def test_outside_slurm_or_one_node_both_sides_on_this_host(nodes):
    pl = run.placement(nodes, here="")
    assert pl["launcher"] == "local" and pl["bind"] == "127.0.0.1"
    assert run.step_prefix(pl, "server", "s") == run.step_prefix(pl, "driver", "d") == []


def test_node_roles_need_two_nodes():
    assert layout.node_roles(["a", "b"]) == ("a", "b")
    with pytest.raises(layout.LayoutError, match="2 nodes"):
        layout.node_roles(["a"])


def test_commands_put_srun_first_and_the_image_inside_the_step(tmp_path):
    cfg = tl.section(models=["resnet50"], servers=["tfserving"], users=[1, 2], repeats=1)
    pl = run.placement(["node0", "node1"], here="node0", cpus="2")
    image = ["apptainer", "exec", "--bind", "/w", "tfserving.sif"]
    cmd = run.serve_command(cfg, "tfserving", "resnet50", "/m", tmp_path / "w", tmp_path / "server.json", pl, image)
    i = cmd.index("apptainer")
    assert cmd[0] == "srun" and "--nodelist=node1" in cmd[:i] and cmd[i:i + 5] == image
    assert cmd[i + 5:i + 9] == ["python3", "-m", "repro_inference.servers", "serve"]  # the image's python
    args = cmd[i + 9:]  # servers.py's own (the image's --bind is apptainer's)
    assert args[0] == cfg["kinds"]["tfserving"] and args[args.index("--bind") + 1] == "0.0.0.0"
    assert args[args.index("--ready-file") + 1] == str(tmp_path / "server.json")
    drv = run.driver_command(cfg, "tfserving", "resnet50", "http://vm:8501", "stand-in:x", tmp_path / "o", pl,
                             ["apptainer", "exec", "locust.sif"])
    assert drv[:3] == ["apptainer", "exec", "locust.sif"]  # on the batch node: no srun
    assert drv[drv.index("--host") + 1] == "http://vm:8501" and drv[drv.index("--system-kind") + 1] == "stand-in:x"
    assert drv[drv.index("--users") + 1] == "1,2"
    local = run.placement([], "")
    cmd = run.serve_command(cfg, "tfserving", "resnet50", "/m", tmp_path / "w", tmp_path / "r.json", local)
    assert cmd[0] == sys.executable and cmd[cmd.index("--bind") + 1] == "127.0.0.1"


def test_ceiling_splits_like_a_serve_job_endpoint_on_the_server_node_locust_on_the_driver(tmp_path):
    """The ceiling uses both nodes it asks for: the trivial endpoint in an srun step on the server node,
    bound to every interface, Locust (in its image) against the URL the endpoint advertises, on the driver."""
    cfg = tl.section(models=["resnet50"], servers=["tfserving"], repeats=1, ceiling={"users": [2], "run_time_s": 2})
    image = ["apptainer", "exec", "locust.sif"]
    pl = run.placement(["node0", "node1"], here="node0", cpus="2")
    srv = run.ceiling_server_command(pl, tmp_path / "server.json", image, "-9")
    i = srv.index("apptainer")
    assert srv[0] == "srun" and "--nodelist=node1" in srv[:i] and "--job-name=rinf-ceiling-server-9" in srv[:i]
    assert srv[i:i + 3] == image and srv[i + 3:i + 6] == ["python3", "-m", "tools.locust.trivial_server"]
    assert srv[srv.index("--host") + 1] == "0.0.0.0" and srv[srv.index("--port") + 1] == "0"
    drv = run.ceiling_driver_command(cfg, "http://node1-host:4321", tmp_path / "o", pl, image)
    assert drv[:3] == image and drv[drv.index("--host") + 1] == "http://node1-host:4321"  # batch step = driver
    elsewhere = run.placement(["node0", "node1"], here="node1")
    assert "--nodelist=node0" in run.ceiling_driver_command(cfg, "http://x:1", tmp_path / "o", elsewhere)
    local = run.placement([], "")
    srv = run.ceiling_server_command(local, tmp_path / "r.json")
    assert srv[0] == sys.executable and srv[srv.index("--host") + 1] == "127.0.0.1"


def test_ceiling_records_where_each_side_ran_and_leaves_no_endpoint(tmp_path, monkeypatch):
    """Locally (no Slurm) both sides on this host: every record names the endpoint's host and the
    generator's host (measured by each side), the URL used, and that the endpoint was stopped."""
    monkeypatch.chdir(tmp_path)
    for v in ("SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURMD_NODENAME"):
        monkeypatch.delenv(v, raising=False)
    subprocess.run([str(tl.REPO / "tools/locust/setup.sh")], check=True)
    cfg = tl.section(models=["resnet50"], servers=["tfserving"], repeats=1, ceiling={"users": [2], "run_time_s": 2})
    cfg["locust"]["processes"] = 0
    assert tl.run_job("ceiling", cfg, {}) == 0
    rec = json.loads((tmp_path / layout.raw_path(layout.ceiling_params(2), 0)).read_text())
    ex = rec["extra"]
    assert rec["status"] == "ok" and rawio.value(rec, "throughput") > 0
    assert ex["server_host"] and ex["driver_host"] and ex["placement"]["launcher"] == "local"
    assert ex["server_url"].startswith("http://127.0.0.1:") and ex["server_stop"].startswith("server step stopped by")
    assert ex["driver_command"][ex["driver_command"].index("--host") + 1] == ex["server_url"]
    assert not list((tmp_path / layout.WORK_DIR).rglob("server.json"))  # the endpoint's work dir is gone


def _gone(pid: int) -> bool:
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_wait_ready_gives_up_with_the_step_output_and_stop_server_ends_it(tmp_path):
    log = tmp_path / "step.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(["sh", "-c", "echo still loading the model; exec sleep 60"], stdout=fh,
                                start_new_session=True)
    with pytest.raises(run.ServerNotUp, match="(?s)no server.json after 1 s.*still loading the model"):
        run.wait_ready(proc, tmp_path / "server.json", 1, log)
    what = run.stop_server(proc, tmp_path / "work", run.placement([], ""), grace=5)
    assert proc.poll() is not None and what.startswith("server step stopped by SIGTERM")


def test_a_server_that_never_becomes_ready_ends_the_job_with_its_log(tmp_path, monkeypatch):
    """The real servers.py serve with a `tensorflow_model_server` that never listens (it forks a child
    too): servers.py gives up after its timeout with that program's log, run.py writes it into every
    user count's failure record, exits 1, and no process of the server's is left."""
    monkeypatch.chdir(tmp_path)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "tensorflow_model_server"
    fake.write_text("#!/bin/sh\necho \"fake model server $$: loading forever\"\n"
                    f"sleep 600 & echo $! > {tmp_path}/child.pid\necho $$ > {tmp_path}/server.pid\nwait\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    for v in ("SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURMD_NODENAME"):
        monkeypatch.delenv(v, raising=False)
    (tmp_path / "models/tfserving/resnet50/1").mkdir(parents=True)
    models = tmp_path / "models.json"
    models.write_text(json.dumps({"dir": str(tmp_path / "models"), "specs": {"resnet50": {"weights": "w"}}}))
    cfg = tl.section(models=["resnet50"], servers=["tfserving"], users=[1, 2], repeats=1,
                     kinds={"tfserving": "tfserving"})
    cfg["server_start_timeout_s"] = 3  # below the schema's minimum (10), to keep the test short
    assert tl.run_job("serve", cfg, {"server": "tfserving", "model": "resnet50"}, models=models) == 1
    for u in (1, 2):
        raw = layout.raw_path(layout.serve_params("tfserving", "resnet50", u), 0)
        assert not (tmp_path / raw).exists()
        fail = json.loads((tmp_path / raw.replace("/raw/", "/failed/")).read_text())
        assert fail["status"] == "failed"
        assert "the server step exited 1 before it was ready" in fail["failure"]
        assert "not ready after 3 s" in fail["failure"] and "loading forever" in fail["failure"]  # its own log
        assert fail["extra"]["placement"]["launcher"] == "local" and fail["extra"]["server_host"] == ""
    for f in ("server.pid", "child.pid"):
        assert _gone(int((tmp_path / f).read_text())), f"{f}: the server's process is still there"
    assert not (tmp_path / layout.work_dir("tfserving", "resnet50", 0)).exists()  # the shared work dir is removed
    kept = tmp_path / layout.locust_dir("tfserving", "resnet50", 0) / "server-logs" / "server__server.log"
    assert "loading forever" in kept.read_text()


def test_slurm_job_reads_nodes_and_cpus_from_scontrol(tmp_path, monkeypatch):
    """Snakemake's jobstep plugin strips SLURM_JOB_NODELIST / SLURM_CPUS_ON_NODE (keeps SLURM_JOB_ID):
    the nodes and the CPUs per node come from `scontrol show job/node` through repro.allocation (a
    stand-in scontrol here)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "srun").write_text("#!/bin/sh\nexit 0\n")
    (bindir / "scontrol").write_text(
        "#!/bin/sh\ncase \"$2\" in\n"
        "  job) echo \"JobId=$4 JobName=x NumNodes=2 NumCPUs=4 NumTasks=2 NodeList=node[3-4] Comment=c\" ;;\n"
        "  hostnames) [ \"$3\" = 'node[3-4]' ] && printf 'node3\\nnode4\\n' ;;\n"
        "  node) echo \"NodeName=$4 NodeHostName=$4 NodeAddr=10.0.0.9 CPUTot=8\" ;;\nesac\n")
    for f in bindir.iterdir():
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    for v in ("SLURM_JOB_NODELIST", "SLURM_CPUS_ON_NODE"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    assert run.slurm_job() == (["node3", "node4"], "2")
    monkeypatch.delenv("SLURM_JOB_ID")
    assert run.slurm_job() == ([], "")


def test_a_cancelled_serve_job_stops_the_server(tmp_path):
    """SIGTERM to run.py (Slurm cancelling the job, Snakemake's timeout) while the server loads: the
    job unwinds through its finally, which stops the server step; nothing of the server is left."""
    import signal

    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "tensorflow_model_server"
    fake.write_text(f"#!/bin/sh\necho loading slowly\nsleep 600 & echo $! > {tmp_path}/child.pid\n"
                    f"echo $$ > {tmp_path}/server.pid\nwait\n")
    fake.chmod(0o755)
    (tmp_path / "models/tfserving/resnet50/1").mkdir(parents=True)
    models = tmp_path / "models.json"
    models.write_text(json.dumps({"dir": str(tmp_path / "models"), "specs": {"resnet50": {"weights": "w"}}}))
    cfg = tl.section(models=["resnet50"], servers=["tfserving"], users=[1], repeats=1,
                     kinds={"tfserving": "tfserving"}, server_start_timeout_s=300)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    env.update(PATH=f"{bindir}:{os.environ['PATH']}",
               PYTHONPATH=pythonpath.value(tl.REPO, ""))
    argv = tl.run_argv("serve", cfg, {"server": "tfserving", "model": "resnet50"}, models=models)
    proc = subprocess.Popen([sys.executable, "-m", "studies.inference.run", *argv],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for _ in range(300):
        if (tmp_path / "child.pid").exists() or proc.poll() is not None:
            break
        time.sleep(0.1)
    assert (tmp_path / "child.pid").exists(), proc.communicate(timeout=30)[0]
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 128 + signal.SIGTERM, out[-3000:]
    assert "server step stopped by SIGTERM (exit 130)" in out  # servers.py: stopped while loading
    for f in ("server.pid", "child.pid"):
        assert _gone(int((tmp_path / f).read_text())), f"{f}: the server's process is still there\n{out[-2000:]}"
    for u in (1,):  # the runner's: a cancelled job is a failure record that says which signal
        fail = json.loads((tmp_path / layout.raw_path(layout.serve_params("tfserving", "resnet50", u), 0)
                           .replace("/raw/", "/failed/", 1)).read_text())
        assert fail["failure"] == "stopped by SIGTERM" and fail["failure_kind"] == "error"
        assert fail["params"] == layout.serve_params("tfserving", "resnet50", u)


def test_raw_rate_is_relayed_to_the_server_node():
    argv = ["raw_rate", "--config", "{}", "--rep", "0", "--out", "r.json", "--input", "models=m.json"]
    params = {"model": "resnet50", "framework": "tf", "server_exec": "apptainer exec inference-tf.sif"}
    assert run.raw_rate_relay(argv, params, run.placement([], ""), []) is None  # locally: here, no image
    image = ["apptainer", "exec", "inference-tf.sif"]
    cmd = run.raw_rate_relay(argv, params, run.placement([], ""), image)
    assert cmd[:4] == [*image, "python3"] and cmd[4:6] == ["-m", "studies.inference.run"]
    pl = run.placement(["node3", "node4"], here="node3", cpus="2")
    cmd = run.raw_rate_relay(argv, params, pl, image)
    i = cmd.index("apptainer")
    assert cmd[0] == "srun" and "--nodelist=node4" in cmd[:i] and cmd[i:i + 3] == image
    assert cmd[i + 6:-2] == argv and cmd[-2] == "--params"
    relayed = json.loads(cmd[-1])  # the same params, and where the step runs (it relays no further)
    assert relayed["placement"]["server_node"] == "node4" and {k: relayed[k] for k in params} == params


@pytest.mark.parametrize("step", ["records", "fails-with-record", "fails-without-record"])
def test_a_relayed_raw_rate_is_recorded_once(step, tmp_path, monkeypatch):
    """The relayed step's runner writes the raw file or its failure record; the job exits with the
    step's code and never writes over the step's record; a step that left none (srun or the image
    failed) gets one from the job."""
    monkeypatch.chdir(tmp_path)
    cfg = tl.section(models=["resnet50"], servers=["tfserving"], repeats=1)
    raw = layout.raw_path(layout.rawrate_params("resnet50", "tf"), 0)
    failed = raw.replace("/raw/", "/failed/", 1)
    script = {"records": f"import pathlib; p = pathlib.Path({raw!r}); p.parent.mkdir(parents=True); "
                         "p.write_text('{}')",
              "fails-with-record": f"import pathlib, sys; p = pathlib.Path({failed!r}); p.parent.mkdir(parents=True); "
                                   "p.write_text('its own'); sys.exit(3)",
              "fails-without-record": "import sys; sys.exit(4)"}[step]
    seen = {}

    def relay(argv, params, pl, server_exec):
        seen.update(argv=argv, params=params, server_exec=server_exec)
        return [sys.executable, "-c", script]

    monkeypatch.setattr(run, "raw_rate_relay", relay)
    params = {"model": "resnet50", "framework": "tf", "server_exec": "apptainer exec inference-tf.sif"}
    if step == "records":
        assert tl.run_job("raw_rate", cfg, params) == 0 and (tmp_path / raw).read_text() == "{}"
        assert not (tmp_path / failed).exists()
    elif step == "fails-with-record":
        with pytest.raises(SystemExit) as exc:
            tl.run_job("raw_rate", cfg, params)
        assert exc.value.code == 3 and (tmp_path / failed).read_text() == "its own"
    else:
        assert tl.run_job("raw_rate", cfg, params) == 1
        fail = json.loads((tmp_path / failed).read_text())
        assert "the raw rate step on the server node exited 4 and left no record" in fail["failure"]
        assert fail["params"] == layout.rawrate_params("resnet50", "tf") and not (tmp_path / raw).exists()
    assert seen["argv"][:1] == ["raw_rate"] and seen["argv"][seen["argv"].index("--out") + 1] == raw
    assert seen["params"] == params and seen["server_exec"] == ["apptainer", "exec", "inference-tf.sif"]


def test_prepare_writes_the_manifest_and_a_failure_leaves_no_record(tmp_path, monkeypatch):
    """prepare's --out is the manifest of the prepared models (not a raw record): written when the
    preparation succeeds with the config's weights; a failed preparation exits non-zero with neither
    the manifest nor a failure record."""
    monkeypatch.chdir(tmp_path)
    cfg = tl.section(models=["resnet50"], servers=["tfserving"], repeats=1)
    mdir = tmp_path / "models"
    mdir.mkdir()
    out = tmp_path / "results/inference/models.json"
    argv = ["prepare", "--config", json.dumps(cfg), "--out", str(out)]

    def prepared(weights, rc=0):
        (mdir / "manifest-torch-resnet50.json").write_text(json.dumps({"spec": {"weights": weights}}))
        code = f"print('preparing'); print({str(mdir)!r}); raise SystemExit({rc})"
        monkeypatch.setattr(run, "prepare_command", lambda cfg: [sys.executable, "-c", code])

    prepared(cfg["weights"])
    assert run.RUN.main(argv) == 0
    man = json.loads(out.read_text())
    assert man["dir"] == str(mdir) and man["specs"] == {"resnet50": {"weights": cfg["weights"]}}
    assert man["command"][0] == sys.executable
    out.unlink()
    for weights, rc, code in ((cfg["weights"], 5, 5), ("pretrained", 0, 1)):
        prepared(weights, rc)
        with pytest.raises(SystemExit) as exc:
            run.RUN.main(argv)
        assert exc.value.code == code and not out.exists()
        assert not list(tmp_path.rglob("failed"))
