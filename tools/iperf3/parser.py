"""Parser of ``iperf3 -J`` (Debian's iperf3): the link rate a benchmark is measured against.

The one iperf3 parser of the tree: ``parse_iperf3`` (the totals; the memfs study) and
``parse_iperf3_report`` (the receiver's rate with what the report says about the test; the
serverless study's function director, tools/fdirector/iperf.py)."""

from __future__ import annotations

import json

from tools.common import ParseError


def _load(text: str) -> dict:
    """The report as a dict; a report that is not JSON or that carries an ``error`` raises ParseError."""
    try:
        d = json.loads(text)
    except ValueError as exc:
        raise ParseError(f"iperf3 output is not JSON: {exc}: {text[:200]!r}") from exc
    if not isinstance(d, dict):
        raise ParseError(f"iperf3 output is not a report: {text[:200]!r}")
    if "error" in d:
        raise ParseError(f"iperf3 reported an error: {d['error']}")
    return d


def parse_iperf3(text: str) -> dict:
    end = _load(text)["end"]
    return {"sent_bps": end["sum_sent"]["bits_per_second"],
            "received_bps": end["sum_received"]["bits_per_second"],
            "seconds": end["sum_received"]["seconds"]}


def parse_iperf3_report(text: str) -> dict:
    """Bandwidth from an ``iperf3 -J`` TCP client report: the receiver's rate (what arrived), bytes
    both ways, retransmits, and the addresses of the connection (``local``: this side's, ``remote``:
    the server's)."""
    doc = _load(text)
    try:
        end = doc["end"]
        recv, sent = end["sum_received"], end["sum_sent"]
        start = doc["start"]
    except (KeyError, TypeError) as exc:
        raise ParseError(f"iperf3 report lacks {exc}: not a TCP client report") from exc
    bps = float(recv["bits_per_second"])
    conn = (start.get("connected") or [{}])[0]
    return {
        "tool": "iperf3",
        "version": start.get("version"),
        "protocol": start.get("test_start", {}).get("protocol"),
        "seconds": float(recv["seconds"]),
        "bytes_received": int(recv["bytes"]),
        "bytes_sent": int(sent["bytes"]),
        "bits_per_second": bps,
        "mib_per_s": bps / 8 / 2**20,
        "retransmits": sent.get("retransmits"),
        "remote": conn.get("remote_host"),
        "local": conn.get("local_host"),
    }
