"""Calling an OpenAI-compatible ``/v1/chat/completions`` endpoint, with retries.

What is retried is decided here alone (the waiting between tries is :mod:`.retry`'s).
Retried (exponential backoff with jitter, ``Retry-After`` honoured up to a cap): connection
errors, timeouts, 429, 500, 502, 503, 504, and any answer that is not a usable completion
(bad JSON, a stream cut before its finish chunk or ``[DONE]``): such a body is a failed
attempt, never an answer. Never retried: other 4xx, which
get a message saying what to do instead (worded for the server kind, :mod:`.serverhints`).
Tried twice at most: a refused connection to loopback (no server is running there; a remote
server that refuses may be restarting, so it gets the whole policy) and a stream that closes
with no data at all.

An error the server sends inside a 200 answer (a ``{"error": ...}`` body or stream chunk,
llama.cpp's ``error:`` stream line, an SSE ``event: error``) is the server's error, in its
words: handled as the status it carries (``code``) would be, or as an unusable answer when it
names none; a prompt over the context is never retried, streamed or not.

Every answer is bounded (:mod:`.bodyread`, :mod:`.deadline`): its decoded size, each stream
line, the run of stream lines that carry nothing, and the whole attempt's time. Too big is
not retried (the same request would get the same answer, paid for again); the rest is.

Error bodies are read by :mod:`.errorbody`, answers by :mod:`.chatwire`. The API key is only
ever placed in the ``Authorization`` header and is scrubbed from every message.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator

import httpx

from . import bodyread, chatwire, deadline, retry, safejson, serverhints, transport
from .calls import Completion, ProgressFn, RetryPolicy, Timeouts
from .endpoint import is_loopback_host, safe_url
from .errorbody import error_body, error_message, error_parts, one_line
from .errors import BadResponse, ServerError
from .ollama import native
from .retry import Retryable, Throttle, parse_retry_after
from .serverhints import Advice
from .transport import make_http_client, request_headers

#: Asks one path of the endpoint's origin (a POST when given a body): its JSON, or None.
SideAsk = Callable[..., object]
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: One answer's body, decoded (decompressed), streamed or not: a streamed answer costs about
#: 200 bytes per chunk, so this still holds some 150,000 streamed tokens.
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
#: One line of a stream: a chunk is a few hundred bytes; a server that streams the whole
#: answer as one chunk still fits.
DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
#: An error body is read for its message only.
MAX_ERROR_BODY_BYTES = 1024 * 1024
#: Attempts in all for a failure that one more try may cure but four more would not.
FAST_FAIL_ATTEMPTS = 2


class ChatClient:
    """One endpoint, one connection pool; safe to share between threads."""

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        *,
        policy: RetryPolicy | None = None,
        timeouts: Timeouts | None = None,
        max_response_bytes: int | None = None,
        max_line_bytes: int | None = None,
        throttle: Throttle | None = None,
        http: httpx.Client | None = None,
        advice: Advice | None = None,
    ) -> None:
        self.url = url
        self.native = native.is_native(url)
        """Ollama's ``/api/chat``: NDJSON answers (:mod:`.ollama.native`)."""
        self._key = api_key
        self.advice = advice or Advice()
        """What the hints say depends on: the server kind, the endpoint's source, the key's
        variable."""
        self.policy = policy or RetryPolicy()
        self.timeouts = timeouts or Timeouts()
        # The module's defaults are read here, not frozen into the signature, so that a test
        # can lower them for a whole CLI run.
        self.max_response_bytes = max_response_bytes or DEFAULT_MAX_RESPONSE_BYTES
        self.max_line_bytes = max_line_bytes or DEFAULT_MAX_LINE_BYTES
        self.throttle = throttle or Throttle()
        self._own_http = http is None
        self._http = http or make_http_client(self.timeouts, https=url.startswith("https:"))
        #: What side requests learned about this endpoint (Ollama's ``/api/show``), kept for
        #: the client's life: one review, or one endpoint of a batch.
        self.learned: dict[tuple[str, ...], object] = {}
        #: Held while side requests fill :attr:`learned`: the other jobs of a batch wait.
        self.learning = threading.Lock()

    def close(self) -> None:
        if self._own_http:
            self._http.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _scrub(self, text: str) -> str:
        """The text with the key taken out: always *before* any truncation, which could
        otherwise leave a prefix of the key that no longer matches."""
        return text.replace(self._key, "[redacted]") if self._key else text

    def _scrub_bytes(self, data: bytes) -> bytes:
        return data.replace(self._key.encode("utf-8"), b"[redacted]") if self._key else data

    # ------------------------------------------------------------------ public

    def complete(
        self,
        body: bytes,
        *,
        model: str,
        stream: bool,
        progress: ProgressFn | None = None,
        on_attempt: Callable[[], None] | None = None,
        label: str | None = None,
    ) -> Completion:
        """Send ``body`` (exactly these bytes) until one attempt yields a usable completion.

        ``on_attempt`` is told of each attempt as it is sent; ``label`` (a batch: the entry's
        topic) goes on the retry lines logged, as ``batch_topic``."""
        started = time.monotonic()
        attempts = 0

        retrying = retry.retrying(self.policy, self.throttle, label=label)
        try:
            for attempt in retrying:
                with attempt:
                    attempts += 1
                    self.throttle.wait_turn()
                    if on_attempt is not None:
                        on_attempt()
                    result = self._attempt(body, model=model, stream=stream, progress=progress)
                    return Completion(
                        content=result.content,
                        reasoning=result.reasoning,
                        finish_reason=result.finish_reason,
                        usage=result.usage,
                        message_keys=result.message_keys,
                        model=result.model,
                        attempts=attempts,
                        elapsed=time.monotonic() - started,
                        usage_details=result.usage_details,
                    )
        except Retryable as exc:
            final = exc.final
            suffix = f" (after {attempts} attempt{'s' if attempts != 1 else ''})"
            raise type(final)(final.message + suffix, hint=final.hint) from None
        raise AssertionError("unreachable: tenacity returned without an outcome")

    @contextlib.contextmanager
    def side_requests(self, timeout: float = 5.0) -> Iterator[SideAsk]:
        """Ask paths (``/api/version``) of this endpoint's own origin: each answer's JSON on a
        200, else None (refused, 404, not JSON, too big). A GET, or a POST of a body; the key
        goes with them as with chat requests, since the origin is the chat URL's. Their own
        client, closed at the end: a side request is neither a chat attempt nor a slot's."""
        headers = request_headers(False, self._key)
        base = httpx.URL(self.url)
        with make_http_client(self.timeouts, https=base.scheme == "https") as side:

            def ask(path: str, body: object = None) -> object:
                url = base.copy_with(path=path, query=None, fragment=None)
                data = None if body is None else json.dumps(body).encode("utf-8")
                method = "GET" if data is None else "POST"
                try:
                    with (
                        deadline.within(timeout),
                        side.stream(method, url, headers=headers, content=data) as r,
                    ):
                        if r.status_code != 200:
                            return None
                        raw = bodyread.read_body(r, MAX_ERROR_BODY_BYTES)
                    return safejson.loads(raw, what=path, max_bytes=MAX_ERROR_BODY_BYTES)
                except (httpx.HTTPError, bodyread.BodyError, ValueError, OSError):
                    return None

            yield ask

    # ------------------------------------------------------------------ one attempt

    def _attempt(
        self, body: bytes, *, model: str, stream: bool, progress: ProgressFn | None
    ) -> Completion:
        t0 = time.monotonic()
        answered = False
        try:
            with (
                deadline.within(self.timeouts.total) as end,
                self._http.stream(
                    "POST", self.url, content=body, headers=request_headers(stream, self._key)
                ) as resp,
            ):
                if resp.status_code != 200:
                    self._raise_status(resp, model)
                answered = True
                ctype = resp.headers.get("content-type", "")
                if stream and (self.native or "text/event-stream" in ctype):
                    return self._read_stream(resp, progress, t0, model)
                return self._read_json(resp, model)
        except httpx.TimeoutException as exc:
            if deadline.passed(end):
                raise Retryable(
                    ServerError(
                        f"{self.url}: no complete answer within --total-timeout "
                        f"{self.timeouts.total:g}s",
                        hint="raise --total-timeout",
                    )
                ) from None
            kind = "connect" if isinstance(exc, httpx.ConnectTimeout) else "read"
            raise Retryable(
                ServerError(f"{self.url}: {kind} timeout", hint=self._timeout_hint(kind))
            ) from None
        except bodyread.TooBig as exc:
            raise BadResponse(
                f"{self.url}: {exc}; refusing to read more (not retried)",
                hint="is --endpoint the chat-completions server you meant?",
            ) from None
        except bodyread.BodyError as exc:
            raise Retryable(BadResponse(f"{self.url}: {exc}")) from None
        except httpx.TransportError as exc:
            why = one_line(self._scrub(str(exc))) or type(exc).__name__
            if answered:  # reached, and it said 200: the answer itself broke off
                raise Retryable(
                    BadResponse(f"{self.url}: the answer broke off before its end ({why})")
                ) from None
            refused = transport.refused(exc)
            hint = serverhints.unreachable(self.advice, self.url, why, model=model, refused=refused)
            # Nothing listening on this machine is not cured by waiting 15 s; a remote server
            # that refuses may be restarting.
            local = refused and is_loopback_host(httpx.URL(self.url).host)
            raise Retryable(
                ServerError(f"cannot reach {self.url}: {why}", hint=hint),
                cap=FAST_FAIL_ATTEMPTS if local else None,
            ) from None

    def _timeout_hint(self, kind: str) -> str:
        return "raise --connect-timeout" if kind == "connect" else "raise --read-timeout"

    def _raise_status(self, resp: httpx.Response, model: str) -> None:
        status = resp.status_code
        kind = ""
        try:
            raw = self._scrub_bytes(bodyread.read_body(resp, MAX_ERROR_BODY_BYTES))
            msg = error_message(raw, resp.headers.get("content-type", ""))
            kind = error_parts(error_body(raw))[2]
        except bodyread.BodyError as exc:
            msg = f"error body not shown ({exc})"
        where = f"{self.url} answered {status}"
        if 300 <= status < 400:
            loc = resp.headers.get("location")
            shown = one_line(safe_url(self._scrub(loc)), 200) if loc else "?"
            raise ServerError(f"{where} (redirect to {shown}); use that URL as --endpoint")
        ra = parse_retry_after(resp.headers.get("retry-after"), self.policy.retry_after_cap)
        raise self._refusal(status, where, msg, kind, model, retry_after=ra)

    def _refusal(
        self,
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
            return ServerError(text, hint=serverhints.context_overflow(self.advice))
        if status is None:
            return Retryable(BadResponse(text))
        if status in RETRY_STATUSES:
            hint = "the server is rate-limiting; wait, or lower --jobs" if status == 429 else ""
            return Retryable(ServerError(text, hint=hint), retry_after=retry_after)
        if status in (401, 403):
            sent = self._key is not None
            hint = serverhints.unauthorized(self.advice, self.url, key_sent=sent)
            return ServerError(text, hint=hint)
        if status == 404:
            return ServerError(text, hint=serverhints.not_found(self.advice, model, msg))
        return ServerError(
            text, hint="the server refused the request; check --model and --extra-body"
        )

    def _reported(self, raw: bytes, where: str, model: str) -> ServerError | Retryable:
        """An error the server sent inside a 200 answer (``raw``: the error's JSON, or text),
        handled as the status it carries would be."""
        raw = self._scrub_bytes(raw)
        try:
            data = safejson.loads(raw, what="error", max_bytes=self.max_line_bytes)
        except ValueError:
            data = raw.decode("utf-8", errors="replace")
        msg, status, kind = error_parts(data)
        if msg is None:
            msg = one_line(raw.decode("utf-8", errors="replace"), 200) or "no message"
        shown = f"{where} (code {status})" if status is not None else where
        return self._refusal(status, shown, msg, kind, model)

    def _read_json(self, resp: httpx.Response, model: str) -> Completion:
        raw = bodyread.read_body(resp, self.max_response_bytes)
        try:
            data = safejson.loads(raw, what="answer", max_bytes=self.max_response_bytes)
        except safejson.JSONRefused as exc:
            raise Retryable(BadResponse(f"{self.url}: {exc}")) from None
        except ValueError:
            shown = (
                "empty body"
                if not raw.strip()
                else error_message(self._scrub_bytes(raw), resp.headers.get("content-type", ""))
            )
            raise Retryable(BadResponse(f"{self.url}: answer is not JSON ({shown})")) from None
        if chatwire.carries_error(data):
            where = f"{self.url} answered 200 with an error"
            raise self._reported(raw[:MAX_ERROR_BODY_BYTES], where, model)
        try:
            return chatwire.completion_from_json(native.as_openai(data) if self.native else data)
        except ValueError as exc:
            why = one_line(self._scrub(str(exc)))
            raise Retryable(BadResponse(f"{self.url}: unusable answer: {why}")) from None

    def _read_stream(
        self, resp: httpx.Response, progress: ProgressFn | None, t0: float, model: str
    ) -> Completion:
        st = chatwire.StreamState()
        lines = bodyread.split_lines(
            bodyread.iter_body(resp, self.max_response_bytes), self.max_line_bytes
        )
        try:
            self._read_events(st, lines, progress, t0, model)
        except (httpx.RemoteProtocolError, httpx.ReadError):  # cut off; a timeout is not this
            if st.seen:
                raise
            # A crash, perhaps, or a proxy's hiccup: the whole policy, as for any cut answer.
            raise Retryable(self._nothing("the connection closed before any data")) from None
        if not st.seen:
            # The server ended the answer on purpose, empty: it does so again for this request.
            raise Retryable(
                self._nothing("closed the stream with no data at all"), cap=FAST_FAIL_ATTEMPTS
            )
        try:
            chatwire.check_ended(st)
        except ValueError as exc:
            raise Retryable(BadResponse(f"{self.url}: {exc}")) from None
        _read_past_done(lines)
        try:
            return chatwire.stream_completion(st, time.monotonic() - t0)
        except ValueError as exc:
            raise Retryable(BadResponse(f"{self.url}: {exc}")) from None

    def _read_events(
        self,
        st: chatwire.StreamState,
        lines: Iterator[bytes],
        progress: ProgressFn | None,
        t0: float,
        model: str,
    ) -> None:
        """Read the stream's lines into ``st`` (:func:`.chatwire.read_events`), its failures
        worded for this endpoint."""
        on_data = None
        if progress is not None:
            report = progress

            def on_data(pieces: int) -> None:
                report(pieces, time.monotonic() - t0)

        read = native.read_lines if self.native else chatwire.read_events
        try:
            read(st, lines, max_line_bytes=self.max_line_bytes, on_data=on_data)
        except chatwire.ReportedError as exc:
            where = f"{self.url} sent an error in its stream"
            raise self._reported(exc.raw, where, model) from None
        except chatwire.BadChunk as exc:
            why = one_line(self._scrub(str(exc)), 200)
            raise Retryable(BadResponse(f"{self.url}: bad stream chunk: {why}")) from None
        except chatwire.IdleStream as exc:
            raise Retryable(BadResponse(f"{self.url}: {exc}")) from None

    def _nothing(self, what: str) -> BadResponse:
        """A 200 stream that ended before a single line, said plainly."""
        return BadResponse(
            f"{self.url} answered 200 and {what}",
            hint="try --no-stream: some servers give their reason only there "
            "(llama-cpp-python, for a prompt over its context)",
        )


#: Lines read after ``data: [DONE]`` at most (a server sends none, or a blank one).
_MAX_LINES_AFTER_DONE = 16


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
