#!/usr/bin/env python3
"""MinIO serving S3 from a directory: on a cluster a Lustre directory (the paper's "Lustre + MinIO"),
on this machine a POSIX directory standing in for Lustre.

Paper 002, Sec. 3.1.3: "running MinIO in the gateway mode in front of Lustre is one of the
convergence scenarios". MinIO removed its gateway mode in 2022; the equivalent is a MinIO
server whose drive is a directory on Lustre (one server per system node, one sub-directory each,
one distributed server pool).

    stack.py up     --state DIR --data DIR --port P [--hosts h0,h1,...]
    stack.py status --state DIR
    stack.py down   --state DIR

`status` and stack.json label the run `stand-in:minio-on-posix-dir (for Lustre+MinIO)` unless
--data is on a Lustre file system (then `real`). The binary is built by setup.sh (pinned
pseudo-version in versions.env). systems/juicefs imports `start_minio` from here.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import socket
import sys
from pathlib import Path

from systems.storage_common.daemons import Stack, StackError
from systems.storage_common import daemons as dm
from systems.storage_common.s3 import S3Client

HERE = Path(__file__).resolve().parent
STAND_IN = "stand-in:minio-on-posix-dir (for Lustre+MinIO)"
LUSTRE_MAGIC = 0x0BD00BD0


def pins() -> dict[str, str]:
    """The pinned module, pseudo-version and Go toolchain (versions.env)."""
    out = {}
    for line in (HERE / "versions.env").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def cache_dir() -> Path:
    root = Path(os.environ.get("REPRO_CACHE", Path.home() / ".cache" / "repro"))
    return root / f"minio-{pins()['MINIO_VERSION']}"


def minio_binary() -> str:
    """The cached build (setup.sh), else a `minio` on PATH; from an image (daemons.image_exec), the image's
    /usr/local/bin/minio."""
    if dm.image_exec():
        return dm.which("minio", "the minio image (containers/minio.def)")
    cached = cache_dir() / "bin" / "minio"
    if (cache_dir() / ".complete").exists() and os.access(cached, os.X_OK):
        return str(cached)
    found = shutil.which("minio")
    if found:
        return found
    raise StackError(f"minio: no binary at {cached} and none on PATH: run systems/minio/setup.sh")


def minio_version(binary: str) -> dict:
    """What the binary says (`minio --version`: release tag, commit, Go runtime) and the pinned module."""
    out = dm.run([binary, "--version"], "minio --version", timeout=30).stdout.splitlines()
    runtime = next((x.split(":", 1)[1].strip() for x in out if x.startswith("Runtime:")), "")
    return {"minio": out[0].strip(), "minio_runtime": runtime, "minio_binary": binary,
            "minio_module": f"{pins()['MINIO_MODULE']}@{pins()['MINIO_VERSION']}"}


def fs_kind(path: Path) -> str:
    """'lustre' if `path` is on Lustre (by the file system type in /proc/self/mounts), else its type."""
    path = Path(path).resolve()
    best, kind = "", "unknown"
    with open("/proc/self/mounts") as f:
        for line in f:
            _, mnt, typ = line.split()[:3]
            if (str(path) == mnt or str(path).startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                best, kind = mnt, typ
    return kind


def on_root_device(path: Path) -> bool:
    """True if `path` (or its nearest existing parent) is on the same device as /."""
    p = Path(path)
    while not p.exists():
        p = p.parent
    return os.stat(p).st_dev == os.stat("/").st_dev


def new_credentials(endpoint: str) -> dict:
    return {"endpoint": endpoint, "access_key": "repro" + secrets.token_hex(6),
            "secret_key": secrets.token_hex(20), "region": "us-east-1"}


def server_argv(binary: str, data: Path, port: int, hosts: list[str],
                addresses: list[str] | None = None) -> dict[str, list[str]]:
    """The MinIO server command per host.

    One host: `minio server DATA` on ADDRESS:PORT (127.0.0.1 when it is this host). Several hosts:
    each runs `minio server http://a0:PORT/DATA/h0 ... http://aN:PORT/DATA/hN` bound to its own
    address aI (the allocation's NodeAddr; DNS of the host name without `addresses`): one distributed
    pool whose drives are per-host sub-directories of DATA (a shared Lustre directory, or node-local).
    """
    addrs = addresses or [h if h[:1].isdigit() else socket.gethostbyname(h) for h in hosts]
    if len(hosts) == 1:
        return {hosts[0]: [binary, "server", "--quiet", "--address", f"{addrs[0]}:{port}", str(data)]}
    drives = [f"http://{(addresses or hosts)[i]}:{port}{data}/{h}" for i, h in enumerate(hosts)]
    return {h: [binary, "server", "--quiet", "--address", f"{addrs[i]}:{port}", *drives]
            for i, h in enumerate(hosts)}


def start_minio(stack: Stack, name: str, data: Path, port: int, creds: dict,
                hosts: list[str] | None = None, timeout: float = 90) -> list[dm.Daemon]:
    """Start MinIO (one server per host, see `server_argv`) serving `data`; wait for signed S3 answers."""
    hosts = hosts or ["localhost"]
    env = dict(os.environ, MINIO_ROOT_USER=creds["access_key"], MINIO_ROOT_PASSWORD=creds["secret_key"],
               MINIO_BROWSER="off", MINIO_UPDATE="off", MINIO_PROMETHEUS_AUTH_TYPE="public")
    data = Path(data).resolve()
    if len(hosts) > 1 and on_root_device(data):
        # distributed MinIO refuses drives on the root disk ("drive is part of root drive"); a
        # shared directory of the emulated cluster (or a site's home) is one: allowed, and recorded
        env["MINIO_CI_CD"] = "on"
        stack.info["minio_root_drive_allowed"] = f"{data} is on the root device: MINIO_CI_CD=on"
    addrs = [stack.address(h) for h in hosts]
    argvs = server_argv(minio_binary(), data, port, hosts, addrs)
    if len(hosts) == 1:
        if stack.loopback():
            data.mkdir(parents=True, exist_ok=True)
            dm.require_port_free(name, port)
        else:
            stack.run(stack.on_host(hosts[0], ["mkdir", "-p", str(data)]), f"{name} data on {hosts[0]}")
        daemons = [stack.launch_on(hosts[0], name, argvs[hosts[0]], env=env, serves=f"{addrs[0]}:{port}")]
    else:
        # each drive on its own host (node-local data need the directory made there)
        for h in hosts:
            stack.run(stack.on_host(h, ["mkdir", "-p", str(data / h)]), f"{name} drive on {h}")
        daemons = [stack.launch_on(h, f"{name}@{h}", argv, env=env, serves=f"{addrs[i]}:{port}")
                   for i, (h, argv) in enumerate(argvs.items())]
    s3 = S3Client(creds["endpoint"], creds["access_key"], creds["secret_key"])
    for d, addr in zip(daemons, addrs):  # signed answers, and from our own server (never another's on its port)
        dm.wait_until(f"MinIO at {creds['endpoint']} to answer signed S3 requests", s3.healthy, timeout, d,
                      port=(addr, port))
    return daemons


class MinioStack(Stack):
    """MinIO S3 server on a directory (Lustre on a cluster; a POSIX directory here, labelled a stand-in)."""

    name = "minio"

    @classmethod
    def add_arguments(cls, p: argparse.ArgumentParser) -> None:
        p.add_argument("--data", type=Path, help="directory MinIO serves (a Lustre directory on a cluster; "
                       "required for up)")
        p.add_argument("--port", type=int, default=9000, help="S3 port (default 9000)")
        dm.add_host_arguments(p, "each runs one MinIO server of one distributed pool over --data")

    def start(self) -> None:
        a = self.args
        if a.data is None:
            raise StackError("up needs --data DIR (the directory MinIO serves)")
        hosts = self.hosts()
        kind = fs_kind(a.data.parent if not a.data.exists() else a.data)
        self.system_kind = "real" if kind == "lustre" else STAND_IN
        host = self.address(hosts[0])
        creds = new_credentials(f"http://{host}:{a.port}")
        dm.write_json(self.state / "s3-user.json", creds)
        dm.say(f"minio: serving {a.data} ({kind}) on port {a.port} -> {self.system_kind}")
        start_minio(self, "minio", a.data, a.port, creds, hosts)
        self.info.update(endpoints={"s3": creds["endpoint"]}, credentials=creds, data=str(a.data.resolve()),
                         data_fs=kind, hosts=hosts)

    def versions(self) -> dict:
        return minio_version(minio_binary())


if __name__ == "__main__":
    sys.exit(dm.main(MinioStack))
