"""Model preparation, TensorFlow side (tf venv): TF Serving SavedModels, Triton TensorFlow and Python-backend models.

    python -m repro_inference.prepare_tf --out DIR --model resnet50 [--image-size 64] \
        [--formats tfserving,triton-tensorflow,triton-python-tf]

writes
    DIR/tfserving/<model>/1/                         the SavedModel (TF Serving's versioned layout) + repro-spec.json
    DIR/triton-tensorflow/<model>/config.pbtxt       + 1/model.savedmodel/ (hard links; the cluster's TF backend)
    DIR/triton-python-tf/<model>/config.pbtxt        + 1/model.py + 1/savedmodel/ (Python backend: the local stand-in)
Wav2Vec2 (full length) is exported with a variable-length signature for Triton (TensorFlow); the
paper's TF Serving could not serve it, and the study marks that row as not run.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

from repro_inference.common_cli import prepare_args
from repro_inference.spec import copy_runtime, write_spec
from repro_inference.triton_config import config_pbtxt

PKG = Path(__file__).resolve().parent
FORMATS = ("tfserving", "triton-tensorflow", "triton-python-tf")


def main(argv=None) -> int:
    p, a, spec, formats = prepare_args(__doc__, FORMATS, "tf", argv)
    if spec["model"] == "bart":
        p.error("bart has no TensorFlow export (paper Sec. IV.D: only TorchServe serves BART)")
    from repro_inference import tf_models

    t0 = time.time()
    saved = a.out / "tfserving" / spec["model"] / "1"
    shutil.rmtree(saved, ignore_errors=True)
    print(f"prepare_tf: exporting {spec['model']} SavedModel ({spec['weights']}) to {saved}", flush=True)
    tf_models.export(spec, str(saved))
    write_spec(spec, saved)
    print(f"prepare_tf: SavedModel done in {time.time() - t0:.1f} s", flush=True)
    made = {"tfserving": str(saved)}
    if "triton-tensorflow" in formats:
        mdir = a.out / "triton-tensorflow" / spec["model"]
        shutil.rmtree(mdir, ignore_errors=True)
        shutil.copytree(saved, mdir / "1" / "model.savedmodel", copy_function=os.link)  # hard links: one copy on disk
        (mdir / "config.pbtxt").write_text(config_pbtxt(spec, "triton-tensorflow"))
        made["triton-tensorflow"] = str(mdir)
    if "triton-python-tf" in formats:
        mdir = a.out / "triton-python-tf" / spec["model"]
        shutil.rmtree(mdir, ignore_errors=True)
        shutil.copytree(saved, mdir / "1" / "savedmodel", copy_function=os.link)
        write_spec(spec, mdir / "1")
        copy_runtime(mdir / "1", "tf")
        shutil.copy2(PKG / "triton_python_model.py", mdir / "1" / "model.py")
        (mdir / "config.pbtxt").write_text(config_pbtxt(spec, "triton-python-tf"))
        made["triton-python-tf"] = str(mdir)
    if "tfserving" not in formats:
        shutil.rmtree(a.out / "tfserving" / spec["model"])
        del made["tfserving"]
    (a.out / f"manifest-tf-{spec['model']}.json").write_text(json.dumps({"spec": spec, "artifacts": made}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
