"""gen.py: the paper's workload matrix as COSBench XML, deterministic, every file accepted by the driver."""

from __future__ import annotations

import copy
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tools.cosbench import gen


def test_paper_matrix_shape_and_names():
    files = gen.expand(gen.PAPER_MATRIX)
    assert len(files) == 3 * 6 * 7 == 126  # "over 120 configuration files"
    names = [n for n, _ in files]
    assert names[0] == "p002_ceph_s4KB_w1_r80w20.xml"
    assert "p002_lustre-minio_s64MB_w64_r80w20.xml" in names
    assert len(set(names)) == len(names)


def test_generation_is_deterministic(tmp_path):
    a = gen.generate(gen.PAPER_MATRIX, tmp_path / "a")
    b = gen.generate(copy.deepcopy(gen.PAPER_MATRIX), tmp_path / "b")
    assert [p.name for p in a] == [p.name for p in b]
    assert all(x.read_bytes() == y.read_bytes() for x, y in zip(a, b))
    mtimes = [p.stat().st_mtime_ns for p in a]
    gen.generate(gen.PAPER_MATRIX, tmp_path / "a")  # unchanged files are not rewritten
    assert mtimes == [p.stat().st_mtime_ns for p in a]


def test_generated_xml_structure():
    name, xml = gen.workload_xml(gen.PAPER_MATRIX, "ceph", "4MB", 16, gen.PAPER_MATRIX["mixes"][0])
    root = ET.fromstring(xml)
    stages = [s.get("name") for s in root.iter("workstage")]
    assert stages == ["init", "prepare", "main", "cleanup", "dispose"]
    main = root.find(".//workstage[@name='main']/work")
    assert main.get("workers") == "16" and main.get("runtime") == "60"
    ops = {o.get("type"): o for o in main.iter("operation")}
    assert ops["read"].get("ratio") == "80" and ops["write"].get("ratio") == "20"
    assert "sizes=c(4)MB" in ops["write"].get("config")
    assert "endpoint=http://127.0.0.1:7480" in root.find("storage").get("config")


def test_every_paper_file_is_accepted_by_the_driver(driver, tmp_path):
    paths = gen.generate(gen.PAPER_MATRIX, tmp_path)
    for p in paths[::5] + paths[-1:]:  # a spread of the 126 (each check is a process start)
        r = subprocess.run([str(driver), "check", str(p)], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, (p.name, r.stderr)


@pytest.mark.parametrize("patch,message", [
    ({"sizes": ["4KiB"]}, "matrix.sizes[0]"),
    ({"workers": [0]}, "matrix.workers[0]"),
    ({"colour": "red"}, "unknown key(s) ['colour']"),
    ({"mixes": [{"name": "bad", "read": 50, "write": 20}]}, "must be 100"),
    ({"total_ops": 10}, "exactly one of runtime"),
    ({"stacks": {"x": {"endpoint": "http://h", "token": "t"}}}, "matrix.stacks.x"),
])
def test_bad_matrix_names_the_key(patch, message):
    m = copy.deepcopy(gen.PAPER_MATRIX)
    m.update(patch)
    with pytest.raises(gen.MatrixError, match=None) as e:
        gen.expand(m)
    assert message in str(e.value)


def test_cli_lists_and_refuses(tmp_path):
    repo = gen.Path(gen.__file__).resolve().parents[2]
    cmd = [sys.executable, "-m", "tools.cosbench.gen", "--paper", "--list"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=repo)
    assert r.returncode == 0 and len(r.stdout.split()) == 126
    bad = tmp_path / "m.json"
    bad.write_text('{"stacks": {}}')
    r = subprocess.run([sys.executable, "-m", "tools.cosbench.gen", "--matrix", str(bad), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, cwd=repo)
    assert r.returncode == 2 and "matrix.stacks: required" in r.stderr
