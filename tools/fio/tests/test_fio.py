"""fio: the parser against captured real outputs (fixtures/), the runner against a real fio run."""

import json
from pathlib import Path

import pytest

from tools.fio import parser as parse, runner

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def fixture(name):
    return FIXTURES / f"{name}.json"


def test_fixtures_are_real_fio_json():
    files = sorted(FIXTURES.glob("*.json"))
    assert len(files) >= 4
    for f in files:
        data = json.loads(f.read_text())
        assert data["fio version"].startswith("fio-")
        assert data["jobs"] and data["jobs"][0]["error"] == 0


@pytest.mark.parametrize("name,direction", [("read~1m", "read"), ("write~1m", "write"),
                                            ("randread~4k", "read"), ("randwrite~4k", "write")])
def test_rows_equal_the_raw_numbers(name, direction):
    raw = json.loads(fixture(name).read_text())["jobs"][0]
    rows = parse.rows(parse.load(fixture(name)), name)
    # only the direction that moved data has rows
    assert {r["direction"] for r in rows} == {direction}
    by_metric = {r["metric"]: r for r in rows}
    d = raw[direction]
    assert by_metric["bandwidth"]["value"] == float(d["bw_bytes"]) and by_metric["bandwidth"]["unit"] == "B/s"
    assert by_metric["iops"]["value"] == pytest.approx(d["iops"]) and by_metric["iops"]["unit"] == "op/s"
    assert by_metric["lat_mean"]["value"] == pytest.approx(d["lat_ns"]["mean"] / 1000)
    assert by_metric["lat_p99"]["value"] == pytest.approx(d["clat_ns"]["percentile"]["99.000000"] / 1000)
    # parameters come from the job's own options
    opts = raw["job options"]
    for r in rows:
        assert (r["rw"], r["bs"], r["iodepth"], r["direct"]) == (opts["rw"], opts["bs"], opts["iodepth"],
                                                                 opts["direct"])
        assert set(parse.COLUMNS) == set(r)


def test_bandwidth_is_bytes_over_runtime():
    """fio's bw_bytes is io_bytes over the job's runtime (ms): the parser must not rescale it."""
    for name in ("read~1m", "write~1m"):
        d = json.loads(fixture(name).read_text())["jobs"][0]
        d = d["read"] if d["read"]["io_bytes"] else d["write"]
        bw = next(r["value"] for r in parse.rows(parse.load(fixture(name))) if r["metric"] == "bandwidth")
        assert bw == pytest.approx(d["io_bytes"] / (d["runtime"] / 1000), rel=0.02)


def test_bad_inputs_are_refused(tmp_path):
    notfio = tmp_path / "x.json"
    notfio.write_text('{"jobs": []}')
    with pytest.raises(parse.FioParseError, match="not fio JSON"):
        parse.rows(parse.load(notfio), str(notfio))
    text = tmp_path / "t.json"
    text.write_text("fio: no JSON here")
    with pytest.raises(parse.FioParseError, match="no JSON"):
        parse.load(text)
    failed = json.loads(fixture("read~1m").read_text())
    failed["jobs"][0]["error"] = 5
    with pytest.raises(parse.FioParseError, match="failed with error 5"):
        parse.rows(failed, "failed")


def test_cli_writes_csv(capsys):
    assert parse.main([str(fixture("read~1m")), str(fixture("randwrite~4k"))]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split(",") == list(parse.COLUMNS)
    assert len(lines) == 1 + 8


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="bad size"):
        runner.parse_size("4kb")
    assert runner.parse_size("4m") == 4 << 20


def test_real_fio_run(tmp_path):
    out = tmp_path / "out"
    files = runner.run_all(tmp_path, out, ["4k", "64k"], file_size="2m", runtime=1, iodepth=4)
    assert sorted(f.name for f in files) == sorted(
        ["write~4k.json", "read~4k.json", "write~64k.json", "read~64k.json", "randwrite~4k.json", "randread~4k.json"])
    rows = parse.parse_files(files)
    assert all(r["value"] > 0 for r in rows if r["metric"] in ("bandwidth", "iops"))
    assert {r["bs"] for r in rows} == {"4k", "64k"}
    assert not (tmp_path / "fio-limit.dat").exists()
