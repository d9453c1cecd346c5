"""A short Locust run through a real protocol against a server started by our scripts, parsed and recomputed;
the raw in-process model rate."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest
from inference_helpers import ROOT, SYSTEM, TINY

from repro_inference.servers import venv
from tools.locust import parser

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def locust_venv():
    subprocess.run([str(SYSTEM.parents[1] / "tools" / "locust" / "setup.sh")], check=True)


def test_locust_through_servers_run_against_the_tfserving_standin(models, locust_venv, tmp_path):
    """`servers.py run` starts the stand-in, runs two Locust runs with its URL, and always stops it.

    Run 1 declares the stand-in's kind and sends every 4th request wrong-shaped: the server's 400s are
    Locust failures, the rest succeed. Run 2 declares "real": every answer is then a failure
    (system kind mismatch), so a stand-in's numbers can never pass for TF Serving's.
    """
    loc = f"{sys.executable} -m tools.locust.runner --protocol tfserving --env REPRO_MODEL=resnet50 " \
          f"--env REPRO_IMAGE_SIZE={TINY['image_size']}"
    script = (f'{loc} --users 2 --run-time 6s --out {tmp_path}/ok --env REPRO_BAD_EVERY=4 '
              f'--system-kind "$REPRO_SYSTEM_KIND" --label server=$REPRO_SERVER_KIND --label weights=random-from-config'
              f' && {loc} --users 1 --run-time 3s --out {tmp_path}/mislabelled --system-kind real && exit 3')
    r = subprocess.run([sys.executable, "-m", "repro_inference.servers", "run", "tfserving-standin", "--models",
                        str(models), "--model", "resnet50", "--workdir", str(tmp_path / "w"), "--", "sh", "-c", script],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=f"{SYSTEM / 'src'}:{ROOT}"))
    assert r.returncode == 3, r.stdout + r.stderr  # the command's own exit code comes back
    pid = json.loads((tmp_path / "w" / "server.json").read_text())["pid"]
    assert not (tmp_path / "w" / "server.pid").exists()
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)  # nothing left behind

    kind = "stand-in:tfserving-rest-on-tf-python"
    rows = {r["metric"]: r for r in parser.tidy_dirs([tmp_path / "ok"])}
    assert all(r["system_kind"] == kind and r["weights"] == "random-from-config" and r["server"] == "tfserving-standin"
               and r["users"] == 2 for r in rows.values())
    errors = parser.failures(tmp_path / "ok" / "users~2" / "locust_failures.csv")
    assert errors and all("HTTP 400" in e["error"] for e in errors)
    requests, failures = rows["requests"]["value"], rows["failures"]["value"]
    assert failures == sum(e["occurrences"] for e in errors) and 0 < failures < requests
    assert abs(failures - requests / 4) <= 2  # one request counter per Locust process
    # the tidy numbers are Locust's: recompute from its raw stats file
    with open(tmp_path / "ok" / "users~2" / "locust_stats.csv") as f:
        agg = next(r for r in csv.DictReader(f) if r["Name"] == "Aggregated")
    assert rows["throughput"]["value"] == float(agg["Requests/s"]) > 0
    assert rows["latency_p99"]["value"] == float(agg["99%"]) and rows["latency_median"]["value"] > 0
    assert rows["locustfile_exceptions"]["value"] == 0

    rows = {r["metric"]: r["value"] for r in parser.tidy_dirs([tmp_path / "mislabelled"])}
    assert rows["failures"] == rows["requests"] > 0
    errors = parser.failures(tmp_path / "mislabelled" / "users~1" / "locust_failures.csv")
    assert errors and all("system kind mismatch" in e["error"] for e in errors)  # 200s, after the bad input


@pytest.mark.parametrize("framework", ["torch", "tf"])
def test_raw_model_rate(models, tmp_path, framework):
    model = "resnet50"
    out = tmp_path / "raw.json"
    env = dict(os.environ, PYTHONPATH=str(SYSTEM / "src"), OMP_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="2")
    subprocess.run([str(venv(framework) / "bin" / "python"), "-m", "repro_inference.raw_rate", "--framework",
                    framework, "--models", str(models), "--model", model, "--seconds", "2", "--warmup", "1",
                    "--out", str(out)], check=True, env=env)
    r = json.loads(out.read_text())
    assert r["schema"] == "repro.raw-rate/1" and r["threads"] == 1 and r["batch"] == 1
    assert r["iterations"] >= 1 and r["rate"] == pytest.approx(r["iterations"] / r["seconds"], rel=1e-3)
    assert r["weights"] == "random-from-config" and r["spec"]["model"] == model
    assert r["spec"]["image_size"] == TINY["image_size"]
