"""A tiny real run of one configuration per platform (the functions behind the faas-standin runtimes,
the baseline, the limits) through `python3 -m studies.serverless.run`; the tidy table recomputed from
the raw files equals what the director measured; Nuclio Go's 413 above 2 MiB is a failure record, not
a job failure; a run without its test images fails loudly with a failure record."""

from __future__ import annotations

import os

import pytest
import serverless_testlib as tl
from repro import rawio, testing
from studies.serverless import aggregate, analysis, layout
from studies.serverless import claims as sc
from tools.fdirector import director as fd
from tools.fdirector import standin

MiB = 2**20


@pytest.fixture(scope="module")
def built():
    testing.build_or_skip(None, ["make", "-s", "-C", str(tl.REPO / "systems/faas-functions")], "faas-functions")
    testing.build_or_skip(None, ["make", "-s", "-C", str(tl.REPO / "systems/faas-standin")], "faas-standin")


def _cfg():
    return tl.section(repeats=1, images={"instances": [2], "count": 4, "size": 64, "small_size": 48},
                      bytes={"exponents": [10, 21, 22], "parallel": {"instances": [2], "requests": 12},
                             "single": {"instances": [1], "requests": 8}},
                      limit={"exponents": [10, 21, 22], "requests": 12, "concurrency": 8, "iperf_seconds": 1})


@pytest.fixture(scope="module")
def tiny(built, tmp_path_factory):
    ws = tmp_path_factory.mktemp("sl")
    cfg = _cfg()
    standin.make_test_images(ws / "imgs", 4, size=64, small_size=48)
    runs = [("image", "processing", "openfaas", 2), ("image", "null-processing", "nuclio-cpp", 2),
            ("image", "processing", "baseline", 2), ("bytes", "parallel", "nuclio-go", 2),
            ("bytes", "single", "openfaas", 1), ("bytes", "parallel", "nuclio-cpp", 2)]
    out = {}
    for w, v, p, n in runs:
        inputs = {"images": str(ws / "imgs")} if w == "image" else None
        out[(w, v, p)] = tl.run_job(ws, cfg, w, inputs=inputs, variant=v, platform=p, instances=n)
    for v in ("echo", "iperf3"):
        out[("limit", v)] = tl.run_job(ws, cfg, "limit", variant=v)
    return ws, cfg, out


def test_every_run_succeeds_and_is_labelled(tiny):
    ws, cfg, out = tiny
    for key, p in out.items():
        assert p.returncode == 0, (key, p.stdout[-2000:], p.stderr[-2000:])
    raws = sorted((ws / "results/serverless/raw").rglob("*.json"))
    assert raws
    for r in raws:
        rec = rawio.read(r)
        assert rec["system_kind"].startswith("stand-in:"), (r, rec["system_kind"])
        assert rec["status"] == "ok"
        where = rec["extra"]["placement"]  # both sides as measured (issue 19), one host here
        if "workload~limit" in str(r):  # both ends on this host: the loopback label (placement.limit_kind)
            assert rec["system_kind"] == layout.STANDIN_KIND[rec["params"]["variant"]], (r, rec["system_kind"])
        assert where["director"]["node"] and where["planned"]["launcher"] == "local", r
        if "platform~baseline" not in str(r) and "iperf3" not in str(r):
            assert where["platform"]["node"] and where["platform"]["listen"].startswith("http://127.0.0.1:"), r
        if "workload~bytes" in str(r) or "workload~image" in str(r):
            if "platform~baseline" not in str(r):
                assert where["platform"]["instances"] and all(i["node"] for i in where["platform"]["instances"]), r


def test_nuclio_go_refuses_above_2MiB_as_a_failure_record(tiny):
    ws, cfg, out = tiny
    big = layout.raw_path(layout.bytes_params("parallel", "nuclio-go", 2, 4 * MiB), 0)
    assert not (ws / big).exists()
    rec = rawio.read(ws / rawio.failure_path(big))
    assert rec["status"] == "failed" and "HTTP 413" in rec["failure"]
    assert rec["sanity"]["expected_refusal"] is True
    assert (ws / layout.raw_path(layout.bytes_params("parallel", "nuclio-go", 2, 2 * MiB), 0)).exists()
    assert layout.bytes_job_outputs(cfg, "parallel", "nuclio-go", 2, 0)[-1].endswith("size~2097152/rep~0.json")


def test_tidy_table_recomputed_from_the_raw_files(tiny):
    ws, cfg, out = tiny
    df, summary = aggregate.build(cfg, root=str(ws))
    ok = df[df.status == "ok"]
    assert len(ok.raw_file.unique()) >= 10
    # every ok run: the table's throughput equals the director's totals recomputed from its requests
    for raw_file, g in ok.groupby("raw_file"):
        rec = rawio.read(ws / raw_file)
        if rec["params"]["variant"] == "iperf3":
            continue
        d = fd.load_raw(ws / rec["extra"]["director_raw"])
        t = fd.recompute_totals(d)
        got = g[g.metric == "throughput"]["value"].iloc[0]
        assert got == pytest.approx(t["throughput_mib_s"], rel=1e-9), raw_file
        assert g[g.metric == "retries"]["value"].iloc[0] == t["retries"]
        if rec["params"]["workload"] == "image":
            assert g[g.metric == "images_per_s"]["value"].iloc[0] == pytest.approx(t["requests_per_s"])
            assert t["requests"] == cfg["images"]["count"]
            # one pixel of every image changed before the run, seeded by the run (the paper's director)
            prep = d["prepared"]
            assert prep["pixel_changed"] and len(prep["columns"]) == cfg["images"]["count"]
            assert prep["seed"].endswith(f"/rep{rec['rep']}") and prep["bytes_sent"] == t["bytes_sent"]
    statuses = df.drop_duplicates("raw_file").set_index("raw_file").status
    big = layout.raw_path(layout.bytes_params("parallel", "nuclio-go", 2, 4 * MiB), 0)
    assert statuses[str(rawio.failure_path(big))] == "failed"
    # configurations of the matrix this test did not run are shown as not-run, never as zero
    assert (statuses == "not-run").sum() > 0
    assert df[df.status == "not-run"]["value"].isna().all()
    # Table 3 from the tidy table: the single run's pooled means are the raw file's own
    t3 = analysis.table3(analysis.read_measurements(_write(ws, df)), tl.published()).set_index("platform")
    # (the raw file of the size Table 3 picked as the peak: which size peaks depends on the machine's load)
    at = t3.loc["openfaas"]
    single = rawio.read(ws / layout.raw_path(layout.bytes_params("single", "openfaas", int(at["instances"]),
                                                                 int(at["size_bytes"])), 0))
    assert t3.loc["openfaas", "mean"] == pytest.approx(rawio.value(single, "single_mean"))
    cl = sc.build(analysis.read_measurements(_write(ws, df)), tl.published(), cfg)
    refused = [c for c in cl if c.claim_id == "bytes_nuclio_go_fails_above_2MiB"][0]
    # the stand-in's 2 MiB limit imposes the refusal: informative locally, saying what it would read
    assert refused.verdict == "informative" and refused.system_kind == "stand-in:nuclio-go-inprocess"
    assert "[would read: reproduced]" in refused.reproduced


def _write(ws, df):
    from repro import tidy

    p = ws / "results/serverless/measurements.csv"
    tidy.write_csv(df, p)
    return p


def test_missing_images_fail_loudly(built, tmp_path):
    cfg = _cfg()
    (tmp_path / "none").mkdir()
    p = tl.run_job(tmp_path, cfg, "image", inputs={"images": str(tmp_path / "none")}, variant="processing",
                   platform="openfaas", instances=1)
    assert p.returncode == 1
    raw = layout.raw_path(layout.image_params("processing", "openfaas", 1), 0)
    assert not (tmp_path / raw).exists()
    rec = rawio.read(tmp_path / rawio.failure_path(raw))
    assert "no test images" in rec["failure"] and rec["failure_kind"] == "error"  # bad input, not the machine


def test_a_platform_that_cannot_start_says_why_and_its_log_is_kept(built, tmp_path, monkeypatch):
    """An injected fault, a real faas-standin: it cannot bind an address this host does not have. The
    error names how it ended and the log's own words. A sweep whose platform cannot start (the same
    fault inside run.py's Platform): every output size gets a failure record with its own params, each
    keeping the platform's log beside it (the platform's state directory is gone by then); the size
    beside the outputs (refused by design, never sent) gets none."""
    from studies.serverless import run

    state = tmp_path / "platform"
    with pytest.raises(standin.StandInError) as err:
        standin.LocalPlatform("openfaas", "reverse", state_dir=state, listen="203.0.113.7").start()
    why = str(err.value)
    assert "faas-standin up --kind openfaas exited 1 before it was ready" in why
    assert "cannot assign requested address" in why and "standin.log ends:" in why
    real = standin.LocalPlatform
    monkeypatch.setattr(standin, "LocalPlatform", lambda *a, **kw: real(*a, **{**kw, "listen": "203.0.113.7"}))
    monkeypatch.chdir(tmp_path)
    cfg = _cfg()
    job = {"variant": "parallel", "platform": "nuclio-go", "instances": 2}
    assert run.RUN.main(tl.run_argv(cfg, "bytes", **job)) == 1
    outs = tl.outs(cfg, "bytes", job)
    assert [int(o.split("size~")[1].split("/")[0]) for o in outs] == [1024, 2 * MiB]
    for raw, size in zip(outs, (1024, 2 * MiB)):
        assert not os.path.exists(raw)
        got = rawio.read(rawio.failure_path(raw))
        assert got["failure_kind"] == "crash" and "cannot assign requested address" in got["failure"]
        assert got["params"] == layout.bytes_params("parallel", "nuclio-go", 2, size)
        assert "bind: cannot assign" in (rawio.logs_path(raw) / "standin.log").read_text()
    refused = layout.raw_path(layout.bytes_params("parallel", "nuclio-go", 2, 4 * MiB), 0)
    assert not rawio.failure_path(refused).exists() and not os.path.exists(refused)
