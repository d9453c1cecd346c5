"""An inference server's start never takes another job's server for its own.

Server picks its ports with free_port() and took the first ready answer as its own server's. On a
busy node another job's server can bind such a port between free_port() and our server's bind: ours
then fails to bind and exits, but the readiness probe was already answered -- by the other server
(another TorchServe/TF Serving of the same model answers the same URLs). Staged here with a real
'other job' listening on the port handed out, which answers every readiness URL: the start must end
on other ports with its own process listening, or, with a port the caller fixed, fail naming it."""

from __future__ import annotations

import subprocess
import sys

import pytest
from inference_helpers import TINY  # noqa: F401  (puts the package and the repository on the path)

from repro_inference import servers
from repro_inference.servers import PortTaken, Server
from tools.common import free_port, listener_pid, started_here

pytestmark = pytest.mark.slow  # real servers

# another job's server: answers every GET 200 with a body TorchServe's readiness check reads as READY
OTHER = """
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps([{"workers": [{"status": "READY"}]}]).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
print("listening", flush=True)
s.serve_forever()
"""


@pytest.fixture
def other():
    """A port already served by another process (the other job's server), and that process."""
    port = free_port()
    p = subprocess.Popen([sys.executable, "-c", OTHER, str(port)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "listening"
    yield port, p
    p.kill()
    p.wait()


def handing_out_first(monkeypatch, taken: int, at: int = 0):
    """servers.free_port hands out `taken` at its call number `at`, then free ports as before."""
    calls = []

    def fp(host: str = "127.0.0.1") -> int:
        calls.append(host)
        return taken if len(calls) - 1 == at else free_port(host)

    monkeypatch.setattr(servers, "free_port", fp)
    return calls


def assert_ours(s: Server, port: int) -> None:
    pid = listener_pid("127.0.0.1", port)
    assert pid is not None and started_here(pid, s.proc.pid) is True, (port, pid, s.proc.pid)


def test_tfserving_standin_given_a_taken_port_starts_on_another(models, tmp_path, other, monkeypatch):
    """The inference port handed out is served by another process that answers the model's URL: the
    old start saw 200 at once and ran the benchmark against the other server (server.json named its
    port); now the standin starts again on another port, which its own process serves."""
    port, p = other
    handing_out_first(monkeypatch, port)
    s = Server("tfserving-standin", models, "resnet50", tmp_path / "w", threads=1, timeout=300)
    try:
        s.start()
        assert s.port != port and s.info["port"] == s.port and s.url.endswith(f":{s.port}")
        assert_ours(s, s.port)
        assert p.poll() is None  # the other job's server is left alone
    finally:
        s.stop()


def test_a_port_the_caller_fixed_taken_by_another_fails_naming_it(models, tmp_path, other):
    port, p = other
    s = Server("tfserving-standin", models, "resnet50", tmp_path / "w", threads=1, port=port, timeout=300)
    with pytest.raises(PortTaken) as err:
        s.start()
    assert err.value.port == port
    assert f"port {port} taken: 127.0.0.1:{port} is served by another process (pid {p.pid})" in str(err.value)
    assert "--- server log (tail) ---" in str(err.value) and err.value.log.strip()
    assert s.proc is None and p.poll() is None


def test_torchserve_management_port_taken_by_another_starts_on_other_ports(models, tmp_path, other, monkeypatch):
    """TorchServe's readiness is asked on its management port (another free_port): another process
    answering READY there was taken for our model's workers. Now: another start, its own listeners."""
    port, p = other
    calls = handing_out_first(monkeypatch, port, at=1)  # 0: the inference port, 1: management
    s = Server("torchserve", models, "resnet50", tmp_path / "w", threads=1, timeout=300)
    try:
        s.start()
        assert len(calls) >= 5  # inference, management, metrics; then management and metrics again
        assert s.mgmt != port
        assert_ours(s, s.port)
        assert_ours(s, s.mgmt)
        assert p.poll() is None
    finally:
        s.stop()
