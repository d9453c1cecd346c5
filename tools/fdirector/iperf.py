"""iperf3 over the same path the requests take (paper 003, Sec. 2.2: "The speed between the FD VM and
a container ... was measured at around 700 MB/s using iPerf"): a runner that starts a one-shot
``iperf3 -s -1`` (locally, or uses a server already listening on the path, e.g. in a pod) and runs
``iperf3 -c ... -J``; the report is parsed by tools/iperf3/parser.py (the tree's one iperf3 parser)."""

from __future__ import annotations

import math
import shutil
import subprocess
import time

from tools.common import ParseError, free_port, listener_pid, served_by_another
from tools.iperf3.parser import parse_iperf3_report


class IperfError(RuntimeError):
    pass


def run_iperf3(host: str = "127.0.0.1", port: int | None = None, seconds: float = 2.0,
               start_server: bool = True, iperf3: str | None = None,
               server_prefix: list[str] | tuple = ()) -> tuple[dict, str]:
    """Runs one iperf3 test against host:port; returns (parsed, raw JSON text). With
    ``start_server`` a one-shot server is started on host:port and always stopped;
    ``server_prefix`` starts it elsewhere (an srun step on the node that owns ``host``)."""
    exe = iperf3 or shutil.which("iperf3")
    if not exe:
        raise IperfError("iperf3 not found: install the Debian package iperf3")
    chosen = not port
    port = port or free_port("0.0.0.0" if server_prefix else host)  # another node: a port free here
    server = None
    try:
        if start_server and not server_prefix:  # here: the listener on host:port must be our server's
            server, port = _start_here(exe, host, port, chosen)
        elif start_server:
            argv = [exe, "-s", "-1", "-B", host, "-p", str(port)]
            if server_prefix:  # the server says where it runs (its node and hostname) first
                argv = [*server_prefix, "sh", "-c", 'echo "NODE ${SLURMD_NODENAME:-$(hostname)} $(hostname)"; '
                        'exec "$0" "$@"', *argv]
            server = subprocess.Popen(argv, stdout=subprocess.PIPE if server_prefix else subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, text=True)
        deadline = time.monotonic() + (90 if server_prefix else 10)
        while True:  # the server may need a moment to listen; a probe would use up its one test
            # iperf3 -t takes whole seconds and 0 means "for ever": at least 1, and a hard bound
            secs = max(1, math.ceil(seconds))
            try:
                done = subprocess.run([exe, "-c", host, "-p", str(port), "-t", str(secs), "-J"],
                                      capture_output=True, text=True, timeout=secs + 30)
            except subprocess.TimeoutExpired as exc:
                raise IperfError(f"iperf3 client did not end within {secs + 30} s") from exc
            refused = "Connection refused" in done.stdout + done.stderr
            if not refused or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if done.returncode != 0 and not done.stdout.strip().startswith("{"):
            raise IperfError(f"iperf3 client failed ({done.returncode}): {(done.stdout + done.stderr)[-400:]}")
        try:
            parsed = parse_iperf3_report(done.stdout)
        except ParseError as exc:
            raise IperfError(str(exc)) from exc
        if server is not None and server_prefix:
            parsed.update(_server_where(server))
        return parsed, done.stdout
    finally:
        if server is not None and server.poll() is None:
            try:
                server.wait(timeout=30 if server_prefix else 5)
            except subprocess.TimeoutExpired:
                server.terminate()
                server.wait()


def _start_here(exe: str, host: str, port: int, chosen: bool, tries: int = 3) -> tuple[subprocess.Popen, int]:
    """A one-shot iperf3 server on host:port, returned once the listener there is its own (tools.common
    listener check; a test probe would use up its one test). Another process may bind the port between
    free_port() and the server's start: ours then exits and the client would measure against the
    other's server (and use up another job's one-shot test). A chosen port is replaced, up to `tries`
    times; a port the caller gave fails naming the other process. A server that ends with nobody else
    on the port is left to the client's error, as before."""
    for attempt in range(1, tries + 1):
        server = subprocess.Popen([exe, "-s", "-1", "-B", host, "-p", str(port)], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            why = served_by_another(host, port, server.pid)
            if why:
                break
            if server.poll() is not None or listener_pid(host, port) is not None or time.monotonic() > deadline:
                return server, port  # ours listens; or it ended with the port free: the client says why
            time.sleep(0.02)
        if server.poll() is None:
            server.kill()
        server.wait()
        if not chosen or attempt == tries:
            raise IperfError(f"iperf3 server on {host}:{port}: {why}")
        port = free_port(host)
    raise AssertionError("unreachable")


def _server_where(server: subprocess.Popen) -> dict:
    """The NODE line of a server started through a prefix (another node): where it measured it ran."""
    try:
        out, _ = server.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        server.terminate()
        out, _ = server.communicate()
    for line in (out or "").splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "NODE":
            return {"server_node": parts[1], "server_hostname": parts[2]}
    return {"server_node": None, "server_hostname": None}
