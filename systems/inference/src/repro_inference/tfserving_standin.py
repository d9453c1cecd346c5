"""stand-in:tfserving-rest-on-tf-python — TF Serving's REST API over TensorFlow in Python (tf venv).

TensorFlow Serving's server binary is in no registry this machine can reach (MACHINE-FACTS), so this
serves the *same* versioned SavedModel directories (``<base>/<model>/<version>/``) through TensorFlow's
Python runtime behind TF Serving's REST protocol:

  GET  /v1/models/<m>[/versions/<v>]             model status (TF Serving's JSON)
  GET  /v1/models/<m>[/versions/<v>]/metadata    signature metadata
  POST /v1/models/<m>[/versions/<v>]:predict     {"instances": [...]} -> {"predictions": [...]}  (row form)
                                                 {"inputs": ...}      -> {"outputs": ...}        (columnar form)
Errors are TF Serving's: ``{"error": "..."}`` with 400 (INVALID_ARGUMENT: malformed JSON, wrong shape)
or 404 (NOT_FOUND: unknown model/version/method). One worker: one thread runs the model at a time,
with the spec's intra-op threads. Every response, errors included, carries the header
``X-Repro-System-Kind: stand-in:tfserving-rest-on-tf-python`` so no number from it passes for TF Serving's.

    python -m repro_inference.tfserving_standin --model_base_path DIR --model_name resnet50 --rest_api_port 8501
(the real tensorflow_model_server's flag names).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

KIND = "stand-in:tfserving-rest-on-tf-python"
ROUTE = re.compile(r"^/v1/models/(?P<model>[^/:]+)(?:/versions/(?P<version>\d+))?"
                   r"(?:/(?P<meta>metadata)|:(?P<verb>\w+))?$")


class Served:
    def __init__(self, base: Path, name: str, threads: int | None):
        from repro_inference import tf_models
        from repro_inference.spec import read_spec

        versions = sorted(int(d.name) for d in base.iterdir() if d.is_dir() and d.name.isdigit())
        if not versions:
            raise FileNotFoundError(f"no numeric version directory under {base} (expected {base}/1/)")
        self.name, self.version = name, versions[-1]  # TF Serving's default policy: the latest version
        path = base / str(self.version)
        self.spec = read_spec(path)
        if threads:
            self.spec["threads"] = threads
        tf_models.pin_threads(self.spec)
        self.fn = tf_models.load_signature(str(path))
        inputs = self.fn.structured_input_signature[1]
        self.input_name, tspec = next(iter(inputs.items()))
        self.input_shape = tspec.shape.as_list()
        self.lock = threading.Lock()
        self.fn(**{self.input_name: np.zeros([1] + [d or 1000 for d in self.input_shape[1:]], np.float32)})  # warm

    def predict(self, x: np.ndarray) -> np.ndarray:
        want = self.input_shape
        if x.ndim != len(want) or any(w is not None and w != g for w, g in zip(want[1:], x.shape[1:])):
            raise ValueError(f"input {self.input_name!r} has shape {list(x.shape)}, the signature expects "
                             f"{[-1 if d is None else d for d in want]}")
        with self.lock:
            return self.fn(**{self.input_name: x})["OUTPUT__0"].numpy()


def _array(value) -> np.ndarray:
    try:
        x = np.asarray(value, dtype=np.float32)
    except (ValueError, TypeError) as err:
        raise ValueError(f"instances are not a rectangular array of numbers: {err}") from err
    return x


class Handler(BaseHTTPRequestHandler):
    served: Served = None
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: one line per error only
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Repro-System-Kind", KIND)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        if status >= 500:
            print(f"tfserving-standin: {status} {message}", file=sys.stderr, flush=True)
        self._send(status, {"error": message})

    def _route(self):
        m = ROUTE.match(self.path.split("?")[0])
        s = self.served
        if not m or m["model"] != s.name:
            name = m["model"] if m else self.path
            self._error(404, f"Servable not found for request: Latest({name})")
            return None
        if m["version"] and int(m["version"]) != s.version:
            self._error(404, f"Servable not found for request: Specific({s.name}, {m['version']})")
            return None
        return m

    def do_GET(self):  # noqa: N802
        m = self._route()
        if m is None:
            return
        s = self.served
        if m["meta"]:
            self._send(200, {"model_spec": {"name": s.name, "version": str(s.version)}, "metadata": {
                "signature_def": {"serving_default": {"inputs": {s.input_name: {"shape": s.input_shape}}}},
                "repro": {"system_kind": KIND, "spec": s.spec}}})
        elif m["verb"]:
            self._error(404, f"Unsupported method for GET: {m['verb']}")
        else:
            self._send(200, {"model_version_status": [{"version": str(s.version), "state": "AVAILABLE",
                                                       "status": {"error_code": "OK", "error_message": ""}}]})

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        m = self._route()
        if m is None:
            return
        if m["verb"] != "predict":
            self._error(400 if m["verb"] in ("classify", "regress") else 404,
                        f"this stand-in implements only :predict, not {m['verb'] or 'a bare POST'}")
            return
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            self._error(400, f"JSON Parse error: {err}")
            return
        if not isinstance(body, dict) or ("instances" in body) == ("inputs" in body):
            self._error(400, "Missing 'inputs' or 'instances' key" if isinstance(body, dict) and not
                        ({"instances", "inputs"} & body.keys()) else "Exactly one of 'inputs' or 'instances' expected")
            return
        row = "instances" in body
        value = body["instances"] if row else body["inputs"]
        if isinstance(value, dict):  # named inputs: {"INPUT__0": ...}
            if set(value) != {self.served.input_name}:
                self._error(400, f"expected exactly input {self.served.input_name!r}, got {sorted(value)}")
                return
            value = value[self.served.input_name]
        if row and isinstance(value, list) and value and isinstance(value[0], dict):
            if any(set(v) != {self.served.input_name} for v in value):
                self._error(400, f"every instance must name exactly {self.served.input_name!r}")
                return
            value = [v[self.served.input_name] for v in value]
        try:
            y = self.served.predict(_array(value))
        except ValueError as err:
            self._error(400, str(err))
            return
        except Exception as err:  # the model itself failed: TF Serving answers 500-class, keeps serving
            self._error(500, f"{type(err).__name__}: {err}")
            return
        self._send(200, {"predictions": y.tolist()} if row else {"outputs": y.tolist()})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model_base_path", required=True, type=Path, help="<base>/<model>, holding version dirs")
    p.add_argument("--model_name", required=True)
    p.add_argument("--rest_api_port", type=int, default=8501)
    p.add_argument("--rest_api_host", default="127.0.0.1")
    p.add_argument("--threads", type=int, help="intra-op threads (default: the spec's)")
    a = p.parse_args(argv)
    t0 = time.time()
    try:
        Handler.served = Served(a.model_base_path, a.model_name, a.threads)
    except Exception as err:
        print(f"tfserving-standin: failed to load servable {a.model_name} from {a.model_base_path}: "
              f"{type(err).__name__}: {err}", file=sys.stderr, flush=True)
        return 1
    server = ThreadingHTTPServer((a.rest_api_host, a.rest_api_port), Handler)
    server.daemon_threads = True
    print(f"tfserving-standin ({KIND}): {a.model_name} version {Handler.served.version} loaded in "
          f"{time.time() - t0:.1f} s; REST on http://{a.rest_api_host}:{a.rest_api_port}", flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    server.server_close()
    print("tfserving-standin: stopped", flush=True)
    os._exit(0)  # skip TensorFlow's slow interpreter teardown (seconds); nothing is left to flush


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    sys.exit(main())
