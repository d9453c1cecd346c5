"""Generate COSBench workload XML files from a matrix (paper 002, Sec. 4.1.1).

The paper ran "over 120" COSBench workload files: workers x object sizes, with
init/prepare/main/cleanup/dispose stages and read/write/delete mixes, limited by
``runtime``. This module expands a matrix dict into one XML per configuration,
deterministically (same matrix -> byte-identical files, stable names):

    <prefix>_<stack>_s<size>_w<workers>_<mix>.xml

Usage:
    python -m tools.cosbench.gen --paper --out DIR          # the paper-shaped matrix (126 files)
    python -m tools.cosbench.gen --matrix m.json --out DIR  # your own matrix
    python -m tools.cosbench.gen --paper --list             # names only

The generated files are plain COSBench 0.4.2 workloads: real COSBench runs them
unchanged on a cluster, and tools/cosbench's driver runs them locally.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from xml.sax.saxutils import quoteattr

SIZE_RE = re.compile(r"^([1-9][0-9]*)(B|KB|MB|GB)$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+-]*$")

# What the paper states, and what is inferred (see README.md): three stacks, sizes
# from 4 KB to 64 MB (4 KB and 4 MB are named), worker counts doubling, an 80/20
# read/write mix as in COSBench's own samples. 3 x 6 x 7 = 126 files ("over 120").
PAPER_MATRIX: dict = {
    "prefix": "p002",
    "stacks": {
        "ceph": {"endpoint": "http://127.0.0.1:7480", "accesskey": "ACCESS", "secretkey": "SECRET"},
        "juicefs": {"endpoint": "http://127.0.0.1:9005", "accesskey": "ACCESS", "secretkey": "SECRET"},
        "lustre-minio": {"endpoint": "http://127.0.0.1:9000", "accesskey": "ACCESS", "secretkey": "SECRET"},
    },
    "sizes": ["4KB", "64KB", "1MB", "4MB", "16MB", "64MB"],
    "workers": [1, 2, 4, 8, 16, 32, 64],
    "mixes": [{"name": "r80w20", "read": 80, "write": 20, "delete": 0}],
    "containers": 2,
    "objects": 100,
    "runtime": 60,
    "rampup": 0,
    "interval": 5,
}

KEYS = {
    "prefix", "stacks", "sizes", "workers", "mixes", "containers", "objects", "runtime", "total_ops",
    "rampup", "rampdown", "interval", "prepare_workers", "cprefix",
}
STACK_KEYS = {"endpoint", "accesskey", "secretkey", "type"}
MIX_KEYS = {"name", "read", "write", "delete"}


class MatrixError(ValueError):
    pass


def _check(matrix: dict) -> None:
    unknown = sorted(set(matrix) - KEYS)
    if unknown:
        raise MatrixError(f"matrix: unknown key(s) {unknown} (known: {sorted(KEYS)})")
    for k in ("stacks", "sizes", "workers", "mixes"):
        if not matrix.get(k):
            raise MatrixError(f"matrix.{k}: required and non-empty")
    if ("runtime" in matrix) == ("total_ops" in matrix):
        raise MatrixError("matrix: give exactly one of runtime (seconds) or total_ops")
    for name, st in matrix["stacks"].items():
        if not NAME_RE.match(name):
            raise MatrixError(f"matrix.stacks.{name}: name must be [A-Za-z0-9.+-]")
        bad = sorted(set(st) - STACK_KEYS)
        if bad:
            raise MatrixError(f"matrix.stacks.{name}: unknown key(s) {bad}")
        if st.get("type", "s3") == "s3" and not st.get("endpoint"):
            raise MatrixError(f"matrix.stacks.{name}.endpoint: required for s3")
    for i, s in enumerate(matrix["sizes"]):
        if not isinstance(s, str) or not SIZE_RE.match(s):
            raise MatrixError(f"matrix.sizes[{i}]: {s!r} is not like 4KB, 1MB (B, KB, MB, GB; decimal as in COSBench)")
    for i, w in enumerate(matrix["workers"]):
        if not isinstance(w, int) or isinstance(w, bool) or w < 1:
            raise MatrixError(f"matrix.workers[{i}]: {w!r} is not a positive integer")
    for i, m in enumerate(matrix["mixes"]):
        bad = sorted(set(m) - MIX_KEYS)
        if bad:
            raise MatrixError(f"matrix.mixes[{i}]: unknown key(s) {bad}")
        if not NAME_RE.match(str(m.get("name", ""))):
            raise MatrixError(f"matrix.mixes[{i}].name: required, [A-Za-z0-9.+-]")
        total = sum(int(m.get(k, 0)) for k in ("read", "write", "delete"))
        if total != 100 or any(int(m.get(k, 0)) < 0 for k in ("read", "write", "delete")):
            raise MatrixError(f"matrix.mixes[{i}]: read+write+delete must be 100, is {total}")
    for k in ("containers", "objects", "runtime", "total_ops", "interval", "prepare_workers"):
        if k in matrix and (not isinstance(matrix[k], int) or matrix[k] < 1):
            raise MatrixError(f"matrix.{k}: {matrix[k]!r} is not a positive integer")
    for k in ("rampup", "rampdown"):
        if k in matrix and (not isinstance(matrix[k], int) or matrix[k] < 0):
            raise MatrixError(f"matrix.{k}: {matrix[k]!r} is not an integer >= 0")


def _size_sel(size: str) -> str:
    n, unit = SIZE_RE.match(size).groups()
    return f"c({n}){unit}"


def _storage(st: dict) -> str:
    typ = st.get("type", "s3")
    if typ != "s3":
        return f'  <storage type={quoteattr(typ)} />'
    cfg = (f"accesskey={st.get('accesskey', '')};secretkey={st.get('secretkey', '')};"
           f"endpoint={st['endpoint']};path_style_access=true")
    return f'  <storage type="s3" config={quoteattr(cfg)} />'


def workload_xml(matrix: dict, stack: str, size: str, workers: int, mix: dict) -> tuple[str, str]:
    """One configuration -> (file name, XML text)."""
    prefix = matrix.get("prefix", "wl")
    name = f"{prefix}_{stack}_s{size}_w{workers}_{mix['name']}"
    ncon, nobj = matrix.get("containers", 2), matrix.get("objects", 100)
    cpre = matrix.get("cprefix", f"{prefix}-{stack}-s{size.lower()}-w{workers}-").lower()
    pw = min(matrix.get("prepare_workers", workers), nobj)
    cw = min(pw, 2 * nobj)
    sizes = _size_sel(size)
    limit = f'runtime="{matrix["runtime"]}"' if "runtime" in matrix else f'totalOps="{matrix["total_ops"]}"'
    if matrix.get("rampup"):
        limit += f' rampup="{matrix["rampup"]}"'
    if matrix.get("rampdown"):
        limit += f' rampdown="{matrix["rampdown"]}"'
    base = f"cprefix={cpre};containers=u(1,{ncon})"
    fresh = f"objects=u({nobj + 1},{2 * nobj})"  # writes and deletes never touch the prepared objects
    ops = []
    if mix.get("read", 0):
        ops.append(f'<operation type="read" ratio="{mix["read"]}" config="{base};objects=u(1,{nobj})" />')
    if mix.get("write", 0):
        ops.append(f'<operation type="write" ratio="{mix["write"]}" config="{base};{fresh};sizes={sizes}" />')
    if mix.get("delete", 0):
        ops.append(f'<operation type="delete" ratio="{mix["delete"]}" config="{base};{fresh}" />')
    ops_xml = "\n        ".join(ops)
    scan = f"cprefix={cpre};containers=r(1,{ncon})"
    desc = f"paper 002 Sec. 4.1.1 matrix: stack={stack} size={size} workers={workers} mix={mix['name']}"
    stages = [
        ("init", f'<work type="init" workers="1" config="{scan}" />'),
        ("prepare", f'<work type="prepare" workers="{pw}" config="{scan};objects=r(1,{nobj});sizes={sizes}" />'),
        ("main", f'<work name="main" workers="{workers}" interval="{matrix.get("interval", 5)}" {limit}>\n'
                 f"        {ops_xml}\n      </work>"),
        ("cleanup", f'<work type="cleanup" workers="{cw}" config="{scan};objects=r(1,{2 * nobj})" />'),
        ("dispose", f'<work type="dispose" workers="1" config="{scan}" />'),
    ]
    body = "".join(f'    <workstage name="{n}">\n      {w}\n    </workstage>\n' for n, w in stages)
    xml = (f'<?xml version="1.0" encoding="UTF-8" ?>\n<!-- generated by tools/cosbench/gen.py; do not edit -->\n'
           f"<workload name={quoteattr(name)} description={quoteattr(desc)}>\n"
           f'{_storage(matrix["stacks"][stack])}\n  <workflow>\n{body}  </workflow>\n</workload>\n')
    return name + ".xml", xml


def expand(matrix: dict) -> list[tuple[str, str]]:
    """All (file name, XML) pairs of a matrix, in a stable order."""
    _check(matrix)
    out = []
    for stack in sorted(matrix["stacks"]):
        for size in matrix["sizes"]:
            for w in matrix["workers"]:
                for mix in matrix["mixes"]:
                    out.append(workload_xml(matrix, stack, size, w, mix))
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise MatrixError("matrix: two configurations map to one file name (duplicate sizes, workers or mix names?)")
    return out


def generate(matrix: dict, outdir: str | Path) -> list[Path]:
    """Write one XML per configuration into outdir; returns the paths."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, xml in expand(matrix):
        p = outdir / name
        if not p.exists() or p.read_text() != xml:
            tmp = p.with_suffix(".xml.tmp")
            tmp.write_text(xml)
            tmp.replace(p)
        paths.append(p)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--paper", action="store_true", help="the paper-shaped matrix (126 files)")
    src.add_argument("--matrix", help="JSON file with a matrix dict")
    ap.add_argument("--out", help="output folder")
    ap.add_argument("--list", action="store_true", help="print the file names only")
    a = ap.parse_args(argv)
    matrix = PAPER_MATRIX if a.paper else json.loads(Path(a.matrix).read_text())
    try:
        if a.list or not a.out:
            for name, _ in expand(matrix):
                print(name)
            return 0
        paths = generate(matrix, a.out)
    except MatrixError as e:
        print(f"gen.py: {e}", file=sys.stderr)
        return 2
    print(f"gen.py: {len(paths)} workload files in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
