"""The rules the engine derives from a study's declaration (Snakefile, workflow/rules/common.smk):
`<study>` and `<study>_kick` for every study that does not write its own, and the analysis rules
made by analysis_rule."""
import re

from repro import config as rc
from repro.testing import REPO, Snake


def _rules() -> set[str]:
    out = Snake(REPO)("--list-rules", "--profile", "profiles/local", timeout=120).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def test_every_study_has_its_whole_and_kick_targets():
    rules = _rules()
    for study in rc.study_names():
        assert study in rules, study
        if study != "smoke":
            assert f"{study}_kick" in rules, study


def test_the_derived_study_target_plans_every_declared_figure_and_table():
    """inference writes no `rule inference`: the derived one must ask for the declared outputs
    (remove a figure from the declaration and this plan loses its job)."""
    on = REPO / "results" / ".test-inference-on.yaml"
    on.parent.mkdir(parents=True, exist_ok=True)
    on.write_text("inference: {enabled: true}\n")
    try:
        out = Snake(REPO)("-n", "-F", "inference", "--profile", "profiles/local", "--configfile",
                          "config/local.yaml", str(on), timeout=300).stdout
    finally:
        on.unlink()
    for name in ("figure1", "figure2", "figure3", "figure4"):
        assert f"results/inference/figures/{name}.png" in out, name
    for name in ("table1", "table2", "summary", "limits"):
        assert f"results/inference/tables/{name}.csv" in out, name
    counts = dict(re.findall(r"^(inference_\w+)\s+(\d+)$", out, re.M))
    assert counts["inference_figure"] == "4" and counts["inference_table"] == "2", counts
