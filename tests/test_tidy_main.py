"""repro.tidy.aggregate_main: the shared main of the studies' aggregate scripts (inference; serverless's
and mpifuse's have the same shape)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from repro import tidy


def _table(reason: bool) -> pd.DataFrame:
    """Two ok rows from one run, a failed run, two not-run configurations (one a gap of the paper)."""
    rows = [("a", "ok", 1.0, ""), ("a", "ok", 2.0, ""), ("b", "failed", None, ""),
            ("c", "not-run", None, "the paper did not run it"), ("d", "not-run", None, "")]
    df = pd.DataFrame(rows, columns=["raw_file", "status", "value", "reason"]).assign(metric="t", unit="s")
    return df if reason else df.drop(columns="reason")


def _main(tmp_path, df, tables, **kw):
    seen = {}

    def build(cfg):
        seen["cfg"] = cfg
        return df, df.groupby("raw_file", as_index=False)["value"].count()

    argv = ["--config", json.dumps({"x": 1}), "--measurements", str(tmp_path / "m.csv"),
            "--summary", str(tmp_path / "s.csv")]
    for name in tables:
        argv += [f"--{name}", str(tmp_path / f"{name}.csv")]
    rc = tidy.aggregate_main("doc", build, label="demo_aggregate", tables=tables, argv=argv, **kw)
    return rc, seen


def test_writes_the_tidy_table_the_summary_and_each_table_in_order(tmp_path, capsys):
    calls = []

    def limits(df, a):  # reads back the table just written, as inference's limits do
        calls.append("limits")
        back = pd.read_csv(a.measurements)
        return back[back.status == "ok"][["raw_file", "value"]]

    def extra(df, a):
        calls.append("extra")
        return df[["raw_file"]].head(1)

    rc, seen = _main(tmp_path, _table(reason=False), {"limits": limits, "extra": extra}, runs="runs")
    assert rc == 0 and seen["cfg"] == {"x": 1} and calls == ["limits", "extra"]
    m = pd.read_csv(tmp_path / "m.csv", keep_default_na=False)
    assert list(m.status) == ["ok", "ok", "failed", "not-run", "not-run"]
    assert list(pd.read_csv(tmp_path / "s.csv").value) == [2, 0, 0, 0]
    assert list(pd.read_csv(tmp_path / "limits.csv").value) == [1.0, 2.0]
    assert list(pd.read_csv(tmp_path / "extra.csv").raw_file) == ["a"]
    assert capsys.readouterr().out == "demo_aggregate: 5 rows from 4 runs: 1 ok, 1 failed, 2 not run\n"


def test_a_reason_column_counts_the_papers_gaps_apart(tmp_path, capsys):
    _main(tmp_path, _table(reason=True), {}, runs="configurations x repeats")
    assert capsys.readouterr().out == ("demo_aggregate: 5 rows from 4 configurations x repeats: "
                                       "1 ok, 1 failed, 1 not run as in the paper, 1 not run\n")


def test_counts_follow_the_statuses():
    """A run counted once however many rows it has; another status mix gives other counts."""
    df = _table(reason=False).drop_duplicates(subset=["raw_file"])
    assert tidy.run_counts(df) == "1 ok, 1 failed, 2 not run"
    df.loc[df.raw_file == "b", "status"] = "ok"
    assert tidy.run_counts(df) == "2 ok, 0 failed, 2 not run"


def test_a_missing_table_path_fails_naming_it(tmp_path, capsys):
    with pytest.raises(SystemExit):
        tidy.aggregate_main("doc", lambda cfg: None, label="x", tables={"limits": None},
                            argv=["--config", "{}", "--measurements", "m", "--summary", "s"])
    assert "--limits" in capsys.readouterr().err
