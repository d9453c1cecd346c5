"""bench.py: the summary is recomputed from the raw measurements (ratios, failed pairs shown as
failed, never as numbers), and a tiny real run writes a raw file whose bytes and counters
check out (no timings asserted)."""
import json
import os
import subprocess
import sys

import pytest
from kpassthrough_testlib import SYS, kernel_has_passthrough, missing_prereq, mounted

from systems.kpassthrough import bench

SIZE = 1 << 30


def m(variant, tool, seconds, cpu, ok=True):
    return {"variant": variant, "tool": tool, "seconds": seconds, "cpu_s": cpu, "ok": ok,
            "load_start": [1.0, 1.0, 1.0]}


def raw(measurements, names=("native", "kernel", "off")):
    return {"variants": [{"name": n, "status": "ran"} for n in names], "measurements": measurements}


def rows(r):
    return {(x["variant"], x["tool"]): x for x in bench.summarize(r, SIZE)}


def test_ratios_are_native_median_over_variant_median():
    r = raw([m("native", "dd", s, 0.2) for s in (1.0, 2.0, 9.0)]      # median 2.0
            + [m("kernel", "dd", s, 0.25) for s in (2.5, 4.0, 0.1)]   # median 2.5
            + [m("off", "dd", s, 1.0) for s in (8.0, 8.0, 8.0)]
            + [m(v, "sha256sum", 1.0, 0.5) for v in ("native", "kernel", "off")])
    got = rows(r)
    assert got[("kernel", "dd")]["ratio_to_native"] == pytest.approx(2.0 / 2.5)
    assert got[("kernel", "dd")]["time_overhead_pct"] == pytest.approx(25.0)
    assert got[("kernel", "dd")]["cpu_ratio_to_native"] == pytest.approx(0.2 / 0.25)
    assert got[("off", "dd")]["ratio_to_native"] == pytest.approx(0.25)
    assert got[("kernel", "dd")]["max_gbps"] == pytest.approx(SIZE / 0.1 / 1e9)
    assert got[("native", "sha256sum")]["ratio_to_native"] == pytest.approx(1.0)


def test_paired_ratio_is_the_median_of_per_round_ratios():
    def r_(v, rnd, sec, cpu):
        x = m(v, "dd", sec, cpu)
        x["round"] = rnd
        return x
    # the load drifts: round 2 is slow for both; per round the kernel is 2x, 1x, 1.25x native
    r = raw([r_("native", 0, 1.0, 0.1), r_("kernel", 0, 0.5, 0.1),
             r_("native", 1, 2.0, 0.2), r_("kernel", 1, 2.0, 0.4),
             r_("native", 2, 10.0, 1.0), r_("kernel", 2, 8.0, 1.0)], names=("native", "kernel"))
    k = rows(r)[("kernel", "dd")]
    assert k["paired_ratio_to_native"] == pytest.approx(1.25)
    assert k["paired_ratio_range"] == pytest.approx([1.0, 2.0])
    assert k["paired_cpu_ratio_to_native"] == pytest.approx(1.0)
    assert k["ratio_to_native"] == pytest.approx(2.0 / 2.0)  # ratio of medians differs in general


def test_a_failed_measurement_fails_the_pair_not_zero():
    r = raw([m("native", "dd", 1.0, 0.1), m("kernel", "dd", 1.0, 0.1),
             m("kernel", "dd", None, 0.1, ok=False), m("off", "dd", 2.0, 0.1)]
            + [m(v, "sha256sum", 1.0, 0.5) for v in ("native", "kernel", "off")])
    got = rows(r)
    assert got[("kernel", "dd")]["failed"] == 1
    assert "ratio_to_native" not in got[("kernel", "dd")] and "median_gbps" not in got[("kernel", "dd")]
    assert got[("off", "dd")]["ratio_to_native"] == pytest.approx(0.5)


def test_no_native_no_ratio():
    r = raw([m("native", "dd", None, 0.1, ok=False), m("kernel", "dd", 1.0, 0.1)], names=("native", "kernel"))
    assert "ratio_to_native" not in rows(r)[("kernel", "dd")]


@pytest.mark.skipif(missing_prereq() is not None, reason=str(missing_prereq()))
def test_tiny_real_run_writes_a_consistent_raw_file(tmp_path):
    if not kernel_has_passthrough():
        pytest.skip("kernel FUSE passthrough needs Linux >= 6.9")
    subprocess.run(["make", "-s", "-C", SYS], check=True)
    out = tmp_path / "raw.json"
    r = subprocess.run([sys.executable, "-m", "systems.kpassthrough.bench", "--size-mib", "2", "--repeats", "2",
                        "--no-libfuse", "--dir", str(tmp_path / "scratch"), "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    d = json.loads(out.read_text())
    assert d["mounts_left"] == [] and not mounted(str(tmp_path / "scratch" / "mnt-kernel"))
    assert {v["name"]: v["status"] for v in d["variants"]} == {
        "native": "ran", "kernel": "ran", "off": "ran", "libfuse-userspace": "not run: --no-libfuse"}
    ms = d["measurements"]
    assert len(ms) == 2 * len(bench.TOOLS) * 3 and all(x["ok"] for x in ms)
    assert all(x["bytes"] == 2 << 20 for x in ms if x["tool"].startswith("dd"))
    assert len({x["sha256"] for x in ms if x["tool"] == "sha256sum"}) == 1
    srv = d["servers_during_measurements"]
    opens = 2 * len(bench.TOOLS)
    assert srv["kernel"]["ops"]["read"] == 0 and srv["kernel"]["ops"]["open_passthrough"] == opens
    assert srv["off"]["ops"]["read"] > 0 and srv["off"]["ops"]["read_bytes"] >= opens * (2 << 20)
    assert not (tmp_path / "scratch").exists()


def _mpi_keys(env):
    return {k: v for k, v in env.items() if k.startswith(("OMPI_", "UCX_", "REPRO_"))}


def test_libfuse_variant_runs_mpirun_in_the_one_open_mpi_environment():
    """bench.py imports no engine: it sources workflow/scripts/mpi-env.sh itself. What mpirun gets
    is what the engine's procs.mpi_env(shm=True) gives, transports set before included (dropped)."""
    from repro import procs

    base = {**os.environ, "UCX_TLS": "rc", "UCX_NET_DEVICES": "mlx5_0:1", "REPRO_SINGLE_HOST": "0",
            "OMPI_MCA_btl": "self,vader"}  # a value set before wins, in both
    argv, env = bench.with_mpi_env(["env", "-0"], base)
    out = subprocess.run(argv, env=env, capture_output=True, check=True, timeout=60).stdout.decode()
    got = dict(kv.split("=", 1) for kv in out.split("\0") if "=" in kv)
    want = _mpi_keys(procs.mpi_env(base, shm=True))
    assert _mpi_keys(got) == want
    assert want["REPRO_MPI_SHM"] == "1" and "UCX_TLS" not in want and want["OMPI_MCA_btl"] == "self,vader"


@pytest.mark.skipif(missing_prereq() is not None, reason=str(missing_prereq()))
def test_libfuse_variant_mounts_reads_back_and_unmounts(tmp_path):
    if not os.access(bench.MPIFUSE, os.X_OK):
        pytest.skip(f"{bench.MPIFUSE} not built (make -C systems/mpifuse)")
    src, mp = tmp_path / "src", tmp_path / "mnt"
    src.mkdir()
    data = os.urandom(3 << 20)
    (src / "f").write_bytes(data)
    m = bench.MpifuseMount(str(src), str(mp), str(tmp_path))
    try:
        assert (mp / "f").read_bytes() == data
    finally:
        m.close()
    assert not mounted(str(mp)) and m.proc.returncode == 0
