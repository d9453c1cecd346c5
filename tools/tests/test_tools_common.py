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
