"""The mpifuse study declared once (declaration.py) and its plan-only keys (issue 23): changing a key the
schema marks x-plan (enabled, kick, home.state_dir, home.client_max_read) changes no benchmark job's
command in the cluster plan; the FUSE speed benchmark is no longer part of it (workflow/studies/fusespeed/)."""

from __future__ import annotations

import re

import yaml
from repro import config as rc

from studies.mpifuse import declaration

PLAN_ONLY = [("enabled",), ("home", "client_max_read"), ("home", "state_dir"), ("kick",)]


def _plan(snake, ws, over, name):
    p = ws / name
    p.write_text(yaml.safe_dump({"mpifuse": over}))
    out = snake("-n", "-p", "-F", "mpifuse", "--profile", "profiles/slurm", "--configfile", "config/config.yaml",
                str(p), timeout=600).stdout
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", out, re.MULTILINE))
    cmds = [ln.strip() for ln in out.splitlines() if "--config" in ln]
    return counts, cmds


def _of(cmds, module):
    return sorted(c for c in cmds if f"studies.mpifuse.{module} " in c)


def test_the_schema_marks_the_plan_only_keys():
    assert rc.judging_paths(rc.study_schema("mpifuse"), marker="x-plan") == PLAN_ONLY


def test_the_declaration_has_every_output_the_rules_write():
    st = declaration.STUDY
    assert not [k for k in st.outputs if "speed" in k]  # the fusespeed study's now
    assert st.out("claims") == "results/mpifuse/claims.csv"
    assert [e["path"] for e in st.table_entries()][:3] == [f"results/mpifuse/tables/{n}.csv"
                                                           for n in ("table1", "variants", "ratios")]


def test_plan_only_keys_change_no_benchmark_command(snake, workspace):
    a_counts, a = _plan(snake, workspace, {"enabled": True, "kick": {"source": "scratch", "nodes": [2]},
                                           "home": {"state_dir": "/var/tmp/a", "client_max_read": "1MiB"}},
                        "a.yaml")
    b_counts, b = _plan(snake, workspace, {"enabled": False, "kick": {"source": "home", "nodes": [1, 4]},
                                           "home": {"state_dir": "/var/tmp/b", "client_max_read": "4MiB"}}, "b.yaml")
    # the derived `mpifuse` target: no speed benchmark (the fusespeed study)
    assert not [r for r in {**a_counts, **b_counts} if "speed" in r], (a_counts, b_counts)
    assert a_counts.get("mpifuse_run") == b_counts.get("mpifuse_run") == "480"
    assert a_counts.get("mpifuse_claims") == b_counts.get("mpifuse_claims") == "1"
    # every benchmark command the same: the plan-only keys are not in their --config
    assert len(_of(a, "run")) == 480 and _of(a, "run") == _of(b, "run")
    for c in _of(a, "run"):
        assert '"kick"' not in c and '"state_dir"' not in c and '"client_max_read"' not in c, c[:300]
    # the analysis still gets the whole section (what tells the test's configurations apart)
    assert _of(a, "claims") != _of(b, "claims") and '"kick"' in _of(a, "claims")[0]
