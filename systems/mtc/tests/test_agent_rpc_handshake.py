"""One client stalled in the RPC handshake blocks neither the agent nor the driver's later calls."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from repro.testing import project_env
from systems.mtc import launch


@pytest.fixture()
def agent(tmp_path):
    rdv, work = tmp_path / "rdv", tmp_path / "work"
    rdv.mkdir()
    key = os.urandom(32)
    (rdv / "authkey").write_bytes(key)
    p = subprocess.Popen([sys.executable, "-m", "systems.mtc.agent", "--index", "0", "--rendezvous", str(rdv),
                          "--workdir", str(work), "--ip", "127.0.0.1", "--mem-mb", "16"], env=project_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for _ in range(1500):
        if (rdv / "node-0.json").exists() or p.poll() is not None:
            break
        time.sleep(0.02)
    assert (rdv / "node-0.json").exists(), p.communicate(timeout=10)[0][-2000:]
    host, port = json.loads((rdv / "node-0.json").read_text())["rpc"].rsplit(":", 1)
    yield (host, int(port)), key
    p.send_signal(signal.SIGTERM)
    try:
        p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()


def test_a_client_stalled_in_the_handshake_blocks_no_other_call(agent):
    """A driver stopped by SIGTERM while it connected (under load, seen 2026-11-29: the memfs SIGTERM
    test) left a socket open mid-handshake; the agent did the handshake in its one accept loop, without
    a timeout, so every later call -- the driver's own teardown (keep_logs, shutdown) -- hung for ever.
    Now the handshake runs in the connection's thread: a stalled client holds only that thread."""
    address, key = agent
    stalled = socket.create_connection(address, timeout=5)  # connects, never answers the challenge
    try:
        time.sleep(0.5)
        conn = launch._connect(address, key)  # the old agent: blocked here for ever (its accept loop)
        try:
            conn.send(("ping", {}))
            assert conn.poll(10)
            conn.recv()
        finally:
            conn.close()
    finally:
        stalled.close()


def test_the_driver_gives_up_on_a_handshake_nobody_answers():
    """A listener that accepts and never sends the challenge: _connect fails after CONNECT_TIMEOUT
    (it waited for ever), saying so."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    t0 = time.monotonic()
    try:
        with pytest.raises(TimeoutError, match="did not complete the RPC handshake"):
            launch._connect(srv.getsockname(), b"k" * 32)
    finally:
        srv.close()
    assert time.monotonic() - t0 < launch.CONNECT_TIMEOUT + 5
