"""The storage rules as Snakemake runs them: a real job of each analysis rule (made by the engine's
analysis_rule, the figures and tables through one rule each with a {name} wildcard) runs its own
script; a key only the analysis reads (x-judging) reaches the claims but no benchmark job, nor does a key
read only when the plan is made (x-plan)."""

from __future__ import annotations

import json
import shlex

import pandas as pd
import pytest
import yaml
from repro import rawio

from studies.storage import layout

from .storage_testlib import section, write_raw_tree

OUTS = {
    "measurements": "results/storage/measurements.csv",
    "claims": "results/storage/claims.csv",
    **{n: f"results/storage/tables/{n}.csv" for n in ("figure4", "figure5", "figure6", "table5", "limits", "summary")},
    **{f"{n}_png": f"results/storage/figures/{n}.png" for n in ("figure4", "figure5", "figure6")},
}


def test_each_analysis_rule_runs_its_own_command(snake, workspace):
    """storage_figure serves three scripts and storage_table one through a {name} wildcard: each job must
    run its own script (a rule's shell expression is evaluated again when its job runs; snakemake -n
    cannot show a job running another rule's command) and write its own log and benchmark file."""
    cfg = section(cosbench={"sizes": ["4KB", "1MB"], "workers": [1, 4]}, mdtest={"tasks": [1, 2]})
    write_raw_tree(workspace, cfg)
    (workspace / "overlay.yaml").write_text(yaml.safe_dump({"storage": cfg}))
    snake(*OUTS.values(), "--profile", "profiles/local", "--configfile", "config/local.yaml", "overlay.yaml",
          "--allowed-rules", "storage_aggregate", "storage_figure", "storage_table", "storage_claims",
          "--rerun-triggers", "mtime", timeout=500)
    read = {k: pd.read_csv(workspace / p) for k, p in OUTS.items() if p.endswith(".csv")}
    metrics = {n: set(read[n]["metric"]) for n in ("figure4", "figure5", "figure6")}
    # Figure 4: response time, Figure 5: throughput, Figure 6: mdtest rates per phase
    assert metrics == {"figure4": {"avg_res_time"}, "figure5": {"throughput"}, "figure6": {"rate"}}, metrics
    assert "op_label" in read["figure6"]
    assert {"max", "min", "published"} <= set(read["table5"].columns)  # Table 5
    assert set(read["limits"]["stack"]) == set(cfg["stacks"]) and len(read["summary"])
    assert len(read["claims"]) > 10 and "verdict" in read["claims"]
    for name in ("figure4", "figure5", "figure6"):
        assert (workspace / OUTS[f"{name}_png"]).stat().st_size > 10_000
    for script in ("aggregate", "figure4", "figure5", "figure6", "table5", "claims"):
        assert (workspace / f"results/storage/log/{script}.log").exists(), script
        assert (workspace / f"results/storage/benchmarks/storage_{script}.tsv").exists(), script
    assert "rows from" in (workspace / "results/storage/log/aggregate.log").read_text()


def storage_commands(snake, workspace, overlay: dict) -> dict[str, list[str]]:
    """The storage jobs' commands in the cluster plan (config/config.yaml + `overlay`), by module."""
    (workspace / "overlay.yaml").write_text(yaml.safe_dump(overlay))
    out = snake("-n", "-p", "-F", "storage", "--profile", "profiles/slurm", "--configfile", "config/config.yaml",
                "overlay.yaml", timeout=600).stdout
    by: dict[str, list[str]] = {}
    for line in out.splitlines():
        if "-m studies.storage." in line:
            module = line.split("-m studies.storage.")[1].split()[0]
            by.setdefault(module, []).append(line)
    return by


def add_judging_key(workspace) -> None:
    """A key the storage schema marks x-judging (the study has none of its own yet: every key the analysis
    reads is read by run.py or layout.py too -- see the README), added in the test's copy only."""
    path = workspace / "workflow/studies/storage/schema.yaml"
    schema = yaml.safe_load(path.read_text())
    schema["properties"]["probe_tolerance"] = {"type": "number", "default": 0.1, "x-judging": True}
    path.write_text(yaml.safe_dump(schema))


def test_a_judging_key_changes_no_benchmark_command(snake, workspace):
    """Changing an x-judging value changes the analysis jobs' --config but not one benchmark job's
    command (they get run_json): a tolerance edit never re-runs a stack (fails with study_json there)."""
    add_judging_key(workspace)
    on = {"storage": {"enabled": True}}
    a = storage_commands(snake, workspace, on)
    b = storage_commands(snake, workspace, {"storage": {"enabled": True, "probe_tolerance": 0.5}})
    assert len(a["run"]) >= 13, sorted(a)  # every stack x benchmark x repeat and both limits x repeats
    assert a["run"] == b["run"], "a benchmark job's command changed with an x-judging value"
    for cmd in a["run"]:
        assert "probe_tolerance" not in cmd, cmd[:300]
    assert a["claims"] != b["claims"]
    cfg = json.loads(shlex.split(b["claims"][0].split("--config ")[1])[0])
    assert cfg["probe_tolerance"] == 0.5


PLAN_ONLY = [("enabled",), ("repeats",), ("mdtest", "container"), ("kick",), ("runtime_minutes",)]


def _config_of(cmd: str) -> dict:
    return json.loads(shlex.split(cmd.split("--config ")[1])[0])


def _has(cfg: dict, path: tuple) -> bool:
    for key in path:
        if not isinstance(cfg, dict) or key not in cfg:
            return False
        cfg = cfg[key]
    return True


def check_run_contract(cmd: str) -> str:
    """A run job's command as run.py reads it (the run contract): its own parser takes it, the experiment
    is one of run.py's, and --out is exactly the job's raw files (layout.py's, from the config the command
    carries). Returns the experiment."""
    from studies.storage import run

    argv = shlex.split(cmd.split("-m studies.storage.run ", 1)[1])
    argv = argv[: argv.index(">")] if ">" in argv else argv  # the job's log redirection
    argv[-1] = argv[-1].rstrip(")")
    a = run.RUN.parser().parse_args(argv)
    cfg, params = _config_of(cmd), json.loads(a.params)
    assert a.experiment in run.RUN.names and params["launcher"] == "slurm", argv[:1] + argv[3:6]
    if a.experiment.startswith("limit-"):
        want = [layout.limit_path(a.experiment[len("limit-"):], a.rep)]
    else:
        want = layout.job_outputs(cfg, params["stack"], a.experiment, a.rep)
    assert a.out == want, (a.experiment, a.out, want)
    assert all(i.startswith("image=containers/sif/") for i in a.input), a.input
    return a.experiment


def test_a_plan_only_key_changes_no_run_command(snake, workspace):
    """The keys the schema marks x-plan are read when the plan is made (the Slurm time limit, the kick job,
    how many repeats, the image) and by no run job: changing runtime_minutes, kick.stack and repeats keeps
    every run command of the plan as it was (repeats adds the new repeat's jobs) and none carries an x-plan
    key; the analysis still gets them. Fails without the x-plan marks (each was in every run command)."""
    from repro import config as rc

    assert rc.judging_paths(rc.study_schema("storage"), marker="x-plan") == PLAN_ONLY
    a = storage_commands(snake, workspace, {"storage": {"enabled": True}})
    # the whole-study target `storage` (derived from declaration.py) plans every declared script's job
    assert sorted(a) == ["aggregate", "claims", "figure4", "figure5", "figure6", "run", "table5"], sorted(a)
    b = storage_commands(snake, workspace, {"storage": {"enabled": True, "runtime_minutes": 1000,
                                                        "kick": {"stack": "juicefs"}, "repeats": 4}})
    assert len(b["run"]) > len(a["run"]) >= 13, (len(a["run"]), len(b["run"]))
    assert set(a["run"]) <= set(b["run"]), "a run job's command changed with a plan-only value"
    for cmd in b["run"]:
        present = [p for p in PLAN_ONLY if _has(_config_of(cmd), p)]
        assert not present, (present, cmd[:300])
    # every run command is the run contract's, naming exactly its job's raw files
    assert {check_run_contract(cmd) for cmd in b["run"]} == {"cosbench", "mdtest", "limit-fio", "limit-ceiling"}
    cfg = _config_of(b["claims"][0])
    assert (cfg["runtime_minutes"], cfg["kick"]["stack"], cfg["repeats"]) == (1000, "juicefs", 4)

@pytest.mark.slow
def test_each_run_rule_runs_its_own_command(snake, workspace):
    """storage_cosbench_run and storage_mdtest_run are made by experiment_rule in a loop over the benchmarks:
    a real job of each (and of storage_limit_run) runs its own benchmark -- a rule made in a bare loop
    would run the last one (mdtest) for both. Tiny: the Lustre+MinIO stand-in, one configuration each."""
    for tool in ("tools/cosbench/build/cosbench-driver", "tools/mdtest/build/mdbench"):
        if not (workspace / tool).exists():
            pytest.skip(f"{tool} not built (./repro setup)")
    cfg = section(stacks=["lustre-minio"], repeats=1,
                  cosbench={"sizes": ["4KB"], "workers": [1], "objects": 4, "runtime": 2, "interval": 1},
                  mdtest={"tasks": [1], "files": 20, "iterations": 1},
                  limit={"ceiling_sizes": ["4KB"], "ceiling_workers": [1], "ceiling_seconds": 1},
                  paths={"work_dir": str(workspace / "work")})
    (workspace / "overlay.yaml").write_text(yaml.safe_dump({"storage": cfg}))
    raws = {b: layout.job_outputs(cfg, "lustre-minio", b, 0)[0] for b in layout.BENCHMARKS}
    raws["ceiling"] = layout.limit_path("ceiling", 0)
    snake(*raws.values(), "--profile", "profiles/local", "--configfile", "config/local.yaml", "overlay.yaml",
          "--allowed-rules", "storage_cosbench_run", "storage_mdtest_run", "storage_limit_run", timeout=600)
    for what, raw in raws.items():
        rec = rawio.read(workspace / raw)
        assert rec["status"] == "ok", (what, rec.get("failure"))
        assert rec["experiment"] == (what if what in layout.BENCHMARKS else f"limit-{what}"), (what, rec["experiment"])
    for b in layout.BENCHMARKS:
        assert (workspace / f"results/storage/log/{b}/stack~lustre-minio/rep~0.log").exists()
        assert (workspace / f"results/storage/benchmarks/storage_{b}_run/stack~lustre-minio,rep~0.tsv").exists()
