"""Fixtures for the cosbench-driver tests: the built binary and a memserver on 127.0.0.1."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[1]
DRIVER = TOOL / "build" / "cosbench-driver"
AK, SK = "testak", "testsk"


@pytest.fixture(scope="session")
def driver() -> Path:
    """Build the driver with make (Go, stdlib only, no network) and return its path."""
    r = subprocess.run(["make", "-C", str(TOOL), "build/cosbench-driver"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"make failed:\n{r.stdout}\n{r.stderr}"
    assert DRIVER.is_file()
    return DRIVER


class MemServer:
    def __init__(self, proc: subprocess.Popen, port: int):
        self.proc, self.port = proc, port
        self.endpoint = f"http://127.0.0.1:{port}"

    def storage_config(self, secret: str = SK) -> str:
        return f"accesskey={AK};secretkey={secret};endpoint={self.endpoint};path_style_access=true"

    def stats(self) -> dict:
        with urllib.request.urlopen(self.endpoint + "/_memserver/stats", timeout=10) as r:
            return json.loads(r.read())

    def corrupt(self, bucket: str, key: str) -> None:
        req = urllib.request.Request(f"{self.endpoint}/_memserver/corrupt/{bucket}/{key}", method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200


@pytest.fixture()
def memserver(driver: Path, tmp_path: Path):
    """A memserver (SigV4 checked, admin endpoints on) on a free loopback port; stopped by PID."""
    port_file = tmp_path / "memserver.port"
    log = open(tmp_path / "memserver.log", "w")
    proc = subprocess.Popen([str(driver), "memserver", "--listen", "127.0.0.1:0", "--port-file", str(port_file),
                             "--access-key", AK, "--secret-key", SK, "--admin"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while not port_file.exists():
            assert proc.poll() is None, f"memserver exited: {(tmp_path / 'memserver.log').read_text()}"
            assert time.monotonic() < deadline, "memserver did not start"
            time.sleep(0.05)
        yield MemServer(proc, int(port_file.read_text()))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
