"""Harness of the MemFS benchmark tests (systems/mtc launcher, iozone, mdbench,
the 2.4.1 benchmark and its analysis).  Real processes: network namespaces,
memcached, MemFS FUSE mounts, iozone, MPI.

Every cluster a test starts is checked afterwards: no namespace, mount or
process of it may remain (whether the test passed or not).  Tests needing
root, /dev/fuse, memcached, the MemFS binary, iozone or mpirun are skipped
with a reason where one is missing.  Slow tests (the Slurm n+1 run) need
skipped only with ``--quick`` (REPRO_QUICK=1).
"""

from __future__ import annotations

import subprocess

import pytest

from .mtc_testlib import REPO, assert_clean, iozone_bin, missing_cluster_prereq


@pytest.fixture(scope="session")
def built():
    """make -C systems/memfs and systems/mtc (fails the tests if the build fails)."""
    why = missing_cluster_prereq()
    if why:
        pytest.skip(why)
    for d in ("systems/memfs", "systems/mtc"):
        r = subprocess.run(["make", "-C", str(REPO / d), "-j2", "all"], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.fail(f"make -C {d} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return True


@pytest.fixture
def iozone():
    b = iozone_bin()
    if not b:
        pytest.skip("iozone missing: run workflow/scripts/setup/fetch-iozone.sh")
    return b


@pytest.fixture
def clusters(tmp_path):
    """Start clusters through this fixture: torn down and checked clean at the end."""
    import launch

    started = []

    def start(**kw):
        kw.setdefault("workdir", tmp_path / f"c{len(started)}")
        kw.setdefault("memcached", {"mem_mb": 256, "threads": 1})
        cm = launch.cluster(**kw)
        c = cm.__enter__()
        started.append((cm, c))
        return c

    yield start
    errors = []
    for cm, c in reversed(started):
        try:
            cm.__exit__(None, None, None)
        except Exception as exc:  # keep cleaning the others
            errors.append(exc)
    for _cm, c in started:
        assert_clean(c.cid, str(c.workdir))
    if errors:
        raise errors[0]
