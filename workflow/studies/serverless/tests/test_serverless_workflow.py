"""The whole study through Snakemake at a tiny scale (every rule: images, the three run rules, the
limits, aggregate, tables, figures, claims): the report's inputs exist and every row is labelled."""

from __future__ import annotations

import pandas as pd
from repro import testing

TINY = """
serverless:
  enabled: true
  repeats: 1
  images: {instances: [1, 2], count: 3, size: 48, small_size: 32}
  bytes:
    exponents: [10, 22]
    parallel: {instances: [1, 2], requests: 8}
    single: {instances: [1], requests: 5}
  limit: {exponents: [10, 22], requests: 8, concurrency: 4, iperf_seconds: 1}
"""


def test_tiny_study_through_snakemake(snake, workspace):
    ov = workspace / "tiny.yaml"
    ov.write_text(testing.only_studies("serverless") + TINY)
    snake("serverless", "--profile", "profiles/local", "--configfile", "config/local.yaml", str(ov), timeout=500)
    res = workspace / "results/serverless"
    for n in (1, 2, 3):
        assert (res / f"figures/figure{n}.png").stat().st_size > 10_000
        assert (res / f"tables/table{n}.csv").exists()
    df = pd.read_csv(res / "measurements.csv", keep_default_na=False)
    runs = df.drop_duplicates("raw_file")
    assert set(runs.status) == {"ok", "failed"}, runs.status.value_counts()
    failed = runs[runs.status == "failed"]
    assert set(failed.platform) == {"nuclio-go"} and set(pd.to_numeric(failed["size"]).astype(int)) == {4194304}
    assert runs.system_kind.str.startswith("stand-in:").all()
    cl = testing.claims_table(workspace, "serverless")
    assert (cl.system_kind.str.startswith("stand-in:") | (cl.verdict == "not run")).all()
    # the stand-in imposes the 2 MiB refusal: informative locally, saying what it would read
    go = cl.set_index("claim_id").loc["bytes_nuclio_go_fails_above_2MiB"]
    assert go["verdict"] == "informative" and "[would read: reproduced]" in go["reproduced"]
    assert (res / "benchmarks/serverless_aggregate.tsv").exists()
