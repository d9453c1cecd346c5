"""iperf3 over the same path the requests take (paper 003, Sec. 2.2: "The speed between the FD VM and
a container ... was measured at around 700 MB/s using iPerf"): a runner that starts a one-shot
``iperf3 -s -1`` (locally, or uses a server already listening on the path, e.g. in a pod) and runs
``iperf3 -c ... -J``, and a parser of the JSON report."""

from __future__ import annotations

import json
import shutil
import socket
import math
import subprocess
import time


class IperfError(RuntimeError):
    pass


def parse_iperf3_json(text: str) -> dict:
    """Bandwidth from an ``iperf3 -J`` client report: the receiver's rate (what arrived)."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise IperfError(f"iperf3 output is not JSON: {exc}: {text[:200]!r}") from exc
    if doc.get("error"):
        raise IperfError(f"iperf3 reported an error: {doc['error']}")
    try:
        end = doc["end"]
        recv, sent = end["sum_received"], end["sum_sent"]
        start = doc["start"]
    except (KeyError, TypeError) as exc:
        raise IperfError(f"iperf3 report lacks {exc}: not a TCP client report") from exc
    bps = float(recv["bits_per_second"])
    return {
        "tool": "iperf3",
        "version": start.get("version"),
        "protocol": start.get("test_start", {}).get("protocol"),
        "seconds": float(recv["seconds"]),
        "bytes_received": int(recv["bytes"]),
        "bytes_sent": int(sent["bytes"]),
        "bits_per_second": bps,
        "mib_per_s": bps / 8 / 2**20,
        "retransmits": sent.get("retransmits"),
        "remote": (start.get("connected") or [{}])[0].get("remote_host"),
    }


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def run_iperf3(host: str = "127.0.0.1", port: int | None = None, seconds: float = 2.0,
               start_server: bool = True, iperf3: str | None = None,
               server_prefix: list[str] | tuple = ()) -> tuple[dict, str]:
    """Runs one iperf3 test against host:port; returns (parsed, raw JSON text). With
    ``start_server`` a one-shot server is started on host:port and always stopped;
    ``server_prefix`` starts it elsewhere (an srun step on the node that owns ``host``)."""
    exe = iperf3 or shutil.which("iperf3")
    if not exe:
        raise IperfError("iperf3 not found: install the Debian package iperf3")
    port = port or free_port("0.0.0.0" if server_prefix else host)  # another node: a port free here
    server = None
    try:
        if start_server:
            server = subprocess.Popen([*server_prefix, exe, "-s", "-1", "-B", host, "-p", str(port)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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
        return parse_iperf3_json(done.stdout), done.stdout
    finally:
        if server is not None:
            try:
                server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                server.terminate()
                server.wait()
