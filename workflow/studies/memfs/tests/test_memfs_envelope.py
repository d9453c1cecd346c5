"""One tiny run of every 2.4.1 experiment: raw files validate, and the tidy table,
Table 2.1, the memcached-limit table and the claims recomputed from the raw files
equal what the scripts wrote."""

import json
import math
import os
import subprocess
import sys

import pandas as pd
import pytest
from repro import rawio
from studies.memfs import layout

from systems.mtc.tests.mtc_testlib import REPO, memfs_cfg, mpi_env

pytestmark = pytest.mark.usefixtures("built")
PY = sys.executable
RAW = "results/memfs/raw"


def run_cmd(exp, cfg, params, rep, out):
    """The run contract's command line of one memfs job (the rules': memfs_bench_cmd), local launcher."""
    return [PY, "-m", "studies.memfs.run", exp, "--config", json.dumps(cfg), "--params",
            json.dumps({"network": "IPoIB", **params, "launcher": "local"}), "--rep", str(rep), "--out", out]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, built):
    from systems.mtc.tests.mtc_testlib import iozone_bin

    if not iozone_bin():
        pytest.skip("iozone missing: run tools/iozone/setup.sh")
    root = tmp_path_factory.mktemp("envelope")
    cfg = memfs_cfg(
        envelope={"nodes": [2], "sizes": ["1MiB"], "files_per_node": {"1MiB": 2}, "procs_per_node": 1,
                  "repeats": 2, "timeout_s": 120},
        table={"networks": ["IPoIB"], "nodes": [2], "size": "1MiB"},
        metadata={"nodes": [2], "ranks_per_node": 1, "items_per_rank": 20, "repeats": 1, "timeout_s": 120},
        sweeps={"nodes": [2], "size": "1MiB", "files_per_node": 1, "procs_per_node": 1,
                "stripe_sizes": ["256KiB", "512KiB"], "threads": [8], "repeats": 1},  # 256 KiB: never run
        limit={"networks": ["IPoIB"], "nodes": [2], "seconds": 0.5, "iperf_seconds": 1, "repeats": 1},
    )
    runs = []
    for d in ("memfs", "locality"):
        for rep in (0, 1):
            runs.append(("envelope", {"design": d, "size": "1MiB"},
                         f"{RAW}/envelope/network~IPoIB/design~{d}/nodes~2/size~1MiB/rep~{rep}.json", rep))
        runs.append(("metadata", {"design": d}, f"{RAW}/metadata/network~IPoIB/design~{d}/nodes~2/rep~0.json", 0))
    runs.append(("stripe", {"stripe": "512KiB"}, f"{RAW}/stripe/network~IPoIB/nodes~2/stripe~512KiB/rep~0.json", 0))
    runs.append(("threads", {"threads": 8}, f"{RAW}/threads/network~IPoIB/nodes~2/threads~8/rep~0.json", 0))
    runs.append(("limit", {}, f"{RAW}/limit/network~IPoIB/nodes~2/rep~0.json", 0))
    env = mpi_env()
    for exp, extra, out, rep in runs:
        r = subprocess.run(run_cmd(exp, cfg, {"nodes": 2, **extra}, rep, out), cwd=root, capture_output=True,
                           text=True, env=env, timeout=300)
        assert r.returncode == 0, f"{exp}: {r.stdout[-3000:]}"
        assert f"[memfs {exp} rep {rep}] " in r.stdout  # the run contract's progress lines
    missing = f"{RAW}/stripe/network~IPoIB/nodes~2/stripe~256KiB/rep~0.json"  # never run
    expected = layout.expected_raw(cfg)  # what the memfs_expected rule writes
    assert sorted(expected) == sorted([out for _, _, out, _ in runs] + [missing])
    (root / "expected.txt").write_text("\n".join(expected) + "\n")
    outs = {k: str(root / f"{k}.csv") for k in ("measurements", "summary", "table21", "limit", "limit-runs", "issue13",
                                                 "claims")}
    r = subprocess.run([PY, "-m", "studies.memfs.analyze", "--expected", "expected.txt",
                        "--config", json.dumps({**cfg, "judging_scale": "local"}),  # study_json adds it in the rules
                        "--published", str(REPO / "workflow/studies/memfs/published.csv"),
                        *[x for k, v in outs.items() for x in (f"--{k}", v)]],
                       cwd=root, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return {"root": root, "cfg": cfg, "runs": runs, "missing": missing, "outs": outs}


def _raw(tiny, path):
    return rawio.read(tiny["root"] / path)


def test_raw_files_validate_and_pass_sanity(tiny):
    for exp, _extra, out, _rep in tiny["runs"]:
        rec = _raw(tiny, out)
        assert rec["status"] == "ok" and rec["experiment"] == exp
        assert rec["system_kind"].startswith("stand-in:IPoIB link emulated")
        assert all(v is not False for v in rec["sanity"].values()), rec["sanity"]
        if exp == "envelope":
            assert rec["tool_versions"]["iozone"].startswith("iozone 3.")
            assert rec["extra"]["iozone_outputs"]["write"]
    loc = _raw(tiny, f"{RAW}/envelope/network~IPoIB/design~locality/nodes~2/size~1MiB/rep~0.json")
    assert loc["sanity"]["locality_writes_local"] and loc["sanity"]["remote_reads_replicated"]
    assert {m["metric"] for m in loc["metrics"]} >= {"write_bw", "read11_bw", "readN1_bw", "read11_remote_bw",
                                                      "write_tput", "read11_tput", "readN1_tput"}


def test_tidy_table_equals_the_raw_files(tiny):
    df = pd.read_csv(tiny["outs"]["measurements"], keep_default_na=False, na_values=[""])
    ok = df[df["status"] == "ok"]
    n = 0
    for _exp, _extra, out, _rep in tiny["runs"]:
        rec = _raw(tiny, out)
        rows = ok[ok["raw_file"] == out]
        assert len(rows) == len(rec["metrics"])
        for m in rec["metrics"]:
            hit = rows[rows["metric"] == m["metric"]]
            assert len(hit) == 1 and hit["value"].iloc[0] == pytest.approx(m["value"], rel=1e-12)
            for k, v in rec["params"].items():
                got = hit[k].iloc[0]
                assert (float(got) == float(v)) if isinstance(v, (int, float)) else (str(got) == str(v))
            n += 1
    assert len(ok) == n
    nr = df[df["raw_file"] == tiny["missing"]]
    assert list(nr["status"]) == ["not-run"] and math.isnan(nr["value"].iloc[0])


def _mean(tiny, exp, metric, **params):
    vals = []
    for e, _x, out, _r in tiny["runs"]:
        if e != exp:
            continue
        rec = _raw(tiny, out)
        if all(str(rec["params"].get(k)) == str(v) for k, v in params.items()):
            vals += [m["value"] for m in rec["metrics"] if m["metric"] == metric]
    return sum(vals) / len(vals) if vals else math.nan


def test_table21_equals_recomputation(tiny):
    t = pd.read_csv(tiny["outs"]["table21"], keep_default_na=False, na_values=[""])
    cases = [("Write Bw", "envelope", "write_bw"), ("1-1 Read Bw", "envelope", "read11_bw"),
             ("N-1 Read Bw", "envelope", "readN1_bw"), ("Create", "metadata", "create_rate"),
             ("Open", "metadata", "open_rate")]
    for label, exp, metric in cases:
        for d, dl in (("memfs", "MemFS"), ("locality", "locality-based (AMFS policy)")):
            row = t[(t["metric"] == label) & (t["design"] == dl) & (t["network"] == "IPoIB")]
            assert len(row) == 1
            extra = {"size": "1MiB"} if exp == "envelope" else {}
            assert row["reproduced_mean"].iloc[0] == pytest.approx(
                _mean(tiny, exp, metric, network="IPoIB", design=d, nodes=2, **extra), rel=1e-9)
    row = t[(t["metric"] == "1-1 Read Bw (remote)")]
    assert row["reproduced_mean"].iloc[0] == pytest.approx(
        _mean(tiny, "envelope", "read11_remote_bw", design="locality"), rel=1e-9)
    assert row["published"].iloc[0] == 6400  # workflow/studies/memfs/published.csv, AMFS IPoIB
    assert set(t[t["metric"] == "Write Bw"]["count"]) == {2}  # two repeats of each envelope cell


def test_limit_table_equals_recomputation(tiny):
    """MemFS / the mcbench run of the same job, recomputed from each raw file; the verdict and the
    breakdown (mean FUSE request size from MemFS's own counters) likewise."""
    from studies.memfs import limits as L

    lim = pd.read_csv(tiny["outs"]["limit"], keep_default_na=False, na_values=[""])
    for op, mm, lm, io_b, io_c in (("write", "write_bw", "limit_set_bw", "io.bytes_written", "io.write_calls"),
                                   ("read11", "read11_bw", "limit_get_bw", "io.bytes_read", "io.read_calls")):
        ratios, req = [], []
        for e, _x, out, _r in tiny["runs"]:
            rec = _raw(tiny, out)
            if e != "envelope" or rec["params"]["design"] != "memfs":
                continue
            m = {x["metric"]: x["value"] for x in rec["metrics"]}
            side = rec["extra"]["side_by_side_limit"]
            assert side["procs_per_node"] == 1 and side["value_size"] == 524288 and side["bytes_per_node"] == 2 * 2**20
            assert [r["threads"] for r in side["runs"]] == sorted({1, tiny["cfg"]["memfs"]["threads"]})
            assert m[lm] == pytest.approx(max(r["set_bw" if op == "write" else "get_bw"] for r in side["runs"]))
            ratios.append(m[mm] / m[lm])
            st = rec["extra"]["memfs_stats"][op]
            assert st[io_b] == 2 * 2 * 2**20  # 2 nodes x 2 files of 1 MiB through MemFS in this phase
            req.append(st[io_b] / st[io_c] / 1024)
        r = lim[(lim["network"] == "IPoIB") & (lim["nodes"] == 2) & (lim["size"] == "1MiB") & (lim["op"] == op)].iloc[0]
        assert r["reps"] == 2 and r["verdict"] == L.verdict(ratios)
        if r["verdict"] == L.MEASUREMENT_ERROR:
            assert math.isnan(r["ratio_median"])
        else:
            assert r["ratio_median"] == pytest.approx(sorted(ratios)[0] / 2 + sorted(ratios)[1] / 2, rel=1e-9)
            assert r["ratio_max"] == pytest.approx(max(ratios), rel=1e-9)
        assert r["fuse_request_kib"] == pytest.approx(sum(req) / 2, rel=1e-9)
    t13 = pd.read_csv(tiny["outs"]["issue13"], keep_default_na=False, na_values=[""])
    assert len(t13) == len(L.ISSUE13_ROWS) and t13.loc[0, "earlier_runs"] == "0.26x / 0.15x"


def test_claims_equal_recomputation(tiny):
    cl = pd.read_csv(tiny["outs"]["claims"], dtype=str, keep_default_na=False).set_index("claim_id")
    m = _mean(tiny, "envelope", "readN1_bw", design="memfs")
    lo = _mean(tiny, "envelope", "readN1_bw", design="locality")
    assert cl.loc["envelope-n1-read-1MiB", "verdict"] == ("reproduced" if m > lo else "not reproduced")
    m = _mean(tiny, "envelope", "read11_bw", design="memfs")
    rr = _mean(tiny, "envelope", "read11_remote_bw", design="locality")
    assert cl.loc["table21-remote-IPoIB", "verdict"] == ("reproduced" if rr < m else "not reproduced")
    assert float(cl.loc["table21-remote-speedup-IPoIB", "reproduced"]) == pytest.approx(m / rr, rel=1e-6)
    assert cl.loc["table21-remote-speedup-IPoIB", "published"] == "4.63"
    # one metadata node count (2): no exponent can be fitted, so no verdict
    assert cl.loc["metadata-create-linear-memfs", "verdict"] == "not run"
    assert "unicast" in cl.loc["envelope-n1-read-1MiB", "system_kind"]
    assert all(k.startswith("stand-in:") for k in cl["system_kind"] if k not in ("real",))
    assert set(cl["kind"]) == {"shape", "info"}


def test_figures_render_from_the_table(tiny, tmp_path):
    for fig in ("3", "4", "5", "6"):
        out = tmp_path / f"f{fig}.png"
        r = subprocess.run([PY, "-m", f"studies.memfs.figure2_{fig}", "--measurements",
                            tiny["outs"]["measurements"], "--config", json.dumps(tiny["cfg"]), "--out", str(out)],
                           capture_output=True, text=True, timeout=120, env={**os.environ, "MPLBACKEND": "Agg"})
        assert r.returncode == 0, r.stderr[-2000:]
        assert out.stat().st_size > 10000


def test_a_failed_sanity_check_writes_a_failure_record(tmp_path):
    cfg = memfs_cfg(iozone={"binary": "/bin/true"},  # "runs" but prints no iozone output
                    envelope={"nodes": [1], "sizes": ["1KiB"], "files_per_node": {"1KiB": 1},
                              "procs_per_node": 1, "repeats": 1, "timeout_s": 60})
    out = f"{RAW}/envelope/network~IPoIB/design~memfs/nodes~1/size~1KiB/rep~0.json"
    r = subprocess.run(run_cmd("envelope", cfg, {"design": "memfs", "nodes": 1, "size": "1KiB"}, 0, out),
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert not (tmp_path / out).exists()
    rec = rawio.read(rawio.failure_path(tmp_path / out))
    assert rec["status"] == "failed" and "iozone" in rec["failure"]
    from repro import tidy

    df = tidy.collect([out], "memfs", root=tmp_path)
    assert list(df["status"]) == ["failed"]
