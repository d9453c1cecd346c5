"""Run a workload XML through a real COSBench 0.4.2 (controller + driver from its release archive,
as installed by containers/cosbench.def under /opt/cosbench) and collect its CSVs into the same
output folder layout cosbench-driver writes (w<id>-<name>.csv, s<i>-<stage>.csv,
workload-config.xml), so tools/cosbench/parser.py and the storage study read both alike.

    python3 -m tools.cosbench.real WORKLOAD.xml --out DIR [--home /opt/cosbench] [--timeout S]

COSBench's own steps: `start-all.sh` (driver on :18088, controller on :19088), `cli.sh submit
FILE` ("Accepted with ID: w<N>"), the workload's end read from `archive/run-history.csv` (State
finished / failed / cancelled / terminated), the results in `archive/w<N>-<name>/`, then
`stop-all.sh`. A workload that does not finish ("finished") or does not end within the timeout
fails with the controller's log tail; COSBench is stopped in every case.

Not run on this machine: COSBench is not obtainable here (issue 10); tests/test_cosbench_real.py
checks this runner's parsing, collection and failure paths against a scripted COSBench folder.
"""

from __future__ import annotations

import argparse
import csv
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_HOME = "/opt/cosbench"
ACCEPTED = re.compile(r"Accepted with ID:\s*(w\d+)")
ENDED = {"finished", "failed", "cancelled", "terminated", "aborted"}


class CosbenchError(RuntimeError):
    pass


def _run(home: Path, argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", *argv], cwd=home, capture_output=True, text=True, timeout=timeout)


def log_tail(home: Path, n: int = 3000) -> str:
    out = []
    for name in ("log/system.log", "log/controller.log", "log/driver.log"):
        p = home / name
        if p.exists():
            out.append(f"--- {p}:\n{p.read_text(errors='replace')[-n:]}")
    return "\n".join(out) or f"(no log under {home}/log)"


def controller_conf(drivers: list[tuple[str, str]], archive: str = "archive") -> str:
    """COSBench 0.4.2's conf/controller.conf: the controller's settings and one [driverN] section per
    driver (name, url of its REST endpoint, http://HOST:18088/driver)."""
    if not drivers:
        raise CosbenchError("controller.conf needs at least one driver")
    lines = ["[controller]", f"drivers = {len(drivers)}", "log_level = INFO", "log_file = log/system.log",
             f"archive_dir = {archive}", ""]
    for i, (name, url) in enumerate(drivers, 1):
        if not url.startswith("http://") or not url.endswith("/driver"):
            raise CosbenchError(f"driver {name}: url {url!r} is not http://HOST:PORT/driver")
        lines += [f"[driver{i}]", f"name = {name}", f"url = {url}", ""]
    return "\n".join(lines)


def driver_conf(name: str, url: str) -> str:
    """COSBench 0.4.2's conf/driver.conf of one driver."""
    return "\n".join(["[driver]", f"name = {name}", f"url = {url}", ""])


LOCAL_DRIVER = ("driver1", "http://127.0.0.1:18088/driver")


def render_conf(home: Path, drivers: list[tuple[str, str]] | None = None) -> dict:
    """Write controller.conf and driver.conf into COSBench's folder (the job's copy): by default one
    driver beside the controller on the node that runs the job (the n+1 layout's driver node; both
    on loopback, which no other node uses). Returns what was written, for the record."""
    drivers = drivers or [LOCAL_DRIVER]
    conf = Path(home) / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    texts = {"controller.conf": controller_conf(drivers), "driver.conf": driver_conf(*drivers[0])}
    for name, text in texts.items():
        (conf / name).write_text(text)
    return texts


def submit(home: Path, xml: Path) -> str:
    r = _run(home, ["cli.sh", "submit", str(xml)])
    m = ACCEPTED.search(r.stdout + r.stderr)
    if r.returncode != 0 or not m:
        raise CosbenchError(f"cli.sh submit {xml.name}: exit {r.returncode}: {(r.stdout + r.stderr)[-1500:]}")
    return m.group(1)


def history_state(home: Path, wid: str) -> tuple[str, str] | None:
    """(state, name) of workload `wid` in archive/run-history.csv, None while it is not listed."""
    p = home / "archive" / "run-history.csv"
    if not p.exists():
        return None
    with open(p, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        return None
    head = [h.strip() for h in rows[0]]
    try:
        i_id, i_name, i_state = head.index("Id"), head.index("Name"), head.index("State")
    except ValueError as e:
        raise CosbenchError(f"{p}: unexpected header {head}") from e
    for r in rows[1:]:
        if len(r) > i_state and r[i_id].strip() == wid:
            return r[i_state].strip().lower(), r[i_name].strip()
    return None


def wait(home: Path, wid: str, timeout: float, poll: float = 2.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = history_state(home, wid)
        if st and st[0] in ENDED:
            if st[0] != "finished":
                raise CosbenchError(f"COSBench workload {wid} ({st[1]}) ended {st[0]}\n{log_tail(home)}")
            return st[1]
        time.sleep(poll)
    _run(home, ["cli.sh", "cancel", wid])
    raise CosbenchError(f"COSBench workload {wid} did not end within {timeout:.0f} s (cancelled)\n{log_tail(home)}")


def collect(home: Path, wid: str, name: str, out: Path) -> list[Path]:
    """Copy the workload's CSVs and config from archive/<wid>-<name>/ into `out`."""
    src = home / "archive" / f"{wid}-{name}"
    if not src.is_dir():
        raise CosbenchError(f"{src}: no archive folder for {wid}")
    got = []
    for p in sorted(src.iterdir()):
        if p.suffix == ".csv" or p.name == "workload-config.xml":
            shutil.copy2(p, out / p.name)
            got.append(out / p.name)
    if not (out / f"{wid}-{name}.csv").exists():
        raise CosbenchError(f"{src}: no {wid}-{name}.csv (COSBench's workload CSV)")
    return got


def run(xml: Path, out: Path, home: Path = Path(DEFAULT_HOME), timeout: float = 3600,
        workdir: Path | None = None) -> Path:
    """Start COSBench, run `xml`, collect into `out`, stop COSBench (always). Returns the workload CSV.
    With `workdir`, COSBench's folder is first copied there (it writes log/, archive/, work/ into its
    own folder, and the image's /opt/cosbench is read-only); the copy is removed afterwards."""
    home, xml = Path(home), Path(xml).resolve()
    if not (home / "cli.sh").exists():
        raise CosbenchError(f"{home}/cli.sh missing: not a COSBench 0.4.2 folder (containers/cosbench.def)")
    if workdir is not None:
        copy = Path(workdir) / "cosbench"
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(home, copy, symlinks=True)
        render_conf(copy)
        try:
            return run(xml, out, copy, timeout)
        finally:
            shutil.rmtree(copy, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    r = _run(home, ["start-all.sh"], timeout=300)
    (out / "cosbench-start.log").write_text(r.stdout + r.stderr)
    try:
        if r.returncode != 0:
            raise CosbenchError(f"start-all.sh exit {r.returncode}: {(r.stdout + r.stderr)[-1500:]}")
        wid = submit(home, xml)
        name = wait(home, wid, timeout)
        collect(home, wid, name, out)
        return out / f"{wid}-{name}.csv"
    finally:
        s = _run(home, ["stop-all.sh"], timeout=300)
        (out / "cosbench-stop.log").write_text(s.stdout + s.stderr)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--home", type=Path, default=Path(DEFAULT_HOME))
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--workdir", type=Path, help="copy COSBench's folder here first (it writes into it)")
    a = ap.parse_args(argv)
    try:
        print(run(a.workload, a.out, a.home, a.timeout, a.workdir))
    except (CosbenchError, subprocess.TimeoutExpired, OSError) as e:
        print(f"cosbench: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
