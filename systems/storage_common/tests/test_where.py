"""where.py, the placement record every storage daemon and mdtest/fio task writes: a plain program
(standard library only) whose record is the engine's allocation.here() record."""

import json
import subprocess
import sys

from repro import allocation

from systems.storage_common import where
from systems.storage_common.testing import REPO

WHERE = REPO / "systems" / "storage_common" / "where.py"


def test_here_is_the_engine_s_record(monkeypatch):
    monkeypatch.delenv("SLURMD_NODENAME", raising=False)
    assert where.here() == allocation.here()
    monkeypatch.setenv("SLURMD_NODENAME", "sys-node-7")
    assert where.here() == allocation.here() and where.here()["node"] == "sys-node-7"


def _isolated(*args, env=None):
    """where.py as a launcher runs it on a node: `python -I` (no PYTHONPATH, no user site), so an
    import of the engine (or of anything outside the standard library) fails here."""
    return subprocess.run([sys.executable, "-I", str(WHERE), *args], capture_output=True, text=True, timeout=60,
                          env=env, cwd="/")


def test_probe_runs_without_the_engine_and_records_this_host(tmp_path):
    r = _isolated("probe", str(tmp_path), env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "SLURMD_NODENAME": "n3"})
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert set(rec) == {"hostname", "node", "addresses", "serves", "pid", "started_at", "mount"}
    want = allocation.here()
    assert (rec["hostname"], rec["node"], rec["addresses"]) == (want["hostname"], "n3", want["addresses"])
    assert rec["mount"] == where.mount_of(str(tmp_path)) and rec["mount"]["exists"]


def test_run_writes_the_record_then_becomes_the_command(tmp_path):
    out = tmp_path / "run" / "d.where.json"
    r = _isolated("run", str(out), "--serves", "10.0.0.5:9000", "--", "sh", "-c", "echo $$")
    assert r.returncode == 0, r.stderr
    rec = json.loads(out.read_text())
    assert rec["serves"] == "10.0.0.5:9000" and rec["argv0"] == "sh"
    assert rec["pid"] == int(r.stdout)  # exec: the command has the wrapper's PID
    assert rec["addresses"] == allocation.here()["addresses"]
