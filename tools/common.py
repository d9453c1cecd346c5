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
