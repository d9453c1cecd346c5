"""Parser of ``iperf3 -J`` (Debian's iperf3): the link rate a benchmark is measured against."""

from __future__ import annotations

import json

from tools.common import ParseError


def parse_iperf3(text: str) -> dict:
    d = json.loads(text)
    if "error" in d:
        raise ParseError(f"iperf3: {d['error']}")
    end = d["end"]
    return {"sent_bps": end["sum_sent"]["bits_per_second"],
            "received_bps": end["sum_received"]["bits_per_second"],
            "seconds": end["sum_received"]["seconds"]}
