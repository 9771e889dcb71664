"""One deadline for a whole HTTP attempt: connecting, sending, the headers, every body read.

httpx's timeouts bound each socket operation, so a server that sends one byte per gap (in
its headers or its body) or an endless stream never times out. An :class:`Attempt` bounds
the whole of one request with httpx's public API alone:

- each operation's timeout is at most the attempt's budget (httpx's per-request
  ``timeout``);
- the request's ``trace`` extension hands over each connection's socket as it is opened, and
  a timer shuts the attempt's sockets down at the deadline: a read blocked in the headers or
  the body returns at once. A connection opened earlier and kept open is found too: a
  request goes through a lane (:class:`~deepseek_review.chat.transport.Lane`) that no other
  request uses meanwhile, whose sockets are the only ones the attempt can be using;
- a body reader checks the deadline between reads (:func:`check`).

Whatever error the cut-off surfaces as (a timeout, a closed connection, a broken body), the
caller tells the deadline apart with :func:`passed`. The deadline of the running attempt is
also kept in a context variable for :func:`check`: each thread (each batch job) has its own.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any

import httpx

_END: ContextVar[float | None] = ContextVar("deepseek_review_deadline", default=None)

#: The ``trace`` events whose return value is a freshly opened connection's network stream.
_OPENED = (".connect_tcp.complete", ".connect_unix_socket.complete", ".start_tls.complete")


class Attempt:
    """The deadline of one HTTP attempt, ``seconds`` from now, over the connections whose
    sockets are in ``sockets``: the list of the lane the attempt goes through
    (:class:`~deepseek_review.chat.transport.Lane`), to which a connection it opens is added."""

    def __init__(self, seconds: float, sockets: list[socket.socket] | None = None) -> None:
        self.end = time.monotonic() + seconds
        self.seconds = seconds
        self.sockets: list[socket.socket] = [] if sockets is None else sockets
        self._lock = threading.Lock()
        self._fired = False
        self._timer: threading.Timer | None = None
        self._token: Token[float | None] | None = None

    def through(self, sockets: list[socket.socket]) -> Attempt:
        """This attempt, over the connections of a lane with ``sockets``."""
        self.sockets = sockets
        return self

    def __enter__(self) -> Attempt:
        self._token = _END.set(self.end)
        self._timer = threading.Timer(max(0.0, self.end - time.monotonic()), self._cut)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._token is not None:
            _END.reset(self._token)

    def timeout(self, base: httpx.Timeout) -> httpx.Timeout:
        """``base`` with no operation allowed longer than the whole attempt."""

        def capped(value: float | None) -> float:
            return self.seconds if value is None else min(value, self.seconds)

        return httpx.Timeout(
            connect=capped(base.connect),
            read=capped(base.read),
            write=capped(base.write),
            pool=capped(base.pool),
        )

    @property
    def extensions(self) -> dict[str, Any]:
        """The request extensions that put its connections under this deadline."""
        return {"trace": self._trace}

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        if event.endswith(_OPENED):
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if isinstance(sock, socket.socket):
                with self._lock:
                    # Closed ones go: a lane keeps the sockets of its live connection.
                    self.sockets[:] = [s for s in self.sockets if s.fileno() != -1] + [sock]
                    fired = self._fired
                if fired:
                    _shut(sock)
        # Past the deadline no next step starts (closing is not a step: it must run).
        if event.endswith(".started") and "close" not in event and passed(self.end):
            raise httpx.ReadTimeout("the attempt's deadline passed")

    def _cut(self) -> None:
        """The deadline: every socket of the attempt is shut down, so no read waits on."""
        with self._lock:
            self._fired = True
            sockets = list(self.sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by its connection
        sock.shutdown(socket.SHUT_RDWR)


def within(seconds: float, sockets: list[socket.socket] | None = None) -> Attempt:
    """An attempt under a deadline ``seconds`` from now, over ``sockets`` (a lane's)."""
    return Attempt(seconds, sockets)


def passed(end: float) -> bool:
    return time.monotonic() >= end


def check() -> None:
    """Raise httpx's read timeout if the current attempt's deadline has passed."""
    end = _END.get()
    if end is not None and time.monotonic() >= end:
        raise httpx.ReadTimeout("the attempt's deadline passed")
