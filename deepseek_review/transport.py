"""The one place an ``httpx.Client`` is built, and what every request carries.

Every client: no redirects followed (a redirect is reported, never followed with the key),
connect/read timeouts from :class:`~deepseek_review.calls.Timeouts`, each attempt under the
deadline of :mod:`.deadline`, and a TLS context only when some endpoint is https.
"""

from __future__ import annotations

import functools
import ssl

import httpx

from . import __version__
from .calls import Timeouts

#: Connections per client at least (a batch with more jobs gets one per job).
MIN_CONNECTIONS = 64


@functools.cache
def tls_context() -> ssl.SSLContext | bool:
    """httpx's default verifying TLS context, built once per process: loading the CA bundle
    takes ~50 ms, which every client (one per review, per batch endpoint) would pay again."""
    make = getattr(httpx, "create_ssl_context", None)  # public from httpx 0.28
    return make() if make is not None else True


@functools.cache
def no_tls_context() -> ssl.SSLContext:
    """For plain-http endpoints: a context that trusts no certificate at all, so nothing can
    ever be accepted over TLS with it, and that costs nothing to build (no CA bundle)."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def make_http_client(
    timeouts: Timeouts,
    *,
    https: bool,
    connections: int = MIN_CONNECTIONS,
) -> httpx.Client:
    """A client for chat requests: ``https`` when any endpoint it will reach is https (only
    then is the CA bundle loaded, a sixth of a whole local review); ``connections`` for the
    requests in flight at once."""
    pool = max(MIN_CONNECTIONS, connections)
    http = httpx.Client(
        timeout=httpx.Timeout(timeouts.read, connect=timeouts.connect, pool=None),
        # No idle connection is kept: each attempt opens its own, which its deadline can
        # then cut (deadline.Attempt sees a connection's socket only as it is opened).
        limits=httpx.Limits(max_connections=pool, max_keepalive_connections=0),
        follow_redirects=False,
        verify=tls_context() if https else no_tls_context(),
    )
    return http


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
