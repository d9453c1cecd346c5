"""The GPU path, proven without a GPU (issue 20): the cluster config asks for cuda; the command builders
pass --device cuda; the rendered TorchServe and Triton configurations ask for the GPU; a cuda run on this
GPU-less machine fails with the named error (NoGPU naming the node) and writes failure records, never an
ok record; the device record and the GPU sampler read nvidia-smi (a fake one here)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import inference_study_testlib as tl
import pytest
from studies.inference import layout, run

SRC = tl.REPO / "systems/inference/src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))
from repro_inference import device as dev  # noqa: E402
from repro_inference import servers, triton_config  # noqa: E402

FAKE_SMI = """#!/bin/sh
case "$1" in
  --query-gpu=index,uuid,name,driver_version,memory.total*) echo "0, GPU-fake-0, NVIDIA Fake 5000, 580.1, 16384";;
  --query-gpu=index,uuid,utilization.gpu,memory.used*) echo "0, GPU-fake-0, 42, 1000";;
  *) echo "usage"; exit 1;;
esac
"""


@pytest.fixture
def no_gpu(monkeypatch, tmp_path):
    """A PATH without nvidia-smi (this machine has none; a runner might)."""
    bin_ = tmp_path / "nogpu-bin"
    bin_.mkdir()
    monkeypatch.setenv("PATH", f"{bin_}:/usr/bin:/bin")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return bin_


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    bin_ = tmp_path / "fakegpu-bin"
    bin_.mkdir()
    smi = bin_ / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setitem(sys.modules, "pynvml", None)  # the sampler falls back to nvidia-smi
    return bin_


def test_cluster_config_asks_for_the_gpu_and_local_for_the_cpu():
    cl, lo = tl.section(local=False), tl.section()
    assert cl["device"] == "cuda" and "gpu" in cl["slurm"]["gres"] and cl["threads"] == 0
    assert lo["device"] == "cpu" and lo["threads"] == 1
    with pytest.raises(layout.LayoutError, match=r"inference\.slurm\.gres"):
        layout.check(tl.section(local=False, slurm={"gres": ""}))


def test_bad_device_names_the_key():
    from repro import config as rc

    with pytest.raises(rc.ConfigError, match=r"inference\.device"):
        rc.validate(tl.full_config(device="gpu"))


def test_the_server_command_passes_the_device(tmp_path):
    cfg = tl.section(local=False)
    pl = run.placement(["n0", "n1"], "n0", "8")
    cmd = run.serve_command(cfg, "torchserve", "resnet50", "/m", tmp_path, tmp_path / "s.json", pl,
                            ["apptainer", "exec", "--nv", "ts.sif"])
    assert cmd[cmd.index("--device") + 1] == "cuda" and cmd[cmd.index("--threads") + 1] == "0"
    assert "--nodelist=n1" in cmd and "--nv" in cmd
    local = run.serve_command(tl.section(), "torchserve", "resnet50", "/m", tmp_path, tmp_path / "s.json",
                              run.placement([], "h"))
    assert local[local.index("--device") + 1] == "cpu"


def _torchserve_props(tmp_path, monkeypatch, device):
    vt = tmp_path / "vt"
    (vt / "bin").mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("REPRO_VENV_TORCH", str(vt))
    models = tmp_path / "models"
    (models / "torchserve").mkdir(parents=True, exist_ok=True)
    (models / "torchserve" / "resnet50.mar").write_bytes(b"")
    s = servers.Server("torchserve", models, "resnet50", tmp_path / f"w-{device}", device=device)
    s.workdir.mkdir(parents=True)
    env = s._env()
    s._torchserve(env)
    props = dict(ln.split("=", 1) for ln in (s.workdir / "config.properties").read_text().splitlines())
    return props, env


def test_rendered_torchserve_config_asks_for_the_gpu(tmp_path, monkeypatch):
    props, env = _torchserve_props(tmp_path, monkeypatch, "cuda")
    assert props["number_of_gpu"] == "1" and props["default_workers_per_model"] == "1"
    assert env["REPRO_DEVICE"] == "cuda" and env.get("CUDA_VISIBLE_DEVICES") != ""
    props, env = _torchserve_props(tmp_path, monkeypatch, "cpu")
    assert props["number_of_gpu"] == "0" and env["REPRO_DEVICE"] == "cpu" and env["CUDA_VISIBLE_DEVICES"] == ""


def test_rendered_triton_config_asks_for_the_gpu(tmp_path):
    from repro_inference.spec import make_spec

    spec = make_spec("resnet50", image_size=32, threads=0)
    text = triton_config.config_pbtxt(spec, "triton-pytorch")  # prepared once, device-free (cpu)
    assert "kind: KIND_CPU" in text and "INTRA_OP_THREAD_COUNT" not in text  # threads 0: the backend's default
    repo = tmp_path / "models" / "triton-pytorch" / "resnet50"
    (repo / "1").mkdir(parents=True)
    (repo / "config.pbtxt").write_text(text)
    s = servers.Server("triton-pytorch", tmp_path / "models", "resnet50", tmp_path / "w", device="cuda")
    s.workdir.mkdir(parents=True)
    cmd = s._triton(s._env())
    served = (s.workdir / "repository" / "resnet50" / "config.pbtxt").read_text()
    assert "instance_group [ { count: 1 kind: KIND_GPU gpus: [ 0 ] } ]" in served and "KIND_CPU" not in served
    assert (s.workdir / "repository" / "resnet50" / "1").is_symlink()
    assert cmd[0] == "tritonserver"
    assert "KIND_GPU" in triton_config.config_pbtxt(dict(spec, device="cuda"), "triton-tensorflow")


def test_no_gpu_fails_loudly_naming_the_node(no_gpu, monkeypatch):
    dev.require("cpu")
    monkeypatch.setenv("SLURMD_NODENAME", "gpu-node-7")
    with pytest.raises(dev.NoGPU, match=r"no GPU is visible on node gpu-node-7 \(host .+\).*refusing to run on the CPU"
                       ):
        dev.require("cuda")
    d = dev.describe("cpu")
    assert d["device"] == "cpu" and d["gpu_name"] == "" and d["gpus_visible"] == 0


def test_a_fake_gpu_is_described_and_sampled(fake_gpu, monkeypatch):
    dev.require("cuda")
    d = dev.describe("cuda")
    assert (d["gpu_name"], d["gpu_driver"], d["gpu_memory_total_mib"]) == ("NVIDIA Fake 5000", "580.1", 16384.0)
    s = dev.GpuSampler("cuda", interval=0.05).start()
    import time

    time.sleep(0.5)
    summ = s.stop()
    assert summ["gpu_sample_source"] == "nvidia-smi" and summ["gpu_samples"] >= 2
    assert summ["gpu_util_mean_pct"] == 42.0 and summ["gpu_mem_used_max_mib"] == 1000.0
    t_mid = s.samples[len(s.samples) // 2]["t"]
    assert dev.summarise(s.samples, "x", t_mid, None)["gpu_samples"] < summ["gpu_samples"]
    assert dev.GpuSampler("cpu").start().stop()["gpu_samples"] == 0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")  # a cgroup-renumbered job GPU: still the one shown
    assert dev.describe("cuda")["gpus_visible"] == 1
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # a job given no GPU sees none, even where one exists
    with pytest.raises(dev.NoGPU):
        dev.require("cuda")


def test_a_cuda_server_without_a_gpu_exits_3_before_starting(no_gpu, tmp_path, capsys):
    rc = servers.main(["serve", "torchserve", "--models", str(tmp_path), "--model", "resnet50", "--workdir",
                       str(tmp_path / "w"), "--device", "cuda", "--ready-file", str(tmp_path / "r.json")])
    assert rc == 3 and "no GPU is visible" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "w" / "server.pid").exists()


def _models_json(tmp_path: Path) -> Path:
    p = tmp_path / "models.json"
    p.write_text(json.dumps({"dir": str(tmp_path / "m"), "specs": {"resnet50": {
        "model": "resnet50", "weights": "random-from-config", "tokenizer": "none-needed"}}}))
    return p


def _cuda_cfg(**kw):
    return tl.section(device="cuda", slurm={"gres": "gpu:1"}, users=[1, 2], run_time_s=1,
                      server_start_timeout_s=10, raw_rate={"seconds": 1, "warmup": 0}, **kw)


def test_a_cuda_serve_job_without_a_gpu_writes_failure_records_only(no_gpu, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{no_gpu}:{Path(sys.executable).parent}:/usr/bin:/bin")
    rc = tl.run_job("serve", _cuda_cfg(), {"server": "torchserve", "model": "resnet50"}, models=_models_json(tmp_path))
    assert rc == 1
    for u in (1, 2):
        params = layout.serve_params("torchserve", "resnet50", u)
        assert not Path(layout.raw_path(params, 0)).exists()
        fail = json.loads(Path(layout.raw_path(params, 0).replace("/raw/", "/failed/", 1)).read_text())
        assert fail["status"] == "failed" and "no GPU is visible on host" in fail["failure"]
        assert fail["extra"]["device_asked"] == "cuda"


def test_a_cuda_raw_rate_without_a_gpu_writes_a_failure_record(no_gpu, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    vt = tmp_path / "vt" / "bin"
    vt.mkdir(parents=True)
    (vt / "python").symlink_to(sys.executable)
    monkeypatch.setenv("REPRO_VENV_TORCH", str(vt.parent))
    rc = tl.run_job("raw_rate", _cuda_cfg(), {"model": "resnet50", "framework": "torch"}, models=_models_json(tmp_path))
    params = layout.rawrate_params("resnet50", "torch")
    assert rc == 1 and not Path(layout.raw_path(params, 0)).exists()
    fail = json.loads(Path(layout.raw_path(params, 0).replace("/raw/", "/failed/", 1)).read_text())
    assert "raw_rate exited 3" in fail["failure"] and "no GPU is visible" in fail["failure"]


def test_a_record_measured_off_the_gpu_is_not_ok():
    cfg = tl.section(local=False)
    assert run.device_problem(cfg, {"device": "cuda", "gpu_name": "NVIDIA H200"}) is None
    assert "measured 'cpu'" in run.device_problem(cfg, {"device": "cpu", "host": "n1"})
    assert run.device_problem(cfg, None)
    assert run.device_problem(tl.section(), {"device": "cpu"}) is None


def test_bart_length_and_encodings_are_stated():
    from repro_inference.spec import make_spec

    assert layout.generated_tokens(make_spec("bart")) == (
        "exactly 142 (min_new_tokens = max_new_tokens: random weights)")
    assert "at most 142" in layout.generated_tokens(make_spec("bart", weights="pretrained"))
    assert layout.input_encoding("torchserve", "resnet50").startswith("PNG bytes")
    assert layout.input_encoding("triton-pytorch", "wav2vec2").startswith("binary tensor")
    assert layout.input_encoding("tfserving", "resnet50").startswith('JSON {"instances"')
    env = run.locust_env(tl.section(), "bart")
    assert "REPRO_BART_NEW_TOKENS=4" in env


def test_the_measured_device_and_gpu_samples_become_columns():
    assert run.device_label({"device": "cuda", "gpu_name": "NVIDIA H200"}) == "cuda:NVIDIA H200"
    assert run.device_label({"device": "cpu"}) == "cpu" and run.device_label(None) == "unknown"
    g = {"gpu_samples": 3, "gpu_util_mean_pct": 8.8, "gpu_util_max_pct": 14.0, "gpu_mem_used_max_mib": 1485.9}
    ms = {m["metric"]: m for m in run.gpu_metrics(g, device="cuda:X")}
    assert ms["gpu_util_mean"]["value"] == 8.8 and ms["gpu_mem_used_max"]["unit"] == "MiB"
    assert ms["gpu_util_max"]["labels"] == {"device": "cuda:X"}
    assert run.gpu_metrics({"gpu_samples": 0}) == [] and run.gpu_metrics({}) == []
    win = run.gpu_window({"source": "nvml", "samples": [{"t": 1, "util_pct": 10, "mem_used_mib": 5},
                                                        {"t": 5, "util_pct": 90, "mem_used_mib": 7}]},
                         {"started_at": 4, "ended_at": 6})
    assert win["gpu_samples"] == 1 and win["gpu_util_mean_pct"] == 90 and win["gpu_sample_source"] == "nvml"


def test_gpu_check_summary_lists_ok_and_failed_records_with_the_device(tmp_path, capsys):
    """gpu_check.py summary: one gpu.csv row per serve/raw-rate record (ok or failed), the ceiling left out;
    the device each side measured and Table I's value beside."""
    import csv as _csv

    from studies.inference import gpu_check

    res = tmp_path / "inference"
    ok = {"status": "ok", "params": {"experiment": "serve", "server": "torchserve", "model": "resnet50", "users": 1},
          "metrics": [{"metric": "throughput", "value": 99.5, "unit": "req/s"}],
          "extra": {"device": {"device": "cuda", "gpu_name": "NVIDIA H100"}}}
    bad = {"status": "failed", "failure": "device cuda asked for, but the run measured 'cpu'",
           "params": {"experiment": "raw_rate", "model": "resnet50", "framework": "torch"}, "metrics": []}
    ceil = {"status": "ok", "params": {"experiment": "ceiling", "users": 4}, "metrics": []}
    for rel, rec in (("raw/experiment~serve/x/rep~0.json", ok), ("failed/experiment~raw_rate/y/rep~0.json", bad),
                     ("raw/experiment~ceiling/users~4/rep~0.json", ceil)):
        (res / rel).parent.mkdir(parents=True, exist_ok=True)
        (res / rel).write_text(json.dumps(rec))
    rows = gpu_check.write_summary(res, tmp_path / "out")
    with open(tmp_path / "out" / "gpu.csv", newline="") as fh:
        got = list(_csv.DictReader(fh))
    assert [(r["experiment"], r["status"]) for r in got] == [("serve", "ok"), ("raw_rate", "failed")] == [
        (r["experiment"], r["status"]) for r in rows]
    assert got[0]["rate"] == "99.5" and got[0]["gpu_name"] == "NVIDIA H100" and got[0]["paper_table1_req_s"] == "104.1"
    assert "measured 'cpu'" in got[1]["failure"] and "NVIDIA H100" in capsys.readouterr().out
