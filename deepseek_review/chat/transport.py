"""The one place an ``httpx.Client`` is built, and what every request carries.

Every client: no redirects followed (a redirect is reported, never followed with the key),
connect/read timeouts from :class:`~deepseek_review.chat.types.Timeouts`, each attempt under the
deadline of :mod:`chat.deadline`, and a TLS context only when some endpoint is https.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import ssl
import threading
from collections.abc import Callable, Iterator

import httpx

from deepseek_review._version import __version__
from deepseek_review.chat.types import Timeouts


@functools.cache
def tls_context() -> ssl.SSLContext | bool:
    """httpx's default verifying TLS context, built once per process and shared by every
    client (one per review, per batch endpoint), so the CA bundle is loaded once."""
    make = getattr(httpx, "create_ssl_context", None)  # public from httpx 0.28
    return make() if make is not None else True


@functools.cache
def no_tls_context() -> ssl.SSLContext:
    """For plain-http endpoints: a context that trusts no certificate at all, so nothing can
    ever be accepted over TLS with it, and that costs nothing to build (no CA bundle)."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class Lane:
    """One client used by one request at a time (so it keeps one connection open): the
    sockets it opened are the only ones a request through it can be using."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self.sockets: list[socket.socket] = []
        """Its connections' sockets, as :mod:`deepseek_review.chat.deadline` saw them opened."""


class HttpClients:
    """The httpx clients of chat requests (a batch's jobs share one :class:`HttpClients`):
    a request leases a :class:`Lane` for its whole exchange, so an attempt's deadline
    (:mod:`chat.deadline`) knows the socket of the connection it uses, also one kept open from
    an earlier request. There are as many lanes as requests were ever in flight at once."""

    def __init__(self, make: Callable[[], httpx.Client]) -> None:
        self._make = make
        self._free: list[Lane] = []
        self._made: list[Lane] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def lease(self) -> Iterator[Lane]:
        """A lane no other request is using, until the block ends."""
        with self._lock:
            lane = self._free.pop() if self._free else None
        if lane is None:
            lane = Lane(self._make())
            with self._lock:
                self._made.append(lane)
        try:
            yield lane
        finally:
            with self._lock:
                self._free.append(lane)

    def close(self) -> None:
        with self._lock:
            made, self._made, self._free = self._made, [], []
        for lane in made:
            lane.client.close()

    def __enter__(self) -> HttpClients:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_http_client(timeouts: Timeouts, *, https: bool) -> HttpClients:
    """The clients for chat requests: ``https`` when any endpoint they will reach is https
    (only then is the CA bundle loaded)."""

    def make() -> httpx.Client:
        return httpx.Client(
            timeout=httpx.Timeout(timeouts.read, connect=timeouts.connect, pool=None),
            follow_redirects=False,
            verify=tls_context() if https else no_tls_context(),
        )

    return HttpClients(make)


def request_headers(stream: bool, api_key: str | None) -> dict[str, str]:
    """The headers of one chat request; the key goes in ``Authorization`` and nowhere else."""
    h = {
        "Content-Type": "application/json",
        "Accept": "text/event-stream" if stream else "application/json",
        # Only what bodyread can inflate within bounds (httpx would offer br/zstd too).
        "Accept-Encoding": "gzip, deflate",
        "User-Agent": f"deepseek-review/{__version__}",
    }
    if api_key:
        h["Authorization"] = f"Bearer {api_key}"
    return h


def refused(exc: BaseException) -> bool:
    """The connection was refused: nothing listens on that port (the OS error is the cause
    of httpcore's error, itself the cause of httpx's)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return "connection refused" in str(exc).lower()
