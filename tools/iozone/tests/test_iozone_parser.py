"""tools/iozone/parser.py on captured real iozone 3.489 outputs (fixtures/)."""

from pathlib import Path

import pytest

from tools.common import ParseError
from tools.iozone import parser as P


def fx(name):
    return (Path(__file__).resolve().parents[1] / "fixtures" / name).read_text(errors="replace")


def test_iozone_throughput_write():
    r = P.parse_iozone(fx("iozone-3.489-throughput-write.txt"))
    assert r["mode"] == "throughput" and r["version"] == "3.489" and r["complete"]
    assert r["record_kb"] == 4 and r["file_kb"] == 1024 and r["procs"] == 2 and r["verify_errors"] == 0
    w = r["tests"]["write"]
    assert w["n"] == 2 and w["children_kbps"] == pytest.approx(584083.12)
    assert [k["xfer_kb"] for k in w["children"]] == [1024.0, 1024.0]
    assert w["children"][0]["kbps"] == pytest.approx(293918.03)
    assert w["children"][0]["seconds"] == pytest.approx(1024 / 293918.03)
    assert w["children_kbps"] == pytest.approx(sum(k["kbps"] for k in w["children"]), rel=1e-6)


def test_iozone_throughput_read_and_node_totals():
    r = P.parse_iozone(fx("iozone-3.489-throughput-read.txt"))
    t = r["tests"]["read"]
    assert len(t["children"]) == 2
    tot = P.iozone_node_totals([[r, r]], "read", 4096)  # one stream of two identical runs
    slowest = max(k["seconds"] for k in t["children"])
    assert tot["seconds"] == pytest.approx(2 * slowest)
    assert tot["bytes"] == 4 * 1024 * 1024 and tot["ops"] == 1024
    two = P.iozone_node_totals([[r], [r]], "read", 4096)  # two concurrent streams
    assert two["seconds"] == pytest.approx(slowest) and two["bytes"] == tot["bytes"]


def test_iozone_verify_error_is_counted():
    r = P.parse_iozone(fx("iozone-3.489-throughput-read-corrupt.txt"))
    assert r["verify_errors"] >= 1
    assert r["tests"]["read"]["children"][0]["xfer_kb"] == 0.0  # the child stopped at the bad record


def test_iozone_single_file_excel_report():
    r = P.parse_iozone(fx("iozone-3.489-single-write-excel.txt"))
    assert r["mode"] == "single" and "write" in r["tests"] and "rewrite" not in r["tests"]
    k = r["tests"]["write"]["children"][0]
    assert k["xfer_kb"] == 1024 and k["kbps"] > 0


def test_iozone_rejects_other_text():
    with pytest.raises(ParseError):
        P.parse_iozone("hello")
