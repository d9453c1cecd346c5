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


@pytest.mark.usefixtures("mpifuse_ready")
def test_io_uring_variants_read_the_bytes_right_through_the_ring(tmp_path):
    """Issue 30: refined OSR (also with map_source) and the ceiling over FUSE-over-io_uring, with the job's
    n+1 ranks on this host (rank 1 reads, its callbacks wait on MPI for the other ranks' parts): every
    sha256sum equals the source's, every read's stats say its requests went through the ring, and the
    report's issue-30 rows come out of this raw file."""
    from tools.fuseceiling.ceiling import uring_offered
    if not uring_offered()[0]:
        pytest.skip("enable_uring is not Y here")
    variants = ["native", "osr-refined", "osr-refined-io_uring", "osr-refined-map-io_uring", "fuse-ceiling",
                "fuse-ceiling-io_uring"]
    rec, cfg, tag = run_speed(tmp_path, {"size": "3MB", "nodes": [2], "repeats": 1, "idle_s": 0,
                                         "variants": variants, "source": "scratch"}, "uring")
    assert rec["extra"]["failures"] == []
    ok = {m["labels"]["variant"]: m["value"] for m in rec["metrics"]
          if m["metric"] == "hash_ok" and m["labels"]["tool"] == "sha256sum"}
    assert ok == {v: 1 for v in variants}
    from studies.fusespeed import report as sr
    stats = [s for s in rec["extra"]["fs_stats"] if s["variant"].endswith("io_uring")]
    assert len(stats) == 6 and not [sr.ring_not_used(s) for s in stats if sr.ring_not_used(s)]
    for s in stats:
        tr = (s["stats"].get("fuseceiling") or s["stats"])["transport"]
        assert tr["transport"] == "io_uring" and tr["ring_reqs"] > 0 and tr["dev_rw_reqs"] == 0, (s["variant"], tr)
    assert rec["extra"]["fs_options"]["osr-refined-io_uring"]["options"]["io_uring"] is True
    t = sr.issue30(rec)
    assert set(t.variant) == {"fuse-ceiling-io_uring", "osr-refined", "osr-refined-io_uring",
                              "osr-refined-map-io_uring"}
    assert (t.rounds == 1).all() and (t.failed == 0).all()
    assert tag not in open("/proc/self/mounts").read()
