"""Where the serverless study's sides run (issue 19), from repro.allocation (never SLURM_* variables).

The paper's layout: the function director on its own VM, the platform on the cluster. Here:

* mode standin, a Slurm job of n+1 nodes: the director in the job's batch step on the driver node;
  the stand-in platform's front (gateway / queue, ``faas-standin up``) in an srun step on the first
  system node, bound to that node's address; its instances spread over the system nodes (one srun
  step each, bound to their node's address); the echo server and the iperf3 server of the limits
  on the first system node too. State files live on the shared directory both sides see.
* mode standin on one host (locally, or a one-node job): everything on this host, on loopback.
* mode kubernetes: the platform is the kubeconfig's cluster (its gateway URL from deploy.sh); the
  director alone on the driver.

What is planned here is not what is measured: :func:`measured` gives the record's ``placement``,
each side as it reported itself (the director: ``allocation.here()`` and the address it connected
from; the platform: its front's and instances' ``node``/``hostname``/address from ``/system/status``).
"""

from __future__ import annotations

import ipaddress
import tempfile
import urllib.parse
from pathlib import Path

from repro import allocation
from studies.serverless import layout

SHARED_STATE = Path("results/serverless/state")  # under the workflow's directory: every node sees it


def plan(alloc: allocation.Allocation, mode: str) -> dict:
    """The planned placement of one run job: the platform's node, the address it binds, the command
    prefix that starts it there (empty: this host) and the hosts its instances spread over (None:
    this host)."""
    if mode != "standin" or not alloc.multi_host:
        where = "kubernetes" if mode != "standin" else alloc.driver.name
        return {"multi_host": False, "driver": alloc.driver.name, "platform_node": where,
                "listen": "127.0.0.1", "launch": [], "instance_hosts": None}
    front = alloc.system_nodes[0]
    return {"multi_host": True, "driver": alloc.driver.name, "platform_node": front.name,
            "listen": alloc.bind_address(front),
            "launch": alloc.step(front, name="faas-standin", extra=["--unbuffered"]),
            "instance_hosts": [{"node": n.name, "listen": alloc.bind_address(n),
                                "launch": alloc.step(n, name="faas-instance", extra=["--unbuffered"])}
                               for n in alloc.system_nodes]}


def state_dir(pl: dict) -> tempfile.TemporaryDirectory:
    """A temporary directory for the platform's state files: node-local when everything runs on
    this host, on the shared directory when the platform runs on another node."""
    if pl["multi_host"]:
        SHARED_STATE.mkdir(parents=True, exist_ok=True)
        return tempfile.TemporaryDirectory(prefix="rsl-", dir=SHARED_STATE.resolve())
    return tempfile.TemporaryDirectory(prefix="rsl-")


def director_side(url: str) -> dict:
    """The director's measured side: where it ran and the address it used to reach ``url``."""
    me = allocation.here()
    host = urllib.parse.urlsplit(url).hostname or ""
    try:
        src = allocation.source_address(host) if host else None
    except OSError:
        src = None
    return {"node": me["node"], "hostname": me["hostname"], "connected_to": url, "connected_from": src}


def platform_side(status: dict, endpoint: str) -> dict:
    """The platform's measured side from a stand-in's ``/system/status`` (``endpoint``: the address
    its front is bound to, as it wrote it)."""
    return {"node": status.get("node"), "hostname": status.get("hostname"), "listen": endpoint,
            "instances": [{"node": i.get("node"), "hostname": i.get("hostname"), "url": i.get("url")}
                          for i in status.get("instances") or []]}


def planned(alloc: allocation.Allocation) -> dict:
    """The allocation Slurm gave (what was planned), kept apart from what was measured: its node names
    only inside ``name=address`` strings, so that no reader takes a planned node for a place a side ran."""
    return {"launcher": alloc.launcher, "job_id": alloc.job_id, "exclusive": alloc.exclusive,
            "nodes": [f"{n.name}={n.address}" for n in alloc.nodes]}


def measured(alloc: allocation.Allocation, url: str, platform: dict) -> dict:
    """A record's ``extra.placement``: the planned allocation and both sides as measured."""
    return {"planned": planned(alloc), "director": director_side(url), "platform": platform}


def one_host(where: dict) -> bool:
    """Whether both ends of a measured path (``measured``'s director and platform/server sides) ran on
    one host, from what the sides measured: their hostnames where both reported one; else the address
    the director connected to: a loopback address, or one of the director's own (the kernel then
    sends from that same address, so connected_from equals it)."""
    d, s = where.get("director") or {}, where.get("platform") or {}
    if d.get("hostname") and s.get("hostname"):
        return d["hostname"] == s["hostname"]
    host = urllib.parse.urlsplit(d.get("connected_to") or "").hostname or ""
    try:
        if host == "localhost" or ipaddress.ip_address(host).is_loopback:
            return True
    except ValueError:  # a host name: only the address the kernel chose can tell
        pass
    return bool(host) and d.get("connected_from") == host


def limit_kind(mode: str, what: str, where: dict) -> str:
    """The system kind of a limit record (``what``: echo or iperf3) from its measured placement: with
    the stand-ins, loopback only where both ends ran on one host, else the path between nodes."""
    if mode != "standin":
        return layout.system_kind({"mode": mode}, what)
    return layout.STANDIN_KIND[what] if one_host(where) else layout.STANDIN_KIND_BETWEEN_NODES[what]
