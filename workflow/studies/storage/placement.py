"""Where the storage study's sides run (paper 002's n+1 layout): planned from repro.allocation, and
what each side *measured* for the raw records.

Planned: the driver (COSBench's driver, mdtest's tasks and the FUSE mount they use) on the
allocation's first node; the stack's daemons (Ceph's mon/mgr/MDS/radosgw + OSDs on every system
node, MinIO on every system node, JuiceFS's Redis, MinIO and S3 gateway) on the system nodes, each
through its own srun step and bound to its node's address. The paper ran mdtest "on each node"
through `mpirun`, with clients that mount the file system: here the mdtest clients are the driver
node's tasks, where the stack's FUSE client mounts it (state: the README's paper / ours table).

One host (locally, or a Slurm allocation whose nodes all share one address): everything here,
services on 127.0.0.1, and the records say so.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import re
import subprocess
import sys

from repro import allocation
from repro.allocation import Allocation


@dataclasses.dataclass
class Plan:
    hosts: list[str] | None          # the stack's hosts (system nodes); None = this one host
    addresses: list[str]             # their addresses, in order
    launcher: str                    # prefix that runs a daemon on {host}
    public_network: str | None       # Ceph's public_network (several hosts)
    why: str                         # one line: how this plan follows from the allocation

    @property
    def multi_host(self) -> bool:
        return self.hosts is not None

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def ip_addr_output() -> str:
    try:
        return subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def public_network(addresses: list[str], ip_output: str = "") -> str:
    """The nodes' network: the CIDR of this host's interface (`ip -4 -o addr`) that holds one of the
    addresses, when it contains them all; else the smallest network containing every address."""
    addrs = [ipaddress.ip_address(a) for a in addresses]
    if not addrs:
        raise ValueError("no addresses to derive a public network from")
    for cidr in re.findall(r"\binet (\d+\.\d+\.\d+\.\d+/\d+)", ip_output):
        iface = ipaddress.ip_interface(cidr)
        if iface.ip in addrs and all(a in iface.network for a in addrs):
            return str(iface.network)
    prefix = 32
    while prefix > 0 and len({ipaddress.ip_network(f"{a}/{prefix}", strict=False) for a in addrs}) > 1:
        prefix -= 1
    return str(ipaddress.ip_network(f"{addrs[0]}/{prefix}", strict=False))


def plan(alloc: Allocation, ip_output: str | None = None) -> Plan:
    """The stack's hosts from the allocation: its system nodes when they are hosts of their own."""
    if not alloc.multi_host:
        return Plan(None, ["127.0.0.1"], "", None,
                    f"{alloc.launcher} allocation of {len(alloc.nodes)} node(s): one host, services on 127.0.0.1")
    addrs = {n.address for n in alloc.nodes}
    if len(addrs) == 1:
        return Plan(None, ["127.0.0.1"], "", None,
                    f"every node of Slurm job {alloc.job_id} has address {addrs.pop()}: one host "
                    "(the one-host local cluster), services on 127.0.0.1")
    sysn = alloc.system_nodes
    proto = dataclasses.replace(sysn[0], name="{host}")
    launcher = " ".join(alloc.step(proto, name="storage-daemon"))
    net = public_network([n.address for n in alloc.nodes], ip_addr_output() if ip_output is None else ip_output)
    return Plan([n.name for n in sysn], [n.address for n in sysn], launcher, net,
                f"Slurm job {alloc.job_id}: driver {alloc.driver.name} ({alloc.driver.address}), stack on "
                f"{', '.join(f'{n.name} ({n.address})' for n in sysn)}, public network {net}")


def mdtest_prefix(alloc: Allocation, tasks: int) -> list[str]:
    """mdtest's MPI launch: its tasks on the driver node, where the file system is mounted (an srun
    step of the job on Slurm, `--overcommit` when it asks for more tasks than the node's CPUs)."""
    if alloc.launcher == "slurm":
        return ["srun", "--overlap", "--mpi=pmix", "--nodes=1", f"--nodelist={alloc.driver.name}",
                f"--ntasks={tasks}", "--overcommit", "--kill-on-bad-exit=1", "--job-name=mdtest"]
    return ["mpirun", "--oversubscribe", "--bind-to", "none", "-n", str(tasks)]


def probe_tasks(alloc: Allocation, tasks: int, path: str, timeout: float = 120, inner: list[str] | None = None) -> dict:
    """Where mdtest's tasks run, measured: the same launch as mdtest runs systems/storage_common/
    where.py probe PATH in each task; per task its hostname, node and PATH's mount."""
    from systems.storage_common.daemons import WHERE

    # `inner`: each task in the stack's image instance (the mount is in its namespace), the image's python3
    cmd = [*mdtest_prefix(alloc, tasks), *(inner or []), "python3" if inner else sys.executable, str(WHERE), "probe",
           path]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    rows = []
    for line in r.stdout.splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return summarise_tasks(rows, tasks, r.returncode, r.stderr[-500:])


def summarise_tasks(rows: list[dict], tasks: int, exit_code: int = 0, stderr: str = "") -> dict:
    mounts = {(r.get("mount") or {}).get("mount_point", "") for r in rows}
    return {"tasks": tasks, "reported": len(rows), "exit": exit_code,
            "nodes": sorted({r.get("node", "") for r in rows}),
            "hostnames": sorted({r.get("hostname", "") for r in rows}),
            "mount_points": sorted(mounts), "fs_types": sorted({(r.get("mount") or {}).get("fs_type", "")
                                                              for r in rows}),
            "path_on_every_task": bool(rows) and len(rows) == tasks and all(
                (r.get("mount") or {}).get("exists") for r in rows),
            **({"stderr": stderr} if exit_code else {})}


def driver_side(endpoint_host: str | None = None) -> dict:
    """The driver's own placement (it runs in this process), and the address it used to reach the
    stack's endpoint."""
    d = allocation.here()
    if endpoint_host:
        d["connects_to"] = endpoint_host
        try:
            d["source_address"] = allocation.source_address(endpoint_host)
        except OSError as e:
            d["source_address"] = f"unknown: {e}"
    return d


def checks(alloc: Allocation, pl: Plan, driver: dict, daemons: dict, tasks: dict | None = None) -> dict:
    """What the record's placement shows, each true/false: driver apart from the daemons (several
    hosts), daemons on as many distinct nodes as planned, none serving loopback there, mdtest's
    tasks where the file system is."""
    served = [str(v.get("serves", "")) for v in daemons.values()]
    nodes = {v.get("node") for k, v in daemons.items() if not str(v.get("serves", "")).startswith("mount ")}
    out = {"one_host": not pl.multi_host}
    if pl.multi_host and daemons:  # none for Lustre's mdtest: its file side is the directory itself
        out["driver_apart_from_daemons"] = driver.get("node") not in nodes
        out["daemons_on_planned_nodes"] = sorted(nodes) == sorted(set(pl.hosts or []))
        out["no_loopback_service"] = not any(s.startswith("127.") for s in served)
    if tasks is not None:
        out["mdtest_tasks_see_the_mount"] = bool(tasks.get("path_on_every_task"))
    return out
