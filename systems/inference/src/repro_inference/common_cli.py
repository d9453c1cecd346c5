"""Command-line options shared by model preparation, the raw rate and the servers (stdlib only)."""

from __future__ import annotations

import argparse
from pathlib import Path

from repro_inference.spec import MODELS, make_spec


def add_spec_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, choices=sorted(MODELS))
    p.add_argument("--image-size", type=int, help="ResNet50 input side (paper: 224)")
    p.add_argument("--audio-samples", type=int, help="truncated Wav2Vec2 fixed length (paper: 50000)")
    p.add_argument("--audio-samples-full", type=int, help="Wav2Vec2 (full) example length for tracing/raw rate")
    p.add_argument("--max-new-tokens", type=int, help="BART new-token budget (bart-large-cnn: 142)")
    p.add_argument("--num-beams", type=int, help="BART beams (bart-large-cnn: 4)")
    p.add_argument("--threads", type=int, help="intra-op threads of the one worker (default 1)")
    p.add_argument("--seed", type=int)
    p.add_argument("--weights", choices=["random-from-config", "pretrained"],
                   help="pretrained needs the network (from_pretrained); default random-from-config")


def prepare_args(doc: str, formats: tuple[str, ...], framework: str, argv=None):
    """The command line of prepare_torch / prepare_tf: (parser, args, spec, chosen formats)."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_spec_args(p)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--formats", default=",".join(formats), help=f"comma list of {', '.join(formats)}")
    a = p.parse_args(argv)
    chosen = [f for f in a.formats.split(",") if f]
    bad = [f for f in chosen if f not in formats]
    if bad:
        p.error(f"unknown format(s) {bad}; known: {', '.join(formats)}")
    return p, a, dict(spec_from_args(a), framework=framework), chosen


def spec_from_args(a: argparse.Namespace) -> dict:
    return make_spec(a.model, image_size=a.image_size, audio_samples=a.audio_samples,
                     audio_samples_full=a.audio_samples_full, max_new_tokens=a.max_new_tokens,
                     num_beams=a.num_beams, threads=a.threads, seed=a.seed, weights=a.weights)
