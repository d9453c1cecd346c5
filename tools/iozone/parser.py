"""Parser of iozone's output (standard library only): throughput mode (``-t N -F ... -C``) -- per
test the "Children see"/"Parent sees" aggregates and every child's transfer and rate, verify errors
(``-V``) counted -- and single-file mode with ``-R``. Captured real outputs: ``fixtures/``.
"""

from __future__ import annotations

import re

from tools.common import ParseError

_KB = 1024.0

# ----------------------------------------------------------------------------- iozone
_IOZ_CHILDREN = re.compile(
    r"Children see throughput for\s+(\d+)\s+(.+?)\s*=\s*([\d.]+)\s+(kB/sec|ops/sec)")
_IOZ_PARENT = re.compile(r"Parent sees throughput for\s+(\d+)\s+(.+?)\s*=\s*([\d.]+)\s+(kB/sec|ops/sec)")
_IOZ_MINXFER = re.compile(r"Min xfer\s*=\s*([\d.]+)\s+(kB|ops)")
_IOZ_CHILD = re.compile(
    r"Child\[(\d+)\] xfer count =\s*([\d.]+)\s+(kB|ops), Throughput =\s*([\d.]+)\s+(kB/sec|ops/sec)")
_IOZ_RECORD = re.compile(r"Record Size (\d+) (kB|KB)")
_IOZ_FILESIZE = re.compile(r"File size set to (\d+) (kB|KB)")
_IOZ_PROCS = re.compile(r"Throughput test with (\d+) (processes|threads)")
_IOZ_VERSION = re.compile(r"Version \$Revision: ([\d.]+) \$")

# iozone's names of its tests -> ours
IOZONE_TESTS = {
    "initial writers": "write", "rewriters": "rewrite", "readers": "read", "re-readers": "reread",
    "reverse readers": "backward_read", "stride readers": "stride_read",
    "random readers": "random_read", "mixed workload": "mixed", "random writers": "random_write",
    "pwrite writers": "pwrite", "pread readers": "pread", "fwriters": "fwrite", "freaders": "fread",
}


_IOZ_EXCEL_TITLE = re.compile(r'^"([A-Za-z -]+) report"\s*$')
_IOZ_EXCEL_ROW = re.compile(r'^"(\d+)"\s+(.*)$')
IOZONE_EXCEL = {"Writer": "write", "Re-writer": "rewrite", "Reader": "read", "Re-Reader": "reread",
                "Random read": "random_read", "Random write": "random_write",
                "Backward read": "backward_read", "Record rewrite": "record_rewrite",
                "Stride read": "stride_read", "Fwrite": "fwrite", "Re-Fwrite": "refwrite",
                "Fread": "fread", "Re-Fread": "refread"}


def parse_iozone(text: str) -> dict:
    """One iozone run: throughput mode (``-t N -F ... -C``) or single-file mode with ``-R``.

    Returns ``{"mode": "throughput"|"single", "version", "record_kb", "file_kb",
    "procs", "verify_errors", "complete", "tests": {name: {"children_kbps",
    "parent_kbps", "min_xfer_kb", "n", "children": [{"child", "xfer_kb", "kbps",
    "seconds"}]}}}``.  Rates in kB/s (1 kB = 1024 bytes, iozone's unit);
    ``seconds`` is a child's time for its transfer (xfer / rate), i.e. iozone's
    own timing.  A single-file run is reported as one child (its Excel report,
    ``-R``, gives the rate; with ``-+n`` the retest columns are 0 and skipped).
    """
    out = {"mode": None, "version": None, "record_kb": None, "file_kb": None, "procs": None,
           "verify_errors": 0, "complete": "iozone test complete." in text, "tests": {}}
    m = _IOZ_VERSION.search(text)
    out["version"] = m.group(1) if m else None
    m = _IOZ_RECORD.search(text)
    out["record_kb"] = int(m.group(1)) if m else None
    m = _IOZ_FILESIZE.search(text)
    out["file_kb"] = int(m.group(1)) if m else None
    m = _IOZ_PROCS.search(text)
    out["procs"] = int(m.group(1)) if m else None
    out["verify_errors"] = text.count("Error in file")
    if "Children see throughput" in text:
        out["mode"] = "throughput"
        cur = None
        for line in text.splitlines():
            m = _IOZ_CHILDREN.search(line)
            if m:
                if m.group(4) != "kB/sec":
                    raise ParseError("iozone output in ops/sec (-O): run without -O, ops are derived")
                name = IOZONE_TESTS.get(m.group(2).strip(), m.group(2).strip())
                cur = {"n": int(m.group(1)), "children_kbps": float(m.group(3)), "parent_kbps": None,
                       "min_xfer_kb": None, "children": []}
                out["tests"][name] = cur
                continue
            if cur is None:
                continue
            m = _IOZ_PARENT.search(line)
            if m:
                cur["parent_kbps"] = float(m.group(3))
                continue
            m = _IOZ_MINXFER.search(line)
            if m:
                cur["min_xfer_kb"] = float(m.group(1))
                continue
            m = _IOZ_CHILD.search(line)
            if m:
                xfer, rate = float(m.group(2)), float(m.group(4))
                cur["children"].append({"child": int(m.group(1)), "xfer_kb": xfer, "kbps": rate,
                                        "seconds": (xfer / rate) if rate > 0 else None})
        return out
    if "Excel output is below" in text:
        out["mode"] = "single"
        if "Output is in ops/sec" in text or "OPS Mode" in text:
            raise ParseError("iozone output in ops/sec (-O): run without -O, ops are derived")
        lines = text.split("Excel output is below", 1)[1].splitlines()
        title = None
        for line in lines:
            line = line.strip()
            t = _IOZ_EXCEL_TITLE.match(line)
            if t:
                title = IOZONE_EXCEL.get(t.group(1).strip(), t.group(1).strip().lower())
                continue
            r = _IOZ_EXCEL_ROW.match(line)
            if r and title:
                vals = [float(x) for x in r.group(2).split()]
                file_kb = float(r.group(1))
                if vals and not (title in ("rewrite", "reread") and vals[0] == 0):
                    rate = vals[0]
                    out["tests"][title] = {
                        "n": 1, "children_kbps": rate, "parent_kbps": rate, "min_xfer_kb": file_kb,
                        "children": [{"child": 0, "xfer_kb": file_kb, "kbps": rate,
                                      "seconds": (file_kb / rate) if rate > 0 else None}]}
                title = None
        if not out["tests"] and out["verify_errors"] == 0:
            raise ParseError("iozone Excel report without results")
        return out
    raise ParseError("neither 'Children see throughput' nor an Excel report (-R): not iozone output")


def parse_iozone_version(binary: str) -> str:
    """iozone's revision (e.g. 3.489) from ``iozone -v``."""
    import subprocess
    try:
        out = subprocess.run([binary, "-v"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    m = _IOZ_VERSION.search(out)
    return m.group(1) if m else "unknown"


def iozone_node_totals(streams: list[list[dict]], test: str, record_bytes: int) -> dict:
    """Totals of one node over its concurrent streams of consecutive iozone runs.

    A node runs its streams (one per process slot) at the same time, each
    stream one iozone run after another.  Children of one run start together
    (iozone's barrier), so a run takes its slowest child's time; a stream
    takes the sum over its runs; the node the slowest stream's time.
    ``ops`` are the read()/write() calls (bytes / record size), as iozone -O counts.
    """
    nbytes = 0.0
    secs = 0.0
    for runs in streams:
        st = 0.0
        for r in runs:
            t = r["tests"][test]
            kids = t["children"]
            if not kids or any(k["seconds"] is None for k in kids):
                raise ParseError(f"iozone {test}: a child without a rate")
            nbytes += sum(k["xfer_kb"] for k in kids) * _KB
            st += max(k["seconds"] for k in kids)
        secs = max(secs, st)
    return {"bytes": nbytes, "seconds": secs, "ops": nbytes / record_bytes}
