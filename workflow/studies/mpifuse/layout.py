"""What the mpifuse benchmark measures and where its results go.

Everything that depends on the configuration (matrix, paths, options) takes
the study's config section (``config["mpifuse"]``) as a dict; nothing here
knows the matrix itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from repro import paramspace
from studies.mpifuse.declaration import STUDY as DECLARATION
# how the file systems read this section (the sources' stand-in kinds, a test's timeout, the library
# options of a mode, paths): shared with every study that runs them (systems/mpifuse/python/runkit.py)
from systems.mpifuse.python import runkit
from systems.mpifuse.python.runkit import expand_path, fs_options, system_kind  # noqa: F401

STUDY = "mpifuse"
EXPERIMENT = "read_scaling"
RAW_DIR = "results/mpifuse/raw"
DIMS = ("source", "variant", "nodes", "size")  # path order; rep~<i>.json last


@dataclass(frozen=True)
class Variant:
    name: str          # in paths and the tidy table
    label: str         # the paper's name
    mode: str | None   # mpifuse mode, None = no file system (native)
    action: str        # hash_source | hash_mount | copy_local | copy_shm
    reads: str         # "n" (every node reads the file from the source) or "1" (read once)
    # library options that define this use case on top of its mode's (fs_options, fs_options_by_mode):
    # osr-nometa is osr with exactly one option changed
    options: dict = field(default_factory=dict)
    paper: bool = True  # False: our own design, beyond the paper (reported beside, never as the paper's)


VARIANTS = {
    v.name: v
    for v in (
        Variant("native", "native", None, "hash_source", "n"),
        Variant("osr", "OSR", "osr", "hash_mount", "1"),
        Variant("bcast-local", "Bcast to local", "bcast", "copy_local", "1"),
        Variant("bcast-shm", "Bcast to /dev/shm", "bcast", "copy_shm", "1"),
        Variant("bcast-nocopy", "Bcast no copy", "bcast", "hash_mount", "1"),
        Variant("passthrough", "Passthrough", "passthrough", "hash_mount", "n"),
        # Figure 5: the paper's OSR without the metadata buffer -- osr, nothing else changed
        Variant("osr-nometa", "OSR without metadata buffer", "osr", "hash_mount", "1", {"meta_buffer": False}),
        # our own refined design (own-part window, cached chunks), beyond the paper
        Variant("osr-refined", "OSR refined (beyond the paper)", "osr-refined", "hash_mount", "1", paper=False),
    )
}
VARIANT_ORDER = list(VARIANTS)
SOURCE_LABELS = {"home": "Home", "scratch": "Scratch"}
# the paper's Table I names the native rows after the file system
NATIVE_LABEL = {"home": "/home", "scratch": "/dbnscratch"}


def expected_source_reads(variant: str, nodes: int) -> int:
    """How many times the whole file is read from the source file system."""
    return nodes if VARIANTS[variant].reads == "n" else 1


def raw_path(source: str, variant: str, nodes: int | str, size: str, rep: int | str,
             raw_dir: str = RAW_DIR) -> str:
    """One raw file (the declaration's experiment spells the path), under ``raw_dir``."""
    p = DECLARATION.raw_path(EXPERIMENT, source=source, variant=variant, nodes=nodes, size=size, rep=rep)
    return raw_dir + p[len(RAW_DIR):]


def matrix(cfg: dict) -> list[dict]:
    """Every (source, nodes, size, rep) run of the configured matrix (one job each)."""
    return paramspace.expand({"source": cfg["sources"], "nodes": cfg["nodes"], "size": cfg["sizes"],
                              "rep": list(range(cfg["repeats"]))})


def stand_ins(cfg: dict, single_host: bool) -> list[str]:
    """What stands in for the paper's systems on this configuration (the report's rows): the home
    file system (emulated), local scratch, and the n+1 nodes as ranks of one host."""
    out = []
    if cfg["home"]["kind"] == "emulated":
        out.append(
            "home: systems/homefs -- nfs-ganesha 4.3 (VFS FSAL, NFSv3) in a server network namespace, "
            "its link throttled with tc HTB to mpifuse.home.rate_mbit, read by one FUSE NFS client "
            "(libnfs) per emulated node in that node's namespace; it stands in for the Sofja cluster's "
            "StorNext home file system: a shared server whose bandwidth all nodes split")
    if cfg["scratch"]["stand_in"]:
        out.append(
            f"scratch: {cfg['scratch']['path']} -- {cfg['scratch']['stand_in']}: a directory on this "
            "machine's local disk (its page cache shared by all emulated nodes), standing in for "
            "the cluster's BeeGFS scratch: a fast source that is never the bottleneck")
    if single_host:
        out.append(
            "nodes: the n+1 'nodes' are MPI ranks on one host (MPI over TCP loopback, no shared "
            "memory), sharing its CPU cores; the file systems themselves (OSR, OSR refined, broadcast, "
            "passthrough) are the real implementations")
    return out


def kick(cfg: dict) -> list[str]:
    """The kick-the-tires run's raw files: the kick source and size, at its node counts, every use case."""
    k = cfg["kick"]
    return [raw_path(k["source"], v, n, k["size"], 0) for n in k["nodes"] for v in cfg["variants"]]


def homefs_wrap(cfg: dict, source: str, nodes: int) -> str:
    """home.kind=emulated: the command that brings the throttled home NFS up around the launcher and
    down after it ($tag: the job's tag, the shell's); nothing for scratch or a real home."""
    if source != "home" or cfg["home"]["kind"] != "emulated":
        return ""
    h = cfg["home"]
    return (f"python3 systems/homefs/homefs.py run --state {h['state_dir']}/$tag --nodes {nodes}"
            f" --rate-mbit {h['rate_mbit']} --burst {h['burst']} --max-read {h['client_max_read']} --")


def expected_raw(cfg: dict, raw_dir: str = RAW_DIR) -> list[str]:
    return [raw_path(r["source"], v, r["nodes"], r["size"], r["rep"], raw_dir)
            for r in matrix(cfg) for v in cfg["variants"]]


def variant_options(cfg: dict, variant: str) -> dict:
    """Library options of one use case: its mode's (fs_options_by_mode over fs_options), then its own."""
    v = VARIANTS[variant]
    if not v.mode:
        return {}
    opts = fs_options(cfg, v.mode)
    opts.update(v.options)
    return opts


def options_text(opts: dict) -> str:
    """key=value, sorted, as the report shows them (booleans as on/off, like the library)."""
    def val(x):
        return ("on" if x else "off") if isinstance(x, bool) else str(x)
    return ",".join(f"{k}={val(opts[k])}" for k in sorted(opts)) if opts else "(no file system)"


def size_label_bytes(size: str) -> int:
    return paramspace.size_bytes(size)


def test_timeout(cfg: dict, size: str, nodes: int) -> float:
    """Seconds one test of the configured `size` may take (runkit.test_timeout, the size parsed here)."""
    return runkit.test_timeout(cfg, paramspace.size_bytes(size), nodes)
