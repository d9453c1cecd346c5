"""run_iperf3's one-shot server never lets the client measure against another job's iperf3 server.

The port free_port() hands out is already served by another iperf3 server (another job's one-shot
server, started here): the old runner started its own server (which could not bind and exited) and
ran the client against the other's -- measuring it and using up that job's one test. Now the client
runs only once the listener is our server's: another port, or a clear error for a port given."""

import socket
import subprocess
import time

import pytest

from tools.common import free_port, listener_pid
from tools.fdirector import iperf
from tools.fdirector.iperf import IperfError, run_iperf3


@pytest.fixture
def other():
    port = free_port()
    p = subprocess.Popen(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while listener_pid("127.0.0.1", port) != p.pid:
        assert p.poll() is None and time.monotonic() < deadline, "the other iperf3 server did not start"
        time.sleep(0.02)
    yield port, p
    p.kill()
    p.wait()


def test_a_port_another_iperf3_server_took_is_not_measured(other, monkeypatch):
    port, p = other
    handed = []

    def fp(host="127.0.0.1"):
        handed.append(port if not handed else free_port(host))
        return handed[-1]

    monkeypatch.setattr(iperf, "free_port", fp)
    parsed, _ = run_iperf3(seconds=1)
    assert len(handed) == 2 and parsed["local"] == "127.0.0.1"
    assert p.poll() is None and listener_pid("127.0.0.1", port) == p.pid  # its one test is still there
    with socket.create_connection(("127.0.0.1", port), 2):
        pass


def test_a_given_port_served_by_another_fails_naming_it(other):
    port, p = other
    with pytest.raises(IperfError, match=rf"iperf3 server on 127.0.0.1:{port}: 127.0.0.1:{port} is served by "
                                         rf"another process \(pid {p.pid}\)"):
        run_iperf3(port=port, seconds=1)
    assert p.poll() is None
