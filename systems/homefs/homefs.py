#!/usr/bin/env python3
"""homefs: an emulated, throttled "home" network file system on one host.

Stands in for the cluster's shared home file system (StorNext on the paper's
Sofja system): one NFS server whose single link is the shared bottleneck, and
one client mount per emulated node.

    server namespace rmf-<tag>-s      nfs-ganesha 4.3 (VFS FSAL, NFSv3 + v4,
      eth0 10.77.0.1/24               Graceless) exporting <state>/export;
        | tc HTB rate R (egress)      the read direction is throttled here
    bridge rmf-<tag>-br (host namespace; the host-side veth ends carry the
        |                              byte counters of every link)
    client namespaces rmf-<tag>-c<i>  one FUSE client over libnfs (NFSv3) per node
      eth0 10.77.0.<10+i>/24          (build/nfsfuse), mounted at
                                      <state>/mnt/node<i> in the host's mount
                                      namespace (started with nsenter --net)

The driver writes test files straight into <state>/export (the server's own
disk), so no client cache ever holds them; node i reads them through
<state>/mnt/node<i>.

    homefs.py up --state DIR --nodes N --rate-mbit R [--burst 256k]   # prints the state JSON
    homefs.py down --state DIR                                        # idempotent, also after a crash
    homefs.py run --state DIR --nodes N --rate-mbit R -- CMD ...      # up, CMD, down (always;
                                                                      # the state dir is kept if CMD failed)
    homefs.py counters --state DIR                                    # link byte counters (JSON)
    homefs.py gc [--base DIR]                                         # tear down instances whose owner died

Everything it creates is named rmf-<tag>-* (tag: 5 characters, unique per
instance) and recorded in <state>/homefs.json before it is created, so that
`down` removes exactly what `up` made, even after a failure half-way.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import string
import subprocess
import sys
import time
from pathlib import Path

from systems.mtc import netns  # the shared process helpers (the project's Python path, workflow/pythonpath.txt)

HERE = Path(__file__).resolve().parent
NFSFUSE = HERE / "build" / "nfsfuse"
SUBNET = "10.77.0"
SERVER_IP = f"{SUBNET}.1"
PSEUDO = "/home"
STATE_FILE = "homefs.json"
KEEPALIVE = ".homefs-keepalive"
NFS_PORT, MNT_PORT = 2049, 20048  # no portmapper in the server namespace: fixed ports
GANESHA_PLUGINS = "/usr/lib/x86_64-linux-gnu/ganesha"


class HomefsError(RuntimeError):
    pass


def log(msg: str) -> None:
    print(f"[homefs] {msg}", file=sys.stderr, flush=True)


def sh(*cmd: str, check: bool = True, quiet: bool = False) -> subprocess.CompletedProcess:
    p = subprocess.run(list(cmd), capture_output=True, text=True)
    if check and p.returncode != 0:
        raise HomefsError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    if not quiet and p.returncode != 0:
        log(f"(ignored) {' '.join(cmd)}: {p.stderr.strip()}")
    return p


def pid_alive(pid: int | None) -> bool:
    if not pid or not netns.pid_alive(pid):
        return False
    try:  # a zombie is not alive
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def is_mounted(path: str | Path) -> bool:
    path = os.path.realpath(path)
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields = line.split()
            if len(fields) > 4 and fields[4].replace("\\040", " ") == path:
                return True
    except OSError:
        pass
    return False


def parse_size(text: str) -> int:
    t = str(text).strip().lower().rstrip("b").rstrip("i")
    mul = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(t[-1:], 1)
    return int(float(t[:-1] if mul > 1 else t) * mul)


# --------------------------------------------------------------------------
# state
# --------------------------------------------------------------------------
def state_path(state_dir: str | Path) -> Path:
    return Path(state_dir) / STATE_FILE


def load_state(state_dir: str | Path) -> dict:
    p = state_path(state_dir)
    if not p.exists():
        raise HomefsError(f"no homefs instance at {state_dir} ({p} missing)")
    return json.loads(p.read_text())


def save_state(st: dict) -> None:
    p = state_path(st["state_dir"])
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(json.dumps(st, indent=1))
    os.replace(tmp, p)


def new_tag() -> str:
    used = set(sh("ip", "netns", "list", check=False, quiet=True).stdout.split())
    rnd = random.Random(os.getpid() ^ time.time_ns())
    for _ in range(100):
        tag = "".join(rnd.choice(string.ascii_lowercase + string.digits) for _ in range(5))
        if f"rmf-{tag}-s" not in used:
            return tag
    raise HomefsError("no free tag")


def names(tag: str, nodes: int) -> dict:
    return {
        "bridge": f"rmf-{tag}-br",
        "server_ns": f"rmf-{tag}-s",
        "server_veth": f"rmf-{tag}-s",        # host-side end (its rx = bytes the server sent)
        "clients": [{"node": i, "ns": f"rmf-{tag}-c{i}", "veth": f"rmf-{tag}-c{i}",
                     "ip": f"{SUBNET}.{10 + i}"} for i in range(1, nodes + 1)],
    }


# --------------------------------------------------------------------------
# up
# --------------------------------------------------------------------------
GANESHA_CONF = """\
NFS_CORE_PARAM {{
    Protocols = 3, 4;
    NFS_Port = {nfs_port};
    MNT_Port = {mnt_port};
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
    Bind_addr = {server_ip};
    Plugins_Dir = {plugins};
}}
NFSV4 {{
    Graceless = true;
    RecoveryBackend = fs;
    RecoveryRoot = {recovery};
    Lease_Lifetime = 60;
}}
NFS_KRB5 {{ Active_krb5 = false; }}
EXPORT {{
    Export_Id = 1;
    Path = {export};
    Pseudo = {pseudo};
    Access_Type = RO;
    Squash = No_Root_Squash;
    SecType = sys;
    Protocols = 3, 4;
    Transports = TCP;
    FSAL {{ Name = VFS; }}
{io_size}}}
LOG {{ Default_Log_Level = EVENT; }}
"""


SERVER_SH = """\
# nfs-ganesha and its private rpcbind (started by homefs.py in the server namespace)
set -u
mount -t tmpfs -o mode=0755 rmf-run /run || exit 1
mkdir -p /run/rpcbind
rpcbind -f -w &
rp=$!
g=
trap 'kill -TERM $g $rp 2>/dev/null' TERM INT HUP
i=0
while [ ! -S /run/rpcbind.sock ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
ganesha.nfsd -F -f {conf} -L {log} -p {pid} &
g=$!
wait $g
rc=$?
kill -TERM $g $rp 2>/dev/null
wait
exit $rc
"""


def _veth_into_ns(host_end: str, ns: str, ip: str, bridge: str) -> None:
    peer = host_end + "p"
    sh("ip", "link", "add", host_end, "type", "veth", "peer", "name", peer)
    sh("ip", "link", "set", peer, "netns", ns)
    sh("ip", "-n", ns, "link", "set", peer, "name", "eth0")
    sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", "eth0")
    sh("ip", "-n", ns, "link", "set", "eth0", "up")
    sh("ip", "-n", ns, "link", "set", "lo", "up")
    sh("ip", "link", "set", host_end, "master", bridge)
    sh("ip", "link", "set", host_end, "up")


def _wait(pred, timeout: float, what: str, proc: subprocess.Popen | None = None, logf: Path | None = None):
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        if pred():
            return
        if proc is not None and proc.poll() is not None:
            tail = logf.read_text()[-2000:] if logf and logf.exists() else ""
            raise HomefsError(f"{what}: process exited with {proc.returncode}\n{tail}")
        time.sleep(0.05)
    tail = logf.read_text()[-2000:] if logf and logf.exists() else ""
    raise HomefsError(f"{what}: not ready after {timeout} s\n{tail}")


def _port_open(ns: str, ip: str, port: int) -> bool:
    p = subprocess.run(["nsenter", f"--net=/run/netns/{ns}", "bash", "-c",
                        f"exec 3<>/dev/tcp/{ip}/{port}"], capture_output=True)
    return p.returncode == 0


def up(state_dir: str | Path, nodes: int, rate_mbit: float, burst: str = "256k",
       max_read: int = 1 << 20, timeout_ms: int = 60000, owner_pid: int | None = None,
       nfs_version: int = 3, server_max_read: int | None = None) -> dict:
    """Bring an instance up (see the module's docstring). server_max_read: the largest NFS READ the
    server answers (ganesha's MaxRead/PrefRead, which libnfs takes as its read size; default:
    ganesha's own, which libnfs caps at 1 MiB); below the FUSE request size, one FUSE read takes
    several NFS READs (the tests use it)."""
    if os.geteuid() != 0:
        raise HomefsError("homefs needs root (network namespaces, tc, FUSE mounts)")
    if not NFSFUSE.exists():
        raise HomefsError(f"{NFSFUSE} missing: run make -C {HERE}")
    for tool in ("ganesha.nfsd", "rpcbind", "ip", "tc", "nsenter", "unshare", "fusermount3"):
        if sh("which", tool, check=False, quiet=True).returncode != 0:
            raise HomefsError(f"{tool} not found (Debian: nfs-ganesha nfs-ganesha-vfs rpcbind iproute2 fuse3 "
                              "util-linux)")
    if nodes < 1 or nodes > 200:
        raise HomefsError(f"nodes must be 1..200, not {nodes}")
    state_dir = Path(state_dir).resolve()
    if state_path(state_dir).exists():
        old = load_state(state_dir)
        if pid_alive(old.get("owner_pid")) and old.get("owner_pid") != (owner_pid or os.getpid()):
            raise HomefsError(f"{state_dir} is in use by pid {old['owner_pid']}")
        down(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    tag = new_tag()
    nm = names(tag, nodes)
    st = {
        "state_dir": str(state_dir), "tag": tag, "nodes": nodes, "rate_mbit": rate_mbit, "burst": burst,
        "max_read": max_read, "nfs_version": nfs_version, "owner_pid": owner_pid or os.getpid(),
        "server_ip": SERVER_IP, "pseudo": PSEUDO,
        "export": str(state_dir / "export"), "mnt_template": str(state_dir / "mnt" / "node{node}"),
        "names": nm, "created": [], "ganesha_pid": None, "client_pids": {}, "mounts": [],
        "started_at": time.time(),
    }
    save_state(st)

    def created(kind: str, name: str):
        st["created"].append([kind, name])
        save_state(st)

    try:
        t0 = time.monotonic()
        (state_dir / "export").mkdir(exist_ok=True)
        (state_dir / "export" / KEEPALIVE).write_bytes(b"k")  # an NFSv4 nfsfuse renews its lease with it
        (state_dir / "recovery").mkdir(exist_ok=True)
        (state_dir / "log").mkdir(exist_ok=True)
        created("bridge", nm["bridge"])
        sh("ip", "link", "add", nm["bridge"], "type", "bridge")
        sh("ip", "link", "set", nm["bridge"], "up")
        created("netns", nm["server_ns"])
        sh("ip", "netns", "add", nm["server_ns"])
        created("link", nm["server_veth"])
        _veth_into_ns(nm["server_veth"], nm["server_ns"], SERVER_IP, nm["bridge"])
        # the shared bottleneck: the server's egress (the read direction)
        rate = f"{rate_mbit}mbit"
        sh("ip", "netns", "exec", nm["server_ns"], "tc", "qdisc", "add", "dev", "eth0", "root", "handle", "1:",
           "htb", "default", "10")
        sh("ip", "netns", "exec", nm["server_ns"], "tc", "class", "add", "dev", "eth0", "parent", "1:",
           "classid", "1:10", "htb", "rate", rate, "ceil", rate, "burst", burst, "cburst", burst)
        for c in nm["clients"]:
            created("netns", c["ns"])
            sh("ip", "netns", "add", c["ns"])
            created("link", c["veth"])
            _veth_into_ns(c["veth"], c["ns"], c["ip"], nm["bridge"])

        conf = state_dir / "ganesha.conf"
        conf.write_text(GANESHA_CONF.format(server_ip=SERVER_IP, plugins=GANESHA_PLUGINS, nfs_port=NFS_PORT,
                                            mnt_port=MNT_PORT,
                                            recovery=state_dir / "recovery", export=state_dir / "export",
                                            pseudo=PSEUDO,
                                            io_size="" if not server_max_read else
                                            f"    MaxRead = {server_max_read};\n    PrefRead = {server_max_read};\n"))
        glog = state_dir / "log" / "ganesha.log"
        wrapper = state_dir / "server.sh"
        wrapper.write_text(SERVER_SH.format(conf=conf, log=glog, pid=state_dir / "ganesha.pid"))
        with open(state_dir / "log" / "ganesha.out", "w") as gout:
            # NFSv3 needs a portmapper: a private rpcbind in the server's network namespace and in a
            # private mount namespace (its socket lives in /run, which must not be the host's)
            g = subprocess.Popen(["nsenter", f"--net=/run/netns/{nm['server_ns']}", "unshare", "--mount",
                                  "--propagation", "private", "sh", str(wrapper)],
                                 stdout=gout, stderr=subprocess.STDOUT, start_new_session=True)
        st["ganesha_pid"] = g.pid
        save_state(st)
        first = nm["clients"][0]["ns"]
        _wait(lambda: _port_open(first, SERVER_IP, NFS_PORT) and _port_open(first, SERVER_IP, MNT_PORT), 20,
              "nfs-ganesha", g, glog)

        for c in nm["clients"]:
            mnt = Path(st["mnt_template"].format(node=c["node"]))
            mnt.mkdir(parents=True, exist_ok=True)
            clog = state_dir / "log" / f"nfsfuse-node{c['node']}.log"
            with open(clog, "w") as cout:
                p = subprocess.Popen(
                    ["nsenter", f"--net=/run/netns/{c['ns']}", str(NFSFUSE), "--server", SERVER_IP,
                     *(["--nfs-version", "3", "--export", str(state_dir / "export"), "--nfs-port", str(NFS_PORT),
                        "--mount-port", str(MNT_PORT)] if nfs_version == 3 else
                       ["--nfs-version", "4", "--export", PSEUDO, "--keepalive-path", f"/{KEEPALIVE}"]),
                     "--client-name", f"{c['ns']}-{os.getpid()}", "--max-read", str(max_read),
                     "--timeout-ms", str(timeout_ms), str(mnt)],
                    stdout=cout, stderr=subprocess.STDOUT, start_new_session=True)
            st["client_pids"][str(c["node"])] = p.pid
            st["mounts"].append(str(mnt))
            save_state(st)
            _wait(lambda m=mnt: is_mounted(m), 20, f"nfsfuse mount of node {c['node']}", p, clog)
        st["up_seconds"] = round(time.monotonic() - t0, 3)
        save_state(st)
        log(f"up: {nodes} client node(s) over a {rate_mbit} Mbit/s server link (tag {tag}, "
            f"{st['up_seconds']} s), export {st['export']}, mounts {st['mnt_template']}")
        return st
    except BaseException:
        log("up failed; tearing down what was created")
        down(state_dir)
        raise


# --------------------------------------------------------------------------
# down
# --------------------------------------------------------------------------
def _stop_pid(pid: int | None, name: str, grace: float = 10.0) -> None:
    if not pid_alive(pid):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    t_end = time.monotonic() + grace
    while time.monotonic() < t_end:
        try:  # reap if it is our child
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        if not pid_alive(pid):
            return
        time.sleep(0.05)
    log(f"{name} (pid {pid}) ignored SIGTERM, killing it")
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def down(state_dir: str | Path, keep_logs: bool = True) -> None:
    """Remove everything recorded in the state file; safe to call repeatedly."""
    state_dir = Path(state_dir)
    try:
        st = load_state(state_dir)
    except HomefsError:
        return
    for mnt in st.get("mounts", []):
        if is_mounted(mnt):
            if sh("fusermount3", "-u", mnt, check=False, quiet=True).returncode != 0:
                sh("fusermount3", "-u", "-z", mnt, check=False)
    for node, pid in st.get("client_pids", {}).items():
        _stop_pid(pid, f"nfsfuse node {node}", grace=5)
    _stop_pid(st.get("ganesha_pid"), "ganesha.nfsd", grace=10)
    for kind, name in reversed(st.get("created", [])):
        if kind == "netns":
            sh("ip", "netns", "del", name, check=False, quiet=True)
        elif kind in ("link", "bridge"):
            if Path(f"/sys/class/net/{name}").exists():
                sh("ip", "link", "del", name, check=False)
    # the export holds the test files (possibly GBs): never leave them behind
    export = Path(st.get("export", state_dir / "export"))
    if export.is_dir() and not any(is_mounted(m) for m in st.get("mounts", [])):
        for f in export.rglob("*"):
            if f.is_file():
                f.unlink(missing_ok=True)
    state_path(state_dir).unlink(missing_ok=True)
    log(f"down: tag {st.get('tag')} removed")


# --------------------------------------------------------------------------
# counters
# --------------------------------------------------------------------------
def _read_stat(ifname: str, what: str) -> int:
    return int(Path(f"/sys/class/net/{ifname}/statistics/{what}").read_text())


def counters(st: dict | str | Path) -> dict:
    """Byte counters of the emulated links (host-side veth ends, no namespace needed).

    server_tx_bytes: everything the server sent (all clients' reads, NFS headers included);
    node_rx_bytes[i]: what reached node i.
    """
    if not isinstance(st, dict):
        st = load_state(st)
    nm = st["names"]
    return {
        "server_tx_bytes": _read_stat(nm["server_veth"], "rx_bytes"),
        "server_rx_bytes": _read_stat(nm["server_veth"], "tx_bytes"),
        "node_rx_bytes": {str(c["node"]): _read_stat(c["veth"], "tx_bytes") for c in nm["clients"]},
    }


def tc_stats(st: dict | str | Path) -> dict:
    """tc -s view of the throttled class: bytes sent, drops, overlimits."""
    if not isinstance(st, dict):
        st = load_state(st)
    out = sh("ip", "netns", "exec", st["names"]["server_ns"], "tc", "-s", "class", "show", "dev", "eth0",
             check=False, quiet=True).stdout
    m = re.search(r"class htb 1:10 .*?Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)", out, re.DOTALL)
    if m:
        return {"bytes": int(m.group(1)), "packets": int(m.group(2)), "drops": int(m.group(3)),
                "overlimits": int(m.group(4))}
    return {}


# --------------------------------------------------------------------------
# gc and run
# --------------------------------------------------------------------------
def gc(base: str | Path) -> int:
    """Tear down instances under ``base`` whose owner process is gone."""
    n = 0
    for p in Path(base).glob(f"*/{STATE_FILE}"):
        try:
            st = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if not pid_alive(st.get("owner_pid")):
            log(f"gc: owner {st.get('owner_pid')} of {p.parent} is gone")
            down(p.parent)
            n += 1
    return n


def run(state_dir: str | Path, nodes: int, rate_mbit: float, cmd: list[str], burst: str = "256k",
        max_read: int = 1 << 20) -> int:
    """Bring homefs up, run CMD (its env has HOMEFS_STATE), tear down whatever happens."""
    child: list[subprocess.Popen] = []

    def on_signal(signum, frame):
        log(f"signal {signum}: stopping the command and tearing down")
        for c in child:
            if c.poll() is None:
                try:
                    os.killpg(c.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        raise KeyboardInterrupt

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    rc = 1
    try:
        st = up(state_dir, nodes, rate_mbit, burst=burst, max_read=max_read)
        env = dict(os.environ, HOMEFS_STATE=str(Path(st["state_dir"])))
        p = subprocess.Popen(cmd, env=env, start_new_session=True)
        child.append(p)
        rc = p.wait()
    except KeyboardInterrupt:
        rc = 143
        for c in child:
            try:
                c.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(c.pid, signal.SIGKILL)
    finally:
        down(state_dir)
        for s, h in old.items():
            signal.signal(s, h)
    if rc == 0:  # keep the logs of a failed run only
        shutil.rmtree(state_dir, ignore_errors=True)
    return rc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("up", "run"):
        s = sub.add_parser(name)
        s.add_argument("--state", required=True)
        s.add_argument("--nodes", type=int, required=True)
        s.add_argument("--rate-mbit", type=float, required=True)
        s.add_argument("--burst", default="256k")
        s.add_argument("--max-read", default="1MiB")
        if name == "run":
            s.add_argument("command", nargs=argparse.REMAINDER)
    for name in ("down", "counters", "status"):
        s = sub.add_parser(name)
        s.add_argument("--state", required=True)
    s = sub.add_parser("gc")
    s.add_argument("--base", default="/var/tmp/rmf-home")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "up":
            st = up(a.state, a.nodes, a.rate_mbit, a.burst, parse_size(a.max_read), owner_pid=os.getppid())
            print(json.dumps(st, indent=1))
        elif a.cmd == "run":
            cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
            if not cmd:
                ap.error("run: no command given after --")
            return run(a.state, a.nodes, a.rate_mbit, cmd, a.burst, parse_size(a.max_read))
        elif a.cmd == "down":
            down(a.state)
        elif a.cmd == "counters":
            st = load_state(a.state)
            print(json.dumps({**counters(st), "tc": tc_stats(st)}, indent=1))
        elif a.cmd == "status":
            st = load_state(a.state)
            st["alive"] = {"ganesha": pid_alive(st.get("ganesha_pid")),
                           "mounts": {m: is_mounted(m) for m in st.get("mounts", [])}}
            print(json.dumps(st, indent=1))
        elif a.cmd == "gc":
            print(gc(a.base))
    except HomefsError as exc:
        log(f"ERROR: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
