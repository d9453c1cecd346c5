"""Readable, stable result paths in Snakemake's Paramspace style.

``param_path({"source": "home", "nodes": 8})`` -> ``"source~home/nodes~8"``.
The order of the keys is the order given (callers pass the study's
dimension order), so that a path names one configuration unambiguously.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath

_SAFE = re.compile(r"^[A-Za-z0-9_.+-]+$")


def fmt_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if not _SAFE.match(text):
        raise ValueError(f"parameter value {text!r} cannot be used in a path")
    return text


def param_path(params: Mapping[str, object]) -> str:
    return "/".join(f"{k}~{fmt_value(v)}" for k, v in params.items())


def parse_path(path: str) -> dict[str, str]:
    """Inverse of :func:`param_path` for any path containing ``key~value`` parts."""
    out: dict[str, str] = {}
    for part in PurePosixPath(path).parts:
        stem = part[:-5] if part.endswith(".json") else part
        if "~" in stem:
            key, _, value = stem.partition("~")
            out[key] = value
    return out


def expand(dims: Mapping[str, Iterable]) -> list[dict]:
    """Cartesian product of the dimensions, as dicts in the given key order."""
    keys = list(dims)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(list(dims[k]) for k in keys))]


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?B|B)?\s*$", re.IGNORECASE)
_UNITS = {
    "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}


def size_bytes(text: str | int) -> int:
    """'1GiB' -> 1073741824, '100KB' -> 100000, 17 -> 17."""
    if isinstance(text, int):
        return text
    m = _SIZE.match(str(text))
    if not m:
        raise ValueError(f"not a size: {text!r} (use e.g. 1KB, 100KiB, 10MB, 1GiB)")
    unit = (m.group(2) or "B").lower()
    return int(float(m.group(1)) * _UNITS[unit])
