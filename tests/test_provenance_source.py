"""A result names its code (issue 27): records made in a copy of the artifact without .git -- the
rehearsal's working copy, a tarball cut with `git archive` as artifact-evaluation committees
download it -- carry the commit and a tree hash, never "unknown"."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from repro import provenance, testing

REPO = provenance.REPO_ROOT


def _source_in(root: Path) -> dict:
    """What repro.provenance says of its code when it runs from ``root`` (a fresh process, no
    REPRO_GIT_* from the caller)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPRO_GIT_")}
    env["PYTHONPATH"] = str(root / "workflow" / "lib")
    env["GIT_CEILING_DIRECTORIES"] = str(root.parent)  # never an enclosing checkout's commit
    code = ("import json; from repro import provenance as p; "
            "print(json.dumps({'sha': p.git_sha(), 'tree': p.git_tree(), 'file': p.__file__}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return json.loads(out)


def test_a_copy_without_history_names_the_commit_and_the_tree_it_was_copied_from(tmp_path):
    here = provenance.source_of_checkout()
    assert here and len(here["commit"]) == 40 and len(here["tree"]) == 40
    dst = tmp_path / "copy"
    testing.copy_repo(dst)
    assert not (dst / ".git" / "HEAD").read_text().startswith(here["commit"])  # no history came along
    got = _source_in(dst)
    assert got["file"].startswith(str(dst))
    assert got["sha"] == here["commit"][:12] + ("-dirty" if here["dirty"] else "")
    assert got["tree"] == here["tree"]
    stamp = json.loads((dst / provenance.STAMP).read_text())
    assert stamp["commit"] == here["commit"] and stamp["source"].startswith(f"copy of {REPO}")


def test_the_tree_hash_follows_the_working_tree_not_only_the_commit(tmp_path):
    """An uncommitted change gives another tree and '-dirty': the copy names the code it holds."""
    repo = tmp_path / "r"
    repo.mkdir()
    g = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("one\n")
    subprocess.run([*g, "add", "a.txt"], check=True)
    subprocess.run([*g, "commit", "-qm", "one"], check=True)
    clean = provenance.source_of_checkout(repo)
    assert clean["dirty"] is False
    assert clean["tree"] == subprocess.run([*g, "rev-parse", "HEAD^{tree}"], capture_output=True, text=True,
                                           check=True).stdout.strip()
    (repo / "b.txt").write_text("untracked, not ignored\n")
    dirty = provenance.source_of_checkout(repo)
    assert dirty["dirty"] is True and dirty["tree"] != clean["tree"] and dirty["commit"] == clean["commit"]
    # the real index is untouched: b.txt is still untracked
    status = subprocess.run([*g, "status", "--porcelain"], capture_output=True, text=True, check=True).stdout
    assert "?? b.txt" in status


def test_a_git_archive_tarball_names_its_commit(tmp_path):
    """`git archive` fills in workflow/lib/repro/source.txt (export-subst): a tarball of the committed
    artifact, unpacked without .git, names the commit and tree it was cut from."""
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    head_tree = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD^{tree}"], capture_output=True,
                               text=True, check=True).stdout.strip()
    tar = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", "HEAD", "workflow/lib",
                          ".gitattributes"], capture_output=True, check=True).stdout
    dst = tmp_path / "tarball"
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(dst, filter="data")
    assert not (dst / ".git").exists()
    got = _source_in(dst)
    assert got["sha"] == head[:12] and got["tree"] == head_tree


def test_nothing_to_go_by_says_unknown(tmp_path):
    """Neither .git, nor a stamp, nor a filled-in source.txt: 'unknown', not a guess."""
    dst = tmp_path / "bare"
    (dst / "workflow" / "lib").mkdir(parents=True)
    subprocess.run(["cp", "-r", str(REPO / "workflow" / "lib" / "repro"), str(dst / "workflow" / "lib")], check=True)
    assert _source_in(dst) == {"sha": "unknown", "tree": "", "file": str(dst / "workflow/lib/repro/provenance.py")}
