"""A trivial HTTP/1.1 endpoint (answers ``ok`` to every request at once): the load generator's ceiling.

    python -m tools.locust.trivial_server --port 8089 [--pidfile F]
asyncio, keep-alive, no parsing beyond the request line and Content-Length, so on the same cores it
costs far less per request than Locust spends sending one (stdlib only).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
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


async def serve(host: str, port: int) -> None:
    server = await asyncio.start_server(handle, host, port, backlog=1024)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"trivial server on http://{host}:{port}", flush=True)
    async with server:
        await stop.wait()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8089)
    p.add_argument("--pidfile")
    a = p.parse_args(argv)
    if a.pidfile:
        with open(a.pidfile, "w") as f:
            f.write(f"{os.getpid()}\n")
    try:
        asyncio.run(serve(a.host, a.port))
    finally:
        if a.pidfile and os.path.exists(a.pidfile):
            os.unlink(a.pidfile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
