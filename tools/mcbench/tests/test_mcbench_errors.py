"""mcbench says on stderr what failed (issue 27): the operation, how many of how many, libmemcached's
error string and the server, with faults injected into real memcached servers -- nothing listening,
a server killed mid-run, a server stopped (SIGSTOP) mid-run, a server refusing the value -- and its
keys are its own even when several mcbench processes have the same PID (the memfs limit run's
"mcbench exited 1" with an empty reason)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tools.common import free_port

REPO = Path(__file__).resolve().parents[3]
MCBENCH = REPO / "systems" / "memfs" / "build" / "mcbench"

pytestmark = pytest.mark.skipif(not shutil.which("memcached"), reason="memcached not installed")


@pytest.fixture(scope="module", autouse=True)
def built():
    r = subprocess.run(["make", "-C", str(REPO / "systems" / "memfs"), "build/mcbench"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr


class Memcached:
    def __init__(self, mem_mb: int = 64, item_size: str = "1m"):
        self.port = free_port()
        cmd = ["memcached", "-l", "127.0.0.1", "-p", str(self.port), "-U", "0", "-m", str(mem_mb),
               "-I", item_size, "-t", "1"]
        if os.geteuid() == 0:
            cmd += ["-u", "root"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(250):
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("memcached did not start")

    @property
    def spec(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def server():
    s = Memcached()
    yield s
    s.stop()


def mcbench(*args, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run([str(MCBENCH), *args], capture_output=True, text=True, timeout=timeout)


def json_lines(text: str) -> dict:
    return {x["op"]: x for x in (json.loads(line) for line in text.splitlines() if line.startswith("{"))}


def test_success_prints_nothing_on_stderr(server):
    r = mcbench("--servers", server.spec, "--op", "both", "--value-size", "4096", "--threads", "2", "--ops", "40")
    assert r.returncode == 0 and r.stderr == ""
    assert json_lines(r.stdout)["get"]["errors"] == 0


def test_nothing_listening_names_op_count_error_and_server():
    port = free_port()
    r = mcbench("--servers", f"127.0.0.1:{port}", "--op", "set", "--value-size", "1000", "--threads", "2",
                "--ops", "10", "--timeout-ms", "300")
    assert r.returncode == 1
    out = json_lines(r.stdout)["set"]  # the machine-readable line stays on stdout
    assert out["ops"] == 0 and out["errors"] == 10
    assert "mcbench: set: 10 of 10 operations failed" in r.stderr
    assert "none succeeded" in r.stderr
    assert "CONNECTION FAILURE" in r.stderr  # the first cause (at connect), not only "marked dead"
    assert f"on 127.0.0.1:{port}" in r.stderr


def test_server_killed_mid_run(server):
    p = subprocess.Popen([str(MCBENCH), "--servers", server.spec, "--op", "set", "--value-size", "4096",
                          "--threads", "2", "--seconds", "1.5", "--timeout-ms", "300"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    server.proc.kill()
    out, err = p.communicate(timeout=30)
    assert p.returncode == 1
    rec = json_lines(out)["set"]
    assert rec["ops"] > 0 and rec["errors"] > 0  # some succeeded before the kill, the rest failed
    assert f"mcbench: set: {rec['errors']} of {rec['ops'] + rec['errors']} operations failed" in err
    assert server.spec in err
    # libmemcached's words for a server gone: a connection failure / a write or read error / marked dead
    assert any(w in err for w in ("CONNECTION FAILURE", "SERVER HAS FAILED", "WRITE FAILURE", "READ FAILURE",
                                  "UNKNOWN READ FAILURE", "ERRNO"))


def test_server_stopped_mid_run_times_out(server):
    p = subprocess.Popen([str(MCBENCH), "--servers", server.spec, "--op", "set", "--value-size", "4096",
                          "--threads", "1", "--seconds", "1.2", "--timeout-ms", "200"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    server.proc.send_signal(signal.SIGSTOP)
    try:
        out, err = p.communicate(timeout=30)
    finally:
        server.proc.send_signal(signal.SIGCONT)
    assert p.returncode == 1
    rec = json_lines(out)["set"]
    assert rec["errors"] > 0
    assert f"mcbench: set: {rec['errors']} of {rec['ops'] + rec['errors']} operations failed" in err
    assert "TIMEOUT" in err and server.spec in err
    assert "timeout 200 ms" in err


def test_server_refusing_the_value(server):
    r = mcbench("--servers", server.spec, "--op", "set", "--value-size", str(2 << 20), "--threads", "1",
                "--ops", "3")
    assert r.returncode == 1
    assert "mcbench: set: 3 of 3 operations failed" in r.stderr
    assert f"3 x ITEM TOO BIG on {server.spec}" in r.stderr


def _unshare_pid_works() -> bool:
    return subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not shutil.which("unshare") or not _unshare_pid_works(), reason="no PID namespaces here")
def test_processes_with_the_same_pid_use_their_own_keys():
    """The memfs limit run's cause: each node's agent runs in an Apptainer instance, which has a PID
    namespace of its own, so every node's mcbench had the same PID; with keys of PID and thread only,
    one node's end-of-phase delete removed the keys another was still reading (get: NOT FOUND).
    Three staggered processes, each PID 1 of its own namespace, against one server: no error."""
    big = Memcached(mem_mb=256)
    try:
        ps = []
        for _ in range(3):
            ps.append(subprocess.Popen(["unshare", "--pid", "--fork", str(MCBENCH), "--servers", big.spec, "--op",
                                        "both", "--value-size", "65536", "--threads", "2", "--seconds", "1"],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
            time.sleep(0.35)
        outs = [p.communicate(timeout=60) for p in ps]
    finally:
        big.stop()
    for p, (out, err) in zip(ps, outs):
        recs = json_lines(out)
        assert recs["get"]["ops"] > 0 and recs["set"]["ops"] > 0
        assert recs["get"]["errors"] == 0 and recs["set"]["errors"] == 0, err
        assert p.returncode == 0, err
