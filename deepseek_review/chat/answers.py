"""A 200 answer read into a :class:`~chat.types.Completion`: one JSON body, or a stream of SSE
(or Ollama's NDJSON) lines, bounded by the client's limits (:mod:`deepseek_review.chat.body`).

An answer that is not a usable completion (not JSON, a bad chunk, a stream cut before its
end) is a failed attempt (:class:`~chat.retry.Retryable`), never an answer; an error the server
sends inside the answer is handled as its status would be (:mod:`deepseek_review.chat.refusals`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx

from deepseek_review.chat import body as bodyread
from deepseek_review.chat import native, refusals
from deepseek_review.chat import wire as chatwire
from deepseek_review.chat.error_body import error_message, one_line
from deepseek_review.chat.refusals import ClientView
from deepseek_review.chat.retry import Retryable
from deepseek_review.chat.tokens import bytes_as_tokens
from deepseek_review.chat.types import Completion, ProgressFn
from deepseek_review.errors import BadResponse
from deepseek_review.util import safejson

#: Attempts in all for a failure that one more try may cure but four more would not.
FAST_FAIL_ATTEMPTS = 2
#: Lines read after ``data: [DONE]`` at most (a server sends none, or a blank one).
_MAX_LINES_AFTER_DONE = 16


def read_json(client: ClientView, resp: httpx.Response, model: str) -> Completion:
    """A whole JSON answer."""
    raw = bodyread.read_body(resp, client.max_response_bytes)
    try:
        data = safejson.loads(raw, what="answer", max_bytes=client.max_response_bytes)
    except safejson.JSONRefused as exc:
        raise Retryable(BadResponse(f"{client.url}: {exc}")) from None
    except ValueError:
        shown = (
            "empty body"
            if not raw.strip()
            else error_message(client.scrub_bytes(raw), resp.headers.get("content-type", ""))
        )
        raise Retryable(BadResponse(f"{client.url}: answer is not JSON ({shown})")) from None
    if chatwire.carries_error(data):
        where = f"{client.url} answered 200 with an error"
        raise refusals.reported(client, raw[: refusals.MAX_ERROR_BODY_BYTES], where, model)
    try:
        return chatwire.completion_from_json(native.as_openai(data) if client.native else data)
    except ValueError as exc:
        why = one_line(client.scrub(str(exc)))
        raise Retryable(BadResponse(f"{client.url}: unusable answer: {why}")) from None


def read_stream(
    client: ClientView, resp: httpx.Response, progress: ProgressFn | None, t0: float, model: str
) -> Completion:
    """A streamed answer, to its finish chunk and ``[DONE]``."""
    st = chatwire.StreamState()
    lines = bodyread.split_lines(
        bodyread.iter_body(resp, client.max_response_bytes), client.max_line_bytes
    )
    try:
        _read_events(client, st, lines, progress, t0, model)
    except BaseException as exc:  # Ctrl-C or SIGTERM mid-stream: say how much had arrived
        if not isinstance(exc, Exception) and st.text_bytes:
            exc.add_note(
                f"~{bytes_as_tokens(st.text_bytes)} tokens ({st.text_bytes} bytes) of the "
                "answer had arrived; none of it was written"
            )
        if not isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
            raise
        # cut off; a timeout is not this
        if st.seen:
            raise
        # A crash, perhaps, or a proxy's hiccup: the whole policy, as for any cut answer.
        raise Retryable(refusals.nothing(client, "the connection closed before any data")) from None
    if not st.seen:
        # The server ended the answer on purpose, empty: it does so again for this request.
        raise Retryable(
            refusals.nothing(client, "closed the stream with no data at all"),
            cap=FAST_FAIL_ATTEMPTS,
        )
    try:
        chatwire.check_ended(st)
    except ValueError as exc:
        raise Retryable(BadResponse(f"{client.url}: {exc}")) from None
    _read_past_done(lines)
    try:
        return chatwire.stream_completion(st, time.monotonic() - t0)
    except ValueError as exc:
        raise Retryable(BadResponse(f"{client.url}: {exc}")) from None


def _read_events(
    client: ClientView,
    st: chatwire.StreamState,
    lines: Iterator[bytes],
    progress: ProgressFn | None,
    t0: float,
    model: str,
) -> None:
    """Read the stream's lines into ``st`` (:func:`chat.wire.read_events`), its failures
    worded for this endpoint."""
    on_data = None
    if progress is not None:
        report = progress

        def on_data(text_bytes: int) -> None:
            report(bytes_as_tokens(text_bytes), time.monotonic() - t0)

    read = native.read_lines if client.native else chatwire.read_events
    try:
        read(st, lines, max_line_bytes=client.max_line_bytes, on_data=on_data)
    except chatwire.ReportedError as exc:
        where = f"{client.url} sent an error in its stream"
        raise refusals.reported(client, exc.raw, where, model) from None
    except chatwire.BadChunk as exc:
        why = one_line(client.scrub(str(exc)), 200)
        raise Retryable(BadResponse(f"{client.url}: bad stream chunk: {why}")) from None
    except chatwire.IdleStream as exc:
        raise Retryable(BadResponse(f"{client.url}: {exc}")) from None


def check_first(client: ClientView, completion: Completion) -> None:
    """A chain's first answer with no text that was not cut off at the cap is garbage (retried
    as any other). A continuation may be empty: the answer so far ended exactly at the
    previous cap, and an empty one with its finish reason ends the chain."""
    if completion.content.strip() or completion.finish_reason == "length":
        return
    raise Retryable(
        BadResponse(
            f"{client.url}: the answer carried no message content (finish_reason "
            f"{completion.finish_reason or 'none'}): not a review"
        )
    )


def _read_past_done(lines: Iterator[bytes]) -> None:
    """Read the body's end after ``[DONE]``: httpx closes a connection whose response was
    not read to its end (the chunked terminator), so without this no connection is reused.
    The answer is complete: whatever goes wrong here only costs that reuse."""
    try:
        for n, _ in enumerate(lines):
            if n >= _MAX_LINES_AFTER_DONE:
                return
    except (bodyread.BodyError, httpx.HTTPError):
        return
