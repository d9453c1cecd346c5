"""Unit tests of the shared library: raw files, tidy tables, paths, claims."""

from __future__ import annotations

import json
import math

import pytest

from repro import claims, config, paramspace, rawio, tidy


def _record(**kw):
    rec = rawio.new_record("demo", "exp", {"source": "home", "nodes": 2}, 0, "real")
    rec["metrics"].append(rawio.metric("time", 1.5, "s", node=1))
    rec["metrics"].append(rawio.metric("time", 2.5, "s", node=2))
    rec.update(kw)
    return rawio.finish(rec)


def test_atomic_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "raw" / "a~1" / "rep~0.json"
    with pytest.raises(TypeError):
        rawio.write_json_atomic(target, {"x": object()})  # not serialisable mid-write
    assert not target.exists()
    assert list(target.parent.iterdir()) == []  # the temporary file is gone too


def test_truncated_raw_file_is_rejected(tmp_path):
    p = tmp_path / "rep~0.json"
    rawio.write_json_atomic(p, _record())
    text = p.read_text()
    p.write_text(text[: len(text) // 2])
    with pytest.raises(rawio.RawFileError, match="not valid JSON"):
        rawio.read(p)


@pytest.mark.parametrize("mutate, message", [
    (lambda r: r.pop("metrics"), "missing keys"),
    (lambda r: r.update(status="done"), "status"),
    (lambda r: r.update(system_kind="fake"), "system_kind"),
    (lambda r: r.update(status="failed", failure=None), "must say why"),
    (lambda r: r.update(metrics=[]), "without metrics"),
])
def test_schema_violations_are_named(mutate, message):
    rec = _record()
    mutate(rec)
    with pytest.raises(rawio.RawFileError, match=message):
        rawio.validate(rec)


def test_metric_rejects_non_finite():
    with pytest.raises(rawio.RawFileError):
        rawio.metric("time", math.nan, "s")


def test_collect_marks_ok_failed_and_not_run(tmp_path):
    ok = tmp_path / "results/demo/raw/source~home/nodes~2/rep~0.json"
    failed = tmp_path / "results/demo/raw/source~home/nodes~2/rep~1.json"
    missing = tmp_path / "results/demo/raw/source~home/nodes~2/rep~2.json"
    rawio.write_json_atomic(ok, _record())
    rawio.write_failure(failed, _record(rep=1), "hash mismatch on node 2")
    assert not failed.exists() and rawio.failure_path(failed).exists()
    df = tidy.collect([ok, failed, missing], "demo")
    assert sorted(df.status.tolist()) == ["failed", "not-run", "ok", "ok"]
    assert df[df.status == "ok"].value.tolist() == [1.5, 2.5]
    assert df[df.status != "ok"].value.isna().all()  # never a zero
    assert df[df.status == "failed"].failure.iloc[0] == "hash mismatch on node 2"
    nr = df[df.status == "not-run"].iloc[0]
    assert (nr.source, str(nr.nodes), nr.rep) == ("home", "2", 2)
    stats = tidy.summarize(df[df.status != "not-run"].assign(node=df.node), ["source", "nodes"])
    row = stats[stats.metric == "time"].iloc[0]
    assert (row["count"], row["mean"], row["failed"]) == (2, 2.0, 1)


def test_clear_failure_after_success(tmp_path):
    p = tmp_path / "results/demo/raw/x~1/rep~0.json"
    rawio.write_failure(p, _record(), "boom")
    rawio.clear_failure(p)
    assert not rawio.failure_path(p).exists()


def test_paramspace_roundtrip_and_sizes():
    path = paramspace.param_path({"source": "home", "variant": "osr", "nodes": 8, "size": "1GiB"})
    assert path == "source~home/variant~osr/nodes~8/size~1GiB"
    assert paramspace.parse_path(path + "/rep~3.json") == {
        "source": "home", "variant": "osr", "nodes": "8", "size": "1GiB", "rep": "3"}
    assert paramspace.size_bytes("1GiB") == 2**30
    assert paramspace.size_bytes("100KB") == 100_000
    assert paramspace.size_bytes("10MB") == 10**7
    with pytest.raises(ValueError):
        paramspace.size_bytes("ten megs")
    with pytest.raises(ValueError):
        paramspace.param_path({"bad": "a/b"})


def test_claim_verdicts():
    base = dict(study="s", claim_id="c", claim="x", paper_ref="r", target="t", output="o")
    assert claims.value_claim(claims.Claim(**base), 180247.92, 180247.92, abs_tol=0.005).verdict == "reproduced"
    assert claims.value_claim(claims.Claim(**base), 180248.00, 180247.92, abs_tol=0.005).verdict == "not reproduced"
    assert claims.value_claim(claims.Claim(**base), None, 1.0).verdict == "not run"
    assert claims.shape_claim(claims.Claim(**base), False, "a<b", "a>b").verdict == "not reproduced"
    assert claims.info_claim(claims.Claim(**base), 3.2, 7.3).verdict == "informative"


def test_claims_main_writes_builder_claims_and_counts(tmp_path, capsys):
    """repro.claims.main: --config and the named paths parsed, the builder's claims written to --out
    with the verdicts it gave, one summary line with the count of every verdict."""
    base = dict(study="s", claim_id="c", claim="x", paper_ref="r", target="t", output="o")
    seen = {}

    def builder(args, cfg):
        seen.update(cfg=cfg, m=args.measurements)
        return [claims.shape_claim(claims.Claim(**{**base, "claim_id": "a"}), True, "1<2", "a<b"),
                claims.shape_claim(claims.Claim(**{**base, "claim_id": "b"}), False, "2<1", "a>b"),
                claims.info_claim(claims.Claim(**{**base, "claim_id": "c"}), 3.0, 7.0)]

    out = tmp_path / "claims.csv"
    rc = claims.main("doc", "s", builder, paths=("measurements", "out"),
                     argv=["--config", '{"k": 1}', "--measurements", "m.csv", "--out", str(out)])
    assert rc == 0 and seen == {"cfg": {"k": 1}, "m": "m.csv"}
    df = claims.read(out)
    assert list(df.claim_id) == ["a", "b", "c"]
    assert list(df.verdict) == ["reproduced", "not reproduced", "informative"]
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == ("s_claims: 3 claims, 2 shape, reproduced 1, not reproduced 1, informative 1, "
                    "failed 0, not run 0, cluster-only 0")


def test_config_defaults_and_named_errors():
    import yaml

    full = yaml.safe_load(open(config.SCHEMA_DIR.parents[1] / "config" / "config.yaml"))
    cfg = config.validate(full)
    assert cfg["launcher"] == "local" and cfg["smoke"]["nodes"] == [2]
    bad = config.deep_merge(full, {"cluster": {"partition_nodes": 4}, "smoke": {"nodes": [1, 4]}})
    with pytest.raises(config.ConfigError, match=r"smoke\.nodes\[1\]: impossible layout, 4 system nodes \+ 1 "
                                                 r"driver node = 5 exceeds cluster\.partition_nodes = 4"):
        config.validate(bad)
    with pytest.raises(config.ConfigError, match=r"cloudcost\.onprem\.tiers\.standard\.servers\.count"):
        config.validate(config.deep_merge(full, {"cloudcost": {"onprem": {"tiers": {"standard": {
            "servers": {"count": "eight"}}}}}}))
    assert json.dumps(cfg)  # the validated config is plain data


def test_tidy_select_matches_all_values_and_absent_columns_give_no_rows():
    import pandas as pd
    df = pd.DataFrame({"a": [1, 1, 2], "b": ["x", "y", "x"]})
    assert tidy.select(df, a=1, b="x").index.tolist() == [0]
    assert tidy.select(df, b="x").index.tolist() == [0, 2]
    assert tidy.select(df, c=1).empty  # a configuration no run wrote
    assert tidy.select(df).index.tolist() == [0, 1, 2]


def test_watchdog_fires_once_on_an_overrun_phase_and_not_after_disarm(capsys):
    import time

    from repro import procs

    fired = []
    wd = procs.Watchdog(lambda what, s: fired.append((what, s)), label="study-x")
    wd.arm(0.1, "phase a")
    wd.disarm()
    time.sleep(0.5)
    assert fired == []  # disarmed in time: never fires
    wd.arm(0.1, "phase b")
    deadline = time.monotonic() + 5
    while not fired and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    assert fired == [("phase b", 0.1)]  # once, with what overran
