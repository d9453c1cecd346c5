"""Parser of ``mcbench``'s JSON lines (raw memcached set/get bandwidth; the binary is built with
MemFS, systems/memfs, because it shares MemFS's memcached client code: see README.md)."""

from __future__ import annotations

import json

from tools.common import ParseError


def parse_mcbench(text: str) -> dict:
    """``{op: record}`` from mcbench's JSON lines (op = set/get)."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            rec = json.loads(line)
            out[rec["op"]] = rec
    if not out:
        raise ParseError("no mcbench JSON line")
    return out
