"""Invalid configurations fail at start-up, naming the offending key; valid ones plan."""

from __future__ import annotations

import pytest


def _overlay(ws, text):
    p = ws / "overlay.yaml"
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("text, named", [
    ("tco:\n  fleet_sizez: [1000]\n", "tco.fleet_sizez: unknown key"),
    ("tco:\n  lifecycle_years: long\n", "tco.lifecycle_years: 'long' is not of type 'number'"),
    ("nonsense: 1\n", "nonsense: unknown key"),
    ("smoke:\n  nodes: [2, 8]\n", "smoke.nodes[1]: impossible layout, 8 system nodes + 1 driver node = 9 "
                                  "exceeds cluster.partition_nodes = 8"),
    ("cloudcost:\n  cloud:\n    services:\n      s3:\n        egress: {quantity: 1, unit: GB, source: x}\n",
     "cloudcost.cloud.services.s3.egress: 'unit_price' is a required property"),
])
def test_bad_config_fails_at_start_naming_the_key(snake, workspace, text, named):
    proc = snake("-n", "--profile", "profiles/local", "--configfile", "config/local.yaml",
                 _overlay(workspace, text), check=False, timeout=120)
    assert proc.returncode != 0
    assert named in proc.stderr + proc.stdout
    assert not (workspace / "results").exists()  # nothing ran


def test_local_and_full_configs_plan(snake):
    local = snake("-n", "--profile", "profiles/local", timeout=120)
    assert "tco_run" in local.stdout and "report_html" in local.stdout
    full = snake("-n", "--profile", "profiles/slurm", "--configfile", "config/config.yaml", timeout=300)
    assert "cloudcost_run" in full.stdout
    assert "slurm_partition=batch" in full.stdout  # the cluster plan carries Slurm resources
