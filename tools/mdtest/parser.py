"""Parser of the ``SUMMARY rate`` table of mdtest (IOR project, 3.x and 4.x) and of
``tools/mdtest/mdbench``, which prints the same format. Captured outputs: ``fixtures/``."""

from __future__ import annotations

import re

from tools.common import ParseError

_MD_SUMMARY = re.compile(r"^SUMMARY (rate|time):?\s*\(of (\d+) iterations\)", re.MULTILINE)
_MD_ROW = re.compile(
    r"^\s+(Directory creation|Directory stat|Directory read|Directory rename|Directory removal|File creation|"
    r"File stat|File read|File removal|File rename|Tree creation|Tree removal)\s*:\s+"
    r"([-\d.eE+]+)\s+([-\d.eE+]+)\s+([-\d.eE+]+)\s+([-\d.eE+]+)")
_MD_LAUNCH = re.compile(r"^(\S+).*? was launched with (\d+) total task\(s\) on (\d+) node\(s\)", re.MULTILINE)

MDTEST_OPS = {"File creation": "create", "File stat": "stat", "File read": "open",
              "File removal": "remove", "Tree creation": "tree_create", "Tree removal": "tree_remove",
              "Directory creation": "dir_create", "Directory stat": "dir_stat", "Directory read": "dir_read",
              "Directory removal": "dir_remove", "Directory rename": "dir_rename", "File rename": "rename"}


def parse_mdtest(text: str) -> dict:
    """mdtest's (or mdbench's) ``SUMMARY rate`` table.

    Returns ``{"program", "tasks", "nodes", "iterations", "rates": {op: {"max",
    "min", "mean", "std"}}}`` with ops named create/stat/open/remove/... (mdtest's
    "File read" phase opens, reads -e bytes and closes each file: the paper's
    "open"); the directory rows, where the run had them (mdtest without -F, mdbench --dirs or -D),
    are dir_create/dir_stat/dir_read/dir_remove (and dir_rename).  Raises ParseError if there is no
    rate summary.
    """
    out: dict = {"program": None, "tasks": None, "nodes": None, "iterations": None, "rates": {}}
    m = _MD_LAUNCH.search(text)
    if m:
        out["program"], out["tasks"], out["nodes"] = m.group(1), int(m.group(2)), int(m.group(3))
    section = None
    for line in text.splitlines():
        s = _MD_SUMMARY.match(line.strip())
        if s:
            section = s.group(1)
            if section == "rate":
                out["iterations"] = int(s.group(2))
            continue
        if section != "rate":
            continue
        r = _MD_ROW.match(line)
        if r:
            op = MDTEST_OPS[r.group(1)]
            out["rates"][op] = {"max": float(r.group(2)), "min": float(r.group(3)),
                                "mean": float(r.group(4)), "std": float(r.group(5))}
        elif line.startswith(("--", "SUMMARY")):
            section = None
    if not out["rates"]:
        raise ParseError("no 'SUMMARY rate' table: not an mdtest summary")
    return out
