"""A stack's daemon never takes another job's server for its own.

run.py hands every stack ports from free_port(); on a busy node another job's server can bind such a
port between that check (or require_port_free) and our daemon's bind. Ours then fails to bind and
exits -- but the port answers, and a readiness check that only connects took the other's server for
ours (JuiceFS formatted its volume into another job's Redis). wait_port / wait_until(port=...) accept
an answer only from a listener our daemon (or its descendant) holds, and a taken port fails the start
naming the port, the other process's PID and our daemon's own last log line."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from systems.storage_common.daemons import Daemon, StackError, wait_port, wait_until
from systems.storage_common.conftest_minio import minio_built  # noqa: F401
from tools.common import free_port, listener_pid, served_by_another

LISTEN = """
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
print("listening", flush=True)
time.sleep(300)
"""


def _redis(port: int, workdir) -> subprocess.Popen:
    """Another job's Redis on `port` (a real one, answering PING)."""
    workdir.mkdir(parents=True, exist_ok=True)
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                          "--appendonly", "no", "--daemonize", "no", "--dir", str(workdir)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while listener_pid("127.0.0.1", port) != p.pid:
        assert p.poll() is None and time.monotonic() < deadline, "the other Redis did not start"
        time.sleep(0.05)
    return p


def _ping(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), 2) as s:
        s.sendall(b"PING\r\n")
        return s.recv(64).startswith(b"+PONG")


def test_redis_on_a_port_another_redis_took_fails_naming_it(tmp_path):
    """The race staged: the port free_port() handed out is already served by another job's Redis when
    ours starts. The old wait_port saw the other's answer and returned (JuiceFS's format then wrote
    into it); now the start fails naming the port, the other's PID and Redis's own bind error."""
    port = free_port()
    other = _redis(port, tmp_path / "other")
    ours = Daemon(tmp_path / "state", "redis")
    try:
        ours.start(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                    "no", "--daemonize", "no", "--dir", str(tmp_path), "--logfile", ""])
        with pytest.raises(StackError) as e:
            wait_port(ours, port, 30)
        msg = str(e.value)
        assert msg.startswith("redis died while waiting for"), msg
        assert f"port 127.0.0.1:{port} taken by another process" in msg and f"(pid {other.pid})" in msg, msg
        assert f"Failed listening on port {port}" in msg, msg  # our daemon's own log line, not "did not answer"
        assert other.poll() is None and _ping(port)  # the other job's server is left alone
    finally:
        ours.stop(5)
        other.kill()
        other.wait()


def test_our_own_redis_is_accepted_through_a_wrapper(tmp_path):
    """The daemon's process may be a wrapper (where.py, apptainer's starter): a listener held by a
    descendant of the PID file's process is ours."""
    port = free_port()
    ours = Daemon(tmp_path, "redis")
    try:
        ours.start(["sh", "-c", 'redis-server --port "$0" --bind 127.0.0.1 --save "" --appendonly no '
                    '--daemonize no --dir "$1"; echo redis ended', str(port), str(tmp_path)])
        wait_port(ours, port, 30)
        assert listener_pid("127.0.0.1", port) != ours.pid() and served_by_another("127.0.0.1", port, ours.pid()) == ""
        assert _ping(port)
    finally:
        ours.stop(5)


def test_a_port_shared_with_another_listener_is_not_ours(tmp_path):
    """SO_REUSEPORT lets two processes listen on one port and the kernel splits the connections: our
    daemon listening is not enough while another process listens there too. A plain socket listener
    of 'another job' (a separate process) and ours, both with SO_REUSEPORT: the wait does not accept the
    port, and its error names the other's PID."""
    port = free_port()
    other = subprocess.Popen([sys.executable, "-c", LISTEN, str(port)], stdout=subprocess.PIPE, text=True)
    ours = Daemon(tmp_path, "toy")
    try:
        assert other.stdout.readline().strip() == "listening"
        ours.start([sys.executable, "-c", LISTEN, str(port)])
        deadline = time.monotonic() + 20
        while not (tmp_path / "log" / "toy.log").read_text().endswith("listening\n"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert f"(pid {other.pid})" in served_by_another("127.0.0.1", port, ours.pid())
        with pytest.raises(StackError) as e:
            wait_port(ours, port, 2)
        assert str(e.value).startswith("timed out after 2 s waiting for"), str(e.value)
        assert f"port 127.0.0.1:{port} taken by another process" in str(e.value)
        assert f"(pid {other.pid}), not the one started (pid {ours.pid()})" in str(e.value)
        other.kill()
        other.wait()
        wait_port(ours, port, 10)  # alone on the port: ours
    finally:
        ours.stop(5)
        if other.poll() is None:
            other.kill()
            other.wait()


def test_wait_until_with_a_port_checks_the_listener_after_the_check_passes(tmp_path):
    """wait_until(port=...) as start_minio uses it: a check that passes (a signed S3 answer) while
    another process listens on the daemon's port is not ready."""
    port = free_port()
    other = subprocess.Popen([sys.executable, "-c", LISTEN, str(port)], stdout=subprocess.PIPE, text=True)
    ours = Daemon(tmp_path, "minio")
    try:
        assert other.stdout.readline().strip() == "listening"
        ours.start(["sh", "-c", "echo 'FATAL Unable to start the server: Specified port is already in use'; "
                    "sleep 1; exit 1"])
        with pytest.raises(StackError) as e:
            wait_until("MinIO to answer", lambda: True, 30, ours, port=("127.0.0.1", port))
        msg = str(e.value)
        assert msg.startswith("minio died while waiting for MinIO to answer: FATAL Unable to start"), msg
        assert f"taken by another process: 127.0.0.1:{port} is served by another process (pid {other.pid})" in msg
        wait_until("anything", lambda: True, 1, None, port=("127.0.0.1", port))  # no daemon: nothing to prove
    finally:
        ours.stop(5)
        other.kill()
        other.wait()


@pytest.mark.usefixtures("minio_built")
def test_juicefs_never_formats_its_volume_into_another_jobs_redis(tmp_path, monkeypatch):
    """The harm, end to end: the JuiceFS stack's Redis port is served by another job's Redis that bound
    it after the stack's free-port check (require_port_free passes: staged by skipping it). The old
    stack came up -- `juicefs format` and the mount used the other's Redis (its db 1 held our volume,
    gone with that job); now `up` fails naming the port and the other's PID, the other's Redis is
    left with nothing of ours, and `up` cleaned up what it started."""
    import argparse

    from systems.juicefs.stack import JuiceFSStack
    from systems.storage_common import daemons as dm
    from systems.storage_common.testing import assert_nothing_left

    port = free_port()
    other = _redis(port, tmp_path / "other")
    monkeypatch.setattr(dm, "require_port_free", lambda *a, **k: None)  # the check passed before the other bound
    p = argparse.ArgumentParser()
    JuiceFSStack.add_arguments(p)
    state = tmp_path / "state"
    args = p.parse_args(["--redis-port", str(port), "--minio-port", str(free_port()),
                         "--gateway-port", str(free_port())])
    try:
        with pytest.raises(StackError) as e:
            JuiceFSStack(state, args).up()
        msg = str(e.value)
        assert msg.startswith("redis died while waiting for") or msg.startswith("timed out"), msg
        assert f"port 127.0.0.1:{port} taken by another process" in msg and f"(pid {other.pid})" in msg, msg
        keys = subprocess.run(["redis-cli", "-p", str(port), "-n", "1", "DBSIZE"], capture_output=True, text=True)
        assert keys.stdout.strip() == "0", keys  # no JuiceFS volume in the other job's Redis
        assert other.poll() is None and _ping(port)
        assert_nothing_left(state, {})
    finally:
        subprocess.run([sys.executable, "-m", "systems.juicefs.stack", "down", "--state", str(state)],
                       capture_output=True, timeout=120)
        other.kill()
        other.wait()


@pytest.mark.usefixtures("minio_built")
def test_juicefs_redis_on_another_host_must_say_it_is_ours(tmp_path):
    """On another host (behind --launcher: here an `env` launcher naming node n1, as the stacks' tests
    do) the listener cannot be seen from the driver, and no free-port check runs there. Another job's
    Redis on that port answered the old wait_port and JuiceFS formatted into it; now the Redis must
    answer CONFIG GET syslog-ident with this start's name, and the start fails with our Redis's own
    bind error. The other's Redis keeps nothing of ours."""
    from systems.storage_common.testing import assert_nothing_left, stack_cli

    port = free_port()
    other = _redis(port, tmp_path / "other")
    state = tmp_path / "state"
    try:
        r = stack_cli("juicefs/stack.py", "up", state, "--redis-port", str(port), "--minio-port", str(free_port()),
                      "--gateway-port", str(free_port()), "--hosts", "n1", "--addresses", "127.0.0.1",
                      "--launcher", "env SLURMD_NODENAME={host}", "--cache-dir", str(tmp_path / "cache"))
        assert r.returncode == 1, r.stderr
        assert (f"redis died while waiting for the Redis at 127.0.0.1:{port} to be this start's (syslog-ident repro-"
                in r.stderr), r.stderr
        assert f"Failed listening on port {port}" in r.stderr, r.stderr
        keys = subprocess.run(["redis-cli", "-p", str(port), "-n", "1", "DBSIZE"], capture_output=True, text=True)
        assert keys.stdout.strip() == "0", keys
        assert other.poll() is None and _ping(port)
        assert_nothing_left(state, {})
    finally:
        stack_cli("juicefs/stack.py", "down", state)
        other.kill()
        other.wait()
