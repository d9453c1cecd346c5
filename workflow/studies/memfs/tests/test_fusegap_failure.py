"""A FUSE-gap job that fails writes a failure record beside its raw file (issue 27): the full rehearsal
on a busy machine had memfs_fusegap_run fail (dd: Input/output error, MemFS: a stripe missing on a
memcached server) with no record, so its reason was only in the job's log. Injected fault: the job's
measurement raises as measure_fs does; the record holds the message, a kind and the load; a later
success clears it."""

from __future__ import annotations

import json

from repro import rawio

from studies.memfs import fusegap

WHY = ("memfs direct-io-stripe-1m read x8: dd if=/tmp/m/s7 of=/dev/null bs=1048576: rc=1: dd: error reading "
       "'/tmp/m/s7': Input/output error; daemon log: memfs: stripe S/s7#4072.22 missing on 127.0.0.1:45183: EIO")


def test_a_failed_job_leaves_a_record_saying_why_and_a_success_clears_it(tmp_path, monkeypatch):
    out = tmp_path / "raw" / "fusegap" / "rep~0.json"

    def fails(cfg, rep):
        raise RuntimeError(WHY)

    monkeypatch.setattr(fusegap, "run_job", fails)
    assert fusegap.main(["fusegap", "--config", "{}", "--rep", "0", "--out", str(out)]) == 1
    assert not out.exists()
    rec = json.loads(rawio.failure_path(out).read_text())
    assert "Input/output error" in rec["failure"] and "missing on 127.0.0.1:45183" in rec["failure"]
    assert rec["failure_kind"] in rawio.FAILURE_KINDS and rec["failure_load"]["ncpu"] >= 1
    monkeypatch.setattr(fusegap, "run_job", lambda cfg, rep: {"rep": rep, "ok": True})
    assert fusegap.main(["fusegap", "--config", "{}", "--rep", "0", "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == {"rep": 0, "ok": True}
    assert not rawio.failure_path(out).exists()


def test_a_memfs_failure_carries_each_memcached_servers_drop_counters():
    """A 'stripe missing' needs the servers' own word beside it: did one evict, move a slab without
    memory, expire? memcached_stats reads them from a real server, and says so when it cannot."""
    import shutil
    import subprocess
    import time

    import pytest

    from tools.common import free_port

    if not shutil.which("memcached"):
        pytest.skip("memcached not installed")
    port = free_port()
    mc = subprocess.Popen(["memcached", "-U", "0", "-l", "127.0.0.1", "-p", str(port), "-m", "64", "-M", "-u", "root"])
    try:
        for _ in range(100):
            text = fusegap.memcached_stats(f"127.0.0.1:{port}")
            if "unreadable" not in text:
                break
            time.sleep(0.05)
        assert text.startswith(f"127.0.0.1:{port}: curr_items=0 ")
        assert "evictions=0" in text and "slab_reassign_evictions_nomem=" in text and "limit_maxbytes=67108864" in text
    finally:
        mc.kill()
        mc.wait()
    assert fusegap.memcached_stats(f"127.0.0.1:{port}").startswith(f"127.0.0.1:{port}: stats unreadable (")
