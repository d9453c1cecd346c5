"""Who, where and when a measurement was taken."""

from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import platform
import re
import shutil
import socket
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


# A copy of the artifact without .git still names its code (issue 27: the rehearsal's records said
# git_sha "unknown"):
# - STAMP, written into a copy when it is made (repro.testing.copy_repo, so the rehearsal's working
#   copy and the tests' workspaces): the commit, the tree hash of the working tree as copied
#   (uncommitted changes included) and whether it differed from the commit;
# - EXPORT, filled in by `git archive` (and GitHub's tarballs) through .gitattributes' export-subst:
#   the tarball an artifact-evaluation committee downloads names the commit it was cut from.
STAMP = ".repro-source.json"
EXPORT = Path(__file__).with_name("source.txt")


def git(*args: str, cwd: Path = REPO_ROOT, env: dict | None = None) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True,
                          timeout=30, env=env).stdout.strip()


def source_of_checkout(root: Path = REPO_ROOT) -> dict | None:
    """commit, tree and dirty of a git checkout: ``tree`` is the hash of the working tree as it is
    (tracked and untracked files, .gitignore applied: a temporary index, the real one untouched)."""
    import tempfile

    try:
        commit = git("rev-parse", "HEAD", cwd=root)
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, GIT_INDEX_FILE=os.path.join(d, "index"))
            git("read-tree", "HEAD", cwd=root, env=env)
            git("add", "-A", ".", cwd=root, env=env)
            tree = git("write-tree", cwd=root, env=env)
        head_tree = git("rev-parse", "HEAD^{tree}", cwd=root)
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "tree": tree, "dirty": tree != head_tree, "source": "git"}


def write_stamp(dst: Path, root: Path = REPO_ROOT) -> dict | None:
    """Name the code in a copy of ``root`` made at ``dst`` (a copy has no history)."""
    src = source_of_checkout(root) or read_source(root)
    if src:
        src = {**src, "source": f"copy of {root} ({src['source']})", "copied_at": now_iso()}
        (Path(dst) / STAMP).write_text(json.dumps(src, indent=1) + "\n")
    return src


def read_source(root: Path = REPO_ROOT) -> dict | None:
    """What a copy without .git says of its code: the stamp, else the export-subst file."""
    try:
        src = json.loads((Path(root) / STAMP).read_text())
        if src.get("commit"):
            return src
    except (OSError, ValueError):
        pass
    try:
        text = (Path(root) / EXPORT.relative_to(REPO_ROOT)).read_text()
    except (OSError, ValueError):
        return None
    f = dict(re.findall(r"^(commit|tree): *(\S+)", text, re.M))
    if re.fullmatch(r"[0-9a-f]{40}", f.get("commit", "")):  # "$Format:%H$" in a checkout: not filled in
        return {"commit": f["commit"], "tree": f.get("tree", ""), "dirty": False, "source": "git archive"}
    return None


@functools.lru_cache(maxsize=1)
def source() -> dict:
    """The code a run is made from: REPRO_GIT_SHA/REPRO_GIT_TREE (exported by the workflow to its
    jobs, which may run in an image without git), else the checkout, else a copy's stamp."""
    if os.environ.get("REPRO_GIT_SHA"):
        return {"sha": os.environ["REPRO_GIT_SHA"], "tree": os.environ.get("REPRO_GIT_TREE", "")}
    src = source_of_checkout() or read_source()
    if not src:
        return {"sha": "unknown", "tree": ""}
    return {"sha": src["commit"][:12] + ("-dirty" if src.get("dirty") else ""), "tree": src.get("tree", "")}


def git_sha() -> str:
    """The commit the run was made from, with ``-dirty`` for uncommitted changes."""
    return source()["sha"]


def git_tree() -> str:
    """The tree hash of the code as it ran (differs from the commit's tree when dirty)."""
    return source()["tree"]


def host() -> str:
    """The node name: Slurm's node name where set (virtual nodes share one host)."""
    node = os.environ.get("SLURMD_NODENAME")
    name = socket.gethostname()
    return f"{name}/{node}" if node and node != name else name


def tool_version(cmd: list[str], timeout: float = 10) -> str:
    """First line of a tool's version output, or 'absent'."""
    if not shutil.which(cmd[0]):
        return "absent"
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0].strip() if text else "unknown"


def base_versions() -> dict[str, str]:
    return {
        "python": platform.python_version(),
        "kernel": platform.release(),
        "container": os.environ.get("APPTAINER_NAME", "") or "none",
    }


def loadavg() -> list[float]:
    """The host's 1/5/15-minute load averages: a timed job records them at its start and end, so
    that a reader can see whether it really ran alone."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def record(tool_versions: dict[str, str] | None = None) -> dict:
    """Provenance block stored in every raw file."""
    versions = base_versions()
    versions.update(tool_versions or {})
    return {
        "host": host(),
        "git_sha": git_sha(),
        "git_tree": git_tree(),
        "tool_versions": versions,
    }
