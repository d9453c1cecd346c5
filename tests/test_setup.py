"""The set-up is idempotent, and a finished workflow has nothing new to do."""

from __future__ import annotations

import subprocess

from repro.testing import REPO


def test_second_setup_does_nothing_new():
    proc = subprocess.run([str(REPO / "repro"), "setup"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    assert "system packages: all" in out
    assert "creating" not in out  # the venv is reused
    assert "already in" in out  # Apptainer is reused


def test_second_run_has_nothing_to_do(snake):
    snake("tco", "cloudcost", "--profile", "profiles/local")
    again = snake("tco", "cloudcost", "--profile", "profiles/local")
    assert "Nothing to be done" in again.stdout + again.stderr
