"""tools/iperf3/parser.py on iperf3 -J documents: a minimal one, a captured real report, errors."""

import json
from pathlib import Path

import pytest

from tools.common import ParseError
from tools.iperf3.parser import parse_iperf3, parse_iperf3_report

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "iperf3-loopback.json"


def test_iperf3_json():
    ip = parse_iperf3(json.dumps({"end": {"sum_sent": {"bits_per_second": 2e8},
                                            "sum_received": {"bits_per_second": 1.9e8, "seconds": 2.0}}}))
    assert ip["received_bps"] == 1.9e8
    with pytest.raises(ParseError):
        parse_iperf3(json.dumps({"error": "unable to connect"}))


def test_report_on_the_captured_fixture():
    """A real report (iperf 3.12 over loopback): the receiver's rate, as the fdirector records it."""
    parsed = parse_iperf3_report(FIXTURE.read_text())
    raw = json.loads(FIXTURE.read_text())
    assert parsed["bits_per_second"] == raw["end"]["sum_received"]["bits_per_second"]
    assert parsed["mib_per_s"] == pytest.approx(parsed["bits_per_second"] / 8 / 2**20)
    assert parsed["protocol"] == "TCP" and parsed["version"].startswith("iperf 3")
    assert parsed["remote"] == raw["start"]["connected"][0]["remote_host"]
    assert parsed["local"] == raw["start"]["connected"][0]["local_host"]
    assert parse_iperf3(FIXTURE.read_text())["received_bps"] == parsed["bits_per_second"]


@pytest.mark.parametrize("text,message", [
    (json.dumps({"start": {}, "end": {}, "error": "unable to connect to server"}), "reported an error"),
    ("iperf3: error", "not JSON"),
    (json.dumps({"start": {}}), "lacks 'end'"),
    ("[1, 2]", "not a report"),
])
def test_bad_reports_are_named(text, message):
    with pytest.raises(ParseError, match=message):
        parse_iperf3_report(text)
