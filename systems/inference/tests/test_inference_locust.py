"""A short Locust run through a real protocol against a running server, parsed and recomputed; the raw rate."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest
from inference_helpers import SYSTEM, TINY, post

from repro_inference.servers import venv
from tools.locust import parse, payloads, runner

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def locust_venv():
    subprocess.run([str(SYSTEM.parents[1] / "tools" / "locust" / "setup.sh")], check=True)


def test_locust_against_the_tfserving_standin(serve, locust_venv, tmp_path):
    s = serve("tfserving-standin", "resnet50")
    env = {"REPRO_MODEL": "resnet50", "REPRO_IMAGE_SIZE": str(TINY["image_size"]), "REPRO_BAD_EVERY": "4"}
    rec = runner.run_one("tfserving", s.url, 2, "6s", tmp_path / "ok" / "users~2", env_extra=env,
                         labels={"server": s.kind, "weights": "random-from-config"}, system_kind=s.system_kind)
    assert rec["system_kind"] == "stand-in:tfserving-rest-on-tf-python"
    rows = {r["metric"]: r for r in parse.tidy_dirs([tmp_path / "ok"])}
    assert all(r["system_kind"] == s.system_kind and r["weights"] == "random-from-config" for r in rows.values())
    # every 4th request was wrong-shaped: the server's 400s are Locust failures, the rest succeeded
    errors = parse.failures(tmp_path / "ok" / "users~2" / "locust_failures.csv")
    assert errors and all("HTTP 400" in e["error"] for e in errors)
    requests, failures = rows["requests"]["value"], rows["failures"]["value"]
    assert failures == sum(e["occurrences"] for e in errors) and 0 < failures < requests
    assert abs(failures - requests / 4) <= 2  # per-process counter; a user may stop mid-cycle
    # the tidy numbers are Locust's: recompute from its raw stats file
    with open(tmp_path / "ok" / "users~2" / "locust_stats.csv") as f:
        agg = next(r for r in csv.DictReader(f) if r["Name"] == "Aggregated")
    assert rows["throughput"]["value"] == float(agg["Requests/s"]) > 0
    assert rows["latency_p99"]["value"] == float(agg["99%"]) and rows["latency_median"]["value"] > 0
    # a run that expects the real server gets only failures from the stand-in: it can never pass for TF Serving
    runner.run_one("tfserving", s.url, 1, "2s", tmp_path / "mislabelled", env_extra=env, system_kind="real")
    rows = {r["metric"]: r["value"] for r in parse.tidy_run(tmp_path / "mislabelled")}
    assert rows["failures"] == rows["requests"] > 0
    assert any("system kind mismatch" in e["error"]
               for e in parse.failures(tmp_path / "mislabelled" / "locust_failures.csv"))
    # and the server still serves
    code, ans, _ = post(f"{s.url}/v1/models/resnet50:predict",
                        payloads.tfserving_request(*payloads.image_tensor(TINY["image_size"])),
                        {"Content-Type": "application/json"})
    assert code == 200 and len(ans["predictions"][0]) == 1000


@pytest.mark.parametrize("framework,model", [("torch", "resnet50"), ("tf", "resnet50"), ("torch", "bart")])
def test_raw_model_rate(models, tmp_path, framework, model):
    out = tmp_path / "raw.json"
    env = dict(os.environ, PYTHONPATH=str(SYSTEM / "src"), OMP_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="2")
    subprocess.run([str(venv(framework) / "bin" / "python"), "-m", "repro_inference.raw_rate", "--framework",
                    framework, "--models", str(models), "--model", model, "--seconds", "2", "--warmup", "1",
                    "--text-words", str(TINY["text_words"]), "--out", str(out)], check=True, env=env)
    r = json.loads(out.read_text())
    assert r["schema"] == "repro.raw-rate/1" and r["threads"] == 1 and r["batch"] == 1
    assert r["iterations"] >= 1 and r["rate"] == pytest.approx(r["iterations"] / r["seconds"])
    assert r["weights"] == "random-from-config" and r["spec"]["model"] == model
    if model == "resnet50":
        assert r["spec"]["image_size"] == TINY["image_size"]


def test_servers_cli_run_always_stops_the_server(models, tmp_path):
    """`servers.py run` starts, runs the command with the server's URL, stops even when the command fails."""
    code = ("import os, sys, urllib.request; u = os.environ['REPRO_SERVER_URL']; "
            "print(urllib.request.urlopen(u + '/v1/models/resnet50').status, os.environ['REPRO_SYSTEM_KIND']); "
            "open(sys.argv[1], 'w').write(u); sys.exit(3)")
    r = subprocess.run([sys.executable, "-m", "repro_inference.servers", "run", "tfserving-standin", "--models",
                        str(models), "--model", "resnet50", "--workdir", str(tmp_path / "w"), "--",
                        sys.executable, "-c", code, str(tmp_path / "url")],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(SYSTEM / "src")))
    assert r.returncode == 3, r.stderr
    assert "200 stand-in:tfserving-rest-on-tf-python" in r.stdout
    pid = json.loads((tmp_path / "w" / "server.json").read_text())["pid"]
    assert not (tmp_path / "w" / "server.pid").exists()
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
