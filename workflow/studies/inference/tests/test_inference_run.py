"""From Locust's raw CSVs to the tidy table: a run's numbers are Locust's Aggregated row as written, a
run with a failed request or check is a failed configuration; and the whole study through Snakemake
at a tiny scale (real TorchServe and the TF Serving stand-in, the models from the cache), with every
number of the tidy table recomputed from the Locust CSVs it came from."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from studies.inference import run

from repro import testing

FIXTURES = testing.REPO / "tools/locust/fixtures"
COLUMNS = {"throughput": "Requests/s", "latency_median": "Median Response Time",
           "latency_mean": "Average Response Time", "latency_p95": "95%", "latency_p99": "99%",
           "failures_per_s": "Failures/s", "requests": "Request Count", "failures": "Failure Count"}


def _aggregated(stats_csv: Path) -> dict:
    with open(stats_csv, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["Name"] == "Aggregated"]
    assert len(rows) == 1
    return rows[0]


def test_a_clean_run_is_locusts_numbers_as_written(tmp_path):
    d = tmp_path / "users~4"
    shutil.copytree(FIXTURES / "trivial/users~4", d)
    metrics, why, sanity = run.metrics_of_run(d, "random-from-config")
    assert why is None
    agg = _aggregated(d / "locust_stats.csv")
    got = {m["metric"]: m["value"] for m in metrics}
    for metric, col in COLUMNS.items():
        assert got[metric] == float(agg[col]), metric
    assert got["generator_cpu_cores"] == json.loads((d / "generator.json").read_text())["cpu_cores_used"]
    assert {m["labels"]["weights"] for m in metrics} == {"random-from-config"}
    assert sanity["requests"] == int(agg["Request Count"]) > 0


def test_a_run_with_failed_requests_is_a_failed_configuration(tmp_path):
    d = tmp_path / "users~2"
    shutil.copytree(FIXTURES / "tfserving-standin-bad-input/users~2", d)
    _metrics, why, sanity = run.metrics_of_run(d, "random-from-config")
    agg = _aggregated(d / "locust_stats.csv")
    assert int(agg["Failure Count"]) > 0
    assert why and why.startswith(f"{agg['Failure Count']} of {agg['Request Count']} requests failed")
    assert "HTTP 400" in why  # the server's own error status, from Locust's failure table
    assert sanity["failures"] == int(agg["Failure Count"])


def test_a_server_that_does_not_come_up_fails_every_user_count(tmp_path, monkeypatch):
    """servers.py's own error ends up in each user count's failure record; the job exits 1; the tidy
    table shows the configuration as failed (never a zero, never dropped)."""
    from studies.inference import aggregate
    import inference_study_testlib as tl

    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    models = tmp_path / "models.json"
    spec = {"resnet50": {"weights": "random-from-config"}}
    models.write_text(json.dumps({"dir": str(tmp_path / "empty"), "specs": spec}))
    cfg = tl.section(models=["resnet50"], servers=["tfserving"], users=[1, 2], repeats=1)
    assert tl.run_job("serve", cfg, {"server": "tfserving", "model": "resnet50"}, models=models) == 1
    df, _summary = aggregate.build(cfg, root=str(tmp_path))
    serve = df[df.experiment == "serve"]
    assert list(serve.status) == ["failed", "failed"]
    assert serve.failure.str.contains("the server step exited 1 before it was ready").all()
    assert serve.failure.str.contains("no .*tfserving/resnet50/<version>/", regex=True).all()
    assert serve.value.isna().all()
    from repro import rawio

    recs = [rawio.read(f) for f in sorted((tmp_path / "results" / "inference" / "failed").rglob("*.json"))]
    assert len(recs) == 2 and all(r["failure_kind"] == "crash" for r in recs)  # a server step that exited 1
    assert [r["params"] for r in recs] == [{"experiment": "serve", "server": "tfserving", "model": "resnet50",
                                            "users": u} for u in (1, 2)]  # each user count its own
    # the paper's gap is refused: exit 2, nothing recorded
    assert tl.run_job("serve", cfg, {"server": "tfserving", "model": "wav2vec2"}, models=models) == 2
    assert not list((tmp_path / "results/inference").rglob("*wav2vec2*"))


TINY = """
inference:
  enabled: true
  models: [resnet50]
  servers: [torchserve, tfserving]
  users: [1, 2]
  repeats: 1
  run_time_s: 3
  sizes: {image_size: 32, audio_samples: 8000, max_new_tokens: 2, num_beams: 2}
  raw_rate: {seconds: 2, warmup: 1}
  ceiling: {users: [2], run_time_s: 2}
  claims:
    plateau_from_users:
      local: {value: 1, why: "the tiny run has users 1 and 2"}
      rehearsal: {value: 1, why: "the tiny run has users 1 and 2"}
      cluster: {value: 1, why: "the tiny run has users 1 and 2"}
"""


@pytest.mark.slow
def test_tiny_study_through_snakemake(snake, workspace):
    ov = workspace / "tiny.yaml"
    ov.write_text(testing.only_studies("inference") + TINY)
    snake("inference", "--profile", "profiles/local", "--configfile", "config/local.yaml", str(ov), timeout=580)
    res = workspace / "results/inference"
    for n in (1, 2, 3, 4):
        assert (res / f"figures/figure{n}.png").stat().st_size > 10_000
    df = pd.read_csv(res / "measurements.csv", keep_default_na=False)
    runs = df.drop_duplicates("raw_file")
    serve = runs[runs.experiment == "serve"]
    assert set(zip(serve.server, serve.status)) == {("torchserve", "ok"), ("tfserving", "ok")}, serve.failure.tolist()
    assert set(serve[serve.server == "tfserving"].system_kind) == {"stand-in:tfserving-rest-on-tf-python"}
    assert set(serve[serve.server == "torchserve"].system_kind) == {"real"}
    assert (runs[runs.experiment != "ceiling"].weights == "random-from-config").all()
    assert set(runs[runs.experiment == "raw_rate"].framework) == {"torch", "tf"}
    # every number of the tidy table is Locust's, recomputed here from the CSVs of that run
    ok = df[(df.experiment == "serve") & (df.status == "ok")]
    for (server, users), g in ok.groupby(["server", "users"]):
        agg = _aggregated(workspace / f"results/inference/locust/server~{server}/model~resnet50/rep~0/users~{users}"
                          / "locust_stats.csv")
        vals = dict(zip(g.metric, pd.to_numeric(g.value)))
        for metric, col in COLUMNS.items():
            assert vals[metric] == pytest.approx(float(agg[col]), rel=1e-12), (server, users, metric)
        assert vals["failures"] == 0 and vals["requests"] > 0
    t1 = pd.read_csv(res / "tables/table1.csv", keep_default_na=False)
    gap = t1[(t1.model == "bart") & (t1.server == "tfserving")].iloc[0]
    assert gap.throughput == "" and gap.status.startswith("not")
    cl = testing.claims_table(workspace, "inference")
    assert cl.set_index("claim_id").loc["no_failed_requests", "verdict"] == "reproduced"
    lim = pd.read_csv(res / "tables/limits.csv")
    assert lim.dropna(subset=["raw_rate"]).shape[0] == 2 and (lim.fraction_of_ceiling.dropna() < 1).all()
