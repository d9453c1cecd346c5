"""What a job that runs the mpifuse file systems needs of them, for any study that runs them.

The mpifuse study runs them (workflow/studies/mpifuse/run.py), and so does a study that declares it
uses them (fusespeed: its rule gets mpifuse's run section as ``--mpifuse``; workflow/rules/uses.smk).
Neither reaches into the other's folder: both read that run section through this module --

* the sources: where the driver rank writes a file and where node i reads it (``resolve_source``,
  ``read_dir``; the emulated home of systems/homefs through ``$HOMEFS_STATE``, its link counters);
* the file systems' library options per mode (``fs_options``), how long a test may take
  (``test_timeout``), whether a source is a stand-in (``system_kind``);
* the ctypes wrapper (``load_mpifuse``), a fresh random test file (``generate``), a barrier that
  sleeps (``idle_barrier``) and the tool versions a record keeps (``tool_versions``).

Every function takes the run section (``config["mpifuse"]`` as the rules hand it over) as a dict.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

CHUNK = 4 << 20


def expand_path(p: str) -> str:
    return os.path.expanduser(os.path.expandvars(p))


def fs_options(cfg: dict, mode: str) -> dict:
    """Library options of one mode: the common ones, overridden per mode."""
    opts = dict(cfg.get("fs_options", {}))
    opts.update(cfg.get("fs_options_by_mode", {}).get(mode, {}))
    return opts


def test_timeout(cfg: dict, size_bytes: int, nodes: int) -> float:
    """Seconds one test of `size_bytes` may take before it counts as hung (and the job aborts). The
    caller parses the configured size (repro.paramspace.size_bytes): systems import nothing of the engine."""
    t = cfg["timeout"]
    gb = size_bytes / 1e9
    return float(t["base_s"] + t["per_gb_node_s"] * gb * nodes)


def system_kind(cfg: dict, source: str) -> str:
    """real, or stand-in:<what> for the emulated home / a local scratch directory."""
    sec = cfg[source]
    what = sec.get("stand_in") or ""
    if source == "home" and sec.get("kind") == "emulated" and not what:
        what = "nfs-ganesha NFSv3 over a tc-throttled namespace link"
    return f"stand-in:{what}" if what else "real"


def resolve_source(cfg: dict, source: str) -> dict:
    """{write: where rank 0 writes, read: where node i reads (a template with {node}), homefs: the
    emulated home's state or None}."""
    sec = cfg[source]
    if source == "home" and sec.get("kind") == "emulated":
        state_dir = os.environ.get("HOMEFS_STATE")
        if not state_dir:
            raise SystemExit("home.kind=emulated needs the homefs emulation: run under "
                             "systems/homefs/homefs.py run ... (HOMEFS_STATE is not set)")
        st = json.loads((Path(state_dir) / "homefs.json").read_text())
        return {"write": st["export"], "read": st["mnt_template"], "homefs": st}
    path = expand_path(sec["path"])
    return {"write": path, "read": path, "homefs": None}


def read_dir(src: dict, node: int) -> str:
    return src["read"].format(node=node)


def link_counters(src: dict) -> dict | None:
    """The emulated home link's byte counters (None for a plain path)."""
    st = src.get("homefs")
    if not st:
        return None
    from systems.homefs import homefs

    return homefs.counters(st)


def load_mpifuse():
    """The file systems' ctypes wrapper: the image's installed copy (its PYTHONPATH), else
    systems/mpifuse/python (which finds systems/mpifuse/build/libmpifuse.so)."""
    try:
        import mpifuse
    except ImportError:
        from systems.mpifuse.python import mpifuse
    return mpifuse


def generate(path: str, size: int) -> tuple[str, float]:
    """Write `size` random bytes from /dev/urandom; return (sha256, seconds)."""
    t0 = time.monotonic()
    h = hashlib.sha256()
    left = size
    with open("/dev/urandom", "rb", buffering=0) as rnd, open(path, "wb") as out:
        while left:
            b = rnd.read(min(CHUNK, left))
            h.update(b)
            out.write(b)
            left -= len(b)
        out.flush()
        os.fsync(out.fileno())
    return h.hexdigest(), time.monotonic() - t0


def idle_barrier(comm, poll: float = 0.001) -> None:
    """A barrier that sleeps while it waits. A blocking MPI wait spins a core; on one host
    the ranks that already finished (and rank 0) would steal CPU from the nodes still working."""
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(poll)


def tool_versions(MPI, tool_version) -> dict:
    """The versions a record keeps; `tool_version(argv)` is the caller's (repro.provenance.tool_version)."""
    v = {"mpi": MPI.Get_library_version().splitlines()[0].strip().rstrip("\x00"),
         "sha256sum": tool_version(["sha256sum", "--version"]),
         "fuse": tool_version(["fusermount3", "--version"])}
    try:
        import mpi4py

        v["mpi4py"] = mpi4py.__version__
    except ImportError:
        pass
    return v


def remove_leftovers(cfg: dict, source: str, tag: str, dirs=("mount_dir", "local_dir", "shm_dir"), warn=print) -> None:
    """After a job (tag) ended, however it ended: lazy-unmount every mount left under its directories
    (`dirs`: keys of the run section), remove them, and its directory on the source (not on the
    emulated home, which went down with its wrapper)."""
    import shutil
    import subprocess

    roots = [os.path.join(expand_path(cfg[k]), tag) for k in dirs]
    try:
        mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    except OSError:
        mounts = []
    for mp in mounts:
        mp = mp.replace("\\040", " ")
        if any(mp.startswith(r + "/") for r in roots):
            warn(f"lazy-unmounting leftover {mp}")
            subprocess.run(["fusermount3", "-u", "-z", mp], capture_output=True)
    for r in roots:
        shutil.rmtree(r, ignore_errors=True)
    if source != "home" or cfg["home"].get("kind") != "emulated":
        try:
            shutil.rmtree(os.path.join(resolve_source(cfg, source)["write"], tag), ignore_errors=True)
        except SystemExit:
            pass
