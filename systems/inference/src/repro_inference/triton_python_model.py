"""Triton Python-backend model: the stand-in for Triton's PyTorch / TensorFlow backends (copied as ``1/model.py``).

The tritonserver bundled with nvidia-pytriton is the real server (HTTP/gRPC front end, scheduler,
KServe v2 protocol) but ships only the Python backend, so this file runs the same network that the
libtorch / TensorFlow backend would run on a cluster: torch (``framework: torch``, the same model
code as TorchServe's handler) or the very SavedModel TF Serving serves (``framework: tf``), each in
its own stub process (torch and TF never share one). Every answer carries SYSTEM_KIND.
"""

import json
import os

import numpy as np
import triton_python_backend_utils as pb_utils

KIND = "stand-in:tritonserver-python-backend"


class TritonPythonModel:
    def initialize(self, args):
        here = os.path.join(args["model_repository"], args["model_version"])
        # the Python backend's stub appends this version folder (and the model's) to sys.path before
        # it imports this file as <version>.model: the repro_inference copied beside it imports
        from repro_inference.spec import read_spec

        self.spec = read_spec(here)
        params = json.loads(args["model_config"]).get("parameters", {})
        if os.environ.get("REPRO_THREADS"):  # set by servers.py --threads
            self.spec["threads"] = int(os.environ["REPRO_THREADS"])
        elif "threads" in params:
            self.spec["threads"] = int(params["threads"]["string_value"])
        self.spec["device"] = os.environ.get("REPRO_DEVICE", "cpu")  # servers.py --device (cuda fails without a GPU)
        if self.spec["framework"] == "torch":
            import torch
            from repro_inference import torch_models as tm

            tm.pin_threads(self.spec)
            self.model = tm.build(self.spec, source=os.path.join(here, "hf"))
            self._run = lambda x: tm.forward(self.model, self.spec, torch.from_numpy(x)).numpy()
        else:
            from repro_inference import tf_models as tfm

            tfm.pin_threads(self.spec)
            if self.spec["device"] == "cuda":
                import tensorflow as tf
                from repro_inference import device as dev

                dev.require("cuda", probe=lambda: tf.config.list_physical_devices("GPU"))
            fn = tfm.load_signature(os.path.join(here, "savedmodel"))
            self._run = lambda x: fn(INPUT__0=x)["OUTPUT__0"].numpy()
        self.kind = np.array([[KIND.encode()]], dtype=np.object_)

    def _one(self, request):
        x = pb_utils.get_input_tensor_by_name(request, "INPUT__0").as_numpy().astype(np.float32, copy=False)
        if self.spec["model"].startswith("wav2vec2") and x.shape[-1] < 400:
            raise ValueError(f"audio too short: {x.shape[-1]} samples (need >= 400)")
        if self.spec["framework"] == "torch" and self.spec["model"].startswith("wav2vec2"):
            x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-7)  # the TF graph does this too
        y = np.ascontiguousarray(self._run(np.ascontiguousarray(x)), dtype=np.float32)
        return pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUTPUT__0", y),
                                                          pb_utils.Tensor("SYSTEM_KIND", self.kind)])

    def execute(self, requests):
        responses = []
        for request in requests:
            try:
                responses.append(self._one(request))
            except Exception as err:  # a bad request answers an error; the model keeps serving
                responses.append(pb_utils.InferenceResponse(
                    output_tensors=[], error=pb_utils.TritonError(f"{KIND}: {type(err).__name__}: {err}")))
        return responses
