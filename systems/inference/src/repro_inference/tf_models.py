"""The TensorFlow side (tf venv only): build from config, export SavedModels, load their signature.

The SavedModel's ``serving_default`` signature follows the Triton tensor contract (triton_config.py):
input ``INPUT__0`` (ResNet50: [batch, 3, S, S] normalised NCHW pixels, as Hugging Face's TFResNet takes;
truncated Wav2Vec2: [batch, 50000] raw samples, normalised inside the graph), output ``OUTPUT__0``.
The same directory is TF Serving's ``<model>/1/``, Triton's ``model.savedmodel`` and what the local
stand-ins load. Never import torch here.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # transformers 4.57's TF models need tf-keras (Keras 2)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402


def pin_threads(spec: dict) -> int:
    n = int(spec.get("threads", 1))
    if n == 0:  # the framework's default (the paper's "default configurations")
        return n
    try:
        tf.config.threading.set_intra_op_parallelism_threads(n)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:  # already initialised in this process
        pass
    return n


def build(spec: dict):
    import transformers as tr

    model = spec["model"]
    if model == "resnet50":
        cls = tr.TFResNetForImageClassification
        cfg = tr.ResNetConfig(num_labels=1000, depths=[3, 4, 6, 3], hidden_sizes=[256, 512, 1024, 2048],
                              embedding_size=64, layer_type="bottleneck", downsample_in_first_stage=False)
    elif model.startswith("wav2vec2"):
        cls = tr.TFWav2Vec2ForCTC
        cfg = tr.Wav2Vec2Config(vocab_size=32, feat_extract_norm="group", do_stable_layer_norm=False, pad_token_id=0)
    else:
        raise ValueError(f"no TensorFlow {model} (paper Sec. IV.D: only TorchServe serves BART)")
    if spec["weights"] == "pretrained":
        return cls.from_pretrained(spec["hf_id"])
    tf.keras.utils.set_random_seed(int(spec.get("seed", 0)))
    return cls(cfg)


def input_signature(spec: dict) -> tf.TensorSpec:
    if spec["model"] == "resnet50":
        s = int(spec["image_size"])
        return tf.TensorSpec([None, 3, s, s], tf.float32, name="INPUT__0")
    return tf.TensorSpec([None, spec.get("input_samples")], tf.float32, name="INPUT__0")


def export(spec: dict, path: str) -> None:
    model = build(spec)
    is_audio = spec["model"].startswith("wav2vec2")

    @tf.function(input_signature=[input_signature(spec)])
    def serve(INPUT__0):  # noqa: N803 (the tensor's name in the signature)
        x = INPUT__0
        if is_audio:
            mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
            x = (x - mean) / tf.sqrt(var + 1e-7)
            return {"OUTPUT__0": model(input_values=x, training=False).logits}
        return {"OUTPUT__0": model(pixel_values=x, training=False).logits}

    module = tf.Module()
    module.model = model
    module.serve = serve
    tf.saved_model.save(module, path, signatures={"serving_default": serve})


def load_signature(path: str):
    loaded = tf.saved_model.load(path)
    fn = loaded.signatures["serving_default"]
    fn._repro_keepalive = loaded  # the signature needs its object graph alive
    return fn
