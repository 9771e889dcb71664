"""Standard output that ends the command quietly when its reader goes away (``| head``)."""

from __future__ import annotations

import io
import os
import sys
from typing import NoReturn, TextIO


class StdoutClosed(BaseException):
    """Raised past typer (which turns EPIPE into exit 1) when stdout's reader went away."""


class PipeGuard(io.TextIOBase):
    """stdout, except that a closed pipe (``| head``) ends the command quietly."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner

    def write(self, s: str) -> int:
        try:
            return self._inner.write(s)
        except BrokenPipeError:
            raise StdoutClosed from None

    def flush(self) -> None:
        try:
            self._inner.flush()
        except BrokenPipeError:
            raise StdoutClosed from None

    def isatty(self) -> bool:
        return self._inner.isatty()

    def fileno(self) -> int:
        return self._inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._inner, "encoding", "utf-8")


def stdout_closed() -> NoReturn:
    try:  # later flushes (at exit) must not fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ else 1)
    except (OSError, ValueError):
        pass
    os._exit(0)
