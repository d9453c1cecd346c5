"""The memcached text protocol, as much as the agent and the MemFS tests need: send one request,
read its reply up to the end marker.  Standard library only (the agent runs on bare compute nodes)."""

from __future__ import annotations

import socket


def request(host: str, port: int, data: bytes, end: bytes, timeout: float = 5) -> bytes:
    """Send ``data`` and return the reply up to and including ``end`` (or what came before the server closed)."""
    with socket.create_connection((host, port), timeout) as s:
        s.sendall(data)
        buf = b""
        while not buf.endswith(end):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            buf += chunk
    return buf


def command(host: str, port: int, line: str, end: bytes = b"END\r\n") -> bytes:
    """One text command (``stats``, ``get k``, ``flush_all``...) and its reply."""
    return request(host, port, line.encode() + b"\r\n", end)
