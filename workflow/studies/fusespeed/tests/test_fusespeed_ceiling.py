"""The speed benchmark's FUSE ceiling (tools/fuseceiling, mounted with OSR refined's knobs) and our
map_source variant of refined OSR end to end under mpirun: every reader reads the right bytes (the
ceiling's preload pattern, the source file through the mapping), the ceiling's counters are kept and
its knobs recorded, nothing is left mounted. No timings asserted."""

from __future__ import annotations


import pytest
from studies.fusespeed import run as speed

from fusespeed_testlib import mpifuse_ready, run_speed, study_config  # noqa: F401


def test_ceiling_options_follow_osr_refined(tmp_path):
    cfg = study_config(tmp_path)
    cfg["fs_options"] = {"max_read": "1MiB", "threads": False}
    cfg["fs_options_by_mode"] = {}
    assert speed.ceiling_options(cfg) == ["--max-read", str(1 << 20), "--readahead", str(4 << 20), "-s"]
    cfg["fs_options_by_mode"] = {"osr-refined": {"max_read": "128KiB", "readahead_kb": 256, "threads": True}}
    assert speed.ceiling_options(cfg) == ["--max-read", str(128 << 10), "--readahead", str(256 << 10)]
    cfg["fs_options_by_mode"]["osr-refined"]["readahead_kb"] = -1  # libmpifuse leaves it: the kernel's own
    assert speed.ceiling_options(cfg)[2:] == ["--readahead", "0"]


@pytest.mark.usefixtures("mpifuse_ready")
def test_ceiling_and_map_variants_read_the_bytes_right(tmp_path):
    rec, cfg, tag = run_speed(tmp_path, {"size": "3MB", "nodes": [1], "repeats": 1, "idle_s": 0,
                                         "variants": ["native", "osr-refined-map", "fuse-ceiling"],
                                         "source": "scratch"}, "ceil")
    assert rec["extra"]["failures"] == []
    ok = {(m["labels"]["variant"], m["labels"]["tool"]): m["value"] for m in rec["metrics"] if m["metric"] == "hash_ok"}
    assert ok == {("native", "sha256sum"): 1, ("osr-refined-map", "sha256sum"): 1, ("fuse-ceiling", "sha256sum"): 1}
    loads = [m for m in rec["metrics"] if m["metric"] == "load1"]
    assert len(loads) == 6  # beside every reader
    opts = rec["extra"]["fs_options"]
    assert opts["osr-refined-map"]["options"]["map_source"] is True
    assert opts["fuse-ceiling"]["options"]["fuseceiling"] == " ".join(speed.ceiling_options(cfg))
    ceil = [s["stats"]["fuseceiling"] for s in rec["extra"]["fs_stats"] if s["variant"] == "fuse-ceiling"]
    assert len(ceil) == 2 and all(c["read_bytes"] >= 3 * 10**6 and c["opens"] >= 1 for c in ceil), ceil
    mp = [s["stats"] for s in rec["extra"]["fs_stats"] if s["variant"] == "osr-refined-map"]
    assert all(st["map_source"] is True and st["read_bytes"] >= 3 * 10**6 for st in mp), mp
    assert tag not in open("/proc/self/mounts").read()
