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


def ask(host: str, port: int, request: bytes, done, timeout: float = 2.0) -> bytes | None:
    """Send ``request`` to host:port and read until ``done(answer)`` (or the server closes, or 64 KiB);
    None if the server cannot be reached. The one text-protocol question of the tree (memcached's
    ``stats``, Redis's ``CONFIG GET``)."""
    import socket

    try:
        with socket.create_connection((host, port), timeout) as s:
            s.sendall(request)
            buf = b""
            while not done(buf) and len(buf) < 65536:
                chunk = s.recv(4096)
                if not chunk:
                    break
                buf += chunk
    except OSError:
        return None
    return buf


def memcached_pid(host: str, port: int, timeout: float = 2.0) -> int | None:
    """The PID the memcached at host:port says it has (``stats``), or None if it does not answer so."""
    buf = ask(host, port, b"stats\r\n", lambda b: b.endswith(b"END\r\n"), timeout)
    if buf is None:
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
    if pid is None:  # answers, but not to stats: who listens there (served_by_another; '' if not visible)
        return served_by_another(host, port, proc.pid)
    if started_here(pid, proc.pid) is False:
        return f"{host}:{port} is served by another process (pid {pid}), not the one started (pid {proc.pid})"
    return "" if proc.poll() is None else f"it exited (status {proc.returncode}) after {host}:{port} answered"


def _proc_net_addr(hexaddr: str) -> str:
    """An address of /proc/net/tcp{,6} ('0100007F', 32 hex digits for IPv6) as text; an IPv4-mapped
    IPv6 address as its IPv4 form."""
    import ipaddress

    raw = bytes.fromhex(hexaddr)
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # each 32-bit word is host-order
    ip = ipaddress.ip_address(raw)
    mapped = getattr(ip, "ipv4_mapped", None)
    return str(mapped or ip)


def listener_inodes(host: str, port: int) -> set[int]:
    """Inodes of the LISTEN sockets a TCP connect to host:port can reach, from /proc/net/tcp and tcp6:
    bound to ``host`` itself or to a wildcard address (with a wildcard ``host``, any listener on
    ``port``). Only this network namespace's sockets are listed: empty for a server in another one."""
    import socket

    wild = host in ("", "0.0.0.0", "::")
    if not wild:
        try:
            family, _, _, _, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
            host = sockaddr[0]
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.bind((host, 0))  # an address of this network namespace; else a connect leaves it
        except OSError:
            return set()  # another host's address: its listeners are not in these tables
    found: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) < 10 or fields[3] != "0A":  # 0A: TCP_LISTEN
                continue
            addr, _, hexport = fields[1].partition(":")
            if int(hexport, 16) != port:
                continue
            local = _proc_net_addr(addr)
            if wild or local in (host, "0.0.0.0", "::"):
                found.add(int(fields[9]))
    return found


def listener_holders(host: str, port: int) -> dict[int, int | None]:
    """Each LISTEN socket a connect to host:port can reach (listener_inodes), with the PID of one
    process that holds it open ({inode: pid}), None where no process this PID namespace sees holds it
    (a server in an image's own PID namespace). Several sockets: SO_REUSEPORT listeners sharing the port."""
    import os

    inodes = listener_inodes(host, port)
    holders: dict[int, int | None] = dict.fromkeys(inodes)
    if not inodes:
        return holders
    wanted = {f"socket:[{i}]": i for i in inodes}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{d}/fd")
        except OSError:
            continue  # gone, or not ours to read
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{d}/fd/{fd}")
            except OSError:
                continue
            inode = wanted.get(link)
            if inode is not None and holders[inode] is None:
                holders[inode] = int(d)
        if all(p is not None for p in holders.values()):
            break
    return holders


def listener_pid(host: str, port: int) -> int | None:
    """The PID of a process that listens where a connect to host:port lands (the same network
    namespace), or None when none is visible here."""
    pids = sorted(p for p in listener_holders(host, port).values() if p is not None)
    return pids[0] if pids else None


def served_by_another(host: str, port: int, root: int) -> str:
    """'' unless a process other than ``root`` (a PID) and its descendants listens where a connect to
    host:port lands; else why, naming the port and the other PID. Nothing visible (no listener in this
    network namespace, or its holder in another PID namespace): '' -- cannot tell, the caller's own
    checks follow. A listener of ours sharing the port (SO_REUSEPORT) with another's is another's."""
    for pid in sorted(p for p in listener_holders(host, port).values() if p is not None):
        if started_here(pid, root) is False:
            return f"{host}:{port} is served by another process (pid {pid}), not the one started (pid {root})"
    return ""


def listener_taken_by_another(host: str, port: int, proc) -> str:
    """port_taken_by_another for any daemon (not only memcached): '' when what listens at host:port is
    ``proc`` (a Popen) or its descendant, else why: ``proc`` exited (its port was taken between
    free_port() and its bind) or another process listens there (its PID named)."""
    if proc.poll() is not None:
        other = listener_pid(host, port)
        return f"it exited (status {proc.returncode})" + (
            f"; {host}:{port} is served by another process (pid {other})" if other else "")
    why = served_by_another(host, port, proc.pid)
    if why:
        return why
    return "" if proc.poll() is None else f"it exited (status {proc.returncode}) after {host}:{port} answered"
