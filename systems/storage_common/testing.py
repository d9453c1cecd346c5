"""Helpers the stacks' tests share: run a stack.py, read its state, check nothing is left behind."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from systems.storage_common.daemons import Daemon, locks_under, pid_alive
from systems.storage_common.s3 import S3Client

REPO = Path(__file__).resolve().parents[2]


def stack_cli(script: str, command: str, state: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `systems/<script>` as a user would (a separate process: its daemons outlive it), as a module
    (`python3 -m systems.<stack>.stack`: the project's Python path, no sys.path edit)."""
    module = "systems." + script.removesuffix(".py").replace("/", ".")
    return subprocess.run([sys.executable, "-m", module, command, "--state", str(state), *args],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO)


def up_ok(script: str, state: Path, *args: str, timeout: float = 600) -> dict:
    """`up` that must succeed; if it fails or overruns `timeout` (then it is SIGKILLed), `down` cleans up."""
    try:
        res = stack_cli(script, "up", state, *args, timeout=timeout)
    except subprocess.TimeoutExpired:
        stack_cli(script, "down", state)
        raise
    if res.returncode != 0:
        stack_cli(script, "down", state)
    assert res.returncode == 0, f"{script} up failed:\n{res.stdout}\n{res.stderr}"
    return json.loads((state / "stack.json").read_text())


def recorded_pids(state: Path) -> dict[str, int]:
    out = {}
    for f in (state / "run").glob("*.pid"):
        rec = Daemon(state, f.stem).read_pid()
        if rec:
            out[f.stem] = rec[0]
    return out


def processes_mentioning(text: str) -> list[str]:
    """Live processes whose command line contains `text` (e.g. the state directory)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmd and pid_alive(int(d.name)):
            found.append(f"{d.name}: {cmd.strip()}")
    return found


def mounts_under(root: Path) -> list[str]:
    root = str(Path(root).resolve())
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f if line.split()[4].startswith(root)]


def assert_nothing_left(state: Path, pids: dict[str, int], *also: Path) -> None:
    """No daemon alive, no process naming the state dir, no mount, no lock under it."""
    deadline = time.monotonic() + 5  # zombies of killed daemons are reaped by init
    alive = {}
    while time.monotonic() < deadline:
        alive = {n: p for n, p in pids.items() if pid_alive(p)}
        if not alive:
            break
        time.sleep(0.1)
    assert not alive, f"daemons still running after down: {alive}"
    for root in (state, *also):
        assert not processes_mentioning(str(root)), processes_mentioning(str(root))
        assert not mounts_under(root), mounts_under(root)
        assert not locks_under(root), locks_under(root)
    assert not list((state / "run").glob("*.pid")), "PID files left behind"


def kill_daemon(state: Path, name: str) -> int:
    rec = Daemon(state, name).read_pid()
    assert rec and pid_alive(*rec), f"{name} is not running"
    os.kill(rec[0], signal.SIGKILL)
    deadline = time.monotonic() + 10
    while pid_alive(*rec) and time.monotonic() < deadline:
        time.sleep(0.05)
    return rec[0]


def s3_client(state: Path, creds_file: str = "s3-user.json") -> S3Client:
    c = json.loads((state / creds_file).read_text())
    return S3Client(c["endpoint"], c["access_key"], c["secret_key"])


OBJECT_SIZES = [0, 1, 4096 + 1, 1 << 20, (5 << 20) + 3]


def s3_roundtrip(client: S3Client, bucket: str, sizes=tuple(OBJECT_SIZES)) -> None:
    """PUT objects of several sizes, GET them back byte for byte, then delete them."""
    client.create_bucket(bucket)
    bodies = {f"obj-{n}": os.urandom(n) for n in sizes}
    for key, body in bodies.items():
        client.put_object(bucket, key, body)
    for key, body in bodies.items():
        got = client.get_object(bucket, key)
        assert len(got) == len(body) and got == body, f"{key}: read back {len(got)} bytes differ from written"
    for key in bodies:
        client.delete_object(bucket, key)


FILE_SIZES = [0, 1, 65536 + 7, 3 << 20]


def fuse_roundtrip(mount: Path, sizes=tuple(FILE_SIZES)) -> dict[str, bytes]:
    """Write files through a mount (fsync'd), read them back byte for byte (with a fresh open)."""
    d = Path(mount) / "roundtrip"
    d.mkdir()
    files = {f"f-{n}": os.urandom(n) for n in sizes}
    for name, body in files.items():
        with open(d / name, "wb") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
    assert sorted(os.listdir(d)) == sorted(files)
    for name, body in files.items():
        assert (d / name).stat().st_size == len(body)
        assert (d / name).read_bytes() == body, f"{name}: bytes read through the mount differ"
    return files


def occupy_port() -> tuple[socket.socket, int]:
    """A listening socket on a free loopback port, to make a daemon's start fail (bound to port 0: the
    port is the socket's from the start, no other process can take it between a free_port() and a bind)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    return s, s.getsockname()[1]
