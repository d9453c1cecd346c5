"""One import mechanism (issue 29, part 4): the folders named in workflow/pythonpath.txt, on
PYTHONPATH, set by ./repro, by the engine for its jobs and by workflow/scripts/in-image.sh in
images; no code outside tests edits sys.path (workflow/README.md, "Python: one package path")."""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from repro import pythonpath
from repro.testing import REPO

IN_IMAGE = REPO / "workflow" / "scripts" / "in-image.sh"
EXPECTED = ["workflow/lib", "workflow", ".", "systems/inference/src", "systems/mtc-workflows"]

# the sys.path edits left outside tests, each with why; a file that no longer has one must leave
# this list (the test fails), so the list only shrinks
LEFT: dict[str, str] = {}
SKIP_DIRS = {".git", ".venv", "venv", "build", "node_modules", "target", "__pycache__", ".snakemake",
             "results", "tests", ".pytest_cache"}
PREFIX = re.compile(r"""["'][^"'\n]*\bPYTHONPATH=""")  # inside a string: a command's prefix
INSERT = re.compile(r"sys\.path\.(insert|append|extend)\b|sys\.path\s*(\+=|\[[^\]]*\]\s*=)")


def _sources() -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(REPO):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        for f in filenames:
            if (f.endswith((".py", ".smk")) or f == "Snakefile") and not f.startswith(("test_", "conftest")):
                out.append(Path(dirpath) / f)
    return out


def test_the_list_names_existing_folders_in_order():
    assert pythonpath.folders(REPO) == [os.path.normpath(REPO / d) for d in EXPECTED]
    assert all(Path(d).is_dir() for d in pythonpath.folders(REPO))


def test_pytest_ini_names_the_same_folders():
    ini = configparser.ConfigParser()
    ini.read(REPO / "pytest.ini")
    assert ini["pytest"]["pythonpath"].split() == EXPECTED


def test_value_puts_a_checkouts_folders_first_once(tmp_path):
    (tmp_path / "workflow").mkdir()
    (tmp_path / "workflow" / "pythonpath.txt").write_text("# comment\nworkflow/lib   the library\n\n.\n")
    mine = [str(tmp_path / "workflow" / "lib"), str(tmp_path)]
    assert pythonpath.folders(tmp_path) == mine
    assert pythonpath.value(tmp_path, f"/x:{tmp_path}:/y") == os.pathsep.join([*mine, "/x", "/y"])
    assert pythonpath.value(tmp_path, "") == os.pathsep.join(mine)


def test_repro_env_exports_the_list_first():
    out = subprocess.run([str(REPO / "repro"), "env"], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH="/before")).stdout
    (pp,) = re.findall(r'^export PYTHONPATH="(.*)"$', out, re.M)
    assert pp == os.pathsep.join([*pythonpath.folders(REPO), "/before"])


def test_in_image_appends_its_own_checkouts_list(tmp_path):
    """in-image.sh names the folders of the checkout it lives in (a copy's own), behind the
    image's PYTHONPATH, and a Python started through it imports every root's packages from there."""
    copy = tmp_path / "copy"
    (copy / "workflow" / "scripts").mkdir(parents=True)
    shutil.copy2(IN_IMAGE, copy / "workflow" / "scripts")
    shutil.copy2(REPO / pythonpath.LIST, copy / "workflow")
    out = subprocess.run([str(copy / "workflow" / "scripts" / "in-image.sh"), "sh", "-c", 'echo "$PYTHONPATH"'],
                         capture_output=True, text=True, check=True, cwd="/",
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": "/image/own"}).stdout.strip()
    assert out == os.pathsep.join(["/image/own", *pythonpath.folders(copy)])
    code = ("import repro, studies.smoke, tools.common, systems.mtc.netns, repro_inference.spec, mtcwf; "
            "print(repro.__file__, repro_inference.spec.__file__, mtcwf.__file__)")
    r = subprocess.run([str(IN_IMAGE), sys.executable, "-c", code], capture_output=True, text=True, cwd="/",
                       env={"PATH": os.environ["PATH"]})
    assert r.returncode == 0, r.stderr
    assert all(f.startswith(str(REPO) + "/") for f in r.stdout.split()), r.stdout


def test_in_image_refuses_without_the_list(tmp_path):
    (tmp_path / "workflow" / "scripts").mkdir(parents=True)
    shutil.copy2(IN_IMAGE, tmp_path / "workflow" / "scripts")
    r = subprocess.run([str(tmp_path / "workflow" / "scripts" / "in-image.sh"), "true"], capture_output=True,
                       text=True)
    assert r.returncode == 1 and "pythonpath.txt" in r.stderr


def test_no_sys_path_edit_outside_tests():
    found = {str(p.relative_to(REPO)) for p in _sources() if INSERT.search(p.read_text(errors="replace"))}
    assert found - set(LEFT) == set(), f"sys.path edited outside tests (use the project's Python path): {found}"
    assert set(LEFT) - found == set(), f"no longer edit sys.path: remove them from LEFT: {set(LEFT) - found}"


def test_the_scan_catches_each_spelling(tmp_path):
    for text in ("sys.path.insert(0, HERE)", "sys.path.append(d)", "sys.path.extend(ds)", "sys.path += [d]",
                 "sys.path[:0] = ds"):
        assert INSERT.search(text), text
    assert not INSERT.search("print(sys.path)") and not INSERT.search("p = sys.path[0]")


def test_no_rule_prefixes_pythonpath():
    """The rules' commands get the path from the engine's environment, never a `PYTHONPATH=` prefix
    in a command string (what memfs's workflow rules had)."""
    for text, hit in (('MWF_ENV = "PYTHONPATH=systems/x:$PYTHONPATH"', True),
                      ('f"({MPI_ENV}; PYTHONPATH=a python3 -m x)"', True),
                      ("os.environ.update(PYTHONPATH=value)", False)):
        assert bool(PREFIX.search(text)) == hit, text
    bad = [str(p.relative_to(REPO)) for p in _sources() if p.suffix == ".smk" or p.name == "Snakefile"
           if PREFIX.search(p.read_text())]
    assert not bad, bad


def test_snakemake_without_the_path_starts_again_with_this_checkouts(tmp_path):
    """Plain `snakemake` (no ./repro env) or a caller whose PYTHONPATH names another checkout: the
    engine's process starts itself again with this checkout's list first (common.smk), no sys.path
    edit. Another checkout's `repro` that cannot be imported stands for the wrong one."""
    other = tmp_path / "other" / "repro"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("raise ImportError('the other checkout\'s repro was imported')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "REPRO_PYTHONPATH_SET")}
    snakemake = [sys.executable, "-m", "snakemake", "--list-rules", "--cores", "1"]
    wrong = subprocess.run(snakemake, cwd=REPO, env={**env, "PYTHONPATH": str(other.parent)},
                           capture_output=True, text=True, timeout=300)
    assert wrong.returncode == 0, wrong.stderr[-2000:]
    assert "mpifuse_run" in wrong.stdout
    bare = subprocess.run(snakemake, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert bare.returncode == 0, bare.stderr[-2000:]
    assert bare.stdout == wrong.stdout
