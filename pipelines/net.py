"""A free loopback TCP port, for the servers a run starts (Ray's dashboard, the status service) and their tests."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now (another process may take it before the caller binds it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
