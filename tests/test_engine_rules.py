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


def test_a_declaration_refuses_what_it_does_not_declare():
    import pytest

    from repro.study import Study

    with pytest.raises(ValueError, match="output_tables names \\['limits'\\]"):
        Study("x", "t", "p", outputs={"claims": "claims.csv"}, output_tables={"limits": "c"})
    with pytest.raises(ValueError, match="expected_times keys \\['run'\\]"):
        Study("x", "t", "p", expected_times={"run": "1 min"})
    st = Study("x", "t", "p", figures={"figure1": "F1"}, tables={"table1": "T1"},
               outputs={"claims": "claims.csv", "limits": "tables/limits.csv"}, output_tables={"limits": "L"})
    assert st.all_outputs() == ["results/x/claims.csv", "results/x/tables/limits.csv", "results/x/figures/figure1.png",
                                "results/x/tables/table1.csv"]
    entry = st.report_entry(enabled=True, benchmarks=["b.tsv"])
    assert entry["claims"] == "results/x/claims.csv" and entry["benchmarks"] == ["b.tsv"]
    assert [t["path"] for t in entry["tables"]] == ["results/x/tables/table1.csv", "results/x/tables/limits.csv"]


def test_every_declaration_is_its_folders_and_its_readme_rows_are_in_the_readme():
    """The README's expected-times rows of a declared study are the declaration's (python3 -m
    repro.study --readme prints them): edit one without the other and this fails."""
    from repro import study

    readme = (REPO / "README.md").read_text()
    declared = [n for n in rc.study_names() if study.declared(n) is not None]
    # every study is declared once (the engine's own probe, smoke, too: its experiment)
    assert sorted(set(rc.study_names()) - set(declared)) == [], declared
    for name in declared:
        assert study.declared(name).name == name
    for row in study.readme_rows(declared):
        assert row in readme, row


def test_no_function_in_workflow_is_longer_than_150_lines():
    """Issue 23's bound: a longer function is a study's logic that wants splitting."""
    import ast

    long = []
    for path in (REPO / "workflow").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > 150:
                    long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, long
