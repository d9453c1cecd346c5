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


def _mdbench(tmp_path, *flags, n=30, tasks=2):
    d = tmp_path / "d"
    d.mkdir(exist_ok=True)
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-n", str(tasks), str(MDBENCH),
           "-n", str(n), "-u", "-i", "2", "-w", "3901", "-e", "3901", "-d", str(d), *flags]
    r = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env(), timeout=120)
    return r, d


FILE_OPS = {"create", "stat", "open", "remove", "tree_create", "tree_remove"}
DIR_OPS = {"dir_create", "dir_stat", "dir_read", "dir_rename", "dir_remove"}


def test_mdbench_files_only_prints_no_directory_rows(built, tmp_path):
    """-F and the default (no flag) are the files-only mdbench the memfs study uses: no Directory row."""
    for flags in (["-F"], []):
        r, d = _mdbench(tmp_path, *flags)
        assert r.returncode == 0, r.stderr[-2000:]
        assert "Directory" not in r.stdout and "2 tasks, 60 files\n" in r.stdout
        assert set(parse_mdtest(r.stdout)["rates"]) == FILE_OPS
        assert not any(d.iterdir())


def test_mdbench_dirs_adds_directory_phases_before_the_file_phases(built, tmp_path):
    r, d = _mdbench(tmp_path, "--dirs")
    assert r.returncode == 0, r.stderr[-2000:]
    res = parse_mdtest(r.stdout)
    assert set(res["rates"]) == FILE_OPS | DIR_OPS
    for op in DIR_OPS | FILE_OPS:
        assert 0 < res["rates"][op]["min"] <= res["rates"][op]["mean"] <= res["rates"][op]["max"], op
    rows = [ln.split(":")[0].strip() for ln in r.stdout.splitlines() if ln.startswith("   ") and ":" in ln]
    assert rows[:6] == ["Directory creation", "Directory stat", "Directory read", "Directory rename",
                        "Directory removal", "File creation"]
    assert not any(d.iterdir())  # every directory and file removed again


def test_mdbench_directories_only(built, tmp_path):
    r, d = _mdbench(tmp_path, "-D")
    assert r.returncode == 0, r.stderr[-2000:]
    assert set(parse_mdtest(r.stdout)["rates"]) == DIR_OPS | {"tree_create", "tree_remove"}
    assert "2 tasks, 60 directories" in r.stdout and not any(d.iterdir())


def test_mdbench_refuses_files_only_with_directories(built, tmp_path):
    r, _ = _mdbench(tmp_path, "-F", "--dirs", tasks=1)
    assert r.returncode != 0 and "-F (files only) contradicts --dirs" in r.stderr


def test_mdbench_directory_phase_fails_loudly_on_a_taken_name(built, tmp_path):
    """A directory that cannot be created (a file holds its name) aborts the run naming the path."""
    d = tmp_path / "d"
    (d / "test-dir.0-0" / "mdtest_tree.0.0").mkdir(parents=True)
    (d / "test-dir.0-0" / "mdtest_tree.0.0" / "dir.mdtest.0.3").write_text("x")
    r = subprocess.run(["mpirun", "--oversubscribe", "-n", "1", str(MDBENCH), "-n", "5", "-u", "-D", "-d", str(d)],
                       capture_output=True, text=True, env=mpi_env(), timeout=60)
    assert r.returncode != 0 and "mkdir" in r.stderr and "dir.mdtest.0.3" in r.stderr


def test_mdbench_renames_directories_and_removes_them_under_the_new_name(built, tmp_path):
    """The rename phase (mdtest's "Directory rename", Table 5's rename row) really renames: a name
    taken by a file makes it fail naming the path; selecting phases (-C) leaves it out."""
    d = tmp_path / "d"
    (d / "test-dir.0-0" / "mdtest_tree.0.0").mkdir(parents=True)
    (d / "test-dir.0-0" / "mdtest_tree.0.0" / "dir.mdtest.0.2.renamed").mkdir()
    (d / "test-dir.0-0" / "mdtest_tree.0.0" / "dir.mdtest.0.2.renamed" / "x").write_text("x")
    r = subprocess.run(["mpirun", "--oversubscribe", "-n", "1", str(MDBENCH), "-n", "5", "-u", "-D", "-d", str(d)],
                       capture_output=True, text=True, env=mpi_env(), timeout=60)
    assert r.returncode != 0 and "rename" in r.stderr and "dir.mdtest.0.2" in r.stderr
    r, _ = _mdbench(tmp_path / "sel", "-D", "-C") if (tmp_path / "sel").mkdir() is None else None
    assert r.returncode == 0, r.stderr[-2000:]
    assert parse_mdtest(r.stdout)["rates"]["dir_rename"]["mean"] == 0  # not run: mdtest prints 0 rows
