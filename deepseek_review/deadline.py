"""One deadline for a whole HTTP attempt: connecting, sending, the headers, every body read.

httpx's timeouts bound each socket operation, so a server that sends one byte per gap (in
its headers or its body) or an endless stream never times out. :func:`bound_client` wraps
the network backend of an httpx client's connection pools so that every socket operation of
an attempt running under :func:`within` gets at most the time left before that attempt's
deadline, and none at all once it has passed: the operation then fails with httpx's own
timeout exception, which the caller tells apart with :func:`passed`.

The deadline lives in a context variable: each thread (each batch job) has its own, and a
thread outside :func:`within` is unaffected. httpx offers no public hook for this, so the
wrapping reaches into its transports (``_pool``) and httpcore's pools (``_network_backend``);
:func:`bound_client` says whether it could, a test keeps it true for the pinned versions,
and :func:`check` lets a body reader enforce the deadline between reads regardless.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

_END: ContextVar[float | None] = ContextVar("deepseek_review_deadline", default=None)


@contextmanager
def within(seconds: float) -> Iterator[float]:
    """Run the block under a deadline ``seconds`` from now; yields the deadline (monotonic)."""
    end = time.monotonic() + seconds
    token = _END.set(end)
    try:
        yield end
    finally:
        _END.reset(token)


def passed(end: float) -> bool:
    return time.monotonic() >= end


def check() -> None:
    """Raise httpx's read timeout if the current attempt's deadline has passed."""
    end = _END.get()
    if end is not None and time.monotonic() >= end:
        raise httpx.ReadTimeout("the attempt's deadline passed")


def _left(timeout: float | None, late: type[httpcore.TimeoutException]) -> float | None:
    """``timeout``, shortened to the time left before the deadline (``late`` once past it)."""
    end = _END.get()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise late("the attempt's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, left))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_tcp(host, port, left, local_address, socket_options))

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_unix_socket(path, left, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bound_client(client: httpx.Client) -> bool:
    """Put every connection pool of ``client`` (direct and proxied) under the deadline of
    :func:`within`; False if some pool could not be reached (httpx's internals changed)."""
    transports = [getattr(client, "_transport", None)]
    transports += list(getattr(client, "_mounts", {}).values())
    ok = True
    for transport in transports:
        if transport is None:  # a mount that disables proxying for its pattern
            continue
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if not isinstance(backend, httpcore.NetworkBackend):
            ok = False
        elif not isinstance(backend, _Backend):
            pool._network_backend = _Backend(backend)  # type: ignore[union-attr]
    return ok
