"""One small surface over the cluster launchers the workflows can run on.

* ``mtc``: the shared multi-node launcher, ``systems/mtc`` (network namespaces
  locally, srun inside the n+1 allocation on Slurm).
* ``standin``: ``mtcwf.standin`` (no namespaces; tests and development).

What the scheduler and runner use:

    c.nodes            system nodes; .index (1..n), .run(cmd, cwd, env, timeout) -> {rc, stdout,
                       stderr, t_start, t_end}, .mountpoints (k per node; the local directory,
                       repeated, for local-disk)
    c.stats()          per node: data_bytes (memcached bytes, or the local directory's bytes),
                       items, memcached_rss_bytes, fuse_rss_bytes
    c.locate(paths)    FS path -> owner nodes (1..n)
    c.copy(src, dst, rel)   local-disk: copy one file between nodes' directories via the driver
    c.kind             the raw record's system_kind
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


class Adapter:
    def __init__(self, impl, raw_cluster, design: str, kind: str):
        self.impl = impl
        self.raw = raw_cluster
        self.design = design
        self.kind = kind

    @property
    def nodes(self):
        return self.raw.nodes

    def stats(self) -> list[dict]:
        out = []
        for row in self.raw.stats():
            data = row.get("disk_bytes", 0) if self.design == "local-disk" else row.get("memcached_bytes", 0)
            out.append({
                "node": int(row["node"]),
                "data_bytes": int(data or 0),
                "items": int(row.get("memcached_items", 0) or 0),
                "memcached_rss_bytes": int(row.get("memcached_rss_bytes", 0) or 0),
                "fuse_rss_bytes": int(row.get("fuse_rss_bytes", 0) or 0),
                "disk_bytes": int(row.get("disk_bytes", 0) or 0),
            })
        return out

    def locate(self, paths):
        return self.raw.locate(list(paths))

    def describe(self) -> dict:
        """Where the cluster runs (systems/mtc: cid, the agents' Slurm nodes, the driver's host, the
        servers' addresses), for the raw record; {} for the stand-in."""
        describe = getattr(self.raw, "describe", None)
        return describe() if callable(describe) else {}

    shared_tmp: str | None = None   # a directory every node and the driver see (Slurm: the project's)

    def copy(self, src, dst, rel: str) -> int:
        """Copy ``rel`` from src's directory to dst's, through the driver.

        On one host the driver reads and writes both node directories itself.
        Otherwise (node-local disks on Slurm) the file goes through a directory
        on the shared file system: src copies it there, dst copies it in.
        """
        s = os.path.join(src.mountpoints[0], rel)
        d = os.path.join(dst.mountpoints[0], rel)
        if os.path.exists(s) and os.path.isdir(dst.mountpoints[0]):
            os.makedirs(os.path.dirname(d), exist_ok=True)
            shutil.copyfile(s, d)
            return os.path.getsize(d)
        if not self.shared_tmp:
            raise RuntimeError(f"copy {rel}: node directories are not visible here and no shared_tmp is set")
        # one name per (source, destination, file): the scheduler copies a file to several nodes at once
        # (its lock is per destination), and the first copy's unlink must not pull it from under another
        # (the rehearsal on separate hosts: "cp: cannot stat .xfer-*/n3-blast__queries__q_0000.fa")
        via = os.path.join(self.shared_tmp, f"n{src.index}-to-n{dst.index}-" + rel.replace("/", "__"))
        r = src.run(f"cp {shlex.quote(s)} {shlex.quote(via)}", timeout=600)
        if r["rc"] != 0:
            raise RuntimeError(f"copy {rel}: node {src.index} -> shared failed: {r['stderr'][-300:]}")
        w = dst.run(f"mkdir -p {shlex.quote(os.path.dirname(d))} && cp {shlex.quote(via)} {shlex.quote(d)}"
                    f" && stat -c %s {shlex.quote(d)}", timeout=600)
        with contextlib.suppress(OSError):
            os.unlink(via)
        if w["rc"] != 0:
            raise RuntimeError(f"copy {rel}: shared -> node {dst.index} failed: {w['stderr'][-300:]}")
        return int(w["stdout"].split()[-1])


# ------------------------------------------------------------ memory-limited stores
# memcached's -m counts 1 MiB slab pages, and every item-size class that holds anything holds at
# least one page of its own (with the default slab_chunk_max of 512 KiB: 39 classes, and Montage's
# files, tail stripes and metadata records touch 20-26 of them). On a 20 GB node that is noise; under
# a local limit of tens of MB it is half the limit: measured (Montage 5x5, 2 nodes, plain
# -m 22 -M), a node refused a store with 8.6 MB of items and 12 of its 22 pages each holding a
# different small class's few items. So a run whose per-node memory limit is the question gets a
# store where the limit is the memory for data (data_limited_store):
#   * slab_chunk_max=16384: every item above 16 KiB is stored as 16 KiB chunks (64 to a page, no
#     rounding up), so stripes and whole small files cost their bytes, whatever their sizes;
#   * -L: memcached gives every slab class its first page at start (preallocation), and -m is the
#     limit plus those pages (SLAB_RESERVE): what is left, the limit, is what data can grow into,
#     the same on every node whatever mix of sizes it stores;
#   * slab_automove=0: no page moves between classes, so the reserve never turns into data room.
# Measured with memcached 1.6.18: a 22 MiB limit held 24.1-24.6 MB of items (267,840 B files,
# 512 KiB stripes, or a mix with small items), i.e. the limit plus the classes' first pages.
SLAB_CHUNK_MAX = 16384


def slab_classes(chunk_max: int = SLAB_CHUNK_MAX, factor: float = 1.25, min_bytes: int = 48,
                 item_header: int = 48) -> int:
    """memcached's number of slab classes (slabs_init: the first chunk holds an item header of
    ``item_header`` bytes plus ``min_bytes`` (-n), then x ``factor`` (-f), 8-byte aligned, until
    chunk_max / factor; the last class is chunk_max). With -L memcached needs one MiB page per
    class at start ("max memory must be at least N megabytes"): the reserve."""
    size, n = item_header + min_bytes, 0
    while n < 62:  # MAX_NUMBER_OF_SLAB_CLASSES - 2
        if size >= chunk_max / factor:
            break
        if size % 8:
            size += 8 - size % 8
        n += 1
        size = int(size * factor)
    return n + 1


def data_limited_store(limit_mb: int, chunk_max: int = SLAB_CHUNK_MAX) -> dict:
    """memcached settings for a per-node memory limit of ``limit_mb`` MiB for data (see above):
    mem_mb is -m (the limit plus one preallocated page per slab class), options the other flags."""
    reserve = slab_classes(chunk_max)
    return {"data_limit_mb": int(limit_mb), "reserve_pages": reserve, "mem_mb": int(limit_mb) + reserve,
            "options": ["-L", "-o", f"slab_chunk_max={chunk_max},slab_automove=0"]}


def open_cluster(impl: str, nodes: int, design: str, mounts_per_node: int, memfs_opts: dict | None,
                 network: dict | None, workdir: str, memcached_mb: int = 1024, image: str | None = None,
                 memcached_opts: list[str] | None = None):
    """A context manager yielding an :class:`Adapter`. ``memcached_opts``: more memcached arguments
    for every node's store (data_limited_store's options)."""
    if impl == "standin":
        from . import standin

        raw = standin.cluster(nodes=nodes, design=design, mounts_per_node=mounts_per_node,
                              memfs_opts=memfs_opts, network=network, workdir=workdir,
                              memcached_mb=memcached_mb, memcached_opts=memcached_opts)
        return _Ctx(raw, lambda r: Adapter("standin", r, design, standin.StandInCluster.kind))
    if impl == "mtc":
        mtc_dir = REPO / "systems" / "mtc"
        if not (mtc_dir / "launch.py").exists():
            raise RuntimeError("the shared launcher systems/mtc is not there (use launcher: standin)")
        from systems.mtc import launch  # the project's Python path (workflow/pythonpath.txt)

        raw = launch.cluster(nodes=nodes, design=design, mounts_per_node=mounts_per_node,
                             memfs_opts=memfs_opts or {}, network=network or {}, workdir=workdir,
                             memcached={"mem_mb": memcached_mb, "options": list(memcached_opts or [])},
                             image=image)
        return _Ctx(raw, lambda r: MtcAdapter(r, design))
    raise ValueError(f"unknown launcher {impl!r}")


class _Ctx:
    def __init__(self, raw, wrap):
        self._raw, self._wrap = raw, wrap

    def __enter__(self):
        return self._wrap(self._raw.__enter__())

    def __exit__(self, *exc):
        return self._raw.__exit__(*exc)


# ---------------------------------------------------------------- systems/mtc
def pin_bridge_mac(namespaces: list[str], bridge: str = "rmc-br0") -> None:
    """Keep the shared bridge's MAC address from changing under a running cluster.

    A Linux bridge without an explicitly set address takes the lowest MAC of its
    ports, so it changes whenever another cluster's veth joins or leaves.  The
    namespaces keep the old MAC of the bridge's IP in their ARP caches, and TCP
    traffic from the driver keeps confirming that stale entry: the agents' replies
    go nowhere until TCP's retransmission backoff outlasts it (seen: 50-110 s
    stalls).  Setting the bridge's address to its current value pins it (nothing
    changes for anyone now), and our namespaces drop any stale entry.  Belongs in
    systems/mtc/netns.py (asked of its owner); harmless to repeat.
    """
    sysfs = f"/sys/class/net/{bridge}"
    try:
        with open(f"{sysfs}/addr_assign_type") as fh:
            pinned = fh.read().strip() == "3"  # NET_ADDR_SET
        with open(f"{sysfs}/address") as fh:
            mac = fh.read().strip()
    except OSError:
        return
    if not pinned:
        subprocess.run(["ip", "link", "set", "dev", bridge, "address", mac], capture_output=True, check=False)
    for ns in namespaces:
        subprocess.run(["ip", "-n", ns, "neigh", "flush", "dev", "eth0"], capture_output=True, check=False)


class MtcNode:
    """A launcher node seen as system node ``index + 1`` (node 0 is the driver)."""

    def __init__(self, raw, design: str):
        self.raw = raw
        self.index = raw.index + 1
        # local-disk: the launcher gives k directories per node; the node's disk is the first
        self.mountpoints = list(raw.mountpoints) if design != "local-disk" else [raw.mountpoints[0]]

    def run(self, cmd: str, cwd=None, env=None, timeout=None) -> dict:
        # the RPC itself gets a deadline too: a reply lost on the emulated network fails the
        # task (and the run, loudly) instead of hanging the driver
        box: list = []

        def call():
            try:
                box.append(("ok", self.raw.run(["bash", "-c", cmd], cwd=cwd, env=env, timeout=timeout)))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                box.append(("err", exc))

        th = threading.Thread(target=call, daemon=True)
        th.start()
        th.join(None if timeout is None else float(timeout) + 60.0)
        if not box:
            raise TimeoutError(f"node {self.index}: no reply from the agent {timeout} + 60 s after the task started")
        kind, val = box[0]
        if kind == "err":
            raise val
        val["node"] = self.index
        return val


class MtcAdapter(Adapter):
    def __init__(self, raw, design: str):
        slurm_real = raw.launcher == "slurm" and not raw.network.get("single_host", True)
        kind = "real" if slurm_real else (
            "stand-in:network-namespaces" if raw.network.get("emulate") else "stand-in:local-processes")
        super().__init__("mtc", raw, design, kind)
        self._nodes = [MtcNode(nd, design) for nd in raw.nodes]
        if raw.network.get("emulate"):
            pin_bridge_mac([nd.netns for nd in raw.nodes if getattr(nd, "netns", "")])

    @property
    def nodes(self):
        return self._nodes

    def stats(self) -> list[dict]:
        out = []
        for row in self.raw.stats():
            mc = row.get("memcached") or {}
            disk = int(row.get("disk_bytes") or 0)
            out.append({
                "node": int(row["node"]) + 1,
                "data_bytes": disk if self.design == "local-disk" else int(mc.get("bytes") or 0),
                "items": int(mc.get("curr_items") or 0),
                "memcached_rss_bytes": int(row.get("memcached_rss_bytes") or 0),
                "fuse_rss_bytes": int(sum(x or 0 for x in row.get("fuse_rss_bytes") or [])),
                "disk_bytes": disk,
            })
        return out

    def locate(self, paths):
        """Owners (1..n) of many paths at once: memfs-locate on node 1 (one RPC), else xattrs."""
        paths = ["/" + p.lstrip("/") for p in paths]
        out: dict[str, list[int]] = {}
        tool = shutil.which("memfs-locate") or str(REPO / "systems" / "memfs" / "build" / "memfs-locate")
        servers = ",".join(self.raw.servers)
        for i in range(0, len(paths), 500):
            chunk = paths[i:i + 500]
            r = self.raw.nodes[0].run([tool, "--servers", servers, "--format", "owners", *chunk], timeout=120)
            for ln in r["stdout"].splitlines():
                p, _, own = ln.partition("\t")
                out[p] = [int(x) + 1 for x in own.split(",") if x.strip().isdigit()]
        for p in paths:
            if p not in out:
                try:
                    out[p] = [i + 1 for i in self.raw.locate(p)]
                except FileNotFoundError:
                    out[p] = []
        return out
