"""The speed benchmark's kernel-passthrough variant (systems/kpassthrough, ours) end to end under
mpirun: it reads the right bytes (sha256sum through the mount equals the generator's hash, dd reads
the whole file), the kernel passes every read through (0 READ requests at the server), its idle
window is measured, nothing is left mounted. No timings asserted."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from studies.fusespeed import kpt
from systems.kpassthrough.hostinfo import kernel_has_passthrough

from fusespeed_testlib import REPO, run_speed


@pytest.fixture(scope="module")
def kpt_binary():
    """systems/kpassthrough/build/kpassthrough, as ./repro setup builds it (make, as its own tests do)."""
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse") or not shutil.which("fusermount3"):
        pytest.skip("needs root, /dev/fuse and fusermount3 (FUSE mounts, the backing-file ioctl)")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py is not installed in the project venv (./repro setup)")
    exe = kpt.binary()
    if not os.access(exe, os.X_OK):
        r = subprocess.run(["make", "-C", str(REPO / "systems" / "kpassthrough")], capture_output=True, text=True)
        if r.returncode != 0 or not os.access(exe, os.X_OK):
            pytest.skip(f"kpassthrough is not built and make failed (./repro setup runs "
                        f"systems/kpassthrough/setup.sh for the Rust toolchain): {r.stderr[-300:]}")
    return exe


def test_kpassthrough_variant_reads_the_bytes_right(tmp_path, kpt_binary):
    rec, _, tag = run_speed(tmp_path, {"size": "3MB", "nodes": [1], "repeats": 1, "idle_s": 0.3,
                                       "variants": ["native", "kpassthrough"], "source": "scratch"}, "kpt")
    fails = rec["extra"]["failures"]
    if not kernel_has_passthrough():  # the variant must fail loudly, with kpassthrough's reason
        assert fails and all(f["variant"] == "kpassthrough" for f in fails), fails
        return
    assert fails == [], fails
    ok = {(m["labels"]["variant"], m["labels"]["tool"]): m["value"] for m in rec["metrics"] if m["metric"] == "hash_ok"}
    assert ok == {("native", "sha256sum"): 1, ("kpassthrough", "sha256sum"): 1}
    thr = {(m["labels"]["variant"], m["labels"]["tool"]) for m in rec["metrics"] if m["metric"] == "throughput"}
    assert thr == {("native", "dd"), ("native", "sha256sum"), ("kpassthrough", "dd"), ("kpassthrough", "sha256sum")}
    reads = [m["value"] for m in rec["metrics"] if m["metric"] == "server_read_requests"]
    assert reads == [0, 0]  # dd and sha256sum: the kernel served every read
    for s in rec["extra"]["fs_stats"]:  # the server saw the open, passed through
        assert s["stats"]["ops"]["open_passthrough"] >= 1 and s["stats"]["passthrough"] == "kernel"
    idle = {(m["labels"]["variant"], m["labels"]["proc"]) for m in rec["metrics"] if m["metric"] == "idle_cpu"}
    assert idle == {("native", "rank"), ("kpassthrough", "rank"), ("kpassthrough", "server")}
    mounts = open("/proc/self/mounts").read()
    assert tag not in mounts
    assert not (tmp_path / "mnt" / tag).exists()
