"""The serverless parameter space (stable raw paths, the sizes Nuclio Go refuses by design, labels)
and the plans: the full cluster matrix and the local one, with the study switched on by an overlay."""

from __future__ import annotations

import re

import serverless_testlib as tl
import yaml
from studies.serverless import layout

MiB = 2**20


def test_local_paths_are_stable_and_complete():
    cfg = tl.section()
    exp = layout.expected_raw(cfg)
    assert len(exp) == len(set(exp))
    assert "results/serverless/raw/workload~image/variant~null-processing/platform~nuclio-cpp/instances~4/rep~1.json" \
        in exp
    assert "results/serverless/raw/workload~image/variant~processing/platform~baseline/instances~2/rep~0.json" in exp
    assert not any("variant~null-processing/platform~baseline" in p for p in exp)  # the paper's baseline: processing
    assert ("results/serverless/raw/workload~bytes/variant~single/platform~nuclio-go/instances~4/size~4194304/"
            "rep~0.json") in exp
    assert "results/serverless/raw/workload~limit/variant~iperf3/rep~1.json" in exp
    jobs = layout.job_outputs(cfg)
    assert set(jobs) <= set(exp)
    # Nuclio Go's sizes above 2 MiB are expected (they show as failed) but are no job's output
    refused = set(exp) - set(jobs)
    assert refused and all("platform~nuclio-go" in p and "size~4194304" in p for p in refused)
    assert layout.declared_sizes(cfg, "nuclio-go")[-1] == 2 * MiB
    assert layout.declared_sizes(cfg, "openfaas")[-1] == 4 * MiB
    assert {layout.system_kind_of_path(cfg, p) for p in exp} == set(layout.STANDIN_KIND.values())


def test_full_matrix_is_the_papers():
    cfg = tl.section(local=False)
    assert cfg["mode"] == "kubernetes" and cfg["repeats"] == 10
    assert len(layout.image_runs(cfg)) == (2 * 2 * 5 + 1) * 10
    assert layout.bytes_sizes(cfg) == [2**e for e in range(25)]
    assert len(layout.bytes_jobs(cfg)) == 3 * (5 + 2) * 10
    assert {layout.system_kind_of_path(cfg, p) for p in layout.expected_raw(cfg)} == {"real"}
    full = yaml.safe_load((tl.REPO / "config/config.yaml").read_text())
    assert full["serverless"]["enabled"] is True  # switched on after full local runs


def _overlay(ws, text):
    p = ws / "serverless-on.yaml"
    p.write_text(text)
    return str(p)


def _counts(out):
    return {k: int(v) for k, v in re.findall(r"^(\w+)\s+(\d+)$", out, re.MULTILINE)}


def test_plans(snake, workspace):
    on = _overlay(workspace, "serverless: {enabled: true}\n")
    full = snake("-n", "serverless", "--profile", "profiles/slurm", "--configfile", "config/config.yaml", on,
                 timeout=300).stdout
    c = _counts(full)
    assert c.get("serverless_image_run") == 210, full[-3000:]
    for p in ("openfaas", "nuclio_cpp", "nuclio_go"):
        assert c.get(f"serverless_bytes_run_{p}") == 70
    assert c.get("serverless_limit_run_echo") == 10 and c.get("serverless_limit_run_iperf3") == 10
    assert "containers/sif/fdirector.sif" in full  # the director runs from its image on the cluster
    assert c.get("serverless_site_check") == 1  # the site edits are checked before any run job
    local = snake("-n", "serverless", "--profile", "profiles/local", "--configfile", "config/local.yaml", on,
                  timeout=300).stdout
    c = _counts(local)
    assert c.get("serverless_image_run") == 26, local[-3000:]
    assert c.get("serverless_bytes_run_nuclio_go") == 10
    assert c.get("serverless_claims") == 1 and c.get("serverless_figure") == 3 and c.get("serverless_table") == 3
    default = snake("-n", "--profile", "profiles/local", timeout=300).stdout
    c = _counts(default)  # ./repro run's local reproduction includes the study (enabled in config.yaml)
    assert c.get("serverless_image_run") == 26 and c.get("serverless_claims") == 1, default[-2000:]
    assert "serverless_site_check" not in default  # stand-ins: no site edit to check


def test_unedited_cluster_placeholders_are_named():
    """config.yaml's cluster section as shipped: kubeconfig, limit.iperf_host and limit.echo_url each
    need a site edit and are named; edited ones pass; the stand-ins need none."""
    cfg = tl.section(local=False, kubeconfig="/nonexistent/kubeconfig")
    problems = layout.site_problems(cfg)
    assert [p.split(" = ")[0] for p in problems] == ["serverless.kubeconfig", "serverless.limit.iperf_host",
                                                     "serverless.limit.echo_url"], problems
    assert layout.site_problems(tl.section()) == []  # local: mode standin
    edited = dict(cfg, kubeconfig=__file__, limit=dict(cfg["limit"], iperf_host="10.0.0.5",
                                                        echo_url="http://10.0.0.5:8080/"))
    assert layout.site_problems(edited) == []
    for bad in ("http://127.0.0.1:8080/", "10.0.0.5:8080", ""):
        assert [p.split(" = ")[0] for p in layout.site_problems(dict(edited, limit=dict(
            edited["limit"], echo_url=bad)))] == ["serverless.limit.echo_url"], bad


def test_a_cluster_run_with_unedited_placeholders_stops_first_naming_the_keys(snake, workspace):
    """Not a dry run: Snakemake on config.yaml (mode kubernetes) with the study on and the shipped
    placeholders: the first job, serverless_site_check, fails naming every key, and no run job starts
    (no raw file, no run log). The same check guards a run job started by hand (exit 2)."""
    on = _overlay(workspace, "serverless: {enabled: true}\ncontainers: {use_for_benchmarks: false}\n")
    r = snake("serverless", "--profile", "profiles/local", "--configfile", "config/config.yaml", on,
              "--keep-going", timeout=300, check=False)
    out = r.stdout + r.stderr
    assert r.returncode != 0
    for key in ("serverless.kubeconfig", "serverless.limit.iperf_host", "serverless.limit.echo_url"):
        assert key in out, out[-3000:]
    assert not (workspace / "results/serverless/raw").exists()
    assert not (workspace / "results/serverless/log/run").exists()
    import subprocess
    import sys

    cfg = tl.section(local=False)
    job = subprocess.run([sys.executable, "-m", "studies.serverless.run", *tl.run_argv(cfg, "limit", variant="iperf3")],
                         capture_output=True, text=True, cwd=workspace, timeout=60)
    assert job.returncode == 2 and "serverless.limit.iperf_host" in job.stderr
    assert not (workspace / "results/serverless/failed").exists()  # refused: nothing was measured
