"""The FUSE ceiling's Python side: mount `build/fuseceiling`, run N concurrent `dd` streams of a given
request size against any directory (the ceiling's mount, a MemFS mount, a native directory), and the
preload pattern (to check what a preloaded file reads back as).

    python3 -m tools.fuseceiling.ceiling --op both --bs 1m --streams 1,8 --size 128m --reps 5 \
        [--fs-opt=--direct-io ...] [--dir DIR] [--out FILE.jsonl]

prints (and appends to --out) one JSON object per measurement; see README.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = HERE / "build" / "fuseceiling"
STATS = ".fuseceiling-stats"
MiB = 1 << 20
_M64 = (1 << 64) - 1


def parse_size(s: str | int) -> int:
    """'128m' -> 134217728 (k/m/g, optional i/b)."""
    if isinstance(s, int):
        return s
    m = re.fullmatch(r"(\d+)([kKmMgG]?)[iIbB]?", s.strip())
    if not m:
        raise ValueError(f"bad size {s!r}")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def pattern(size: int) -> bytes:
    """The bytes of a file preloaded with --preload NAME:SIZE (word k = splitmix64(k + 1), LE)."""
    words = (size + 7) // 8
    return struct.pack(f"<{words}Q", *(_splitmix64(k + 1) for k in range(words)))[:size]


def pattern_sha256(size: int) -> str:
    return hashlib.sha256(pattern(size)).hexdigest()


def loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def fuse_available() -> str | None:
    """None if a FUSE mount can be made here, else why not."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    if not shutil.which("fusermount3"):
        return "no fusermount3"
    return None


URING_PARAM = Path("/sys/module/fuse/parameters/enable_uring")


def enable_uring(param: str | os.PathLike = URING_PARAM) -> str:
    """Switch FUSE over io_uring on in the kernel where this process may (root, the parameter exists):
    returns what it found or did, one line (the set-up and the driver print it)."""
    p = Path(param)
    try:
        cur = p.read_text().strip()
    except OSError as e:
        return f"enable_uring: {p} not readable ({e.strerror}): a kernel without CONFIG_FUSE_IO_URING"
    if cur == "Y":
        return f"enable_uring: already Y ({p})"
    try:
        p.write_text("Y\n")
    except OSError as e:
        return f"enable_uring: {cur}, and setting it to Y failed ({e.strerror}; root only)"
    return f"enable_uring: set to {p.read_text().strip()} (was {cur}) in {p}"


def uring_offered(param: str | os.PathLike = URING_PARAM) -> tuple[bool, str]:
    """enable_uring() where this process may, then whether the kernel offers FUSE over io_uring (the
    parameter reads Y): (offered, what enable_uring found or did)."""
    msg = enable_uring(param)
    try:
        return Path(param).read_text().strip() == "Y", msg
    except OSError:
        return False, msg


class Mount:
    """`with Mount(dir, opts) as m:` a fuseceiling mount at `dir` (run in the foreground, stopped by PID)."""

    def __init__(self, mountpoint: str | os.PathLike, options: list[str] | None = None,
                 preload: list[tuple[str, int]] | None = None, timeout: float = 20.0,
                 binary: str | os.PathLike = BIN, prefix: list[str] | None = None):
        self.mountpoint = Path(mountpoint)
        self.options = list(options or [])
        self.preload = list(preload or [])
        self.timeout = timeout
        self.binary = str(binary)
        self.prefix = list(prefix or [])  # e.g. ["nsenter", "--net=/run/netns/x"] or ["taskset", "-c", "0"]
        self.proc: subprocess.Popen | None = None
        self.log = None

    def command(self) -> list[str]:
        cmd = [*self.prefix, self.binary, "-f", *self.options]
        for name, size in self.preload:
            cmd += ["--preload", f"{name}:{size}"]
        return [*cmd, str(self.mountpoint)]

    def __enter__(self) -> Mount:
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL, stderr=self.log)
        t0 = time.monotonic()
        while time.monotonic() - t0 < self.timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"fuseceiling exited {self.proc.returncode}: {self.stderr()}")
            if os.path.ismount(self.mountpoint) and (self.mountpoint / STATS).exists():
                if self._transport_starting():
                    time.sleep(0.005)
                    continue
                return self
            time.sleep(0.02)
        self.__exit__(None, None, None)
        raise RuntimeError(f"fuseceiling did not mount in {self.timeout}s: {self.stderr()}")

    def _transport_starting(self) -> bool:
        """--transport io_uring: requests are served through the ring while its queues are still being set
        up (the daemon's message is the initial one until then): a timed part must not overlap that."""
        if "io_uring" not in self.options:
            return False
        try:
            return self.stats().get("transport", {}).get("message") == "transport=dev-fuse"
        except (OSError, ValueError):
            return True

    def stderr(self) -> str:
        if not self.log:
            return ""
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stats(self) -> dict:
        return json.loads((self.mountpoint / STATS).read_text())

    def __exit__(self, *exc) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            subprocess.run(["fusermount3", "-u", str(self.mountpoint)], capture_output=True)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                subprocess.run(["fusermount3", "-u", "-z", str(self.mountpoint)], capture_output=True)
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        self.proc = None
        if self.log:
            self.log.close()
            self.log = None


_DD_SECONDS = re.compile(rb"copied, ([0-9.e+-]+) s")


def run_streams(paths: list[str | os.PathLike], op: str, bs: int, size: int, direct: bool = False,
                prefix: list[str] | None = None) -> dict:
    """One `dd` per path at once: op 'write' (from /dev/zero, `size` bytes each, the close included in
    dd's time) or 'read' (the whole file). Returns bytes, per-stream dd seconds, the wall time from
    the first spawn to the last exit, and MiB/s = bytes / slowest stream's dd time (streams start
    within milliseconds of each other; `mib_s_wall` includes process start-up)."""
    if op not in ("write", "read"):
        raise ValueError(op)
    if size % bs:
        raise ValueError(f"size {size} is not a multiple of bs {bs}")
    env = dict(os.environ, LC_ALL="C")
    cmds = []
    for p in paths:
        if op == "write":
            cmd = ["dd", "if=/dev/zero", f"of={p}", f"bs={bs}", f"count={size // bs}"]
            if direct:
                cmd.append("oflag=direct")
        else:
            cmd = ["dd", f"if={p}", "of=/dev/null", f"bs={bs}"]
            if direct:
                cmd.append("iflag=direct")
        cmds.append([*(prefix or []), *cmd])
    load = loadavg()
    t0 = time.perf_counter()
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env) for c in cmds]
    outs = [p.communicate() for p in procs]
    wall = time.perf_counter() - t0
    secs, total, errors = [], 0, []
    for c, p, (_, err) in zip(cmds, procs, outs, strict=True):
        m = _DD_SECONDS.search(err)
        if p.returncode or not m:
            errors.append(f"{' '.join(c)}: rc={p.returncode}: {err.decode(errors='replace').strip()}")
            continue
        secs.append(float(m.group(1)))
        total += int(re.search(rb"^(\d+) bytes", err, re.M).group(1))
    if errors:
        raise RuntimeError("; ".join(errors))
    slowest = max(secs)
    return {"op": op, "bs": bs, "streams": len(paths), "bytes": total, "seconds": slowest,
            "stream_seconds": secs, "seconds_wall": wall, "mib_s": total / MiB / slowest if slowest else None,
            "mib_s_wall": total / MiB / wall, "direct": direct, "loadavg": load}


def measure_ceiling(mountpoint: str | os.PathLike, op: str, bs: int, streams: int, size: int,
                    options: list[str] | None = None, direct: bool = False,
                    prefix: list[str] | None = None) -> dict:
    """One measurement on a fresh ceiling mount: reads of `streams` preloaded files of `size` bytes, or
    writes of `streams` new files. The mount's counters (request sizes) are returned under 'fs'."""
    preload = [(f"r{i}", size) for i in range(streams)] if op == "read" else []
    # writes go into populated memory (as a file system recycling its buffers): no page faults timed
    pre = ["--prealloc", f"{streams}:{size}"] if op == "write" else []
    with Mount(mountpoint, [*pre, *(options or [])], preload=preload, prefix=prefix) as m:
        names = [f"r{i}" if op == "read" else f"w{i}" for i in range(streams)]
        r = run_streams([m.mountpoint / n for n in names], op, bs, size, direct=direct, prefix=prefix)
        r["fs"] = m.stats()
    r.update(system="fuseceiling", options=list(options or []), size_per_stream=size)
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--op", choices=["write", "read", "both"], default="both")
    ap.add_argument("--bs", default="1m", help="request (dd block) size, k/m suffixes")
    ap.add_argument("--streams", default="1,8", help="comma-separated stream counts")
    ap.add_argument("--size", default="128m", help="bytes per stream")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--fs-opt", action="append", default=[],
                    help="an option for fuseceiling (repeat; e.g. --fs-opt=--direct-io --fs-opt=-s)")
    ap.add_argument("--direct", action="store_true", help="dd with iflag/oflag=direct")
    ap.add_argument("--dir", help="measure this existing directory instead (writes then reads files "
                    "ceiling-<i>; no ceiling mount)")
    ap.add_argument("--mountpoint", help="where to mount the ceiling (default: a temporary directory)")
    ap.add_argument("--out", help="append the JSON lines here too")
    a = ap.parse_args(argv)
    bs, size = parse_size(a.bs), parse_size(a.size)
    streams = [int(s) for s in a.streams.split(",")]
    ops = ["write", "read"] if a.op == "both" else [a.op]
    if not a.dir and not BIN.exists():
        print(f"build it first: make -C {HERE}", file=sys.stderr)
        return 2
    out = open(a.out, "a") if a.out else None
    tmp = tempfile.mkdtemp(prefix="fuseceiling-")
    mnt = a.mountpoint or os.path.join(tmp, "mnt")
    try:
        for rep in range(a.reps):  # repeats outermost: every configuration once per round (interleaved)
            for n in streams:
                for op in ops:
                    if a.dir:
                        paths = [Path(a.dir) / f"ceiling-{i}" for i in range(n)]
                        r = run_streams(paths, op, bs, size, direct=a.direct)
                        r.update(system="dir", dir=a.dir, size_per_stream=size)
                        if op == "read" or a.op == "write":
                            for p in paths:
                                p.unlink(missing_ok=True)
                    else:
                        r = measure_ceiling(mnt, op, bs, n, size, a.fs_opt, direct=a.direct)
                    r["rep"] = rep
                    line = json.dumps(r, sort_keys=True)
                    print(line, flush=True)
                    if out:
                        out.write(line + "\n")
                        out.flush()
    finally:
        if out:
            out.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
