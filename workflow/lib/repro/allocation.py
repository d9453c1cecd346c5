"""The one place that knows a job's allocation: its nodes, their roles and addresses.

Every study asks this module, never the environment: Snakemake's Slurm job step strips
``SLURM_JOB_NODELIST``, ``SLURM_CPUS_ON_NODE`` and even ``SLURM_CONF`` (it keeps
``SLURM_JOB_ID``), so a study that reads ``SLURM_*`` variables or parses a node list itself
silently runs everything on one host on a real cluster. Here the allocation is read from
Slurm itself (``scontrol show job`` / ``scontrol show node``); outside Slurm it describes the
one host the job runs on.

Roles follow the papers' n+1 layouts: the first node is the *driver* (file generator, load
generator, function director), the others are the *system nodes* (the system under test).
With one node, the driver and the system share it (``shared_node`` is then true and says so).

What is *planned* here is not what is *measured*: a record stores :func:`here` (hostname,
Slurm node name, addresses) taken on the side that ran, and :func:`source_address` for the
address a client really used to reach a peer.

    from repro import allocation
    alloc = allocation.current()
    alloc.driver.name, [n.name for n in alloc.system_nodes], alloc.driver.address
    cmd = alloc.step(alloc.system_nodes[0], name="server") + ["python3", "-m", ...]
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterable

__all__ = ["Node", "Allocation", "AllocationError", "current", "from_scontrol", "local", "here",
           "source_address", "parse_job", "parse_node"]


class AllocationError(RuntimeError):
    """The allocation could not be read (scontrol failed, a node without an address...)."""


@dataclasses.dataclass(frozen=True)
class Node:
    name: str          # Slurm's node name (NodeName); the hostname outside Slurm
    hostname: str      # NodeHostname as Slurm knows it
    address: str       # NodeAddr: the address other nodes reach this one at
    cpus: int          # CPUs of this node that the job holds (0 = unknown)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Allocation:
    launcher: str                  # "slurm" | "local"
    job_id: str | None
    nodes: tuple[Node, ...]
    gres: str = ""                 # what the job asked for (TRES per node), e.g. "gpu:1"
    exclusive: bool = False

    @property
    def driver(self) -> Node:
        return self.nodes[0]

    @property
    def system_nodes(self) -> tuple[Node, ...]:
        """The nodes after the driver; with a single node, that node (and ``shared_node`` is true)."""
        return self.nodes[1:] or self.nodes[:1]

    @property
    def shared_node(self) -> bool:
        return len(self.nodes) < 2

    @property
    def multi_host(self) -> bool:
        return self.launcher == "slurm" and len(self.nodes) >= 2

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise AllocationError(f"node {name!r} is not in the allocation ({', '.join(n.name for n in self.nodes)})")

    def bind_address(self, node: Node | None = None) -> str:
        """The address a service must listen on so that the job's other nodes can reach it: the
        node's own address on a cluster, loopback only when everything runs on one host."""
        if not self.multi_host:
            return "127.0.0.1"
        return (node or self.system_nodes[0]).address

    def step(self, node: Node | str, *, name: str, cpus: int | None = None, overlap: bool = True,
             extra: Iterable[str] = ()) -> list[str]:
        """The prefix that runs one command on ``node`` inside this allocation (an ``srun`` step);
        empty outside Slurm. ``cpus=None`` gives the step every CPU the job holds on that node."""
        if self.launcher != "slurm":
            return []
        n = node if isinstance(node, Node) else self.node(node)
        cmd = ["srun"] + (["--overlap"] if overlap else []) + [
            "--nodes=1", "--ntasks=1", f"--nodelist={n.name}", "--mpi=none", "--kill-on-bad-exit=0",
            f"--job-name={name}"]
        c = n.cpus if cpus is None else cpus
        if c:
            cmd.append(f"--cpus-per-task={c}")
        return cmd + list(extra)

    def as_dict(self) -> dict:
        """The planned allocation, for a raw record (``extra.allocation``)."""
        return {"launcher": self.launcher, "job_id": self.job_id, "gres": self.gres,
                "exclusive": self.exclusive, "nodes": [n.as_dict() for n in self.nodes],
                "driver": self.driver.name, "system_nodes": [n.name for n in self.system_nodes],
                "shared_node": self.shared_node}


# --------------------------------------------------------------------------------- parsing
def _fields(text: str) -> dict[str, str]:
    """``Key=Value`` pairs of one ``scontrol -o`` line (values may contain ``=``, not spaces)."""
    return dict(re.findall(r"(?:^|\s)([A-Za-z:/_]+)=(\S*)", text))


def parse_job(text: str) -> dict:
    """The fields of ``scontrol show job -o <id>`` that matter here."""
    f = _fields(text)
    tres = f.get("TresPerNode", "") or f.get("TRES_PER_NODE", "")
    gres = re.sub(r"^gres[/:]", "", tres) if tres not in ("", "(null)", "N/A") else ""
    return {"nodelist": f.get("NodeList", ""), "num_cpus": int(re.match(r"\d*", f.get("NumCPUs", "")).group() or 0),
            "num_nodes": int(re.match(r"\d*", f.get("NumNodes", "")).group() or 0),
            "oversubscribe": f.get("OverSubscribe", ""), "gres": gres, "state": f.get("JobState", "")}


def parse_node(text: str) -> dict:
    """The fields of ``scontrol show node -o <name>`` that matter here."""
    f = _fields(text)
    return {"name": f.get("NodeName", ""), "hostname": f.get("NodeHostName", "") or f.get("NodeHostname", ""),
            "address": f.get("NodeAddr", ""), "cpus": int(f.get("CPUTot", "0") or 0)}


def _scontrol(*args: str) -> str:
    try:
        r = subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AllocationError(f"scontrol {' '.join(args)}: {exc}") from exc
    if r.returncode != 0:
        raise AllocationError(f"scontrol {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def from_scontrol(job_id: str, run=_scontrol) -> Allocation:
    """The allocation of Slurm job ``job_id``, read from ``scontrol`` (``run`` is injectable for tests)."""
    job = parse_job(run("show", "job", "-o", job_id))
    if not job["nodelist"] or job["nodelist"] in ("(null)", "None"):
        raise AllocationError(f"job {job_id} has no nodes yet (state {job['state'] or '?'})")
    names = run("show", "hostnames", job["nodelist"]).split()
    per_node = job["num_cpus"] // len(names) if names and job["num_cpus"] else 0
    nodes = []
    for name in names:
        nd = parse_node(run("show", "node", "-o", name))
        if not nd["address"]:
            raise AllocationError(f"node {name} of job {job_id} has no NodeAddr in scontrol")
        nodes.append(Node(name=name, hostname=nd["hostname"] or name, address=nd["address"],
                          cpus=per_node or nd["cpus"]))
    exclusive = job["oversubscribe"].upper() in ("NO", "EXCLUSIVE", "USER", "MCS")
    return Allocation(launcher="slurm", job_id=job_id, nodes=tuple(nodes), gres=job["gres"], exclusive=exclusive)


def local(cpus: int | None = None) -> Allocation:
    """Outside Slurm: the one host this runs on, as driver and system node at once."""
    h = socket.gethostname()
    return Allocation(launcher="local", job_id=None,
                      nodes=(Node(name=h, hostname=h, address="127.0.0.1", cpus=cpus or os.cpu_count() or 0),))


def current() -> Allocation:
    """The allocation of the job this process runs in: Slurm's when ``SLURM_JOB_ID`` is set (the
    one variable the job step keeps) and ``scontrol`` is here, else this one host."""
    job_id = os.environ.get("SLURM_JOB_ID")
    if job_id and shutil.which("scontrol"):
        return from_scontrol(job_id)
    if job_id:
        # inside a Slurm job without Slurm's client (seen: storage's driver inside a stack image on the
        # multi-host cluster took its 4-node job for one host, services on 127.0.0.1): never guess
        raise AllocationError(f"inside Slurm job {job_id} but scontrol is not on PATH here (a process in an "
                              "image without Slurm's client?): the job's nodes cannot be read, so nothing may "
                              "be placed; run this side on the host, or put Slurm's client in the image")
    return local()


# ------------------------------------------------------------------------------ measured
def _addresses() -> list[str]:
    """This host's IPv4 addresses (``ip -4 -o addr``), loopback last."""
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    addrs = re.findall(r"\binet (\d+\.\d+\.\d+\.\d+)/", out)
    return sorted(set(addrs), key=lambda a: (a.startswith("127."), a))


def here() -> dict:
    """Where *this* process measured it runs: hostname, Slurm node name (``SLURMD_NODENAME``, which
    srun sets in every step, else the hostname) and the host's addresses. Store it in the record of
    each side of a multi-node run."""
    h = socket.gethostname()
    return {"hostname": h, "node": os.environ.get("SLURMD_NODENAME") or h, "addresses": _addresses()}


def source_address(peer_host: str, peer_port: int = 9) -> str:
    """The local address this host uses to reach ``peer_host`` (the kernel's route choice; a UDP
    connect sends nothing). Record it beside the address a client connected to."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((socket.gethostbyname(peer_host), peer_port))
        return s.getsockname()[0]
