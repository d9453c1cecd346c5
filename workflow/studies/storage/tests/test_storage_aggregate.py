"""The storage tidy table and summary from hand-written raw records (no stack needed): integer
parameters stay integers in summary.csv (it once said workers 1.0 / 4.0 because the fio rows have no
workers), and a configuration with no raw file yet (not-run, its parameters parsed from the path as
text) sits beside measured ones without breaking the summary."""

from __future__ import annotations

import pandas as pd
from repro import paramspace, rawio, tidy

from studies.storage import aggregate, layout

from .storage_testlib import section


def _write(root, cfg, skip=()):
    for p in layout.expected_raw(cfg):
        pp = paramspace.parse_path(p)
        if p in skip or "stack" not in pp:
            continue
        rec = rawio.new_record("storage", pp["benchmark"], {"stack": pp["stack"], "benchmark": pp["benchmark"],
                               "size": pp["size"], "workers": int(pp["workers"]), "nodes": 1},
                               int(pp["rep"]), "real", {})
        rec["metrics"] = [rawio.metric("throughput", 100.0 * int(pp["workers"]) + int(pp["rep"]), "op/s", op="all")]
        rawio.write_json_atomic(root / p, rawio.finish(rec))
    for r in range(cfg["repeats"]):
        rec = rawio.new_record("storage", "limit-fio", {"limit": "fio"}, r, "real", {})
        rec["metrics"] = [rawio.metric("bandwidth", 1e9, "B/s", rw="read", bs="4k", direct="True")]
        rawio.write_json_atomic(root / layout.limit_path("fio", r), rawio.finish(rec))


def test_summary_keeps_workers_integer_and_shows_not_run(tmp_path):
    cfg = section()
    missing = layout.raw_path("juicefs", "cosbench", cfg["cosbench"]["sizes"][-1], cfg["cosbench"]["workers"][-1], 1)
    _write(tmp_path, cfg, skip={missing})
    df = aggregate.measurements(cfg, root=tmp_path)
    out = tmp_path / "summary.csv"
    tidy.write_csv(tidy.summarize(df, aggregate.SUMMARY_BY), out)
    s = pd.read_csv(out, dtype=str, keep_default_na=False)
    cos = s[s["benchmark"] == "cosbench"]
    assert set(cos["workers"]) == {str(w) for w in cfg["cosbench"]["workers"]}, set(cos["workers"])
    assert set(s[s["benchmark"] == "mdtest"]["workers"]) == {str(t) for t in cfg["mdtest"]["tasks"]}
    assert set(s[s["limit"] == "fio"]["workers"]) == {""}
    # the measured mean per configuration equals the raw files' values; the missing one is counted not-run
    w = cfg["cosbench"]["workers"][-1]
    ok = cos[(cos["stack"] == "ceph") & (cos["workers"] == str(w)) & (cos["metric"] == "throughput")]
    assert {float(v) for v in ok["mean"]} == {100.0 * w + (cfg["repeats"] - 1) / 2}
    nr = s[(s["stack"] == "juicefs") & (s["not_run"] != "0")]
    assert len(nr) == 1 and nr.iloc[0]["workers"] == str(w) and nr.iloc[0]["size"] == cfg["cosbench"]["sizes"][-1]
