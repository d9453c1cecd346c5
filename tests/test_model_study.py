"""The engine's model-study shape (workflow/rules/model_study.smk) of tco and cloudcost, each declared
once (declaration.py): the derived `<study>` target builds every declared output with the three jobs,
and `enabled` (the schema's only x-plan key) never reaches the model run's command: the run gets
run_json, the figure the whole section (study_json). Fails if the run rule is given study_json again."""

from __future__ import annotations

import re

import pytest
import yaml

from repro import config as rc
from repro import study as rstudy

MODELS = ["tco", "cloudcost"]
JOBS = {"tco": ("figure2",), "cloudcost": ("figure7",)}


@pytest.mark.parametrize("name", MODELS)
def test_declaration_and_plan_only_keys(name):
    st = rstudy.declared(name)
    assert st.name == name and tuple(st.figures) == JOBS[name]
    assert st.out("claims") == f"results/{name}/claims.csv" and st.out("raw") == f"results/{name}/raw/model.json"
    assert st.readme == {"local": "< 10 s", "cluster": "< 1 min"}  # its README row (one per cost model)
    assert rc.judging_paths(rc.study_schema(name), marker="x-plan") == [("enabled",)]
    # tco's claims tolerances (per judging scale) are its one judging key; cloudcost has none
    assert rc.judging_paths(rc.study_schema(name)) == ([("claims",)] if name == "tco" else [])


def _plan(snake, ws, name, over, tag):
    p = ws / f"{name}-{tag}.yaml"
    p.write_text(yaml.safe_dump({name: over}))
    out = snake("-n", "-p", "-F", name, "--profile", "profiles/slurm", "--configfile", "config/config.yaml",
                str(p), timeout=600).stdout
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", out, re.MULTILINE))
    cmds = [ln.strip() for ln in out.splitlines() if f"python3 -m studies.{name}." in ln]
    return counts, cmds


def _of(cmds, name, module):
    return [c for c in cmds if f"studies.{name}.{module} " in c]


def test_enabled_changes_no_model_run_command(snake, workspace):
    for name in MODELS:
        on_counts, on = _plan(snake, workspace, name, {"enabled": True}, "on")
        off_counts, off = _plan(snake, workspace, name, {"enabled": False}, "off")
        # the derived target: the model, the aggregate and the figure, once each
        jobs = (f"{name}_run", f"{name}_aggregate", f"{name}_figure", name)
        for counts in (on_counts, off_counts):
            assert {k: counts.get(k) for k in jobs} == dict.fromkeys(jobs, "1"), counts
        run_on, run_off = _of(on, name, "model"), _of(off, name, "model")
        assert len(run_on) == 1 and run_on == run_off, (run_on, run_off)
        assert '"enabled"' not in run_on[0] and '"currency"' in run_on[0]
        # the figure takes the whole section: the two configurations differ there (the test sees them)
        (fig,) = JOBS[name]
        assert _of(on, name, fig) != _of(off, name, fig) and '"enabled": true' in _of(on, name, fig)[0]
