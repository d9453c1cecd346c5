"""Parsers of the raw tool outputs: real iozone and mdbench outputs, a hand-written mdtest summary."""

import json
import subprocess

import memfs_parsers as P
import pytest

from .mtc_testlib import FIXTURES, MTC, mpi_env


def fx(name):
    return (FIXTURES / name).read_text(errors="replace")


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
    with pytest.raises(P.ParseError):
        P.parse_iozone("hello")


def test_mdtest_summary_handwritten_fixture():
    r = P.parse_mdtest(fx("mdtest-3.3.0-summary.txt"))
    assert r["program"] == "mdtest-3.3.0" and r["tasks"] == 8 and r["nodes"] == 4 and r["iterations"] == 3
    assert r["rates"]["create"] == {"max": 12873.421, "min": 11002.117, "mean": 12011.204, "std": 765.093}
    assert r["rates"]["open"]["mean"] == 29550.611
    assert set(r["rates"]) == {"create", "stat", "open", "remove", "tree_create", "tree_remove"}


def test_mdtest_time_table_and_stonewall_row_are_ignored():
    r = P.parse_mdtest(fx("mdtest-summary-rate-and-time.txt"))
    assert r["rates"]["create"]["mean"] == 4069.922  # from the rate table, not the time table
    assert r["rates"]["tree_remove"]["mean"] == 402.775
    assert r["tasks"] == 2


def test_mdtest_rejects_output_without_summary():
    with pytest.raises(P.ParseError):
        P.parse_mdtest("-- started at --\nmdtest-3.3.0 was launched with 1 total task(s) on 1 node(s)\n")


def test_mdbench_output_parses_with_the_same_parser(built, tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        d.mkdir()
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-n", "2", str(MTC / "build" / "mdbench"),
           "-n", "50", "-F", "-u", "-i", "2", "-w", "10", "-e", "10", "-d", "@".join(map(str, dirs))]
    r = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env(), timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    res = P.parse_mdtest(r.stdout)
    assert res["program"] == "mdbench-1.0" and res["tasks"] == 2 and res["iterations"] == 2
    for op in ("create", "stat", "open", "remove"):
        assert res["rates"][op]["mean"] > 0
        assert res["rates"][op]["min"] <= res["rates"][op]["mean"] <= res["rates"][op]["max"]
    assert not any(any(d.iterdir()) for d in dirs)  # everything removed again


def test_mdbench_fails_loudly(built, tmp_path):
    cmd = ["mpirun", "--oversubscribe", "-n", "1", str(MTC / "build" / "mdbench"), "-n", "5", "-F",
           "-d", str(tmp_path / "missing" / "deeper")]
    r = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env(), timeout=60)
    assert r.returncode != 0 and "mdbench" in r.stderr


def test_mcbench_and_iperf3_parsers():
    mc = P.parse_mcbench('{"op":"set","value_size":524288,"threads":2,"servers":1,"distribution":"modula",'
                         '"ops":10,"errors":0,"bytes":5242880,"seconds":1.0,"bytes_per_s":5242880.0,"ops_per_s":10}\n'
                         '{"op":"get","value_size":524288,"threads":2,"servers":1,"distribution":"modula",'
                         '"ops":12,"errors":0,"bytes":6291456,"seconds":1.0,"bytes_per_s":6291456.0,"ops_per_s":12}\n')
    assert mc["set"]["bytes_per_s"] == 5242880.0 and mc["get"]["ops"] == 12
    ip = P.parse_iperf3(json.dumps({"end": {"sum_sent": {"bits_per_second": 2e8},
                                            "sum_received": {"bits_per_second": 1.9e8, "seconds": 2.0}}}))
    assert ip["received_bps"] == 1.9e8
    with pytest.raises(P.ParseError):
        P.parse_iperf3(json.dumps({"error": "unable to connect"}))


def test_system_kind_labels_stand_ins():
    assert P.system_kind({"name": "1GbE", "emulate": True, "rate_mbit": 1000}).startswith("stand-in:1GbE")
    assert P.system_kind({"name": "IPoIB", "emulate": False}) == "real"
