"""servers.py takes its ports from the tree's one free_port (tools.common) when the repository is on the
path, and still runs where only this package is (an image's own path, no repository)."""

from __future__ import annotations

import socket
import subprocess
import sys

from inference_helpers import SYSTEM

import tools.common
from repro_inference import servers


def test_servers_use_the_trees_free_port():
    assert servers.free_port is tools.common.free_port
    port = servers.free_port("0.0.0.0")
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # free a moment ago, on every address


def test_without_the_repository_the_package_still_finds_a_port(tmp_path):
    code = ("import repro_inference.servers as s, sys; "
            "assert 'tools' not in sys.modules and s.free_port.__module__ == 'repro_inference.servers'; "
            "print(s.free_port('0.0.0.0'))")
    r = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       env={"PYTHONPATH": str(SYSTEM / "src"), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and int(r.stdout) > 0, r.stderr
