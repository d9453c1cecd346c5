"""tools/common.py: the one free_port of the tree."""
import socket

from tools.common import free_port


def test_free_port_can_be_bound_and_a_bound_one_is_not_returned():
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # free a moment ago: binds
        s.listen()
        assert free_port() != port  # a listening port is never handed out
    assert 1024 <= free_port("") <= 65535


def _memcached(port):
    import os
    import subprocess
    import time

    cmd = ["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", "16"] + (
        ["-u", "root"] if os.geteuid() == 0 else [])
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for _ in range(250):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return p
        except OSError:
            time.sleep(0.02)
    p.kill()
    raise AssertionError("memcached did not start")


def test_a_port_another_memcached_took_is_told_apart_from_ours():
    """The race behind the rehearsal's fusegap EIO (load 36): a job picks a free port, another job's
    memcached binds it first, ours cannot bind -- and a start that only connects takes the other's
    server for its own. port_taken_by_another tells them apart by the PID the server reports."""
    import subprocess

    from tools.common import memcached_pid, port_taken_by_another, started_here

    port = free_port()
    other = _memcached(port)
    try:
        assert memcached_pid("127.0.0.1", port) == other.pid
        assert port_taken_by_another("127.0.0.1", port, other) == ""  # the one that started it: ours
        # a process of ours that is still alive but is not that server (ours is still starting)
        mine = subprocess.Popen(["sleep", "30"])
        try:
            why = port_taken_by_another("127.0.0.1", port, mine)
            assert f"another process (pid {other.pid})" in why
            assert started_here(other.pid, mine.pid) is False and started_here(mine.pid, mine.pid) is True
        finally:
            mine.kill()
            mine.wait()
        why = port_taken_by_another("127.0.0.1", port, mine)  # ours exited: it could not bind
        assert why.startswith("it exited (status")
    finally:
        other.kill()
        other.wait()


def test_fusegap_never_takes_another_jobs_memcached(monkeypatch):
    """fusegap's servers: the first port handed out is already served by another memcached; the job
    starts its own on another port (the old start connected, saw an answer and used the other's)."""
    from studies.memfs import fusegap
    from tools.common import memcached_pid, started_here

    port = free_port()
    other = _memcached(port)
    ports = iter([port])
    monkeypatch.setattr(fusegap, "free_port", lambda: next(ports, None) or free_port())
    try:
        with fusegap.Services({"memcached": "memcached"}, []) as svc:
            svc.start_memcached(1, 16)
            (server,) = svc.servers
            host, p = server.rsplit(":", 1)
            assert int(p) != port
            assert started_here(memcached_pid(host, int(p)), svc.procs[-1].pid) is True
        assert other.poll() is None  # the other job's server is left alone
    finally:
        other.kill()
        other.wait()


LISTENER = """
import socket, sys, time
s = socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET)
s.bind((sys.argv[1], 0))
s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(300)
"""


def test_listener_pid_finds_the_process_that_listens_and_served_by_another_names_it():
    """The generic listener check (any daemon, not only memcached): the LISTEN socket's inode in
    /proc/net/tcp{,6}, then the process holding it in /proc/PID/fd. A wildcard IPv6 listener answers
    127.0.0.1 too; another host's address is not judged from here."""
    import subprocess
    import sys

    from tools.common import listener_pid, listener_taken_by_another, port_taken_by_another, served_by_another

    for bind in ("127.0.0.1", "::"):
        other = subprocess.Popen([sys.executable, "-c", LISTENER, bind], stdout=subprocess.PIPE, text=True)
        mine = subprocess.Popen(["sleep", "30"])
        try:
            port = int(other.stdout.readline())
            assert listener_pid("127.0.0.1", port) == other.pid
            assert listener_pid("localhost", port) == other.pid
            assert served_by_another("127.0.0.1", port, other.pid) == ""  # its own: ours
            why = served_by_another("127.0.0.1", port, mine.pid)
            assert why == (f"127.0.0.1:{port} is served by another process (pid {other.pid}), "
                           f"not the one started (pid {mine.pid})")
            assert listener_taken_by_another("127.0.0.1", port, mine) == why
            # memcached's check, on a server that does not speak memcached: the listener decides
            assert port_taken_by_another("127.0.0.1", port, mine) == why
            assert served_by_another("192.0.2.1", port, mine.pid) == ""  # TEST-NET: not this host's
            mine.kill()
            mine.wait()
            why = listener_taken_by_another("127.0.0.1", port, mine)
            assert why == f"it exited (status -9); 127.0.0.1:{port} is served by another process (pid {other.pid})"
        finally:
            for p in (other, mine):
                p.kill()
                p.wait()
        assert listener_pid("127.0.0.1", port) is None  # nobody listens now
