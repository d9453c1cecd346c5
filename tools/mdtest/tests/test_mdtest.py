"""tools/mdtest: the parser on mdtest summaries (fixtures/), and mdbench, run for real over MPI,
printing what the same parser reads."""

import subprocess
from pathlib import Path

import pytest
from repro import procs

from tools.common import ParseError
from tools.mdtest.parser import parse_mdtest

HERE = Path(__file__).resolve().parents[1]
MDBENCH = HERE / "build" / "mdbench"


def fx(name):
    return (HERE / "fixtures" / name).read_text(errors="replace")


@pytest.fixture(scope="module")
def built():
    r = subprocess.run(["make", "-C", str(HERE)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


def mpi_env():
    return procs.mpi_env()


def test_mdtest_summary_handwritten_fixture():
    r = parse_mdtest(fx("mdtest-3.3.0-summary.txt"))
    assert r["program"] == "mdtest-3.3.0" and r["tasks"] == 8 and r["nodes"] == 4 and r["iterations"] == 3
    assert r["rates"]["create"] == {"max": 12873.421, "min": 11002.117, "mean": 12011.204, "std": 765.093}
    assert r["rates"]["open"]["mean"] == 29550.611
    assert set(r["rates"]) == {"create", "stat", "open", "remove", "tree_create", "tree_remove"}


def test_mdtest_time_table_and_stonewall_row_are_ignored():
    r = parse_mdtest(fx("mdtest-summary-rate-and-time.txt"))
    assert r["rates"]["create"]["mean"] == 4069.922  # from the rate table, not the time table
    assert r["rates"]["tree_remove"]["mean"] == 402.775
    assert r["tasks"] == 2


def test_mdtest_rejects_output_without_summary():
    with pytest.raises(ParseError):
        parse_mdtest("-- started at --\nmdtest-3.3.0 was launched with 1 total task(s) on 1 node(s)\n")


def test_mdbench_output_parses_with_the_same_parser(built, tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        d.mkdir()
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-n", "2", str(MDBENCH),
           "-n", "50", "-F", "-u", "-i", "2", "-w", "10", "-e", "10", "-d", "@".join(map(str, dirs))]
    r = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env(), timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    res = parse_mdtest(r.stdout)
    assert res["program"] == "mdbench-1.0" and res["tasks"] == 2 and res["iterations"] == 2
    for op in ("create", "stat", "open", "remove"):
        assert res["rates"][op]["mean"] > 0
        assert res["rates"][op]["min"] <= res["rates"][op]["mean"] <= res["rates"][op]["max"]
    assert not any(any(d.iterdir()) for d in dirs)  # everything removed again


def test_mdbench_fails_loudly(built, tmp_path):
    cmd = ["mpirun", "--oversubscribe", "-n", "1", str(MDBENCH), "-n", "5", "-F",
           "-d", str(tmp_path / "missing" / "deeper")]
    r = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env(), timeout=60)
    assert r.returncode != 0 and "mdbench" in r.stderr
