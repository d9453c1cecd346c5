"""Each server that runs here, started by our scripts, driven through its own real protocol.

Right answers (1000 classes; [frames, 32] CTC logits and a transcript; a summary string), a wrong-shaped
or malformed request gets the server's error status and the server keeps serving, the stand-ins
label every answer, and stopping leaves no process (the `serve` fixture checks the process group).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile

import pytest
from inference_helpers import SYSTEM, TINY, group_gone, post

from repro_inference.servers import Server, ServerError
from tools.locust import payloads

pytestmark = pytest.mark.slow  # real servers; the first run also prepares the models (cached)

OCTET = {"Content-Type": "application/octet-stream"}
JSON = {"Content-Type": "application/json"}


def ctc_rows(out: dict) -> list:
    shape, data = out["shape"], out["data"]
    assert shape[-1] == 32 and len(data) == shape[-2] * 32, shape
    return shape


# ------------------------------------------------------------------------------------------- TorchServe
def test_torchserve_resnet50_answers_errors_and_keeps_serving(serve):
    s = serve("torchserve", "resnet50")
    url = s.url + "/predictions/resnet50"
    code, ans, _ = post(url, payloads.png(48), OCTET)
    assert code == 200 and ans["classes"] == 1000 and len(ans["logits"]) == 1000
    assert ans["weights"] == "random-from-config"
    assert abs(sum(p for _, p in ans["top5"]) - 1) < 1  # probabilities
    code, ans, _ = post(url, b"definitely not an image", OCTET)
    assert code == 400 and "cannot decode resnet50 input" in ans["message"]
    code, ans, _ = post(url, payloads.wav(4000), OCTET)  # the wrong kind of input
    assert code == 400
    code, ans, _ = post(url, payloads.png(64, seed=3), OCTET)
    assert code == 200 and ans["classes"] == 1000  # still serving


def test_torchserve_wav2vec2_truncated_gives_ctc_logits_and_transcript(serve):
    s = serve("torchserve", "wav2vec2_truncated")
    url = s.url + "/predictions/wav2vec2_truncated"
    short, long = (post(url, payloads.wav(n), OCTET) for n in (3000, 20000))  # padded / truncated to 8000
    for code, ans, _ in (short, long):
        assert code == 200 and ans["vocab"] == 32 and isinstance(ans["transcript"], str)
    assert short[1]["frames"] == long[1]["frames"] == 24  # 8000 samples -> 24 frames (320x downsampling)
    code, ans, _ = post(url, b"RIFF....WAVEfmt nonsense", OCTET)
    assert code == 400 and "cannot decode" in ans["message"]


def test_torchserve_bart_summarises_through_generate(serve):
    s = serve("torchserve", "bart")
    url = s.url + "/predictions/bart"
    code, ans, _ = post(url, payloads.text(TINY["text_words"]).encode(), OCTET)
    assert code == 200 and isinstance(ans["summary"], str) and ans["summary"]
    assert ans["tokenizer"] == "word-hash-stand-in" and ans["weights"] == "random-from-config"
    assert ans["new_tokens"] == TINY["max_new_tokens"]  # random weights: the stated length, exactly
    assert ans["device"] == "cpu" and ans["input_tokens"] == TINY["text_words"] + 3  # <s>, words, '.', </s>
    assert len(ans["summary"].split()) == ans["new_tokens"]
    code, _, _ = post(url, b"   ", OCTET)
    assert code == 400


# ----------------------------------------------------------------------------------------------- Triton
@pytest.mark.parametrize("kind,model", [("triton-python-torch", "resnet50"),
                                        ("triton-python-tf", "wav2vec2_truncated")])
def test_triton_standin_v2_protocol(serve, kind, model):
    s = serve(kind, model)
    url = f"{s.url}/v2/models/{model}/infer"
    if model == "resnet50":
        good, bad = payloads.image_tensor(TINY["image_size"]), payloads.image_tensor(TINY["image_size"] + 1)
    else:
        good = ([1, TINY["audio_samples"]], payloads.audio_samples(TINY["audio_samples"]))
        bad = ([1, TINY["audio_samples"] - 1], payloads.audio_samples(TINY["audio_samples"] - 1))
    for binary in (True, False):
        code, ans, _ = post(url, *payloads.triton_request(*good, binary=binary))
        assert code == 200, ans
        outs = {o["name"]: o for o in ans["outputs"]}
        assert outs["SYSTEM_KIND"]["data"] == ["stand-in:tritonserver-python-backend"]
        if model == "resnet50":
            assert outs["OUTPUT__0"]["shape"] == [1, 1000]
        else:
            assert ctc_rows(outs["OUTPUT__0"]) == [1, 24, 32]
    code, ans, _ = post(url, *payloads.triton_request(*bad))
    assert code == 400 and "unexpected shape" in ans["error"]
    code, ans, _ = post(url, b'{"inputs": [', JSON)  # malformed JSON: Triton answers 4xx/5xx
    assert code >= 400 and "error" in ans
    code, _, _ = post(url, *payloads.triton_request(*good))
    assert code == 200  # still serving


# ------------------------------------------------------------------------------- TF Serving (stand-in)
@pytest.mark.parametrize("model", ["resnet50", "wav2vec2_truncated"])
def test_tfserving_standin_rest_protocol(serve, model):
    s = serve("tfserving-standin", model)
    url = f"{s.url}/v1/models/{model}:predict"
    if model == "resnet50":
        good, bad = payloads.image_tensor(TINY["image_size"]), payloads.image_tensor(TINY["image_size"] - 1)
    else:
        good = ([1, TINY["audio_samples"]], payloads.audio_samples(TINY["audio_samples"]))
        bad = ([1, 500], payloads.audio_samples(500))
    code, ans, hdr = post(url, payloads.tfserving_request(*good), JSON)
    assert code == 200 and hdr["X-Repro-System-Kind"] == "stand-in:tfserving-rest-on-tf-python"
    pred = ans["predictions"]
    shape = [len(pred[0])] if model == "resnet50" else [len(pred[0]), len(pred[0][0])]
    assert len(pred) == 1 and shape == ([1000] if model == "resnet50" else [24, 32])
    code, ans, _ = post(url, payloads.tfserving_request(*good, form="inputs"), JSON)
    assert code == 200 and len(ans["outputs"]) == 1
    for body in (payloads.tfserving_request(*bad), b'{"instances": [1, 2', b'{"instances": [[1], [2, 3]]}', b"{}"):
        code, ans, hdr = post(url, body, JSON)
        assert code == 400 and isinstance(ans["error"], str) and hdr["X-Repro-System-Kind"]
    code, ans, _ = post(f"{s.url}/v1/models/nosuchmodel:predict", payloads.tfserving_request(*good), JSON)
    assert code == 404 and "Servable not found" in ans["error"]
    code, _, _ = post(url, payloads.tfserving_request(*good), JSON)
    assert code == 200  # still serving


# ------------------------------------------------------------------------- a model that fails to load
def _broken(kind: str, models, dest):
    """A copy of the resnet50 artifact for ``kind`` whose model cannot load."""
    if kind == "torchserve":
        (dest / "torchserve").mkdir(parents=True)
        with zipfile.ZipFile(models / "torchserve" / "resnet50.mar") as src, \
                zipfile.ZipFile(dest / "torchserve" / "resnet50.mar", "w") as out:
            for item in src.infolist():
                data = src.read(item)
                out.writestr(item, b"{ this is not json" if item.filename == "repro-spec.json" else data)
        return "JSONDecodeError"
    if kind == "triton-python-torch":
        shutil.copytree(models / kind / "resnet50", dest / kind / "resnet50", symlinks=True)
        (dest / kind / "resnet50" / "1" / "repro-spec.json").write_text("{ this is not json")
        return "JSONDecodeError"
    shutil.copytree(models / "tfserving" / "resnet50", dest / "tfserving" / "resnet50")
    pb = dest / "tfserving" / "resnet50" / "1" / "saved_model.pb"
    pb.write_bytes(pb.read_bytes()[:100])
    return "failed to load servable"


@pytest.mark.parametrize("kind", ["torchserve", "tfserving-standin"])
def test_a_model_that_fails_to_load_fails_the_start_with_the_server_log(models, tmp_path, kind):
    marker = _broken(kind, models, tmp_path / "models")
    server = Server(kind, tmp_path / "models", "resnet50", tmp_path / "work", threads=1, timeout=240)
    with pytest.raises(ServerError) as err:
        server.start()
    assert err.value.returncode != 0
    assert marker in err.value.log  # the server's own words
    assert server.proc is None and not (tmp_path / "work" / "server.pid").exists()


def test_start_cli_reports_triton_load_failure_with_its_exit_code_and_log(models, tmp_path):
    _broken("triton-python-torch", models, tmp_path / "models")
    r = subprocess.run([sys.executable, "-m", "repro_inference.servers", "start", "triton-python-torch",
                        "--models", str(tmp_path / "models"), "--model", "resnet50", "--workdir", str(tmp_path / "w")],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(SYSTEM / "src")))
    assert r.returncode == 1  # tritonserver's own exit code
    assert "failed to load all models" in r.stderr and "JSONDecodeError" in r.stderr
    assert not (tmp_path / "w" / "server.pid").exists()


def test_spec_and_configs_flag_random_weights(models):
    for f in models.glob("manifest-*.json"):
        spec = json.loads(f.read_text())["spec"]
        assert spec["weights"] == "random-from-config"
    cfg = (models / "triton-pytorch" / "resnet50" / "config.pbtxt").read_text()
    assert 'platform: "pytorch_libtorch"' in cfg and "dims: [3, 32, 32]" in cfg
    cfg = (models / "triton-tensorflow" / "wav2vec2_truncated" / "config.pbtxt").read_text()
    assert 'platform: "tensorflow_savedmodel"' in cfg and "dims: [8000]" in cfg
    assert (models / "triton-tensorflow" / "wav2vec2_truncated" / "1" / "model.savedmodel" / "saved_model.pb").exists()
    assert (models / "triton-pytorch" / "resnet50" / "1" / "model.pt").stat().st_size > 50e6  # ResNet50's weights
    assert not (models / "triton-pytorch" / "bart").exists()  # Triton cannot trace .generate() (paper)


# ------------------------------------------------------------------------------------------- serve, --bind
def _outside_address() -> str | None:
    """This host's address on its default route (no packet is sent), None if only loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))
            addr = s.getsockname()[0]
        except OSError:
            return None
    return None if addr.startswith("127.") or addr == "0.0.0.0" else addr


SERVE_KINDS = [("torchserve", "resnet50", "/predictions/resnet50"),
               ("triton-python-torch", "resnet50", "/v2/models/resnet50/ready"),
               ("tfserving-standin", "resnet50", "/v1/models/resnet50")]


@pytest.mark.parametrize("kind,model,path", SERVE_KINDS)
def test_serve_binds_all_interfaces_advertises_the_hostname_and_stops_on_usr1(models, tmp_path, kind, model, path):
    """The n+1 server node's command: `serve --bind 0.0.0.0` answers at the URL in its ready file (the
    node's hostname, not 127.0.0.1), on a non-loopback address of this host too, and SIGUSR1 (what
    srun forwards) stops it with exit 0 and no process of its group left."""
    ready = tmp_path / "shared" / "server.json"
    cmd = [sys.executable, "-m", "repro_inference.servers", "serve", kind, "--models", str(models), "--model",
           model, "--workdir", str(tmp_path / "w"), "--timeout", "300", "--bind", "0.0.0.0", "--ready-file", str(ready)]
    proc = subprocess.Popen(cmd, env=dict(os.environ, PYTHONPATH=str(SYSTEM / "src")), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(600):
            if ready.exists() or proc.poll() is not None:
                break
            time.sleep(0.5)
        assert ready.exists(), proc.communicate(timeout=60)[0][-3000:]
        info = json.loads(ready.read_text())
        host = socket.gethostname()
        assert info["url"] == f"http://{host}:{info['port']}" and info["bind"] == "0.0.0.0"
        assert info["host"] == host and info["kind"] == kind and info["pid"] > 0
        if kind == "torchserve":  # TorchServe's inference API: a real request
            code, ans, _ = post(info["url"] + path, payloads.png(48), OCTET)
            assert code == 200 and ans["classes"] == 1000
        else:
            with urllib.request.urlopen(info["url"] + path, timeout=30) as r:
                assert r.status == 200
        addr = _outside_address()
        if addr:  # reachable on a non-loopback address of this host (where it has one)
            with socket.create_connection((addr, info["port"]), timeout=10):
                pass
        proc.send_signal(signal.SIGUSR1)
        out = proc.communicate(timeout=120)[0]
        assert proc.returncode == 0, out[-3000:]
        assert "stopping (signal)" in out
        assert group_gone(info["pid"]), f"{kind} left processes behind"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        subprocess.run([sys.executable, "-m", "repro_inference.servers", "stop", "--workdir", str(tmp_path / "w")],
                       env=dict(os.environ, PYTHONPATH=str(SYSTEM / "src")))
