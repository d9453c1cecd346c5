"""The local stand-in's memcached is its own, never another job's that took its port first."""
import os
import socket
import subprocess
import time

from mtcwf import standin
from tools.common import free_port, memcached_pid, started_here


def test_the_standin_never_takes_another_jobs_memcached(tmp_path, monkeypatch):
    """The first port handed out is served by another memcached already (another job on this machine):
    the old start connected at once, before its own memcached had tried to bind, and used the other's
    server. Now it starts its own on another port and leaves the other alone."""
    port = free_port()
    other = subprocess.Popen(["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", "16"]
                             + (["-u", "root"] if os.geteuid() == 0 else []), stderr=subprocess.DEVNULL)
    ports = iter([port])
    monkeypatch.setattr(standin, "free_port", lambda: next(ports, None) or free_port())
    cl = standin.StandInCluster(1, "memfs", workdir=tmp_path, memcached_mb=16)
    nd = standin.Node(1, tmp_path)
    try:
        for _ in range(250):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.02)
        cl._start_memcached(nd)
        assert nd.port != port
        assert started_here(memcached_pid("127.0.0.1", nd.port), nd.memcached.pid) is True
        assert memcached_pid("127.0.0.1", port) == other.pid
    finally:
        if nd.memcached is not None:
            nd.memcached.kill()
            nd.memcached.wait()
        other.kill()
        other.wait()
