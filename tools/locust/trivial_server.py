"""A trivial HTTP/1.1 endpoint (answers ``ok`` to every request at once): the load generator's ceiling.

    python -m tools.locust.trivial_server --port 8089 [--pidfile F]
    python -m tools.locust.trivial_server --host 0.0.0.0 --port 0 --ready-file F   (on a cluster's server node)

``--port 0`` takes a free port; ``--ready-file`` is written (atomically, JSON) once the socket listens:
the URL other nodes reach it at (this host's name when bound to a wildcard), the port, and where it
measured it runs (hostname, Slurm node). SIGTERM, SIGINT and SIGUSR1 (what ``srun`` forwards) stop it.
asyncio, keep-alive, no parsing beyond the request line and Content-Length, so on the same cores it
costs far less per request than Locust spends sending one (stdlib only).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import sys

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            if length:
                await reader.readexactly(length)
            writer.write(RESPONSE)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, ValueError):
        pass
    finally:
        writer.close()


WILDCARD = ("0.0.0.0", "::", "")


def where(host: str, port: int) -> dict:
    """The ready file's content: the URL to reach this endpoint at and where it runs (measured here)."""
    advertised = socket.gethostname() if host in WILDCARD else host
    return {"url": f"http://{advertised}:{port}", "bind": host, "port": port, "pid": os.getpid(),
            "host": socket.gethostname(), "slurm_node": os.environ.get("SLURMD_NODENAME", "")}


def write_ready(path: str, info: dict) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(json.dumps(info, indent=1) + "\n")
    os.replace(tmp, path)


async def serve(host: str, port: int, ready_file: str | None = None) -> None:
    server = await asyncio.start_server(handle, host or "0.0.0.0", port, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        loop.add_signal_handler(sig, stop.set)
    print(f"trivial server on http://{host}:{port}", flush=True)
    if ready_file:
        write_ready(ready_file, where(host, port))
    async with server:
        await stop.wait()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8089)
    p.add_argument("--pidfile")
    p.add_argument("--ready-file", help="written once listening: URL, port, host, Slurm node (JSON)")
    a = p.parse_args(argv)
    if a.pidfile:
        with open(a.pidfile, "w") as f:
            f.write(f"{os.getpid()}\n")
    try:
        asyncio.run(serve(a.host, a.port, a.ready_file))
    finally:
        if a.pidfile and os.path.exists(a.pidfile):
            os.unlink(a.pidfile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
