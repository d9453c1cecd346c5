"""tools/iperf3/parser.py on iperf3 -J documents."""

import json

import pytest

from tools.common import ParseError
from tools.iperf3.parser import parse_iperf3


def test_iperf3_json():
    ip = parse_iperf3(json.dumps({"end": {"sum_sent": {"bits_per_second": 2e8},
                                            "sum_received": {"bits_per_second": 1.9e8, "seconds": 2.0}}}))
    assert ip["received_bps"] == 1.9e8
    with pytest.raises(ParseError):
        parse_iperf3(json.dumps({"error": "unable to connect"}))
