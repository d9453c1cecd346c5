"""mtcwf: the MTC workflow scheduler, its synthetic-input generators and its run stage (README.md).

Here: what the generators' command lines share. Standard library only: a system never imports the
engine (workflow/lib/repro)."""

from __future__ import annotations

import argparse
import inspect


def generator_main(generate, names: tuple[str, ...], doc: str, argv=None) -> tuple[str, dict, dict]:
    """A generator's command line (gen_montage, gen_blast): --out plus one option per keyword of
    generate() in `names`, its type and default from generate()'s signature (the one place for the
    defaults). Parses argv, calls generate(out, **options); returns (out, options, its manifest)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", required=True)
    params = inspect.signature(generate).parameters
    for name in names:
        default = params[name].default
        ap.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    opts = vars(ap.parse_args(argv))
    out = opts.pop("out")
    return out, opts, generate(out, **opts)
