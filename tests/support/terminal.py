"""Pseudo-terminals in tests: what a command wrote to one, byte for byte."""

from __future__ import annotations

import os
import select


def read_until_closed(master: int, timeout: float = 30.0) -> bytes:
    """Everything written to the pseudo-terminal ``master`` until its last writer is gone
    (or nothing comes for ``timeout`` seconds); closes ``master``."""
    out = b""
    try:
        while select.select([master], [], [], timeout)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal's last writer is gone
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
    return out
