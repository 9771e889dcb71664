"""Ports for tests of an unreachable server, safe with tests running in parallel."""

from __future__ import annotations

import atexit
import socket

_HELD: list[socket.socket] = []


@atexit.register
def _release() -> None:
    for s in _HELD:
        s.close()


def closed_port(host: str = "127.0.0.1") -> int:
    """A port on ``host`` that refuses every connection: bound but never listening, and held
    so until the test process ends, so no other test or xdist worker can take it meanwhile (a
    port bound once and released could be listening again by the time a test connects)."""
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.bind((host, 0))
    _HELD.append(s)
    port: int = s.getsockname()[1]
    return port
