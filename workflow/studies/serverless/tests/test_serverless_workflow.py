"""The whole study through Snakemake at a tiny scale (every rule: images, the three run rules, the
limits, aggregate, tables, figures, claims): the report's inputs exist and every row is labelled, and
a real job of each generated analysis rule ran its own script (a rule's shell expression is evaluated
again when its job runs; snakemake -n cannot show a job running another rule's command)."""

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
    _each_analysis_job_ran_its_own_script(res)


def _each_analysis_job_ran_its_own_script(res):
    """serverless_table/_figure serve three scripts each through a {name} wildcard (analysis_rule)."""
    heads = {n: (res / f"tables/{n}.csv").read_text().splitlines()[0] for n in ("table1", "table2", "table3")}
    assert len(set(heads.values())) == 3, heads  # each table its own script's columns
    assert heads["table1"].startswith("variant,platform,label,peak_images_per_s"), heads
    assert "peak_mib_per_s" in heads["table2"] and heads["table3"].startswith("platform,label"), heads
    fig = {n: pd.read_csv(res / f"tables/{n}.csv", keep_default_na=False) for n in ("figure1", "figure2", "figure3")}
    assert set(fig["figure1"].variant) == {"processing"} and set(fig["figure2"].variant) == {"null-processing"}
    assert {"size", "med"} <= set(fig["figure3"].columns) and set(fig["figure3"].variant) <= {"single", "parallel"}
    for n in ("figure1", "figure2", "figure3"):  # the figure job's log: its own script wrote its own files
        log = (res / f"log/{n}.log").read_text()
        assert log.startswith(f"serverless_{n}: wrote results/serverless/figures/{n}.png"), log[:300]
        assert (res / f"benchmarks/serverless_{n}.tsv").exists()
    for n in ("table1", "table2", "table3", "claims"):
        assert (res / f"benchmarks/serverless_{n}.tsv").exists()
    assert (res / "claims.csv").read_text().startswith("study,claim_id,claim,")


def test_a_judging_key_reaches_no_run_job(snake, workspace):
    """The run/judging split: a key the schema marks x-judging (serverless has none today: every key
    its analysis reads, a run job reads too; here one is added to the workspace's schema) or x-plan
    (read only when the plan is made: kick, registry, repeats, which jobs exist) is left out of every
    run job's and the site check's --config in the cluster plan, and reaches the analysis, so changing
    it re-runs no benchmark. Fails with rules that pass study_json to the run jobs, and without the
    schema's x-plan marks (the kick, registry and repeats values below would reach every run job)."""
    schema = workspace / "workflow/studies/serverless/schema.yaml"
    schema.write_text(schema.read_text().replace(
        "\nproperties:\n",
        "\nproperties:\n  judged_note: {type: string, default: '', x-judging: true}\n", 1))
    ov = workspace / "judged.yaml"
    ov.write_text(testing.only_studies("serverless") + "serverless: {enabled: true, judged_note: JUDGED-ONLY,"
                  " registry: PLAN-ONLY-REGISTRY, repeats: 2, kick: {instances: 3, platform: openfaas}}\n")
    out = snake("-n", "-p", "-F", "serverless", "--profile", "profiles/slurm", "--configfile", "config/config.yaml",
                str(ov), timeout=400).stdout
    cmds = [ln for ln in out.splitlines() if "python3 -m studies.serverless." in ln]

    def of(module):
        return [c for c in cmds if f"studies.serverless.{module} " in c]
    runs = of("run") + of("site_check")
    assert len(of("run")) > 80 and of("site_check"), out[-2000:]
    assert not [c[:300] for c in runs if "JUDGED-ONLY" in c or "judged_note" in c]
    plan_only = ('"kick":', "PLAN-ONLY-REGISTRY", '"repeats":', '"enabled": true, "exponents"', '"platforms":',
                 '"variants":')
    assert not [(k, c[:300]) for c in runs for k in plan_only if k in c]
    for module in ("aggregate", "claims", "table1", "figure3"):  # the analysis gets the whole section
        assert of(module) and all("JUDGED-ONLY" in c and "PLAN-ONLY-REGISTRY" in c and '"kick": {"instances": 3'
                                  in c for c in of(module)), module
