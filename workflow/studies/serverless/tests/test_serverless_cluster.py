"""The cluster path's settings that decide results: the paper's cluster shape (4 nodes x 4 vCPUs, 8 GB)
checked against the kubeconfig's nodes (a fake kubectl prints hand-written `kubectl get nodes -o json`
fixtures: fixtures/kubectl-nodes-*.json, synthetic, in Kubernetes' format), the mismatch in every raw
record; the driver node's cores against the baseline's parallelism and the partition's cores per node."""

from __future__ import annotations

import http.server
import json
import os
import threading
from pathlib import Path

import pytest
import serverless_testlib as tl
from studies.serverless import cluster_shape, layout

from repro import rawio

FIX = Path(__file__).resolve().parent / "fixtures"
PAPER = {"nodes": 4, "cpus_per_node": 4, "memory_gib": 8}


def _fake_kubectl(tmp_path: Path, fixture: str | None, rc: int = 0) -> Path:
    exe = tmp_path / "kubectl"
    body = f"cat {FIX / fixture}" if fixture else "echo 'Unable to connect to the server' >&2"
    exe.write_text("#!/bin/sh\n"
                   f'echo "$@" >> {tmp_path / "kubectl.args"}\n'
                   '[ "$1" = --kubeconfig ] && [ "$3 $4 $5 $6" = "get nodes -o json" ] || exit 9\n'
                   f"{body}\nexit {rc}\n")
    exe.chmod(0o755)
    return exe


def test_the_papers_shape_has_no_mismatch():
    obs = cluster_shape.parse_nodes(json.loads((FIX / "kubectl-nodes-4x4.json").read_text()))
    assert obs["count"] == 4 and obs["cpus"] == 16
    assert cluster_shape.compare(obs, PAPER) == []


def test_a_different_cluster_is_reported_node_by_node():
    obs = cluster_shape.parse_nodes(json.loads((FIX / "kubectl-nodes-site.json").read_text()))
    mm = cluster_shape.compare(obs, PAPER)
    assert mm[0] == "4 nodes expected, 3 ready and schedulable found (5 in all)"  # tainted cp, NotReady w3
    assert "node w0: 8 vCPUs, 4 expected" in mm and "node w0: 32 GiB, 8 expected" in mm
    assert not any("cp" in m or "w3" in m for m in mm)


def test_quantities():
    assert cluster_shape.cpus("3800m") == 3.8 and cluster_shape.cpus("4") == 4
    assert cluster_shape.gib("8Gi") == 8 and round(cluster_shape.gib("8148296Ki"), 2) == 7.77
    with pytest.raises(ValueError):
        cluster_shape.gib("8 GB")


def test_check_runs_kubectl_on_the_kubeconfig(tmp_path, monkeypatch):
    cfg = tl.section(local=False, kubeconfig=str(tmp_path / "kc"))
    monkeypatch.setenv("REPRO_KUBECTL", str(_fake_kubectl(tmp_path, "kubectl-nodes-site.json")))
    res = cluster_shape.check(cfg)
    assert res["expected"] == PAPER and res["observed"]["count"] == 3 and len(res["mismatch"]) == 7
    assert (tmp_path / "kubectl.args").read_text().split() == ["--kubeconfig", str(tmp_path / "kc"), "get", "nodes",
                                                               "-o", "json"]
    monkeypatch.setenv("REPRO_KUBECTL", str(_fake_kubectl(tmp_path, None, rc=1)))
    res = cluster_shape.check(cfg)
    assert "Unable to connect" in res["error"] and res["mismatch"][0].startswith("cluster shape not checked")


def test_the_driver_needs_the_baselines_cores():
    """config.yaml as shipped: 16 images at a time on a driver of cluster.cores_per_node = 8 is named; a
    baseline wider than director_cores is named too; the edited config passes."""
    cfg = tl.section(local=False, kubeconfig=__file__, limit={"iperf_host": "10.0.0.5",
                                                              "echo_url": "http://10.0.0.5:8080/"})
    assert layout.site_problems(cfg) == []
    assert [p.split(" = ")[0] for p in layout.site_problems(cfg, 8)] == ["serverless.director_cores"]
    assert "cluster.cores_per_node = 8" in layout.site_problems(cfg, 8)[0]
    assert layout.site_problems(cfg, 32) == []
    narrow = dict(cfg, director_cores=8)
    assert [p.split(" = ")[0] for p in layout.site_problems(narrow, 32)] == ["serverless.images.baseline.parallel"]


class _Echo(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def test_every_cluster_record_carries_the_shape_and_the_drivers_cores(tmp_path):
    """mode kubernetes, a fake kubectl reporting the site fixture, an echo server on 127.0.0.2 (not the
    loopback name the site check refuses): the limit job's records carry the mismatch and the cores."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.2", 0), _Echo)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        kc = tmp_path / "kubeconfig"
        kc.write_text("apiVersion: v1\n")
        cfg = tl.section(local=False, kubeconfig=str(kc), repeats=1,
                         limit={"iperf_host": "10.0.0.5", "echo_url": f"http://127.0.0.2:{srv.server_port}/",
                                "exponents": [10], "requests": 4, "concurrency": 2})
        env = dict(os.environ, REPRO_KUBECTL=str(_fake_kubectl(tmp_path, "kubectl-nodes-site.json")))
        p = tl.run_job(tmp_path, cfg, "limit", env=env, variant="echo")
        assert p.returncode == 0, p.stdout + p.stderr
        assert "cluster shape: 4 nodes expected, 3 ready" in p.stdout
        rec = rawio.read(tmp_path / layout.raw_path(layout.limit_echo_params(1024), 0))
        assert rec["sanity"]["cluster_shape_mismatch"][0].startswith("4 nodes expected")
        assert rec["extra"]["cluster_shape"]["observed"]["count"] == 3
        assert rec["extra"]["director_cores"] == len(os.sched_getaffinity(0)) and rec["extra"]["director_host"]
    finally:
        srv.shutdown()


def test_a_baseline_wider_than_the_driver_fails(tmp_path):
    from tools.fdirector import standin

    standin.make_test_images(tmp_path / "imgs", 2, size=32, small_size=24)
    cores = len(os.sched_getaffinity(0))
    cfg = tl.section(repeats=1, images={"count": 2, "size": 32, "small_size": 24})
    p = tl.run_job(tmp_path, cfg, "image", inputs={"images": str(tmp_path / "imgs")}, variant="processing",
                   platform="baseline", instances=cores + 1)
    assert p.returncode == 1
    raw = layout.raw_path(layout.image_params("processing", "baseline", cores + 1), 0)
    rec = rawio.read(tmp_path / rawio.failure_path(raw))
    assert f"this driver has {cores} cores" in rec["failure"] and rec["extra"]["director_cores"] == cores
