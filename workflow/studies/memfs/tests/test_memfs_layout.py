"""The MemFS study's layout: system kinds of the networks, the parameter space."""

import json
import os
import subprocess
import sys

import pytest

from studies.memfs import layout as P
from systems.mtc.tests.mtc_testlib import memfs_cfg


def test_system_kind_labels_stand_ins():
    assert P.system_kind({"name": "1GbE", "emulate": True, "rate_mbit": 1000}).startswith("stand-in:1GbE")
    assert P.system_kind({"name": "IPoIB", "emulate": False}) == "real"


def _analyze(tmp_path, listed, cfg):
    """analyze.py (the envelope aggregate) with the list file ``listed``; (exit code, stderr)."""
    (tmp_path / "expected.txt").write_text("\n".join(listed) + "\n")
    outs = [x for k in ("measurements", "summary", "table21", "limit", "claims") for x in (f"--{k}", f"{k}.csv")]
    pub = os.path.join(os.path.dirname(P.__file__), "published.csv")
    r = subprocess.run([sys.executable, "-m", "studies.memfs.analyze", "--expected", "expected.txt",
                        "--config", json.dumps({**cfg, "judging_scale": "local"}), "--published", pub, *outs],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    return r.returncode, r.stderr


def test_a_stale_expected_list_fails_the_envelope_aggregate(tmp_path):
    """--rerun-triggers mtime kept a list written for a smaller config: analyze.py must fail naming
    the runs the config asks for (before reading any raw file), not call them 'not run'."""
    cfg = memfs_cfg()
    expected = P.expected_raw(cfg)
    assert len(expected) > 12
    rc, err = _analyze(tmp_path, expected[:9], cfg)
    assert rc != 0 and not (tmp_path / "measurements.csv").exists()
    assert f"missing from the list ({len(expected) - 9})" in err
    assert all(p in err for p in expected[9:])
    rc, err = _analyze(tmp_path, [*expected, P.raw_path("limit", network="1GbE", nodes=64, rep=0)], cfg)
    assert rc != 0 and "not expected by the config (1)" in err and "network~1GbE/nodes~64" in err


def test_a_stray_raw_file_fails_the_envelope_aggregate(tmp_path):
    cfg = memfs_cfg()
    stray = P.raw_path("limit", network="1GbE", nodes=64, rep=0)
    (tmp_path / stray).parent.mkdir(parents=True)
    (tmp_path / stray).write_text("{}")
    rc, err = _analyze(tmp_path, P.expected_raw(cfg), cfg)
    assert rc != 0 and "raw files on disk the config does not expect" in err and stray in err


def test_check_expected_accepts_the_layout_and_missing_raw_files(tmp_path):
    """The list equal to the layout passes with no raw file at all (allow_incomplete: not-run rows)."""
    wf = {"applications": ["montage"], "designs": ["memfs"], "sweeps": {"v": {"nodes": [1, 2], "tasks_per_node": [1]}},
          "repeats": 2}
    exp = P.workflow_expected_raw(wf)
    assert len(exp) == 4
    P.check_expected(exp, exp, "workflows", root=str(tmp_path))
    with pytest.raises(P.ExpectedMismatch, match="missing from the list"):
        P.check_expected(exp[:3], exp, "workflows", root=str(tmp_path))
    with pytest.raises(P.ExpectedMismatch, match="repeats paths"):
        P.check_expected([*exp, exp[0]], exp, "workflows", root=str(tmp_path))


def test_every_raw_path_is_the_declarations():
    """A raw path is spelled once (declaration.py): the layout's expected files, kick paths and workflow files
    are the declared experiments' paths of their own fields."""
    from repro import paramspace

    from studies.memfs.declaration import STUDY

    cfg = memfs_cfg()
    wf = {"applications": ["montage", "blast"], "designs": ["memfs"], "repeats": 1,
          "sweeps": {"v": {"nodes": [2], "tasks_per_node": [1, 4]}}}
    paths = [(p.split("/")[3], p) for p in P.expected_raw(cfg) + P.kick_paths(cfg)]
    paths += [("workflow", p) for p in P.workflow_expected_raw(wf)]
    assert {e for e, _ in paths} == {"envelope", "metadata", "stripe", "threads", "limit", "workflow"}
    for exp, p in paths:
        assert p == STUDY.raw_path(exp, **paramspace.parse_path(p)), p
    assert len(P.workflow_expected_raw(wf)) == 4 and P.workflow_matrix({**wf, "enabled": False}) == []
