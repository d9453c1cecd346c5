"""The Kubernetes cluster the platforms run on, against the paper's (Sec. 2.2: "a Kubernetes cluster of
four VMs with four virtual CPU cores and 8 GB of memory per VM"): the kubeconfig's nodes as
``kubectl get nodes -o json`` reports them, compared with ``serverless.cluster_shape``. A mismatch is
reported (in site_check.json and in every run's raw record), not refused: the site's cluster is the
site's, and the records say how it differs.

    observe(kubeconfig)          -> {"nodes": [...], "count", "cpus", "memory_gib"}
    compare(observed, expected)  -> ["4 nodes expected, 3 found", ...]
    check(cfg)                   -> {"expected", "observed", "mismatch"} or {"expected", "error"}
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

_MEM_UNITS = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9,
              "T": 1e12}


def kubectl() -> str:
    """REPRO_KUBECTL (systems/openfaas/setup.sh's kubectl 1.20 where set), KUBECTL (what deploy.sh's
    lib/kube.sh uses), else kubectl on PATH (the fdirector image has Debian's 1.20)."""
    exe = os.environ.get("REPRO_KUBECTL") or os.environ.get("KUBECTL") or shutil.which("kubectl")
    if not exe:
        raise RuntimeError("no kubectl: set REPRO_KUBECTL or put kubectl on PATH (systems/openfaas/setup.sh)")
    return exe


def cpus(q: str) -> float:
    """A Kubernetes CPU quantity ("4", "3800m") in cores."""
    q = str(q)
    return int(q[:-1]) / 1000 if q.endswith("m") else float(q)


def gib(q: str) -> float:
    """A Kubernetes memory quantity ("8148296Ki", "8Gi", "8G") in GiB."""
    m = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", str(q))
    if not m or m.group(2) not in _MEM_UNITS:
        raise ValueError(f"memory quantity {q!r}")
    return float(m.group(1)) * _MEM_UNITS[m.group(2)] / 2**30


def parse_nodes(doc: dict) -> dict:
    """The nodes of a `kubectl get nodes -o json` document: capacity (what the VM has), readiness, and
    whether the node takes workloads (no NoSchedule taint, e.g. a control plane that does not)."""
    nodes = []
    for n in doc.get("items", []):
        st, spec = n.get("status", {}), n.get("spec", {})
        cap = st.get("capacity", {})
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions", []))
        noschedule = spec.get("unschedulable", False) or any(t.get("effect") == "NoSchedule"
                                                              for t in spec.get("taints", []) or [])
        nodes.append({"name": n["metadata"]["name"], "cpus": cpus(cap.get("cpu", "0")),
                      "memory_gib": round(gib(cap.get("memory", "0")), 2), "ready": ready,
                      "schedulable": not noschedule})
    work = [n for n in nodes if n["ready"] and n["schedulable"]]
    return {"nodes": nodes, "count": len(work), "cpus": sum(n["cpus"] for n in work),
            "memory_gib": round(sum(n["memory_gib"] for n in work), 2)}


def observe(kubeconfig: str, timeout: float = 60) -> dict:
    done = subprocess.run([kubectl(), "--kubeconfig", kubeconfig, "get", "nodes", "-o", "json"],
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"kubectl get nodes failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return parse_nodes(json.loads(done.stdout))


def compare(observed: dict, expected: dict) -> list[str]:
    """What differs from the paper's shape: ready schedulable nodes, vCPUs and memory per node (memory
    within 10 %: "8 GB" is 7.45 GiB if decimal, and a VM reports a little less than it has)."""
    out = []
    work = [n for n in observed["nodes"] if n["ready"] and n["schedulable"]]
    if len(work) != expected["nodes"]:
        out.append(f"{expected['nodes']} nodes expected, {len(work)} ready and schedulable found "
                   f"({len(observed['nodes'])} in all)")
    for n in work:
        if n["cpus"] != expected["cpus_per_node"]:
            out.append(f"node {n['name']}: {n['cpus']:g} vCPUs, {expected['cpus_per_node']} expected")
        if abs(n["memory_gib"] / expected["memory_gib"] - 1) > 0.10:
            out.append(f"node {n['name']}: {n['memory_gib']:g} GiB, {expected['memory_gib']} expected")
    return out


def check(cfg: dict) -> dict:
    """The serverless section's cluster_shape against its kubeconfig's nodes (mode kubernetes)."""
    expected = dict(cfg["cluster_shape"])
    kube = os.path.expandvars(os.path.expanduser(cfg.get("kubeconfig", "")))
    try:
        observed = observe(kube)
    except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as exc:
        return {"expected": expected, "error": f"{type(exc).__name__}: {exc}",
                "mismatch": [f"cluster shape not checked: {exc}"]}
    return {"expected": expected, "observed": observed, "mismatch": compare(observed, expected)}
