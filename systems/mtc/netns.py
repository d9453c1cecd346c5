"""Emulated nodes on one host: network namespaces on a bridge, tc HTB per link.

Every emulated node of a cluster ``cid`` is a network namespace
``rmc-<cid>-<i>`` joined to the bridge ``rmc-br0`` (10.78.0.0/24, the host
side is 10.78.0.1) by a veth pair; both ends of the veth get an HTB qdisc with
the node's link rate and an explicit burst (MACHINE-FACTS: without it a single
stream reaches only 64-77 % of the rate), so each node has a full-duplex link
of ``rate_mbit`` in each direction.  Traffic inside a namespace (a node's
client talking to its own memcached) stays on its loopback, unshaped, like a
real node's local memory.

Concurrent clusters (several tests or engineers at once) share the bridge (its
MAC address is fixed, so ports joining and leaving never change it):
addresses are handed out under a lock from a registry in /run/rmc, and the
bridge is removed when the last cluster leaves.  A registry entry whose owner
process is gone is cleaned up by the next allocation (``cleanup_stale``).

Processes join a node with ``nsenter --net=/run/netns/<name>`` (not ``ip netns
exec``, which would give them a private mount namespace and hide their FUSE
mounts from the host).  Root only.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import socket
import subprocess
import time
from pathlib import Path

BRIDGE = "rmc-br0"
NET = "10.78.0"
PREFIX_LEN = 24
BRIDGE_IP = f"{NET}.1"
FIRST_HOST, LAST_HOST = 2, 254
REG_DIR = Path(os.environ.get("RMC_REGISTRY", "/run/rmc"))
NETNS_DIR = Path("/run/netns")
_CID_RE = re.compile(r"^[a-z0-9]{1,6}$")


class NetnsError(RuntimeError):
    pass


def ns_name(cid: str, i: int) -> str:
    return f"rmc-{cid}-{i}"


def ns_path(cid: str, i: int) -> str:
    return str(NETNS_DIR / ns_name(cid, i))


def _veth_host(cid: str, i: int) -> str:
    return f"rmc{cid}h{i}"  # <= 15 characters for cid <= 6, i <= 999


def _veth_peer(cid: str, i: int) -> str:
    return f"rmc{cid}p{i}"


def _run(args: list[str], check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(args, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise NetnsError(f"{' '.join(args)}: {r.stderr.strip() or r.stdout.strip()}")
    return r


def available() -> str | None:
    """None if namespaces can be used here, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "tc", "nsenter"):
        dirs = os.environ.get("PATH", "").split(":") + ["/usr/sbin", "/sbin"]
        if not any(os.access(os.path.join(d, tool), os.X_OK) for d in dirs):
            return f"{tool} is missing"
    return None


@contextlib.contextmanager
def _locked():
    REG_DIR.mkdir(parents=True, exist_ok=True)
    with open(REG_DIR / "lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _registry() -> dict[str, dict]:
    out = {}
    for f in REG_DIR.glob("*.json"):
        try:
            out[f.stem] = json.loads(f.read_text())
        except (OSError, json.JSONDecodeError):
            continue
    return out


def _link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


BRIDGE_MAC = "02:78:00:00:00:01"  # locally administered, fixed


def _ensure_bridge() -> None:
    """Create the bridge with a fixed MAC address (or pin the MAC of an existing one).

    A Linux bridge without an explicitly set address takes the lowest MAC of
    its ports, so it would change whenever another cluster's veth joins or
    leaves; namespaces keep the old MAC of 10.78.0.1 in their ARP caches and
    replies to the driver go nowhere until TCP's backoff outlasts the entry
    (50-110 s stalls were seen).  A set address never changes.
    """
    if not _link_exists(BRIDGE):
        _run(["ip", "link", "add", BRIDGE, "address", BRIDGE_MAC, "type", "bridge"])
        _run(["ip", "addr", "add", f"{BRIDGE_IP}/{PREFIX_LEN}", "dev", BRIDGE])
    try:
        pinned = Path(f"/sys/class/net/{BRIDGE}/addr_assign_type").read_text().strip() == "3"  # NET_ADDR_SET
    except OSError:
        pinned = False
    if not pinned:
        mac = Path(f"/sys/class/net/{BRIDGE}/address").read_text().strip()
        _run(["ip", "link", "set", "dev", BRIDGE, "address", mac])
    _run(["ip", "link", "set", BRIDGE, "up"])


def _destroy_locked(cid: str, nodes: int | None = None) -> None:
    try:
        ips = json.loads((REG_DIR / f"{cid}.json").read_text()).get("ips", [])
    except (OSError, ValueError):
        ips = []
    names = [p.name for p in NETNS_DIR.glob(f"rmc-{cid}-*")] if NETNS_DIR.exists() else []
    for name in names:
        _run(["ip", "netns", "del", name], check=False)
    for link in Path("/sys/class/net").glob(f"rmc{cid}[hp]*"):
        _run(["ip", "link", "del", link.name], check=False)
    for ip in ips:
        _run(["ip", "neigh", "flush", "to", ip], check=False)
    with contextlib.suppress(FileNotFoundError):
        (REG_DIR / f"{cid}.json").unlink()


def _maybe_drop_bridge_locked() -> None:
    if not _registry() and _link_exists(BRIDGE):
        _run(["ip", "link", "del", BRIDGE], check=False)


def cleanup_stale(verbose: bool = False) -> list[str]:
    """Remove clusters whose owner process is gone (this host only)."""
    removed = []
    with _locked():
        for cid, ent in _registry().items():
            if ent.get("host") == socket.gethostname() and not pid_alive(int(ent.get("pid", 0))):
                _destroy_locked(cid)
                removed.append(cid)
        # namespaces without a registry entry (a crash between steps)
        known = set(_registry())
        if NETNS_DIR.exists():
            for p in NETNS_DIR.glob("rmc-*-*"):
                cid = p.name.split("-")[1]
                if cid not in known:
                    _destroy_locked(cid)
                    removed.append(cid)
        _maybe_drop_bridge_locked()
    if verbose and removed:
        print(f"netns: removed stale clusters {sorted(set(removed))}")
    return sorted(set(removed))


def htb_args(rate_mbit: float, burst: str) -> list[str]:
    quantum = max(1500, min(200000, int(rate_mbit * 1e6 / 8 / 10)))
    return ["htb", "rate", f"{rate_mbit:g}mbit", "ceil", f"{rate_mbit:g}mbit",
            "burst", burst, "cburst", burst, "quantum", str(quantum)]


def _shape(dev: str, rate_mbit: float, burst: str, netns: str | None) -> None:
    pre = ["tc"] + (["-n", netns] if netns else [])
    _run(pre + ["qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "10"])
    _run(pre + ["class", "replace", "dev", dev, "parent", "1:", "classid", "1:10"] + htb_args(rate_mbit, burst))


def create(cid: str, n: int, rate_mbit: float | None = None, burst: str = "256k",
           owner_pid: int | None = None) -> list[str]:
    """Create ``n`` node namespaces for cluster ``cid``; returns their IPs (node i -> ips[i])."""
    why = available()
    if why:
        raise NetnsError(why)
    if not _CID_RE.match(cid):
        raise NetnsError(f"cluster id {cid!r}: 1-6 characters [a-z0-9]")
    cleanup_stale()
    with _locked():
        reg = _registry()
        if cid in reg:
            raise NetnsError(f"cluster id {cid} already in use")
        used = {ip for ent in reg.values() for ip in ent.get("ips", [])}
        # hand addresses out round robin: an address just released may still sit in
        # some neighbour cache with the old veth's MAC address
        nxt_file = REG_DIR / "next"
        try:
            start = int(nxt_file.read_text())
        except (OSError, ValueError):
            start = FIRST_HOST
        span = LAST_HOST - FIRST_HOST + 1
        order = [FIRST_HOST + (start - FIRST_HOST + k) % span for k in range(span)]
        free = [f"{NET}.{h}" for h in order if f"{NET}.{h}" not in used]
        if len(free) < n:
            raise NetnsError(f"only {len(free)} addresses left in {NET}.0/{PREFIX_LEN} for {n} nodes")
        ips = free[:n]
        nxt_file.write_text(str(int(ips[-1].rsplit(".", 1)[1]) + 1))
        entry = {"cid": cid, "pid": owner_pid or os.getpid(), "host": socket.gethostname(),
                 "ips": ips, "rate_mbit": rate_mbit, "burst": burst, "created": time.time()}
        (REG_DIR / f"{cid}.json").write_text(json.dumps(entry))
        try:
            _ensure_bridge()
            for i, ip in enumerate(ips):
                ns, host_end, peer = ns_name(cid, i), _veth_host(cid, i), _veth_peer(cid, i)
                _run(["ip", "netns", "add", ns])
                _run(["ip", "link", "add", host_end, "type", "veth", "peer", "name", peer])
                _run(["ip", "link", "set", peer, "netns", ns])
                _run(["ip", "link", "set", host_end, "master", BRIDGE, "up"])
                _run(["ip", "-n", ns, "link", "set", peer, "name", "eth0"])
                _run(["ip", "-n", ns, "addr", "add", f"{ip}/{PREFIX_LEN}", "dev", "eth0"])
                _run(["ip", "-n", ns, "link", "set", "eth0", "up"])
                _run(["ip", "-n", ns, "link", "set", "lo", "up"])
                if rate_mbit:
                    _shape("eth0", rate_mbit, burst, ns)      # node -> network
                    _shape(host_end, rate_mbit, burst, None)  # network -> node
                _run(["ip", "neigh", "flush", "to", ip], check=False)  # forget an old MAC of this address
        except BaseException:
            _destroy_locked(cid)
            _maybe_drop_bridge_locked()
            raise
    return ips


def destroy(cid: str) -> None:
    """Remove every namespace, veth and the registry entry of ``cid`` (idempotent)."""
    with _locked():
        _destroy_locked(cid)
        _maybe_drop_bridge_locked()


def leftovers(cid: str | None = None) -> dict[str, list[str]]:
    """What still exists (for tests): namespaces, links, registry entries."""
    pat = f"rmc-{cid}-*" if cid else "rmc-*"
    ns = sorted(p.name for p in NETNS_DIR.glob(pat)) if NETNS_DIR.exists() else []
    lpat = f"rmc{cid}[hp]*" if cid else "rmc*"
    links = sorted(p.name for p in Path("/sys/class/net").glob(lpat))
    if cid is None:
        links = [x for x in links if x != BRIDGE]
    reg = sorted(_registry()) if cid is None else [c for c in _registry() if c == cid]
    return {"netns": ns, "links": links, "registry": reg}


def nsenter_prefix(cid: str, i: int) -> list[str]:
    return ["nsenter", f"--net={ns_path(cid, i)}"]


# --------------------------------------------------------------------------
# process, port and mount helpers: the one copy for the launcher, its agent,
# systems/homefs and the MemFS tests (standard library only, like the agent)
# --------------------------------------------------------------------------
def pid_alive(pid: int) -> bool:
    """The process exists (a zombie counts; one of another user's answers PermissionError)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def in_mountinfo(path: str, fallback=None) -> bool:
    """``path`` is a mount point in /proc/self/mountinfo (as written there: not resolved, not unescaped);
    if that cannot be read, ``fallback(path)`` or False."""
    try:
        with open("/proc/self/mountinfo") as fh:
            return any(line.split()[4] == path for line in fh)
    except OSError:
        return fallback(path) if fallback else False


def wait_or_kill(proc: subprocess.Popen, timeout: float) -> None:
    """Wait up to ``timeout`` s for ``proc`` to exit, then SIGKILL it and reap it."""
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
