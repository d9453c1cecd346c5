"""Fixtures of the inference tests: the cached venvs (setup.sh), tiny prepared models (cached), servers.

The tests run the real servers with the paper's architectures at small input sizes (TINY): on a
fresh machine the first run builds the venvs (~9 min, torch's CUDA wheels) and prepares the models
(a few minutes); later runs reuse both from ${REPRO_CACHE:-~/.cache/repro}.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from inference_helpers import SYSTEM, TINY, group_gone

from repro_inference.servers import Server


@pytest.fixture(scope="session")
def venvs():
    subprocess.run([str(SYSTEM / "setup.sh"), "all"], check=True)


@pytest.fixture(scope="session")
def models(venvs) -> Path:
    cmd = [sys.executable, "-m", "repro_inference.prepare", "--cached", "--models",
           "resnet50,wav2vec2_truncated,bart", f"--image-size={TINY['image_size']}",
           f"--audio-samples={TINY['audio_samples']}", f"--max-new-tokens={TINY['max_new_tokens']}",
           f"--num-beams={TINY['num_beams']}", "--torchscript"]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, PYTHONPATH=str(SYSTEM / "src")))
    return Path(out.stdout.strip().splitlines()[-1])


@pytest.fixture
def serve(models, tmp_path):
    """serve(kind, model) -> a started Server; every server is stopped and checked gone at teardown."""
    started = []

    def _serve(kind: str, model: str, models_dir: Path | None = None) -> Server:
        s = Server(kind, models_dir or models, model, tmp_path / f"{kind}-{model}", threads=1, timeout=300)
        started.append(s)
        s.start()
        s.pid = s.proc.pid
        return s

    yield _serve
    for s in started:
        s.stop()
        if hasattr(s, "pid"):
            assert group_gone(s.pid), f"{s.kind} left processes behind"
