"""`systems/` never imports the engine (issue 23): a system is a program with its own command line
that the studies run; the engine (workflow/lib/repro) is the studies' library. A study passes what a
system needs (a node name, an MPI environment) or keeps the code that needs the engine itself.
Scans every non-test module under systems/ (test folders and conftest files may use the engine's
testing helpers)."""

import ast
from pathlib import Path

from systems.storage_common.testing import REPO

SKIP_DIRS = {"tests", "build", "node_modules", ".venv", "venv", "__pycache__", "target"}


def engine_imports(source: str) -> list[str]:
    """`import repro...` / `from repro... import` anywhere in the module (a function's body too),
    and a sys.path entry ending in workflow/lib (the engine's folder)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__" \
                and node.args and isinstance(node.args[0], ast.Constant):
            names = [str(node.args[0].value)]
        else:
            strs = [n for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)] \
                if isinstance(node, (ast.Call, ast.BinOp)) else []
            consts = [n.value for n in sorted(strs, key=lambda n: (n.lineno, n.col_offset))]  # source order
            if any(c.rstrip("/").endswith("workflow/lib") for c in consts) or \
                    any(a == "workflow" and b == "lib" for a, b in zip(consts, consts[1:])):
                found.append(f"line {node.lineno}: workflow/lib on a path")
            continue
        found += [f"line {node.lineno}: {n}" for n in names if n == "repro" or n.startswith("repro.")]
    return sorted(set(found))


def system_modules() -> list[Path]:
    root = REPO / "systems"
    return sorted(p for p in root.rglob("*.py")
                  if not SKIP_DIRS & set(p.relative_to(root).parts[:-1]) and not p.name.startswith("conftest"))


def test_no_module_under_systems_imports_the_engine():
    mods = system_modules()
    assert len(mods) > 30 and REPO / "systems" / "storage_common" / "where.py" in mods
    bad = {str(p.relative_to(REPO)): hits for p in mods if (hits := engine_imports(p.read_text()))}
    assert not bad, f"systems import the engine (pass what they need from the study instead): {bad}"


def test_the_scan_finds_every_way_the_tree_has_imported_it():
    """The scan itself fails on what systems/ held before (and other spellings): a test that can fail."""
    caught = {
        "from repro import cli\n": True,
        "from repro.allocation import here  # noqa\n": True,
        "def f():\n    from repro import procs\n": True,
        "import repro.procs as p\n": True,
        "m = __import__('repro')\n": True,
        "import sys, os\nsys.path.insert(0, os.path.join(ROOT, 'workflow', 'lib'))\n": True,
        "sys.path.insert(0, str(Path(__file__).parents[2] / 'workflow' / 'lib'))\n": True,
        "from repro_inference import device\n": False,
        "import reprolib\n": False,
        "from . import repro\n": False,
        "x = 'workflow'\n": False,
    }
    assert {src: bool(engine_imports(src)) for src in caught} == caught
