"""The pieces of the real-COSBench path (paper 002's COSBench 0.4.2 on a cluster) that can be checked
here, where COSBench itself cannot be fetched: the recipe (containers/cosbench.def) installs the
version and folder the cluster config names, the controller/driver configuration real.py renders,
and the parse of a COSBench 0.4.2-format workload CSV (a hand-written fixture, fixtures/archive/)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tools.cosbench import parser as cosparse
from tools.cosbench import real

HERE = Path(__file__).resolve().parents[1]
REPO = HERE.parents[1]
FIXTURE = HERE / "fixtures" / "archive" / "w3-p002-1MB-w4.csv"


def test_the_recipe_installs_what_the_cluster_config_runs():
    deff = (REPO / "containers" / "cosbench.def").read_text()
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["storage"]["cosbench"]
    assert cfg["tool"] == "cosbench"
    assert re.search(r"^\s*COSBENCH_VERSION=0\.4\.2$", deff, re.M)
    assert "releases/download/v$v/$v.zip" in deff  # COSBench's own release archive
    assert f"mv /tmp/cb/* {cfg['home']}" in deff and f"test -f {cfg['home']}/cli.sh" in deff
    assert re.search(r"^\s*JRE_TAG=jdk8u", deff, re.M) and "export JAVA_HOME=/opt/java" in deff  # Java 8
    assert "netcat" in deff  # COSBench's start scripts probe their ports with nc


def test_controller_and_driver_conf():
    text = real.controller_conf([("driver1", "http://10.1.0.11:18088/driver"),
                                 ("driver2", "http://10.1.0.12:18088/driver")])
    assert "[controller]\ndrivers = 2\n" in text and "archive_dir = archive" in text
    assert "[driver2]\nname = driver2\nurl = http://10.1.0.12:18088/driver" in text
    assert real.driver_conf("driver1", "http://127.0.0.1:18088/driver").startswith("[driver]\nname = driver1\n")
    with pytest.raises(real.CosbenchError, match="not http://HOST:PORT/driver"):
        real.controller_conf([("d", "10.1.0.11:18088")])
    with pytest.raises(real.CosbenchError, match="at least one driver"):
        real.controller_conf([])


def test_render_conf_writes_both_files(tmp_path):
    got = real.render_conf(tmp_path)
    assert (tmp_path / "conf" / "controller.conf").read_text() == got["controller.conf"]
    assert "url = http://127.0.0.1:18088/driver" in (tmp_path / "conf" / "driver.conf").read_text()


def test_a_cosbench_042_workload_csv_parses():
    rows = cosparse.workload_rows(FIXTURE)
    main = [r for r in rows if r["stage"].endswith("-main")]
    assert [r["op_type"] for r in main] == ["read", "write"]
    assert main[0]["Op-Count"] == 8000 and main[0]["Avg-ResTime"] == 20 and main[0]["Succ-Ratio"] == 1.0
    assert rows[0]["60%-ResTime"] is None  # N/A of a special stage
