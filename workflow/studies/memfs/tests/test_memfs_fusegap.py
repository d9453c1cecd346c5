"""Issue 22's table (studies/memfs/fusegap.py): composite, ratios, bound and verdict recomputed from hand-made
raw records, each verdict shown to flip on contradicting data (a ratio above 1.0 of any limit is a measurement
error, a median under 0.8 of the composite is not met); and one tiny real job (memcached, MemFS, the FUSE
ceiling, mcbench) whose raw record has every measurement. No speed is asserted."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest

from studies.memfs import fusegap as G

REPO = Path(__file__).resolve().parents[4]


def _m(system, op, streams, mib_s, variant="", transfer="1MiB", load=1.0):
    m = {"system": system, "op": op, "streams": streams, "mib_s": mib_s, "variant": variant, "transfer": transfer,
         "transfer_bytes": G.size_bytes(transfer), "bytes": 64 << 20, "loadavg": [load, 0, 0],
         "loadavg_after": [load + 0.5, 0, 0], "options": [], "counters": {}}
    if system == "memcached":
        m.update(value_size=524288, threads=streams)
    return m


def _rec(rep, memfs, mc, ceil, op="write", streams=1, transfer="1MiB"):
    return {"rep": rep, "host": "h", "nproc": 2, "cpus": "", "started_at": "t", "measurements": [
        _m("memcached", op, streams, mc, transfer=transfer),
        _m("fuseceiling", op, streams, ceil, "paper", transfer),
        _m("memfs", op, streams, memfs, "paper", transfer)]}


def _table(recs):
    return G.gap_table(G.run_rows(recs))


def test_composite_adds_per_byte_costs():
    assert G.composite(1000.0, 1000.0) == pytest.approx(500.0)
    assert G.composite(3000.0, 1500.0) == pytest.approx(1000.0)
    assert math.isnan(G.composite(math.nan, 1000.0))


def test_met_bound_and_min_median_max():
    # composite = 1000; MemFS 850/900/950/800/820 -> ratios 0.85 0.9 0.95 0.8 0.82; ceiling lower: it bounds
    recs = [_rec(r, bw, 3000.0, 1500.0) for r, bw in enumerate([850, 900, 950, 800, 820])]
    (row,) = _table(recs)
    assert row["reps"] == 5 and row["verdict"] == G.MET and row["bound"] == "FUSE ceiling"
    assert row["composite_mib_s_median"] == pytest.approx(1000.0)
    assert (row["ratio_composite_min"], row["ratio_composite_median"], row["ratio_composite_max"]) == \
        pytest.approx((0.80, 0.85, 0.95))
    assert row["ratio_memcached_median"] == pytest.approx(850 / 3000)
    assert row["ratio_ceiling_median"] == pytest.approx(850 / 1500)
    assert row["bound_reps"] == "5/5" and row["load_max"] == pytest.approx(1.5)


def test_contradicting_data_not_met():
    # the same limits, MemFS at 0.5-0.79 of the composite: not met
    recs = [_rec(r, bw, 3000.0, 1500.0) for r, bw in enumerate([500, 790, 600, 700, 650])]
    (row,) = _table(recs)
    assert row["verdict"] == G.NOT_MET and row["ratio_composite_median"] == pytest.approx(0.65)


def test_above_the_composite_switches_to_the_pipelined_limit():
    # one repeat beats the composite (1100 > 1000): the costs did not add (overlap), so the limit in use is
    # the slower stage alone, min(3000, 1500) = 1500; 900/1500 = 0.6: not met
    recs = [_rec(r, bw, 3000.0, 1500.0) for r, bw in enumerate([900, 1100, 900, 900, 900])]
    (row,) = _table(recs)
    assert row["limit_used"] == G.PIPELINED and row["verdict"] == G.NOT_MET
    assert row["ratio_limit_median"] == pytest.approx(0.6) and row["ratio_composite_max"] == pytest.approx(1.1)
    # contradicting: at 1300-1400 MiB/s (0.87-0.93 of the pipelined limit) it is met
    recs = [_rec(r, bw, 3000.0, 1500.0) for r, bw in enumerate([1300, 1400, 1350, 1300, 1300])]
    assert _table(recs)[0]["verdict"] == G.MET


def test_above_one_is_a_measurement_error_with_no_ratio():
    # beating the ceiling itself in one repeat (1600 > 1500): a measurement error, ratios blank
    recs = [_rec(r, bw, 3000.0, 1500.0) for r, bw in enumerate([900, 1600, 900, 900, 900])]
    (row,) = _table(recs)
    assert row["verdict"] == G.MEASUREMENT_ERROR
    assert math.isnan(row["ratio_composite_median"]) and math.isnan(row["ratio_limit_median"])
    assert "ceiling 1.07" in row["invalid_ratios"]
    # beating raw memcached alone, too (memcached slower than MemFS in a repeat)
    recs = [_rec(r, 400.0, 300.0 if r == 2 else 3000.0, 1e9) for r in range(5)]
    (row,) = _table(recs)
    assert row["verdict"] == G.MEASUREMENT_ERROR and "memcached 1.33" in row["invalid_ratios"]


def test_cpu_per_gib_columns():
    rec = _rec(0, 900.0, 3000.0, 1500.0)
    for m, cpu in zip(rec["measurements"], ({"client": 0.1, "daemon": 0.0, "servers": 0.2},
                                            {"client": 0.05, "daemon": 0.1, "servers": 0.0},
                                            {"client": 0.05, "daemon": 0.2, "servers": 0.25}), strict=True):
        m["cpu"] = cpu  # 64 MiB each: x16 per GiB
    (row,) = G.run_rows([rec])
    assert row["memcached_cpu_s_per_gib"] == pytest.approx(4.8) and row["ceiling_cpu_s_per_gib"] == pytest.approx(2.4)
    assert row["memfs_cpu_s_per_gib"] == pytest.approx(8.0) and row["memfs_extra_cpu_s_per_gib"] == pytest.approx(0.8)


def test_bound_memcached_and_no_target_for_small_transfers():
    recs = [_rec(r, 300.0, 1000.0, 4000.0, transfer="4KiB") for r in range(5)]
    (row,) = _table(recs)
    assert row["bound"] == "memcached" and row["verdict"] == G.INFO and row["transfer"] == "4KiB"


def test_missing_limit_is_not_run():
    rec = _rec(0, 500.0, 1000.0, 1000.0)
    rec["measurements"] = [m for m in rec["measurements"] if m["system"] != "fuseceiling"]
    (row,) = _table([rec])
    assert row["verdict"] == G.NOT_RUN


def test_table_cli_writes_csv_and_md(tmp_path):
    raws = []
    for r, bw in enumerate([850, 900, 950]):
        p = tmp_path / f"rep~{r}.json"
        p.write_text(json.dumps(_rec(r, bw, 3000.0, 1500.0)))
        raws.append(str(p))
    assert G.main(["table", *raws, "--runs", str(tmp_path / "runs.csv"), "--table", str(tmp_path / "t.csv"),
                   "--md", str(tmp_path / "t.md")]) == 0
    import csv
    rows = list(csv.DictReader(open(tmp_path / "t.csv")))
    assert len(rows) == 1 and rows[0]["verdict"] == G.MET and float(rows[0]["ratio_composite_median"]) == 0.9
    assert len(list(csv.DictReader(open(tmp_path / "runs.csv")))) == 3
    assert "| write | 1 | 1MiB | paper | 3 |" in (tmp_path / "t.md").read_text()


def _have_all():
    bins = [REPO / "systems/memfs/build/memfs", REPO / "systems/memfs/build/mcbench",
            REPO / "tools/fuseceiling/build/fuseceiling"]
    if os.environ.get("MEMFS_BIN"):
        bins[0] = Path(os.environ["MEMFS_BIN"])
    if os.environ.get("MCBENCH_BIN"):
        bins[1] = Path(os.environ["MCBENCH_BIN"])
    missing = [str(b) for b in bins if not b.exists()]
    if not shutil.which("memcached"):
        missing.append("memcached")
    if not os.path.exists("/dev/fuse"):
        missing.append("/dev/fuse")
    return missing


def test_one_tiny_real_job(tmp_path):
    missing = _have_all()
    if missing:
        pytest.skip(f"not built / not here: {missing}")
    cfg = {"memfs": {"stripe_size": 524288}, "fuse_gap": {
        "servers": 2, "memcached_mem_mb": 128, "memcached_values": ["512KiB"],
        "transfers": [{"size": "1MiB", "ops": ["write", "read"], "streams": [2], "bytes": "4MiB"}],
        "variants": [{"name": "paper", "memfs": [], "ceiling": ["--max-read", "512k"]}]}}
    out = tmp_path / "raw" / "fusegap" / "rep~0.json"
    assert G.main(["fusegap", "--config", json.dumps(cfg), "--rep", "0", "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    got = sorted((m["system"], m["op"]) for m in rec["measurements"])
    assert got == sorted([(s, op) for s in ("memcached", "fuseceiling", "memfs") for op in ("write", "read")])
    for m in rec["measurements"]:
        assert m["streams"] == 2 and m["bytes"] == 4 << 20 and m["mib_s"] > 0 and len(m["loadavg"]) == 3
    fs = {(m["system"], m["op"]): m for m in rec["measurements"]}
    assert fs[("memfs", "write")]["counters"]["io.bytes_written"] == 4 << 20
    assert fs[("fuseceiling", "read")]["counters"]["read_bytes"] == 4 << 20
    (row,) = [r for r in G.gap_table(G.run_rows([rec])) if r["path"] == "write"]
    assert row["reps"] == 1 and row["memcached_threads"] in ("2", "8")  # the faster of 2 streams, 8 in flight
    assert sorted(t["threads"] for t in fs[("memcached", "write")]["tries"]) == [2, 8]


def test_schema_names_a_bad_key():
    import jsonschema
    import yaml
    schema = yaml.safe_load((REPO / "workflow/studies/memfs/schema.yaml").read_text())["properties"]["fuse_gap"]
    jsonschema.validate({"enabled": True, "reps": 5, "cpus": "0-1", "io_uring": ["paper"]}, schema)
    assert "default" not in schema["properties"]["io_uring"]  # absent: today's run jobs keep their parameters
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"io_uring": "paper"}, schema)
    with pytest.raises(jsonschema.ValidationError, match="stream"):
        jsonschema.validate({"stream": [1, 8]}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"transfers": [{"size": "1MB", "ops": ["write"], "streams": [1], "bytes": "1MiB"}]}, schema)


# ----------------------------------------------------------------------------- issue 30: both transports
def _mt(system, op, mib_s, variant, transport, base="paper", used=None, check_ok=True, streams=1):
    m = _m(system, op, streams, mib_s, variant)
    if system != "memcached":
        m.update(transport=transport, base_variant=base, transport_used=used or transport,
                 check={"bytes": 8 << 20, "equal": check_ok, "ok": check_ok})
    return m


def _rec2(rep, memfs_dev, memfs_ring, mc, ceil_dev, ceil_ring, op="write", streams=1, **kw):
    ms = [_m("memcached", op, streams, mc),
          _mt("fuseceiling", op, ceil_dev, "paper", G.DEV, streams=streams),
          _mt("memfs", op, memfs_dev, "paper", G.DEV, streams=streams),
          _mt("fuseceiling", op, ceil_ring, "paper-io_uring", G.URING, streams=streams),
          _mt("memfs", op, memfs_ring, "paper-io_uring", G.URING, streams=streams, **kw)]
    return {"rep": rep, "host": "h", "nproc": 2, "cpus": "", "started_at": "t", "measurements": ms}


def test_both_ceilings_composites_ratios_and_bound():
    # memcached 3000; ceiling 1500 over /dev/fuse (composite 1000), 2500 over io_uring (composite 1363.6)
    recs = [_rec2(r, 900.0, 1200.0, 3000.0, 1500.0, 2500.0) for r in range(3)]
    rows = {r["variant"]: r for r in _table(recs)}
    paper, ring = rows["paper"], rows["paper-io_uring"]
    comp_ring = 1 / (1 / 3000 + 1 / 2500)
    for row in (paper, ring):
        assert row["composite_dev_fuse_mib_s_median"] == pytest.approx(1000.0)
        assert row["composite_io_uring_mib_s_median"] == pytest.approx(comp_ring)
        assert row["bound_dev_fuse"] == "FUSE ceiling (dev-fuse)" and row["bound_io_uring"] == "FUSE ceiling (io_uring)"
    assert paper["transport"] == G.DEV and ring["transport"] == G.URING and ring["base_variant"] == "paper"
    assert paper["ratio_composite_dev_fuse_median"] == pytest.approx(0.9)
    assert paper["ratio_composite_io_uring_median"] == pytest.approx(900 / comp_ring)
    assert ring["ratio_composite_io_uring_median"] == pytest.approx(1200 / comp_ring)
    assert ring["ratio_composite_dev_fuse_median"] == pytest.approx(1.2)
    # the verdict is against the composite of the row's own transport: paper 0.9 met, io_uring 0.88 met
    assert paper["verdict"] == G.MET and ring["verdict"] == G.MET
    assert ring["ratio_composite_median"] == pytest.approx(1200 / comp_ring)
    assert paper["data_check"] == ring["data_check"] == "ok"


def test_contradicting_io_uring_ceiling_moves_bound_ratio_and_verdict():
    # the ring's ceiling 5000 (> memcached): memcached bounds it, composite 1875, MemFS 1200 is 0.64 -> not met
    recs = [_rec2(r, 900.0, 1200.0, 3000.0, 1500.0, 5000.0) for r in range(3)]
    ring = {r["variant"]: r for r in _table(recs)}["paper-io_uring"]
    assert ring["bound_io_uring"] == "memcached" and ring["bound"] == "memcached"
    assert ring["composite_io_uring_mib_s_median"] == pytest.approx(1875.0)
    assert ring["ratio_composite_io_uring_median"] == pytest.approx(0.64)
    assert ring["verdict"] == G.NOT_MET


def test_failed_data_check_is_no_result():
    recs = [_rec2(r, 900.0, 1200.0, 3000.0, 1500.0, 2500.0, check_ok=r != 1) for r in range(3)]
    rows = {r["variant"]: r for r in _table(recs)}
    ring = rows["paper-io_uring"]
    assert ring["verdict"] == G.CHECK_FAILED and ring["data_check"] == "failed" and "rep 1" in ring["invalid_ratios"]
    assert math.isnan(ring["ratio_composite_io_uring_median"]) and math.isnan(ring["ratio_limit_median"])
    assert rows["paper"]["verdict"] == G.MET  # its own mounts checked out


def test_io_uring_not_used_is_no_result():
    recs = [_rec2(r, 900.0, 1200.0, 3000.0, 1500.0, 2500.0, used=G.DEV if r == 2 else None) for r in range(3)]
    ring = {r["variant"]: r for r in _table(recs)}["paper-io_uring"]
    assert ring["verdict"] == G.NOT_USED
    assert "rep 2" in ring["invalid_ratios"] and "memfs dev-fuse" in ring["invalid_ratios"]
    assert math.isnan(ring["ratio_composite_median"])


def test_transport_used_from_counters():
    assert G.transport_used({"transport.ring_reqs": 40}) == G.URING
    assert G.transport_used({"transport.ring_reqs": 40, "transport.dev_rw_reqs": 1}) == "mixed"
    assert G.transport_used({}) == G.DEV


def test_io_uring_variants_from_config():
    g = G.gap_config({"fuse_gap": {"io_uring": ["paper", "splice"]}})
    vs = {v["name"]: v for v in G.all_variants(g)}
    assert len(vs) == len(G.DEFAULTS["variants"]) + 2
    assert vs["paper-io_uring"]["memfs"] == ["--transport=io_uring"]
    assert vs["paper-io_uring"]["ceiling"] == ["--max-read", "512k", "--transport", "io_uring"]
    assert vs["splice-io_uring"]["memfs"] == ["--transport=io_uring"]  # ring replies are never spliced
    assert vs["splice-io_uring"]["ceiling"] == ["--max-read", "512k", "--transport", "io_uring"]
    assert vs["paper"]["transport"] == G.DEV and vs["splice-io_uring"]["base"] == "splice"
    assert len(G.all_variants(G.gap_config({}))) == len(G.DEFAULTS["variants"])  # none unless asked
    with pytest.raises(SystemExit, match="no variant 'papr'"):
        G.all_variants(G.gap_config({"fuse_gap": {"io_uring": ["papr"]}}))


def test_md_has_the_both_transports_table(tmp_path):
    tab = _table([_rec2(r, 900.0, 1200.0, 3000.0, 1500.0, 2500.0) for r in range(2)])
    G.write_md(tab, str(tmp_path / "t.md"))
    md = (tmp_path / "t.md").read_text()
    assert "Over both transports" in md and "| write | 1 | 1MiB | paper-io_uring | io_uring | 2 | 1200 |" in md
    G.write_md([r for r in tab if r["transport"] == G.DEV], str(tmp_path / "d.md"))
    assert "Over both transports" not in (tmp_path / "d.md").read_text()


def test_one_tiny_real_job_over_io_uring(tmp_path):
    missing = _have_all()
    if missing:
        pytest.skip(f"not built / not here: {missing}")
    from tools.fuseceiling.ceiling import uring_offered
    if not uring_offered()[0]:
        pytest.skip("enable_uring is not Y here")
    cfg = {"memfs": {"stripe_size": 524288}, "fuse_gap": {
        "servers": 2, "memcached_mem_mb": 128, "memcached_values": ["512KiB"],
        "transfers": [{"size": "1MiB", "ops": ["write", "read"], "streams": [2], "bytes": "4MiB"}],
        "variants": [{"name": "paper", "memfs": [], "ceiling": ["--max-read", "512k"]}], "io_uring": ["paper"]}}
    out = tmp_path / "raw" / "fusegap" / "rep~0.json"
    assert G.main(["fusegap", "--config", json.dumps(cfg), "--rep", "0", "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    fs = {(m["system"], m["variant"], m["op"]): m for m in rec["measurements"] if m["system"] != "memcached"}
    assert len(fs) == 8
    for (system, variant, op), m in fs.items():
        assert m["check"]["ok"] and m["check"]["equal"] and m["check"]["bytes"] > 8 << 20, (system, variant, op)
        want = G.URING if variant.endswith("io_uring") else G.DEV
        assert m["transport"] == want and m["transport_used"] == want, (system, variant, op, m["counters"])
        if want == G.URING:
            assert m["counters"]["transport.ring_reqs"] > 0 and not m["counters"].get("transport.dev_rw_reqs")
    assert fs[("memfs", "paper-io_uring", "write")]["counters"]["io.bytes_written"] == 4 << 20
    rows = {(r["variant"], r["path"]): r for r in G.gap_table(G.run_rows([rec]))}
    r = rows[("paper-io_uring", "read")]
    assert r["data_check"] == "ok" and r["verdict"] not in (G.CHECK_FAILED, G.NOT_USED)
    assert r["ceiling_io_uring_mib_s_median"] > 0 and r["ceiling_dev_fuse_mib_s_median"] > 0
