"""The serve job's n+1 layout on the local Slurm cluster (the slurm_cluster fixture: virtual nodes
on one host): the TF Serving stand-in x ResNet50 (32x32), users 1 and 2, 3 s runs, through
profiles/slurm up to the tidy table, with the TF raw rate. The server and Locust must run on
different Slurm nodes of the job (node names from Slurm: every virtual node has this host's
hostname), every request succeed, the tidy numbers be Locust's own, and the raw rate run on its
job's server node.

Slow (about 2 minutes, the model preparation cached): skipped with --quick.
"""

from __future__ import annotations

import csv
import json
import subprocess

import pandas as pd
import pytest

from repro import testing

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("slurm_cluster")]

OVERLAY = """
inference:
  enabled: true
  models: [resnet50]
  servers: [tfserving]
  kick: {server: tfserving, model: resnet50}
  users: [1, 2]
  repeats: 1
  run_time_s: 3
  sizes: {image_size: 32, audio_samples: 8000, max_new_tokens: 2, num_beams: 2}
  raw_rate: {enabled: true, seconds: 2, warmup: 1}
  ceiling: {enabled: false}
  claims:
    plateau_from_users:
      local: {value: 1, why: "the tiny run has users 1 and 2"}
      rehearsal: {value: 1, why: "the tiny run has users 1 and 2"}
      cluster: {value: 1, why: "the tiny run has users 1 and 2"}
"""
COLUMNS = {"throughput": "Requests/s", "latency_median": "Median Response Time", "latency_p95": "95%",
           "requests": "Request Count", "failures": "Failure Count"}


def _aggregated(path):
    with open(path, newline="") as f:
        return next(r for r in csv.DictReader(f) if r["Name"] == "Aggregated")


def test_server_and_locust_run_on_different_slurm_nodes(snake, workspace):
    ov = workspace / "slurm-tiny.yaml"
    ov.write_text(testing.only_studies("inference") + OVERLAY)
    # the preparation asks what ResNet50's needs (layout.prepare_mem_mb), within the local virtual nodes' 4 GB
    snake("results/inference/measurements.csv", "--profile", "profiles/slurm", "--configfile", "config/local.yaml",
          str(ov), timeout=900)
    res = workspace / "results/inference"
    nodes_seen = set()
    for u in (1, 2):
        raw = res / f"raw/experiment~serve/server~tfserving/model~resnet50/users~{u}/rep~0.json"
        rec = json.loads(raw.read_text())
        ex = rec["extra"]
        assert rec["status"] == "ok" and ex["placement"]["launcher"] == "slurm"
        nodes = ex["placement"]["nodes"]
        assert len(nodes) == 2 and ex["server_node"] and ex["driver_node"]
        assert ex["server_node"] != ex["driver_node"], ex  # n+1: two Slurm nodes, not two processes on one
        assert (ex["driver_node"], ex["server_node"]) == (nodes[0], nodes[1])
        # Locust ran directly from the batch step when that step is on the driver node, else in an srun step
        batch_node = rec["host"].split("/")[-1]  # provenance: hostname/Slurm node of the batch step
        assert (ex["driver_command"][0] == "srun") == (batch_node != ex["driver_node"]), (rec["host"], ex)
        # stopped through srun: USR1 forwarded to servers.py, which stopped its server and exited 0
        assert ex["server_stop"] == "server step stopped by SIGUSR1 (exit 0)", ex["server_stop"]
        # the server was reachable from the other node: bound to every interface, advertised by hostname
        assert ex["server_command"][0] == "srun" and f"--nodelist={ex['server_node']}" in ex["server_command"]
        cmd = ex["server_command"]
        assert cmd[cmd.index("serve") + 1:].count("0.0.0.0") == 1 and not ex["server_url"].startswith("http://127.")
        assert ex["server_host"] and ex["driver_host"]  # hostnames (the same one here: virtual nodes)
        gen = json.loads((res / f"locust/server~tfserving/model~resnet50/rep~0/users~{u}/generator.json").read_text())
        assert gen["slurm_node"] == ex["driver_node"] and gen["host"] == ex["server_url"]
        assert rec["sanity"]["requests"] > 0 and rec["sanity"]["failures"] == 0
        nodes_seen.update(nodes)
    assert len(nodes_seen) == 2  # one job, one allocation for both user counts
    # the raw in-process rate ran on its job's server node (an srun step there), not on the batch node
    rr = json.loads((res / "raw/experiment~raw_rate/model~resnet50/framework~tf/rep~0.json").read_text())
    pl = rr["extra"]["placement"]
    assert rr["status"] == "ok" and pl["launcher"] == "slurm" and len(pl["nodes"]) == 2
    assert rr["extra"]["node"] == pl["server_node"] == pl["nodes"][1] != pl["batch_node"]
    assert rr["host"].split("/")[-1] == pl["server_node"]
    df = pd.read_csv(res / "measurements.csv", keep_default_na=False)
    ok = df[(df.experiment == "serve") & (df.status == "ok")]
    assert set(ok.users.astype(int)) == {1, 2} and set(ok.system_kind) == {"stand-in:tfserving-rest-on-tf-python"}
    for users, g in ok.groupby("users"):
        agg = _aggregated(res / f"locust/server~tfserving/model~resnet50/rep~0/users~{users}/locust_stats.csv")
        vals = dict(zip(g.metric, pd.to_numeric(g.value)))
        for metric, col in COLUMNS.items():
            assert vals[metric] == pytest.approx(float(agg[col]), rel=1e-12), (users, metric)
        assert vals["failures"] == 0 and vals["requests"] > 0
    # the server step was stopped: no servers.py or server of this workspace is left, no step either
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert not [line for line in ps.splitlines() if str(workspace) in line and "repro_inference" in line]
    assert not (workspace / "results/inference/work/server~tfserving/model~resnet50/rep~0").exists()
    steps = subprocess.run(["squeue", "-h", "-s", "-o", "%j"], capture_output=True, text=True).stdout
    assert "rinf-server" not in steps
