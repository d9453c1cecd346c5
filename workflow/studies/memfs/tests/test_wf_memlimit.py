"""montage-memlimit: the claim "AMFS's scheduler node runs out of memory where MemFS completes"
takes its verdict from the raw/failure records only; contradicting records do not reproduce it."""

from __future__ import annotations

from pathlib import Path

import pytest
from repro import rawio

from studies.memfs import wf_memlimit as W
from studies.memfs.wf_memlimit_run import node_snapshot

LIMIT, REF = 22, 256
RAW = "results/memfs/raw/experiment~montage-memlimit/design~{d}/memcached_mb~{mb}/rep~0.json"


def _rec(design):
    return rawio.new_record("memfs", "workflow_montage", {"workflow": "montage", "design": design, "nodes": 2,
                                                          "tasks_per_node": 1}, 0, "stand-in:network-namespaces")


def _ok(tmp, design, mb, sched=4.2e6, other=4.3e6, mosaic=True):
    rec = _rec(design)
    rec["sanity"] = {"ok": mosaic}
    rec["extra"] = {"node_stats": [{"node": 1, "data_bytes": sched}, {"node": 2, "data_bytes": other}]}
    rec["metrics"].append(rawio.metric("parallel_time", 2.0, "s"))
    rawio.finish(rec)
    path = tmp / RAW.format(d=design, mb=mb)
    rawio.write_json_atomic(path, rec)
    return str(path)


def _failed(tmp, design, mb, enospc=(0, 0), why='task mBackground failed on node 1: msg="could not close the file"'):
    rec = _rec(design)
    rec["extra"] = {"at_failure": {"nodes": [
        {"node": i + 1, "memcached_bytes": 1, "memcached_limit_bytes": mb << 20, "memfs_enospc": e, "memfs_eio": 0}
        for i, e in enumerate(enospc)]}}
    path = tmp / RAW.format(d=design, mb=mb)
    rawio.write_failure(path, rec, why)
    return str(path)


def _claims(tmp, runs):
    """runs: {(design, mb): ('ok'|'oom-sched'|'oom-other'|'other-failure'|'missing')}."""
    raws = []
    for (d, mb), what in runs.items():
        if what == "ok":
            raws.append(_ok(tmp, d, mb, sched=7.45e6 if d == "locality" else 4.2e6))
        elif what == "bad-mosaic":
            raws.append(_ok(tmp, d, mb, mosaic=False))
        elif what == "oom-sched":
            raws.append(_failed(tmp, d, mb, enospc=(3, 0)))
        elif what == "oom-other":
            raws.append(_failed(tmp, d, mb, enospc=(0, 2)))
        elif what == "other-failure":
            raws.append(_failed(tmp, d, mb, enospc=(0, 0), why="TimeoutError: no reply from the agent"))
        else:
            raws.append(str(tmp / RAW.format(d=d, mb=mb)))
    t = W.runs_table(raws)
    return t, {c.claim_id: c for c in W.build(t, LIMIT, REF, 2)}


def _matrix(loc22, mem22, loc24="ok", mem20="oom-other"):
    return {("memfs", 20): mem20, ("memfs", LIMIT): mem22, ("memfs", 24): "ok", ("memfs", REF): "ok",
            ("locality", 20): "oom-sched", ("locality", LIMIT): loc22, ("locality", 24): loc24,
            ("locality", REF): "ok"}


def test_reproduced_when_locality_scheduler_oom_and_memfs_completes(tmp_path):
    t, c = _claims(tmp_path, _matrix("oom-sched", "ok"))
    assert c["M1"].verdict == "reproduced"
    assert c["M2"].verdict == "reproduced"
    assert "MemFS 22 MB, locality 24 MB" in c["M2"].reproduced
    # the numbers of the note come from the records
    assert "7.45" in c["M1"].note and "limit 22 MB" in c["M1"].note and "19/17/16/16 GB" in c["M1"].note
    row = t[(t.design == "locality") & (t.memcached_mb == "22")].iloc[0]
    assert row.status == "failed" and row.oom_nodes == "1" and row.scheduler_enospc == 3


@pytest.mark.parametrize("loc22,mem22", [
    ("ok", "ok"),                       # both complete
    ("oom-sched", "oom-other"),         # both fail
    ("other-failure", "ok"),            # locality fails, but not for memory
    ("oom-other", "ok"),                # locality's store full on a node that is not the scheduler node
    ("oom-sched", "bad-mosaic"),        # MemFS "completes" with a wrong mosaic
])
def test_contradicting_records_do_not_reproduce(tmp_path, loc22, mem22):
    _t, c = _claims(tmp_path, _matrix(loc22, mem22))
    assert c["M1"].verdict == "not reproduced", (loc22, mem22, c["M1"].reproduced)


def test_missing_record_is_not_run(tmp_path):
    _t, c = _claims(tmp_path, _matrix("oom-sched", "missing"))
    assert c["M1"].verdict == "not run"
    assert "not run" in c["M1"].reproduced


def test_m2_not_reproduced_when_memfs_needs_as_much(tmp_path):
    # MemFS fails at 22 too, locality completes at 24: both need 24 MB
    _t, c = _claims(tmp_path, _matrix("oom-sched", "oom-other", loc24="ok"))
    assert c["M2"].verdict == "not reproduced"
    _t, c = _claims(tmp_path, {("memfs", 22): "oom-other", ("memfs", REF): "ok",
                               ("locality", 22): "oom-sched", ("locality", REF): "ok"})
    assert c["M2"].verdict == "not reproduced"  # MemFS never completes under a limit


def test_node_snapshot_sums_enospc_over_mounts():
    rows = [{"node": 0, "memcached": {"bytes": 5, "limit_maxbytes": 22 << 20, "curr_items": 3},
             "mounts": [{"memfs": {"errors": {"enospc": 2, "eio": 0}}}, {"memfs": {"errors": {"enospc": 1}}}]},
            {"node": 1, "memcached": {}, "mounts": [{"error": "gone"}]}]
    snap = node_snapshot(rows)
    assert snap[0] == {"node": 1, "memcached_bytes": 5, "memcached_limit_bytes": 22 << 20, "memcached_items": 3,
                       "memfs_enospc": 3, "memfs_eio": 0}
    assert snap[1]["node"] == 2 and snap[1]["memfs_enospc"] == 0


def test_failure_record_path_is_beside_raw(tmp_path):
    p = _failed(tmp_path, "locality", 22, enospc=(1, 0))
    assert not Path(p).exists() and rawio.failure_path(p).exists()
    assert W.load_record(p)["status"] == "failed"


def test_experiment_off_gives_not_run():
    c = {x.claim_id: x for x in W.build(W.runs_table([]), LIMIT, REF, 2)}
    assert c["M1"].verdict == "not run" and c["M2"].verdict == "not run"
