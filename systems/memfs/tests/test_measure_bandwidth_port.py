"""scripts/measure_bandwidth.py never measures another job's memcached: the port free_port() handed
out is already served by another memcached (started here, as the other job's); the script's start
takes another port whose server is its own, and leaves the other alone. The old start connected,
saw an answer and striped its MemFS mounts into the other's server."""

import importlib.util
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tools.common import free_port, memcached_pid, started_here

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "measure_bandwidth.py"


def load_script():
    spec = importlib.util.spec_from_file_location("measure_bandwidth", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def other_memcached(port):
    cmd = ["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", "16"] + (
        ["-u", "root"] if os.geteuid() == 0 else [])
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(250):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return p
        except OSError:
            time.sleep(0.02)
    p.kill()
    raise AssertionError("the other memcached did not start")


def test_start_memcached_never_takes_another_jobs_server(monkeypatch):
    mb = load_script()
    port = free_port()
    other = other_memcached(port)
    ports = iter([port])
    monkeypatch.setattr(mb, "free_port", lambda: next(ports, None) or free_port())
    try:
        p, spec = mb.start_memcached(16, "1m")
        try:
            host, mine = spec.rsplit(":", 1)
            assert int(mine) != port
            assert started_here(memcached_pid(host, int(mine)), p.pid) is True
        finally:
            p.kill()
            p.wait()
        assert other.poll() is None and memcached_pid("127.0.0.1", port) == other.pid  # left alone
    finally:
        other.kill()
        other.wait()


def test_a_memcached_that_cannot_start_fails_with_its_own_stderr(monkeypatch):
    mb = load_script()
    with pytest.raises(RuntimeError, match=r"memcached exited at start \(status \d+\) on 127.0.0.1:\d+: Item max size"):
        mb.start_memcached(16, "bogus")  # -I bogus: memcached refuses the item size and says so
