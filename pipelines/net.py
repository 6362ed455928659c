"""Free loopback TCP ports, for the servers a run starts (Ray's dashboard, the status service) and their tests."""

from __future__ import annotations

import socket
from contextlib import ExitStack


def free_ports(count: int) -> list[int]:
    """`count` distinct ports nothing listens on now (another process may take one before the caller binds it).
    All are held open until all are chosen: ports asked for one at a time may come back twice."""
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in socks]


def free_port() -> int:
    """A port nothing listens on now (another process may take it before the caller binds it)."""
    return free_ports(1)[0]
