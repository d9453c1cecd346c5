"""Invalid configurations fail at start-up, naming the offending key; valid ones plan."""

from __future__ import annotations

import copy

import pytest
from repro import config as repro_config


def _overlay(ws, text):
    p = ws / "overlay.yaml"
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("text, named", [
    ("tco:\n  fleet_sizez: [1000]\n", "tco.fleet_sizez: unknown key"),
    ("tco:\n  lifecycle_years: long\n", "tco.lifecycle_years: 'long' is not of type 'number'"),
    ("nonsense: 1\n", "nonsense: unknown key"),
    ("smoke:\n  nodes: [2, 8]\n", "smoke.nodes[1]: impossible layout, 8 system nodes + 1 driver node = 9 "
                                  "exceeds cluster.partition_nodes = 8"),
    ("cloudcost:\n  cloud:\n    services:\n      s3:\n        egress: {quantity: 1, unit: GB, source: x}\n",
     "cloudcost.cloud.services.s3.egress: 'unit_price' is a required property"),
])
def test_bad_config_fails_at_start_naming_the_key(snake, workspace, text, named):
    proc = snake("-n", "--profile", "profiles/local", "--configfile", "config/local.yaml",
                 _overlay(workspace, text), check=False, timeout=120)
    assert proc.returncode != 0
    assert named in proc.stderr + proc.stdout
    assert not (workspace / "results").exists()  # nothing ran


def test_local_and_full_configs_plan(snake):
    local = snake("-n", "--profile", "profiles/local", timeout=120)
    assert "tco_run" in local.stdout and "report_html" in local.stdout
    full = snake("-n", "--profile", "profiles/slurm", "--configfile", "config/config.yaml", timeout=300)
    assert "cloudcost_run" in full.stdout
    assert "slurm_partition=batch" in full.stdout  # the cluster plan carries Slurm resources


def test_run_section_leaves_out_judging_keys_at_any_depth():
    from repro import config as rc

    schema = {"properties": {
        "repeats": {"type": "integer"},
        "claims": {"type": "object", "x-judging": True},
        "bytes": {"type": "object", "properties": {"sizes": {"type": "array"},
                                                   "tolerance": {"type": "number", "x-judging": True}}},
    }}
    section = {"repeats": 3, "claims": {"lead_tolerance": 0.1}, "bytes": {"sizes": [1], "tolerance": 0.2}}
    assert rc.judging_paths(schema) == [("claims",), ("bytes", "tolerance")]
    run = rc.run_section(section, schema)
    assert run == {"repeats": 3, "bytes": {"sizes": [1]}}
    assert section["claims"] == {"lead_tolerance": 0.1}  # the analysis' copy is untouched
    judged_otherwise = {**section, "claims": {"lead_tolerance": 0.5}, "bytes": {"sizes": [1], "tolerance": 9}}
    assert rc.run_section(judged_otherwise, schema) == run  # a tolerance change: same benchmark params
    assert rc.run_section({**section, "repeats": 4}, schema) != run  # a run key change: different


def test_run_section_leaves_out_plan_only_keys():
    """x-plan: read only when the plan is made (a Slurm time limit, the kick choice)."""
    from repro import config as rc

    schema = {"properties": {"repeats": {"type": "integer"}, "runtime_minutes": {"type": "integer", "x-plan": True},
                             "kick": {"type": "object", "x-plan": True}}}
    section = {"repeats": 3, "runtime_minutes": 60, "kick": {"stack": "ceph"}}
    assert rc.judging_paths(schema, marker="x-plan") == [("runtime_minutes",), ("kick",)]
    assert rc.run_section(section, schema) == {"repeats": 3}
    assert rc.run_section({**section, "runtime_minutes": 600}, schema) == rc.run_section(section, schema)


@pytest.mark.parametrize("study", repro_config.study_names())
def test_changing_every_judging_key_leaves_the_benchmarks_params_alone(study):
    """config/config.yaml's section of each study: every x-judging value replaced gives the same
    run section (what benchmark rules get), and each judging key is one the schema really has."""
    import yaml
    from repro import config as rc

    cfg = rc.load("config/config.yaml")
    schema = rc.study_schema(study)
    section = cfg.get(study, {})
    changed = copy.deepcopy(section)
    for path in rc.judging_paths(schema):
        node = changed
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = {"changed": True}
    assert rc.run_section(changed, schema) == rc.run_section(section, schema)
    assert yaml.safe_dump(rc.run_section(section, schema)) is not None


def test_benchmark_commands_leave_out_judging_keys(snake):
    """The cluster plan's commands: a benchmark job's --config has no x-judging key (changing a
    tolerance or a score never re-runs it); the claims job's has them."""
    out = snake("-n", "-p", "-F", "inference", "mpifuse", "--profile", "profiles/slurm",
                "--configfile", "config/config.yaml", timeout=600).stdout
    cmds = [ln for ln in out.splitlines() if "--config" in ln]
    def of(module):
        return [c for c in cmds if f"studies.{module} " in c or f"studies.{module}'" in c]
    bench = of("inference.run") + of("mpifuse.run")
    assert len(of("inference.run")) > 50 and of("mpifuse.run"), out[-2000:]
    for c in bench:
        assert '"usability"' not in c and '"lead_tolerance"' not in c and '"figure4"' not in c, c[:300]
    assert any('"usability"' in c and '"lead_tolerance"' in c for c in of("inference.claims"))
    assert any('"figure4"' in c for c in of("mpifuse.figure4") + of("mpifuse.claims"))
