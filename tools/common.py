"""What every tool's parser shares."""


class ParseError(ValueError):
    """A tool's output that is not what the parser expects (incomplete, an error, another tool)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago (a wildcard host asks on every address).

    The one copy for the whole tree: systems, tools and studies import it from here."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("0.0.0.0" if host in ("0.0.0.0", "::", "") else host, 0))
        return s.getsockname()[1]


def memcached_pid(host: str, port: int, timeout: float = 2.0) -> int | None:
    """The PID the memcached at host:port says it has (``stats``), or None if it does not answer so."""
    import socket

    try:
        with socket.create_connection((host, port), timeout) as s:
            s.sendall(b"stats\r\n")
            buf = b""
            while not buf.endswith(b"END\r\n") and len(buf) < 65536:
                chunk = s.recv(4096)
                if not chunk:
                    break
                buf += chunk
    except OSError:
        return None
    for line in buf.decode("ascii", "replace").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[:2] == ["STAT", "pid"] and parts[2].isdigit():
            return int(parts[2])
    return None


def started_here(pid: int, root: int) -> bool | None:
    """Whether process ``pid`` is ``root`` or one of its descendants (True/False), or None when ``pid``
    is not a process this PID namespace sees (a server in an image's own PID namespace)."""
    seen = 0
    while pid > 1 and seen < 64:
        if pid == root:
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            return None if seen == 0 else False
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state: the parent's PID
        seen += 1
    return pid == root


def port_taken_by_another(host: str, port: int, proc) -> str:
    """'' when the memcached answering on host:port is the one ``proc`` (a Popen) started; else why not:
    ``proc`` exited (it could not bind: the port was taken between free_port() and its start) or
    another process answers there. A start that only connects would take another job's server for
    its own -- on a busy node, where jobs pick ports at the same moment, its data then vanishes with
    that job (a MemFS stripe 'missing': EIO)."""
    if proc.poll() is not None:
        return f"it exited (status {proc.returncode}) while {host}:{port} answered: another process serves there"
    pid = memcached_pid(host, port)
    if pid is None:
        return ""  # answers, but not to stats: cannot tell; the caller's own checks follow
    if started_here(pid, proc.pid) is False:
        return f"{host}:{port} is served by another process (pid {pid}), not the one started (pid {proc.pid})"
    return "" if proc.poll() is None else f"it exited (status {proc.returncode}) after {host}:{port} answered"
