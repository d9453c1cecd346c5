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

import tempfile
import urllib.parse
from pathlib import Path

from repro import allocation

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
