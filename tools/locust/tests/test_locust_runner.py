"""The runner drives real Locust (from its cached venv) against the trivial endpoint: the generator's ceiling."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tools.locust import parser
from tools.locust import runner

HERE = Path(__file__).resolve().parents[1]
# every Locust these tests start inherits this marker, so the leftover check below sees only ours (on a
# shared machine another user's Locust -- a rehearsal, a study run -- is not this test's business)
OWNER = f"REPRO_LOCUST_TEST_OWNER={os.getpid()}"
os.environ["REPRO_LOCUST_TEST_OWNER"] = str(os.getpid())


def _ours(pid: str) -> bool:
    try:
        return OWNER.encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:  # gone, or not readable: not one we started
        return False


@pytest.fixture(scope="module")
def locust_venv():
    subprocess.run([str(HERE / "setup.sh")], check=True)


@pytest.fixture
def trivial(tmp_path):
    """The trivial endpoint on a free port; stopped by PID and checked gone."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pidfile = tmp_path / "trivial.pid"
    proc = subprocess.Popen([sys.executable, "-m", "tools.locust.trivial_server", "--port", str(port),
                             "--pidfile", str(pidfile)], stdout=subprocess.PIPE, text=True)
    assert "trivial server on" in proc.stdout.readline()
    yield f"http://127.0.0.1:{port}"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    assert not pidfile.exists()


def test_trivial_endpoint_on_a_free_port_says_where_it_listens_and_stops_on_usr1(tmp_path):
    """--port 0 --ready-file (the ceiling's server side): the ready file names a reachable URL (this host's
    name when bound to every interface), the port it took and where it ran; SIGUSR1 (what srun forwards)
    stops it cleanly."""
    import urllib.request

    ready = tmp_path / "server.json"
    proc = subprocess.Popen([sys.executable, "-m", "tools.locust.trivial_server", "--host", "0.0.0.0", "--port", "0",
                             "--ready-file", str(ready)], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if ready.exists():
                break
            time.sleep(0.1)
        info = json.loads(ready.read_text())
        assert info["port"] > 0 and info["bind"] == "0.0.0.0" and info["pid"] == proc.pid
        assert info["url"] == f"http://{info['host']}:{info['port']}" and not info["url"].startswith("http://0.")
        with urllib.request.urlopen(f"http://127.0.0.1:{info['port']}/", timeout=5) as r:
            assert r.status == 200 and r.read() == b"ok"
    finally:
        proc.send_signal(signal.SIGUSR1)
        assert proc.wait(timeout=10) == 0


def test_single_and_multi_stream_against_the_trivial_endpoint(locust_venv, trivial, tmp_path):
    out = tmp_path / "runs"
    r = subprocess.run([sys.executable, "-m", "tools.locust.runner", "--protocol", "trivial", "--host", trivial,
                        "--users", "1,3", "--run-time", "3s", "--out", str(out), "--label", "server=trivial"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[2/2] 3 user(s) done" in r.stdout
    rows = parser.tidy_dirs([out])
    by = {(row["users"], row["metric"]): row["value"] for row in rows}
    for users in (1, 3):
        run = out / f"users~{users}"
        for suffix in ("stats", "stats_history", "failures", "exceptions"):
            assert (run / f"locust_{suffix}.csv").exists()
        gen = json.loads((run / "generator.json").read_text())
        assert gen["users"] == users and gen["returncode"] == 0 and gen["labels"] == {"server": "trivial"}
        assert gen["cpu_user_s"] + gen["cpu_sys_s"] > 0 and gen["wall_s"] >= 3
        assert by[(users, "requests")] > 0 and by[(users, "failures")] == 0
        assert by[(users, "throughput")] > 0
        assert by[(users, "generator_cpu_cores")] == gen["cpu_cores_used"]


def test_distributed_workers(locust_venv, trivial, tmp_path):
    rec = runner.run_one("trivial", trivial, 2, "3s", tmp_path / "d", processes=2)
    assert rec["processes"] == 2 and rec["returncode"] == 0
    assert "--processes" in rec["command"]
    rows = {r["metric"]: r["value"] for r in parser.tidy_run(tmp_path / "d")}
    assert rows["requests"] > 0 and rows["failures"] == 0


def test_an_unreachable_server_is_counted_as_failures_not_a_crash(locust_venv, tmp_path):
    rec = runner.run_one("trivial", "http://127.0.0.1:9", 1, "2s", tmp_path / "u")
    rows = {r["metric"]: r["value"] for r in parser.tidy_run(tmp_path / "u")}
    assert rec["returncode"] == 0 and rows["requests"] > 0 and rows["failures"] == rows["requests"]
    assert rows["locustfile_exceptions"] == 0
    errors = parser.failures(tmp_path / "u" / "locust_failures.csv")
    assert errors and all("no answer" in e["error"] or "Connection" in e["error"] for e in errors)


def test_bad_arguments_are_named():
    r = subprocess.run([sys.executable, "-m", "tools.locust.runner", "--protocol", "trivial", "--host", "http://x",
                        "--users", "0", "--out", "/tmp/never"], capture_output=True, text=True)
    assert r.returncode == 2 and "user counts must be >= 1" in r.stderr
    r = subprocess.run([sys.executable, "-m", "tools.locust.runner", "--protocol", "trivial", "--out", "/tmp/never"],
                       capture_output=True, text=True, env={k: v for k, v in os.environ.items()
                                                            if k != "REPRO_SERVER_URL"})
    assert r.returncode == 2 and "--host is required" in r.stderr


def test_no_locust_left_behind(locust_venv):
    time.sleep(0.5)
    venv = subprocess.run([str(HERE / "setup.sh"), "path"], capture_output=True, text=True).stdout.strip()
    out = subprocess.run(["pgrep", "-f", f"{venv}/bin/locust"], capture_output=True, text=True)
    assert [p for p in out.stdout.split() if _ours(p)] == []
