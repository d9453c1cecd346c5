"""pytest fixture: the pinned MinIO binary, built through systems/minio/setup.sh when missing."""

import subprocess

import pytest

from systems.minio.stack import cache_dir
from systems.storage_common.testing import REPO


@pytest.fixture(scope="session")
def minio_built():
    """Build MinIO if this machine has no cached binary (≈12 min cold on 2 cores; seconds warm)."""
    if not (cache_dir() / ".complete").exists():
        print("MinIO is not built yet: running systems/minio/setup.sh (≈12 min cold)", flush=True)
    res = subprocess.run([str(REPO / "systems" / "minio" / "setup.sh")], capture_output=True, text=True,
                         timeout=3600)
    assert res.returncode == 0, f"systems/minio/setup.sh failed:\n{res.stdout}\n{res.stderr}"
    assert (cache_dir() / "bin" / "minio").exists()
    return res.stdout
