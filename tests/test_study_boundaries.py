"""Studies do not reach into each other (issue 29): no study's .smk includes a file outside its own
folder, and none names a global (a name defined at the top level, or imported under a name) of another
study's .smk files -- what one study needs of another comes through the engine (workflow/rules/:
model_study.smk's shape, uses.smk's provided systems). And the engine's rehearsal names no study."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from repro import config as rc
from repro.testing import REPO

STUDIES = REPO / "workflow" / "studies"
TOP_NAME = re.compile(r"^(?:def\s+([A-Za-z_]\w*)\s*\(|([A-Za-z_]\w*)\s*=(?!=))")
IMPORT_AS = re.compile(r"^(?:from\s+\S+\s+)?import\s+.*?\bas\s+(\w+)\s*$")


def _code(path: Path) -> str:
    """The file without its comments (a comment may say whose file systems a study runs)."""
    return "\n".join(re.sub(r"#.*$", "", line) for line in path.read_text().splitlines())


def study_globals(study: str, root: Path = STUDIES) -> set[str]:
    names = set()
    for f in (root / study).glob("*.smk"):
        for line in f.read_text().splitlines():
            m = TOP_NAME.match(line) or IMPORT_AS.match(line)
            if m:
                names.add(next(g for g in m.groups() if g))
    return names


def reaches(study: str, defined: dict[str, set[str]], root: Path = STUDIES) -> list[str]:
    """Every place where a .smk file of `study` names another study's global: "<study>/<file>: <other>'s <name>"."""
    out = []
    for f in sorted((root / study).glob("*.smk")):
        code = _code(f)
        for other, names in defined.items():
            if other != study:
                out += [f"{study}/{f.name}: {other}'s {n}" for n in sorted(names)
                        if re.search(rf"(?<![\w.]){re.escape(n)}\b", code)]
    return out


def test_no_study_names_another_studys_globals():
    defined = {s: study_globals(s) for s in rc.study_names()}
    assert sum(map(len, defined.values())) > 60  # the names are found (MF_STUDY, mf_system_inputs, ...)
    assert {"MF_STAND_INS", "mf_system_inputs", "MF_PUBLISHED"} <= defined["mpifuse"]
    assert [r for s in defined for r in reaches(s, defined)] == []


def test_the_check_sees_a_reach(tmp_path):
    """The check itself: a study file that reads another's globals is found (the shape fusespeed had),
    a name in a comment or an attribute of the same name is not."""
    files = {"a": "A_X = 1\n\n\ndef a_inputs(wc):\n    return []\n",
             "b": "# a's A_X, in a comment\nB = A_X + 1\nC = obj.a_inputs\nrule b:\n    input: a_inputs\n"}
    for name, text in files.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "rules.smk").write_text(text)
    defined = {s: study_globals(s, tmp_path) for s in files}
    assert defined == {"a": {"A_X", "a_inputs"}, "b": {"B", "C"}}
    assert reaches("b", defined, tmp_path) == ["b/rules.smk: a's A_X", "b/rules.smk: a's a_inputs"]
    assert reaches("a", defined, tmp_path) == []


def test_no_study_includes_a_file_outside_its_folder():
    bad = []
    for f in sorted(STUDIES.glob("*/*.smk")):
        for inc in re.findall(r'^\s*include:\s*"([^"]+)"', f.read_text(), re.M):
            target = (f.parent / inc).resolve()
            if target.parent != f.parent.resolve():
                bad.append(f"{f.relative_to(REPO)} includes {inc}")
    assert bad == []


def test_the_rehearsal_names_no_study():
    """The engine's rehearsal takes the studies from the registry and their facts from the declarations:
    no study's name is in its source, not even in a comment or a rule name (grep)."""
    text = (REPO / "workflow" / "lib" / "repro" / "rehearsal.py").read_text()
    assert [s for s in rc.study_names() if s in text] == []


def test_a_study_cannot_use_itself():
    from repro.study import Study

    assert Study(name="a", title="A", paper="-", uses=("b",)).uses == ("b",)
    with pytest.raises(ValueError, match="uses itself"):
        Study(name="a", title="A", paper="-", uses=("a",))
