"""cosbench-driver end to end: our workload fixtures (written in COSBench's documented format)
and a generated workload against memserver, CSV numbers recomputed from the raw per-request log,
corruption detected, bad workloads refused before anything runs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cosbench_check import check_csv_against_log, op_log, run, summary

from tools.cosbench import gen

TOOL = Path(__file__).resolve().parents[1]
CONF = TOOL / "fixtures" / "conf"


def test_go_unit_tests(driver):
    """CI runs only pytest: the Go tests (selectors, parser, SigV4 vectors, CSV writer) run here."""
    r = subprocess.run(["make", "-C", str(TOOL), "test"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok" in r.stdout


# fixture -> (time scale, main stage's work name, object size in bytes, expected prepare count,
# expected cleanup count); the fixtures are ours, see fixtures/conf/README.md
FIXTURES = {
    "integrity-check.xml": (0.005, "verify", 24000, 12 * 40, 12 * 80),
    "split-read-write.xml": (0.008, "split", 16000, 3 * 20, 6 * 20),
    "delay-stages.xml": (0.004, "rw", 8000, 8 * 30, 8 * 60),
    "s3-five-stages.xml": (0.02, "mixed", 48000, 3 * 8, 3 * 16),
}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_workload_runs_against_memserver(driver, memserver, tmp_path, name):
    scale, main_work, size, n_prep, n_clean = FIXTURES[name]
    src = CONF / name
    args = ["--time-scale", str(scale), "--quiet"]
    if name == "s3-five-stages.xml":
        # its storage config holds stand-in endpoint and keys, which a user edits before
        # running it: the test makes the same edit, nothing else.
        text = src.read_text()
        old = 'config="endpoint=http://127.0.0.1:9000;accesskey=EDIT-ACCESS-KEY;secretkey=EDIT-SECRET-KEY;path_style_access=true"'
        assert text.count(old) == 1
        workload = tmp_path / name
        workload.write_text(text.replace(old, f'config="{memserver.storage_config()}"'))
    else:
        # swift storage / placeholder endpoint: replaced on the command line, the file is untouched
        workload = src
        args += ["--storage-type", "s3", "--storage-config", memserver.storage_config()]
    out = tmp_path / "out"
    r = run(driver, workload, out, *args)
    assert r.returncode == 0, r.stderr
    rows = check_csv_against_log(out)
    stages = {key[0].split("-", 2)[2] for key in rows}
    assert int(rows[next(k for k in rows if k[1] == "prepare-write")]["Op-Count"]) == n_prep
    assert int(rows[next(k for k in rows if k[1] == "cleanup-delete")]["Op-Count"]) == n_clean
    prep = rows[next(k for k in rows if k[1] == "prepare-write")]
    assert int(prep["Byte-Count"]) == n_prep * size  # sizes=c(N)KB, decimal as in COSBench
    for key, row in rows.items():
        assert row["Succ-Ratio"] == "100%", (key, row)
        assert row["Status"] == "completed"
    main_ops = {k[1] for k in rows if k[0].endswith("-main")}
    assert {"read", "write"} <= main_ops, main_ops
    assert "main" in stages
    main_works = [w for st in summary(out)["stages"] if st["name"] == "main" for w in st["works"]]
    assert [w["name"] for w in main_works] == [main_work]
    for o in (o for o in op_log(out) if o["op_name"] == "write" and o["stage"] == "main"):
        assert int(o["bytes"]) == size
    reads = [o for o in op_log(out) if o["op_name"] == "read"]
    assert reads and all(o["ok"] == "true" for o in reads)  # every read passed its checksum
    if name == "split-read-write.xml":  # reads only from buckets 1-3, writes only to 4-6
        by_op = {op: {o["container"] for o in op_log(out) if o["op_name"] == op and o["stage"] == "main"}
                 for op in ("read", "write")}
        assert by_op["read"] <= {f"mycontainers_{i}" for i in (1, 2, 3)}, by_op
        assert by_op["write"] <= {f"mycontainers_{i}" for i in (4, 5, 6)}, by_op
    # cleanup and dispose left memserver empty
    st = memserver.stats()
    assert st["buckets"] == 0 and st["objects"] == 0, st
    # COSBench's other archive files
    names = sorted(p.name for p in out.iterdir())
    assert "workload-config.xml" in names and any(n.startswith("s3-") for n in names)
    assert (out / "workload-config.xml").read_bytes() == workload.read_bytes()
    if name.startswith("delay"):
        assert [s["name"] for s in summary(out)["stages"]].count("pause") == 2


def test_no_storage_fixture_runs_on_noop_storage(driver, tmp_path):
    """no-storage.xml names no storage: COSBench then uses its no-op storage, and so do we."""
    out = tmp_path / "out"
    r = run(driver, CONF / "no-storage.xml", out, "--time-scale", "0.002", "--quiet")
    assert r.returncode == 0, r.stderr
    rows = check_csv_against_log(out)
    assert all(s["storage"] in ("", "none") for st in summary(out)["stages"] for s in st["works"])
    assert int(rows[("w1-s2-prepare", "prepare-write")]["Op-Count"]) == 20 * 40


def test_generated_workload_counts_are_exact(driver, memserver, tmp_path):
    matrix = {
        "prefix": "t",
        "stacks": {"mem": {"endpoint": memserver.endpoint, "accesskey": "testak", "secretkey": "testsk"}},
        "sizes": ["3KB"], "workers": [3], "containers": 2, "objects": 7, "total_ops": 200,
        "mixes": [{"name": "r60w30d10", "read": 60, "write": 30, "delete": 10}],
    }
    (path,) = gen.generate(matrix, tmp_path / "wl")
    out = tmp_path / "out"
    r = run(driver, path, out, "--quiet")
    assert r.returncode == 0, r.stderr
    rows = check_csv_against_log(out)
    main = {k[1]: v for k, v in rows.items() if k[0] == "w1-s3-main"}
    assert sum(int(v["Op-Count"]) for v in main.values()) == 200  # totalOps split over 3 workers
    assert int(main["read"]["Byte-Count"]) == 3000 * int(main["read"]["Op-Count"])
    assert int(main["write"]["Byte-Count"]) == 3000 * int(main["write"]["Op-Count"])
    assert int(rows[("w1-s2-prepare", "prepare-write")]["Op-Count"]) == 2 * 7
    assert memserver.stats()["buckets"] == 0


def workload(name: str, description: str, *stages: str) -> str:
    """A workload-config XML around its workstages; `{cfg}` (the storage config) is filled in later."""
    return ('<?xml version="1.0" encoding="UTF-8" ?>\n'
            f'<workload name="{name}" description="{description}">\n'
            '  <storage type="s3" config="{cfg}" />\n'
            "  <workflow>\n" + "".join(stages) + "  </workflow>\n</workload>\n")


def init_stage(prefix: str) -> str:
    return (f'    <workstage name="init"><work type="init" workers="1" config="cprefix={prefix};containers=r(1,1)" />'
            "</workstage>\n")


def prepare_stage(prefix: str, workers: int, objects: int, sizes: str) -> str:
    return ('    <workstage name="prepare">\n'
            f'      <work type="prepare" workers="{workers}" config="cprefix={prefix};containers=r(1,1);'
            f'objects=r(1,{objects});sizes={sizes}" />\n'
            "    </workstage>\n")


PREPARE = workload("prep", "prepare only", init_stage("integ"), prepare_stage("integ", 2, 10, "c(20)KB"))

READ_ALL = workload("readall", "read every object once", """\
    <workstage name="main">
      <work name="readall" workers="2" totalOps="10" division="object">
        <operation type="read" ratio="100" config="cprefix=integ;containers=c(1);objects=r(1,10)" />
      </work>
    </workstage>
""")


def test_corrupted_object_fails_the_run(driver, memserver, tmp_path):
    cfg = memserver.storage_config()
    (tmp_path / "prep.xml").write_text(PREPARE.format(cfg=cfg))
    (tmp_path / "read.xml").write_text(READ_ALL.format(cfg=cfg))
    assert run(driver, tmp_path / "prep.xml", tmp_path / "p", "--quiet").returncode == 0
    good = run(driver, tmp_path / "read.xml", tmp_path / "good", "--quiet")
    assert good.returncode == 0, good.stderr
    memserver.corrupt("integ1", "myobjects_7")
    r = run(driver, tmp_path / "read.xml", tmp_path / "bad", "--quiet")
    assert r.returncode == 1, r.stderr
    assert "FAILED" in r.stderr
    out = tmp_path / "bad"
    rows = check_csv_against_log(out)
    row = rows[("w1-s1-main", "read")]
    assert int(row["Op-Count"]) == 9 and row["Succ-Ratio"] == "90%" and row["Status"] == "failed"
    failed = [o for o in op_log(out) if o["ok"] != "true"]
    assert [(o["container"], o["object"]) for o in failed] == [("integ1", "myobjects_7")]
    assert "checksum mismatch" in failed[0]["error"]
    s = summary(out)
    assert s["ok"] is False and s["stages"][0]["works"][0]["integrity_failures"] == 1


def test_unsupported_workload_refused_before_anything_runs(driver, memserver, tmp_path):
    before = memserver.stats()["requests"]
    # our mock-storage fixture has a filewrite work; with or without the storage override
    # only the filewrite is refused (mock storage and mock auth are accepted)
    out = tmp_path / "out"
    override = ["--storage-type", "s3", "--storage-config", memserver.storage_config()]
    want = 'workstage "bench" › work "upload-files" › operation "filewrite": operation type filewrite not supported'
    for extra in (override, []):
        r = run(driver, CONF / "mock-filewrite-refused.xml", out, *extra)
        assert r.returncode == 2
        assert want in r.stderr
        assert "nothing was run" in r.stderr
        assert "storage:" not in r.stderr and "auth:" not in r.stderr, r.stderr
        assert not out.exists()
    # an attribute the driver cannot honour, named with its element path
    text = PREPARE.format(cfg=memserver.storage_config())
    text = text.replace('<work type="prepare" workers="2"', '<work type="prepare" workers="2" afr="x" colour="red"')
    (tmp_path / "bad.xml").write_text(text)
    r = run(driver, tmp_path / "bad.xml", out)
    assert r.returncode == 2
    assert 'workstage "prepare" › work "prepare": attribute afr="x" is not an integer' in r.stderr
    assert 'workstage "prepare" › work "prepare": attribute colour not supported' in r.stderr
    # the swift + keystone fixture without a storage override
    r = run(driver, CONF / "integrity-check.xml", out)
    assert r.returncode == 2 and 'storage: attribute type="swift" not supported' in r.stderr
    assert 'auth: attribute type="keystone" not supported' in r.stderr
    assert not out.exists()
    assert memserver.stats()["requests"] == before == 0  # not one S3 request was sent


def test_bad_signature_is_rejected(driver, memserver, tmp_path):
    (tmp_path / "prep.xml").write_text(PREPARE.format(cfg=memserver.storage_config(secret="wrong")))
    r = run(driver, tmp_path / "prep.xml", tmp_path / "out", "--quiet")
    assert r.returncode == 1
    works = [w for st in summary(tmp_path / "out")["stages"] for w in st["works"]]
    assert any("SignatureDoesNotMatch" in e for w in works for e in w.get("errors", []))
    assert memserver.stats()["buckets"] == 0


def test_ceiling_reports_rows(driver, tmp_path):
    """The ceiling command (in-process memserver) writes one row per size, workers and op."""
    js = tmp_path / "ceiling.json"
    cmd = [str(driver), "ceiling", "--sizes", "4KB", "--workers", "1,2", "--seconds", "1", "--json", str(js)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rows = json.loads(js.read_text())["rows"]
    assert [(x["workers"], x["op"]) for x in rows] == [(1, "write"), (1, "read"), (2, "write"), (2, "read")]
    assert all(x["op_count"] > 0 and x["succ_ratio"] == 1 and x["size_bytes"] == 4000 for x in rows)


def test_csv_header_fixtures_match_output(driver, tmp_path):
    """The CSV headers are COSBench 0.4.2's column names (fixtures/csv/cosbench-0.4.2-columns.json)."""
    cols = json.loads((TOOL / "fixtures" / "csv" / "cosbench-0.4.2-columns.json").read_text())
    out = tmp_path / "out"
    assert run(driver, CONF / "no-storage.xml", out, "--time-scale", "0.001", "--quiet").returncode == 0
    header = (out / "w1-nostore.csv").read_text().splitlines()[0]
    assert header == ",".join(cols["workload_csv"])
    # a stage file: each group name then one empty cell per further column; beneath, the op names
    sc, ops = cols["stage_csv"], ["read", "write"]
    top, sub = [sc["first_column"]], [""]
    for m in sc["metrics"]:
        top += [m] + [""] * (len(ops) - 1)
        sub += ops
    top += [sc["version_group"]] + [""] * (len(sc["version_columns"]) - 1)
    sub += sc["version_columns"]
    stage = (out / "s3-main.csv").read_text().splitlines()[:2]
    assert stage == [",".join(top), ",".join(sub)]


def test_parse_reads_driver_output_and_old_cosbench_header(driver, tmp_path):
    from tools.cosbench import parser as parse

    out = tmp_path / "out"
    assert run(driver, CONF / "no-storage.xml", out, "--time-scale", "0.001", "--quiet").returncode == 0
    rows = parse.workload_rows(out / "w1-nostore.csv")
    assert [r["op_name"] for r in rows] == ["init", "prepare-write", "read", "write", "cleanup-delete", "dispose"]
    assert rows[1]["Op-Count"] == 800 and rows[1]["Succ-Ratio"] == 1.0 and rows[1]["status"] == "completed"
    long = parse.tidy(out, stack="mock")
    prep = {r["metric"]: r for r in long if r["op_name"] == "prepare-write"}
    assert prep["byte_count"]["value"] == 800 * 32000 and prep["byte_count"]["unit"] == "B"
    assert prep["op_count"]["stack"] == "mock" and prep["op_count"]["tool_kind"] == "stand-in:cosbench-driver"
    # the older COSBench exporter (no Avg-ProcTime), N/A values, a stage without requests
    old = tmp_path / "old"
    old.mkdir()
    (old / "w7-x.csv").write_text(
        "Stage,Op-Name,Op-Type,Op-Count,Byte-Count,Avg-ResTime,60%-ResTime,80%-ResTime,90%-ResTime,95%-ResTime,"
        "99%-ResTime,100%-ResTime,Throughput,Bandwidth,Succ-Ratio,Status,Detailed Status\n"
        "w7-s3-main,read,read,120,7680000,12.5,10,20,30,40,50,60,4,256000,99.17%,completed,"
        "submitted @ 2024-01-01 00:00:00,completed @ 2024-01-01 00:00:30\n"
        "delay,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,completed,completed @ 2024-01-01 00:01:00\n")
    rows = parse.workload_rows(old / "w7-x.csv")
    assert rows[0]["Succ-Ratio"] == pytest.approx(0.9917) and "Avg-ProcTime" not in rows[0]
    assert rows[0]["detailed_status"].count("@") == 2 and rows[1]["Op-Count"] is None
    assert {r["metric"] for r in parse.tidy(old)} >= {"op_count", "avg_res_time", "throughput"}


LIST_AND_RAMPUP = workload(
    "listramp", "list requests, and a rampup excluded from the metrics",
    init_stage("lr"), prepare_stage("lr", 1, 12, "c(100)B"), """\
    <workstage name="main">
      <work name="mix" workers="2" rampup="1" runtime="1" interval="1">
        <operation type="list" ratio="50" config="cprefix=lr;containers=c(1);objects=c(1)" />
        <operation type="read" ratio="50" config="cprefix=lr;containers=c(1);objects=u(1,12)" />
      </work>
    </workstage>
    <workstage name="cleanup">
      <work type="cleanup" workers="1" config="cprefix=lr;containers=r(1,1);objects=r(1,12)" />
    </workstage>
    <workstage name="dispose"><work type="dispose" workers="1" config="cprefix=lr;containers=r(1,1)" /></workstage>
""")


def test_list_operation_and_rampup_window(driver, memserver, tmp_path):
    (tmp_path / "w.xml").write_text(LIST_AND_RAMPUP.format(cfg=memserver.storage_config()))
    out = tmp_path / "out"
    r = run(driver, tmp_path / "w.xml", out, "--quiet")
    assert r.returncode == 0, r.stderr
    rows = check_csv_against_log(out)  # counts only the requests inside the window
    main = [o for o in op_log(out) if o["stage"] == "main"]
    assert any(o["counted"] == "false" for o in main) and any(o["counted"] == "true" for o in main)
    lst = rows[("w1-s3-main", "list")]
    # a listing of prefix myobjects_1 names myobjects_1, _10, _11, _12: its XML is the byte count
    assert int(lst["Op-Count"]) > 0 and int(lst["Byte-Count"]) > 200 * int(lst["Op-Count"])
    st = next(s for s in summary(out)["stages"] if s["name"] == "main")
    assert 0.9 < st["window_s"] < 1.5  # the 1 s runtime after the 1 s rampup
    stage_csv = (out / "s3-main.csv").read_text().splitlines()
    assert len(stage_csv) >= 2 + 2  # two header lines, then one row per 1 s interval
