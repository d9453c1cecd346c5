"""The limit a storage stack is measured against: fio on the device / file system the stack sits on.

For each block (object) size: sequential write and read bandwidth; plus random 4 KiB read and
write IOPS. One fio run per job, `--output-format=json`, raw output kept as
`OUT/<rw>~<bs>.json` (parse with tools.fio.parser). Debian's fio (3.33 on bookworm).

    python -m tools.fio.runner --directory DIR --out OUT [--sizes 4k,64k,1m,4m] [--file-size 256m]
                               [--runtime 10] [--direct auto|0|1] [--iodepth 16]

`--direct auto` uses O_DIRECT where the file system allows it (ext4, xfs; not tmpfs or most FUSE
mounts), so the number is the device's, not the page cache's; the choice is in every row.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SIZE_RE = re.compile(r"^(\d+)([kmg]?)$", re.IGNORECASE)


def parse_size(text: str) -> int:
    m = SIZE_RE.match(text.strip())
    if not m:
        raise ValueError(f"bad size {text!r} (examples: 4k, 64k, 1m, 4m, 256m)")
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def jobs(sizes: list[str], iodepth: int) -> list[dict]:
    """The job matrix: (rw, bs, iodepth) for bandwidth per size, then 4 KiB random IOPS."""
    out = []
    for bs in sizes:
        out += [{"rw": "write", "bs": bs, "iodepth": 1}, {"rw": "read", "bs": bs, "iodepth": 1}]
    out += [{"rw": "randwrite", "bs": "4k", "iodepth": iodepth}, {"rw": "randread", "bs": "4k", "iodepth": iodepth}]
    return out


def direct_supported(directory: Path) -> bool:
    fd = None
    with tempfile.NamedTemporaryFile(dir=directory, prefix=".fio-odirect-") as f:
        with contextlib.suppress(OSError):
            fd = os.open(f.name, os.O_RDWR | os.O_DIRECT)
            os.close(fd)
    return fd is not None


def fio_command(fio: str, directory: Path, job: dict, file_size: str, runtime: int, direct: int) -> list[str]:
    name = f"{job['rw']}~{job['bs']}"
    return [fio, f"--name={name}", f"--filename={directory / 'fio-limit.dat'}", f"--rw={job['rw']}",
            f"--bs={job['bs']}", f"--size={file_size}", f"--runtime={runtime}", f"--direct={direct}",
            "--ioengine=libaio", f"--iodepth={job['iodepth']}", "--numjobs=1", "--group_reporting",
            "--end_fsync=1" if job["rw"].endswith("write") else "--invalidate=1",
            "--randrepeat=0", "--output-format=json"]


def run_all(directory: Path, out: Path, sizes: list[str], file_size: str = "256m", runtime: int = 10,
            direct: str = "auto", iodepth: int = 16) -> list[Path]:
    fio = shutil.which("fio")
    if fio is None:
        raise SystemExit("fio not found: install Debian's fio (tools/fio/debian-packages.txt)")
    directory, out = Path(directory), Path(out)
    if not directory.is_dir():
        raise SystemExit(f"--directory {directory}: not a directory")
    for s in sizes:
        parse_size(s)
    if parse_size(file_size) < max(parse_size(s) for s in sizes):
        raise SystemExit(f"--file-size {file_size} is smaller than the largest block size")
    use_direct = {"auto": int(direct_supported(directory)), "0": 0, "1": 1}[direct]
    out.mkdir(parents=True, exist_ok=True)
    written = []
    matrix = jobs(sizes, iodepth)
    try:
        for i, job in enumerate(matrix, 1):
            cmd = fio_command(fio, directory, job, file_size, runtime, use_direct)
            print(f"fio [{i}/{len(matrix)}] {job['rw']} bs={job['bs']} iodepth={job['iodepth']} "
                  f"direct={use_direct} on {directory}", flush=True)
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                raise SystemExit(f"fio failed (exit {res.returncode}): {' '.join(cmd)}\n{res.stderr}")
            raw = res.stdout[res.stdout.find("{"):]  # fio may print notes before the JSON
            json.loads(raw)  # kept byte for byte, but only if it is JSON
            target = out / f"{job['rw']}~{job['bs']}.json"
            tmp = target.with_suffix(".json.tmp")
            tmp.write_text(raw)
            tmp.replace(target)
            written.append(target)
    finally:
        (directory / "fio-limit.dat").unlink(missing_ok=True)
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--directory", type=Path, required=True, help="a directory on the file system to measure")
    p.add_argument("--out", type=Path, required=True, help="where the raw fio JSON files go")
    p.add_argument("--sizes", default="4k,64k,1m,4m", help="block sizes for the bandwidth jobs (comma-separated)")
    p.add_argument("--file-size", default="256m", help="size of the test file (default 256m)")
    p.add_argument("--runtime", type=int, default=10, help="seconds per job at most (default 10)")
    p.add_argument("--direct", choices=["auto", "0", "1"], default="auto", help="O_DIRECT (default: where supported)")
    p.add_argument("--iodepth", type=int, default=16, help="queue depth of the random 4k jobs (default 16)")
    a = p.parse_args(argv)
    try:
        sizes = [s for s in a.sizes.split(",") if s]
        files = run_all(a.directory, a.out, sizes, a.file_size, a.runtime, a.direct, a.iodepth)
    except ValueError as e:
        p.error(str(e))
    for f in files:
        print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
