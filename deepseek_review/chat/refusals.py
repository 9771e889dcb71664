"""A server's refusal as the error a user reads: which failures are worth another attempt,
and the hint that says what to do instead (worded for the server kind by
:mod:`chat.server_hints`, options spelled by :func:`options.table.name_of`).

Pure wording and classification: the client hands over what the server said (as a
:class:`ClientView`); nothing here touches the network.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from deepseek_review.chat import body as bodyread
from deepseek_review.chat import server_hints as serverhints
from deepseek_review.chat.endpoint import safe_url
from deepseek_review.chat.error_body import (
    HTML_PAGE,
    error_body,
    error_message,
    error_parts,
    one_line,
)
from deepseek_review.chat.retry import Retryable, parse_retry_after
from deepseek_review.errors import BadResponse, ServerError
from deepseek_review.options.table import name_of, switched_off
from deepseek_review.util import safejson

if TYPE_CHECKING:
    import httpx

    from deepseek_review.chat.types import RetryPolicy, Timeouts


class ClientView(Protocol):
    """What reading an answer and wording a refusal need of the client
    (:class:`deepseek_review.chat.client.ChatClient`): its endpoint, limits and scrubbing."""

    url: str
    native: bool
    advice: serverhints.Advice
    policy: RetryPolicy
    timeouts: Timeouts
    max_response_bytes: int
    max_line_bytes: int

    @property
    def sends_key(self) -> bool: ...

    def scrub(self, text: str) -> str: ...

    def scrub_bytes(self, data: bytes) -> bytes: ...


RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: An error body is read for its message only.
MAX_ERROR_BODY_BYTES = 1024 * 1024


def total_timeout(client: ClientView) -> ServerError:
    """The attempt's own deadline passed."""
    option = name_of("total_timeout")
    return ServerError(
        f"{client.url}: no complete answer within {option} {client.timeouts.total:g}s",
        hint=f"raise {option}",
    )


def timeout_hint(kind: str) -> str:
    """What to raise after a ``connect`` or ``read`` timeout."""
    return f"raise {name_of('connect_timeout' if kind == 'connect' else 'read_timeout')}"


def too_big(client: ClientView, why: object) -> BadResponse:
    """An answer over a size limit: not retried (the same request gets the same answer)."""
    return BadResponse(
        f"{client.url}: {why}; refusing to read more (not retried)",
        hint=f"is {name_of('endpoint')} the chat-completions server you meant?",
    )


def status_error(client: ClientView, resp: httpx.Response, model: str) -> ServerError | Retryable:
    """The error for a non-200 answer, its body read (bounded) for the server's words."""
    status = resp.status_code
    kind = ""
    try:
        raw = client.scrub_bytes(bodyread.read_body(resp, MAX_ERROR_BODY_BYTES))
        msg = error_message(raw, resp.headers.get("content-type", ""))
        kind = error_parts(error_body(raw))[2]
    except bodyread.BodyError as exc:
        msg = f"error body not shown ({exc})"
    where = f"{client.url} answered {status}"
    if 300 <= status < 400:
        loc = resp.headers.get("location")
        shown = one_line(safe_url(client.scrub(loc)), 200) if loc else "?"
        return ServerError(f"{where} (redirect to {shown}); use that URL as {name_of('endpoint')}")
    ra = parse_retry_after(resp.headers.get("retry-after"), client.policy.retry_after_cap)
    return refusal(client, status, where, msg, kind, model, retry_after=ra)


def refusal(
    client: ClientView,
    status: int | None,
    where: str,
    msg: str,
    kind: str,
    model: str,
    retry_after: float | None = None,
) -> ServerError | Retryable:
    """The error for a refusal, by its status; ``msg`` is the server's words and ``kind``
    its error type. A prompt over the context is never retried, whatever the status (exit
    5, as its 400 is). Without a status (an error object inside a 200 that names none) it
    is a failed attempt, as any unusable answer is."""
    text = f"{where}: {msg}"
    context = serverhints.is_context_error(msg, kind)
    if status == 413:
        return ServerError(f"{where}: request too large", hint="send less context")
    if context and status not in RETRY_STATUSES:
        return ServerError(text, hint=serverhints.context_overflow(client.advice))
    if status is None:
        return Retryable(BadResponse(text))
    if status in RETRY_STATUSES:
        hint = f"the server is rate-limiting; wait, or lower {name_of('jobs')}"
        return Retryable(
            ServerError(text, hint=hint if status == 429 else ""), retry_after=retry_after
        )
    if status in (401, 403):
        hint = serverhints.unauthorized(client.advice, client.url, key_sent=client.sends_key)
        return ServerError(text, hint=hint)
    if status in (405, 501) or msg.startswith(HTML_PAGE):  # a web server, not a chat API
        return ServerError(text, hint=f"is this a chat endpoint? check {name_of('endpoint')}")
    if status == 404:
        return ServerError(text, hint=serverhints.not_found(client.advice, model, msg))
    return ServerError(
        text,
        hint=f"the server refused the request; check {name_of('model')} and "
        f"{name_of('extra_body')}",
    )


def reported(client: ClientView, raw: bytes, where: str, model: str) -> ServerError | Retryable:
    """An error the server sent inside a 200 answer (``raw``: the error's JSON, or text),
    handled as the status it carries would be."""
    raw = client.scrub_bytes(raw)
    try:
        data = safejson.loads(raw, what="error", max_bytes=client.max_line_bytes)
    except ValueError:
        data = raw.decode("utf-8", errors="replace")
    msg, status, kind = error_parts(data)
    if msg is None:
        msg = one_line(raw.decode("utf-8", errors="replace"), 200) or "no message"
    shown = f"{where} (code {status})" if status is not None else where
    return refusal(client, status, shown, msg, kind, model)


def nothing(client: ClientView, what: str) -> BadResponse:
    """A 200 stream that ended before a single line, said plainly."""
    return BadResponse(
        f"{client.url} answered 200 and {what}",
        hint=f"try {switched_off('stream')}: some servers give their reason only there "
        "(llama-cpp-python, for a prompt over its context)",
    )
