"""The MemFS study's start-up check of the site's networks (issue 19 defect 8): on a cluster the
agents bind the address of each real network's ``memfs.networks[<name>].interface`` (ib0, eth0).
A site without that interface would fail every MemFS job one by one, each after its allocation;
this one small job lists the interfaces of its nodes first and stops the run once, naming the key,
the interface and the node. Every MemFS run rule takes its output as input (rules.smk); it is part
of the plan only where the interface is used (launcher slurm, a real network naming one).

    python3 -m studies.memfs.site_check --config '{"interfaces": {"IPoIB": "ib0"}}' --out results/memfs/site_check.json

--config holds {"interfaces": layout.site_interfaces(memfs section)}: only what the check depends on.

Its nodes come from repro.allocation (an srun step per node lists ``ip -o addr show``); outside
Slurm it checks this one host. Plan-time checks (a network name that is not a key of
memfs.networks, an interface name no kernel accepts) are layout.check_networks and the schema;
layout.site_interfaces and layout.site_check_nodes say what is checked, on how many nodes.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import re
import subprocess
import sys
from pathlib import Path

from repro import allocation, cli

PROBE = ["sh", "-c", "echo \"host=$(hostname)\"; ip -o addr show"]


def parse_probe(text: str) -> dict:
    """``host=...`` and ``ip -o addr show`` lines -> {"hostname": str, "interfaces": {name: [IPv4...]}}
    (an interface with only IPv6 addresses maps to [])."""
    host, ifaces = "", {}
    for ln in text.splitlines():
        if ln.startswith("host="):
            host = ln[5:].strip()
            continue
        m = re.match(r"^\d+:\s+([^\s:@]+)\S*\s+(inet6?)\s+([0-9a-fA-F.:]+)/", ln)
        if m:
            addrs = ifaces.setdefault(m.group(1), [])
            if m.group(2) == "inet":
                addrs.append(m.group(3))
    return {"hostname": host, "interfaces": ifaces}


def problems(needed: dict[str, str], probes: dict[str, dict]) -> list[str]:
    """One line per (network, node) whose interface is missing or has no IPv4 address, and per node
    whose interfaces could not be listed. ``probes``: node name -> parse_probe() or {"error": ...}."""
    out = []
    for node, p in probes.items():
        if p.get("error"):
            out.append(f"node {node}: its interfaces could not be listed ({p['error']})")
            continue
        have = p["interfaces"]
        v4 = ", ".join(f"{i} {' '.join(a)}" for i, a in sorted(have.items()) if a) or "none"
        for net, iface in needed.items():
            if have.get(iface):
                continue
            why = "has no IPv4 address on it" if iface in have else "has no such interface"
            out.append(f"memfs.networks[{net}].interface = {iface!r}: node {node} (host {p['hostname'] or '?'}) "
                       f"{why} (its interfaces with IPv4: {v4})")
    return out


def probe(alloc: allocation.Allocation, node: allocation.Node, timeout: int = 120) -> dict:
    cmd = alloc.step(node, name="memfs-site-check", cpus=1) + PROBE
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": f"{' '.join(cmd)}: {exc}"}
    if r.returncode != 0:
        return {"error": f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()[-400:]}"}
    return parse_probe(r.stdout)


def main(argv=None) -> int:
    a, cfg = cli.finish(cli.parser(__doc__, "out"), argv)
    needed = cfg["interfaces"]
    alloc = allocation.current()
    with cf.ThreadPoolExecutor(max_workers=min(16, len(alloc.nodes))) as ex:
        found = dict(zip([n.name for n in alloc.nodes], ex.map(lambda n: probe(alloc, n), alloc.nodes)))
    bad = problems(needed, found)
    if bad:
        print("memfs: the nodes lack a network interface the config names (config/config.yaml or an "
              "overlay: memfs.networks; set the interface the nodes have, or emulate: true):\n  "
              + "\n  ".join(bad), file=sys.stderr)
        return 1
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"networks": needed, "launcher": alloc.launcher, "job_id": alloc.job_id,
                                       "nodes": found}, indent=1, sort_keys=True) + "\n")
    print(f"memfs site check: {len(found)} node(s) have {needed}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
