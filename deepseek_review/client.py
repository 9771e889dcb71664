"""Calling an OpenAI-compatible ``/v1/chat/completions`` endpoint, with retries.

The retry policy lives here alone. Retried (exponential backoff with jitter, ``Retry-After``
honoured up to a cap): connection errors, timeouts, 429, 500, 502, 503, 504, and any answer
that is not a usable completion (bad JSON, a stream cut before its finish chunk or
``[DONE]``): such a body is a failed attempt, never an answer. Never retried: other 4xx, which
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

Error bodies come as ``{"error": {"message": ...}}`` (OpenAI, Ollama's compat layer) or as
``{"error": "..."}`` (ollama.com, Ollama's cloud proxy); both are read. The API key is only
ever placed in the ``Authorization`` header and is scrubbed from every message.
"""

from __future__ import annotations

import email.utils
import functools
import logging
import random
import re
import reprlib
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception_type

from . import __version__, bodyread, deadline, safejson, serverhints
from .calls import Completion, ProgressFn, RetryPolicy, Timeouts, Usage
from .endpoint import is_loopback_host, safe_url
from .errors import BadResponse, Interrupted, ServerError
from .serverhints import Advice
from .textsafe import escape

log = logging.getLogger("deepseek_review")

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: One answer's body, decoded (decompressed), streamed or not: a streamed answer costs about
#: 200 bytes per chunk, so this still holds some 150,000 streamed tokens.
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
#: One line of a stream: a chunk is a few hundred bytes; a server that streams the whole
#: answer as one chunk still fits.
DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
#: An error body is read for its message only.
MAX_ERROR_BODY_BYTES = 1024 * 1024
#: Stream lines in a row that carry no content, reasoning, finish_reason or usage (blank
#: lines, comments, empty deltas): a stream that keeps sending nothing is not an answer.
MAX_IDLE_LINES = 10_000
#: The largest token count taken as real: JSON's exact integers (and far beyond any model).
MAX_TOKEN_COUNT = 2**53
#: Attempts in all for a failure that one more try may cure but four more would not.
FAST_FAIL_ATTEMPTS = 2


class _Retryable(Exception):
    """An attempt failed in a way worth another try; carries the final error to raise.

    ``cap``: the most attempts in all this failure is worth (None: the policy's)."""

    def __init__(
        self,
        final: ServerError | BadResponse,
        retry_after: float | None = None,
        cap: int | None = None,
    ):
        super().__init__(final.message)
        self.final = final
        self.retry_after = retry_after
        self.cap = cap


class Throttle:
    """Shared by every job on one endpoint: a 429 slows everyone, not just its own job."""

    def __init__(self, stop: threading.Event | None = None) -> None:
        self._lock = threading.Lock()
        self._not_before = 0.0
        self.stop = stop or threading.Event()

    def penalize(self, seconds: float) -> None:
        with self._lock:
            self._not_before = max(self._not_before, time.monotonic() + seconds)

    def wait_turn(self) -> None:
        while True:
            with self._lock:
                delay = self._not_before - time.monotonic()
            if delay <= 0:
                return
            self.sleep(delay)

    def sleep(self, seconds: float) -> None:
        if self.stop.wait(seconds):
            raise Interrupted("interrupted while waiting to retry")


def parse_retry_after(value: str | None, cap: float) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP-date), capped."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), cap)


def one_line(text: str, limit: int = 300) -> str:
    """A server's words for an error message: one line, at most ``limit`` characters (before
    escaping), and its control characters shown as escapes, so that a library caller who
    prints the message is as safe as the command line."""
    text = re.sub(r"\s+", " ", text).strip()
    return escape(text if len(text) <= limit else text[: limit - 1] + "…")


def _error_body(body: bytes) -> Any:
    """An error body as JSON, or None when it is not JSON (or is refused)."""
    try:
        return safejson.loads(body, what="error body")
    except ValueError:
        return None


def _error_parts(data: Any) -> tuple[str | None, int | None, str]:
    """The message, status and kind of an error object, or of a body that holds one.

    Shapes: ``{"error": {"message", "code", "type"}}`` (OpenAI, llama.cpp, Ollama's compat
    layer), ``{"error": "..."}`` (ollama.com), ``{"message", "code"}`` (vLLM; llama.cpp's bare
    stream error object). The status is ``code`` when it is an HTTP error status; the kind
    joins the ``type`` and a string ``code`` (``context_length_exceeded``)."""
    err = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(err, str):
        return one_line(err), None, ""
    if not isinstance(err, dict):
        return None, None, ""
    message = err.get("message")
    if not isinstance(message, str) and isinstance(data, dict):
        message = data.get("message")
    code = err.get("code")
    status = code if type(code) is int and 400 <= code <= 599 else None
    kind = " ".join(v for v in (err.get("type"), code) if isinstance(v, str))
    return (one_line(message) if isinstance(message, str) else None), status, kind


def error_message(body: bytes, content_type: str) -> str:
    """The server's own words from an error body, whichever shape it has."""
    message, _, _ = _error_parts(_error_body(body))
    if message is not None:
        return message
    text = body.decode("utf-8", errors="replace")
    if "html" in content_type.lower() or text.lstrip().startswith("<"):
        title = re.search(r"<title>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
        return "HTML page" + (f" ({one_line(title.group(1), 120)})" if title else "")
    return one_line(text) if text.strip() else "empty body"


_SHORT = reprlib.Repr()
_SHORT.maxlong = _SHORT.maxstring = 24


def _token_count(value: Any, name: str) -> int:
    """A usage count as the receipt may hold it: an integer from 0 to 2**53, nothing else
    (not a bool, a float such as 1e400, or thousands of digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKEN_COUNT:
        return value
    raise ValueError(
        f"usage.{name} is {_SHORT.repr(value)}, not a token count (an integer from 0 to 2**53)"
    )


def _usage(raw: Any) -> Usage | None:
    """The server's token counts; malformed ones make the answer unusable (as any other
    malformed field does): they would go into the receipt and every total built on it."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError("usage is not an object")
    prompt = _token_count(raw.get("prompt_tokens"), "prompt_tokens")
    completion = _token_count(raw.get("completion_tokens"), "completion_tokens")
    total = _token_count(raw.get("total_tokens", prompt + completion), "total_tokens")
    return Usage(prompt, completion, total)


def _text_field(obj: dict[str, Any], *names: str) -> str | None:
    for n in names:
        v = obj.get(n)
        if isinstance(v, str):
            return v
    return None


@dataclass
class _StreamState:
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    keys: dict[str, None] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str | None = None
    done: bool = False
    pieces: int = 0
    seen: bool = False
    """Any line but blank ones arrived."""


@functools.cache
def _tls_context() -> ssl.SSLContext | bool:
    """httpx's default verifying TLS context, built once per process: loading the CA bundle
    takes ~50 ms, which every client (one per review, per batch endpoint) would pay again."""
    make = getattr(httpx, "create_ssl_context", None)  # public from httpx 0.28
    return make() if make is not None else True


@functools.cache
def _no_tls_context() -> ssl.SSLContext:
    """For plain-http endpoints: a context that trusts no certificate at all, so nothing can
    ever be accepted over TLS with it, and that costs nothing to build (no CA bundle)."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


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
        self._http = http or httpx.Client(
            timeout=httpx.Timeout(self.timeouts.read, connect=self.timeouts.connect, pool=None),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=64),
            follow_redirects=False,
            # Loading the CA bundle costs ~50 ms, a sixth of a whole local review: only an
            # https endpoint needs it.
            verify=_tls_context() if url.startswith("https:") else _no_tls_context(),
        )
        if self._own_http:
            deadline.bound_client(self._http)

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

    def _headers(self, stream: bool) -> dict[str, str]:
        h = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if stream else "application/json",
            # Only what bodyread can inflate within bounds (httpx would offer br/zstd too).
            "Accept-Encoding": "gzip, deflate",
            "User-Agent": f"deepseek-review/{__version__}",
        }
        if self._key:
            h["Authorization"] = f"Bearer {self._key}"
        return h

    # ------------------------------------------------------------------ public

    def complete(
        self,
        body: bytes,
        *,
        model: str,
        stream: bool,
        progress: ProgressFn | None = None,
    ) -> Completion:
        """Send ``body`` (exactly these bytes) until one attempt yields a usable completion."""
        started = time.monotonic()
        attempts = 0

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            backoff = min(
                self.policy.backoff_max,
                self.policy.backoff_initial * 2 ** (state.attempt_number - 1),
            )
            delay = random.uniform(backoff / 2, backoff) if backoff else 0.0
            if isinstance(exc, _Retryable) and exc.retry_after is not None:
                delay = max(delay, exc.retry_after)
            return delay

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            delay = state.upcoming_sleep
            if isinstance(exc, _Retryable) and exc.retry_after is not None:
                self.throttle.penalize(delay)
            log.warning(
                "attempt %d/%d failed: %s; retrying in %.1fs",
                state.attempt_number,
                self.policy.max_attempts,
                exc,
                delay,
            )

        def stop(state: RetryCallState) -> bool:
            exc = state.outcome.exception() if state.outcome else None
            cap = exc.cap if isinstance(exc, _Retryable) else None
            limit = self.policy.max_attempts if cap is None else min(cap, self.policy.max_attempts)
            return state.attempt_number >= limit

        retrying = Retrying(
            stop=stop,
            wait=wait,
            retry=retry_if_exception_type(_Retryable),
            before_sleep=before_sleep,
            sleep=self.throttle.sleep,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    attempts += 1
                    self.throttle.wait_turn()
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
                    )
        except _Retryable as exc:
            final = exc.final
            suffix = f" (after {attempts} attempt{'s' if attempts != 1 else ''})"
            raise type(final)(final.message + suffix, hint=final.hint) from None
        raise AssertionError("unreachable: tenacity returned without an outcome")

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
                    "POST", self.url, content=body, headers=self._headers(stream)
                ) as resp,
            ):
                if resp.status_code != 200:
                    self._raise_status(resp, model)
                answered = True
                ctype = resp.headers.get("content-type", "")
                if stream and "text/event-stream" in ctype:
                    return self._read_stream(resp, progress, t0, model)
                return self._read_json(resp, model)
        except httpx.TimeoutException as exc:
            if deadline.passed(end):
                raise _Retryable(
                    ServerError(
                        f"{self.url}: no complete answer within --total-timeout "
                        f"{self.timeouts.total:g}s",
                        hint="raise --total-timeout",
                    )
                ) from None
            kind = "connect" if isinstance(exc, httpx.ConnectTimeout) else "read"
            raise _Retryable(
                ServerError(f"{self.url}: {kind} timeout", hint=self._timeout_hint(kind))
            ) from None
        except bodyread.TooBig as exc:
            raise BadResponse(
                f"{self.url}: {exc}; refusing to read more (not retried)",
                hint="is --endpoint the chat-completions server you meant?",
            ) from None
        except bodyread.BodyError as exc:
            raise _Retryable(BadResponse(f"{self.url}: {exc}")) from None
        except httpx.TransportError as exc:
            why = one_line(self._scrub(str(exc))) or type(exc).__name__
            if answered:  # reached, and it said 200: the answer itself broke off
                raise _Retryable(
                    BadResponse(f"{self.url}: the answer broke off before its end ({why})")
                ) from None
            refused = _refused(exc)
            hint = serverhints.unreachable(self.advice, self.url, why, model=model, refused=refused)
            # Nothing listening on this machine is not cured by waiting 15 s; a remote server
            # that refuses may be restarting.
            local = refused and is_loopback_host(httpx.URL(self.url).host)
            raise _Retryable(
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
            kind = _error_parts(_error_body(raw))[2]
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
    ) -> ServerError | _Retryable:
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
            return _Retryable(BadResponse(text))
        if status in RETRY_STATUSES:
            hint = "the server is rate-limiting; wait, or lower --jobs" if status == 429 else ""
            return _Retryable(ServerError(text, hint=hint), retry_after=retry_after)
        if status in (401, 403):
            sent = self._key is not None
            hint = serverhints.unauthorized(self.advice, self.url, key_sent=sent)
            return ServerError(text, hint=hint)
        if status == 404:
            return ServerError(text, hint=serverhints.not_found(self.advice, model, msg))
        return ServerError(
            text, hint="the server refused the request; check --model and --extra-body"
        )

    def _reported(self, raw: bytes, where: str, model: str) -> ServerError | _Retryable:
        """An error the server sent inside a 200 answer (``raw``: the error's JSON, or text),
        handled as the status it carries would be."""
        raw = self._scrub_bytes(raw)
        try:
            data = safejson.loads(raw, what="error", max_bytes=self.max_line_bytes)
        except ValueError:
            data = raw.decode("utf-8", errors="replace")
        msg, status, kind = _error_parts(data)
        if msg is None:
            msg = one_line(raw.decode("utf-8", errors="replace"), 200) or "no message"
        shown = f"{where} (code {status})" if status is not None else where
        return self._refusal(status, shown, msg, kind, model)

    def _read_json(self, resp: httpx.Response, model: str) -> Completion:
        raw = bodyread.read_body(resp, self.max_response_bytes)
        try:
            data = safejson.loads(raw, what="answer", max_bytes=self.max_response_bytes)
        except safejson.JSONRefused as exc:
            raise _Retryable(BadResponse(f"{self.url}: {exc}")) from None
        except ValueError:
            shown = (
                "empty body"
                if not raw.strip()
                else error_message(self._scrub_bytes(raw), resp.headers.get("content-type", ""))
            )
            raise _Retryable(BadResponse(f"{self.url}: answer is not JSON ({shown})")) from None
        if isinstance(data, dict) and data.get("error") is not None:
            where = f"{self.url} answered 200 with an error"
            raise self._reported(raw[:MAX_ERROR_BODY_BYTES], where, model)
        try:
            return _completion_from_json(data)
        except ValueError as exc:
            why = one_line(self._scrub(str(exc)))
            raise _Retryable(BadResponse(f"{self.url}: unusable answer: {why}")) from None

    def _read_stream(
        self, resp: httpx.Response, progress: ProgressFn | None, t0: float, model: str
    ) -> Completion:
        st = _StreamState()
        lines = bodyread.split_lines(
            bodyread.iter_body(resp, self.max_response_bytes), self.max_line_bytes
        )
        try:
            self._read_events(st, lines, progress, t0, model)
        except (httpx.RemoteProtocolError, httpx.ReadError):  # cut off; a timeout is not this
            if st.seen:
                raise
            # A crash, perhaps, or a proxy's hiccup: the whole policy, as for any cut answer.
            raise _Retryable(self._nothing("the connection closed before any data")) from None
        if not st.seen:
            # The server ended the answer on purpose, empty: it does so again for this request.
            raise _Retryable(
                self._nothing("closed the stream with no data at all"), cap=FAST_FAIL_ATTEMPTS
            )
        if st.finish_reason is None or not st.done:
            missing = "finish chunk" if st.finish_reason is None else "data: [DONE]"
            raise _Retryable(BadResponse(f"{self.url}: stream ended without its {missing}"))
        _read_past_done(lines)
        if st.keys and not st.keys.keys() & _TEXT_KEYS:
            # A stream that ended with its finish chunk is complete whatever its content: an
            # empty answer may be just `delta: {}` + finish (llama.cpp, when the answer ended
            # exactly at the previous cap). But deltas that carry fields and never a text
            # field hold a message in a shape we cannot read: not an answer.
            raise _Retryable(BadResponse(f"{self.url}: stream carried no message content"))
        try:
            content, reasoning = _join_text(st.content), _join_text(st.reasoning)
        except ValueError as exc:
            raise _Retryable(BadResponse(f"{self.url}: unusable answer: {exc}")) from None
        return Completion(
            content=content,
            reasoning=reasoning or None,
            finish_reason=st.finish_reason,
            usage=st.usage,
            message_keys=tuple(st.keys),
            model=st.model,
            attempts=1,
            elapsed=time.monotonic() - t0,
        )

    def _read_events(
        self,
        st: _StreamState,
        lines: Iterator[bytes],
        progress: ProgressFn | None,
        t0: float,
        model: str,
    ) -> None:
        """Read the stream's lines into ``st`` up to ``data: [DONE]`` or the body's end.

        An error the server reports in the stream ends it: a ``data:`` chunk holding
        ``error``, the data of an ``event: error``, or llama.cpp's ``error:`` line (before its
        HTTP layer was rewritten it sent the error as that line, then ``data: [DONE]``)."""
        idle = 0
        event = b""
        where = f"{self.url} sent an error in its stream"
        for line in lines:
            st.seen = st.seen or bool(line.strip())
            if line.startswith(b"event:"):
                event = line[6:].strip()
            elif not line:
                event = b""  # a blank line ends an event
            payload = _sse_data(line)
            if line.startswith(b"error:"):
                raise self._reported(line[6:].strip(), where, model)
            if event == b"error" and payload is not None:
                raise self._reported(payload, where, model)
            if payload == b"[DONE]":
                st.done = True
                return
            before = (st.pieces, st.finish_reason, st.usage)
            if payload is not None:
                try:
                    chunk = safejson.loads(
                        payload, what="stream chunk", max_bytes=self.max_line_bytes
                    )
                    if isinstance(chunk, dict) and chunk.get("error") is not None:
                        raise self._reported(payload, where, model)
                    _apply_chunk(st, chunk)
                except ValueError as exc:
                    raise _Retryable(
                        BadResponse(
                            f"{self.url}: bad stream chunk: {one_line(self._scrub(str(exc)), 200)}"
                        )
                    ) from None
            idle = idle + 1 if (st.pieces, st.finish_reason, st.usage) == before else 0
            if idle > MAX_IDLE_LINES:
                raise _Retryable(
                    BadResponse(
                        f"{self.url}: {MAX_IDLE_LINES} stream lines in a row carried no "
                        "content, reasoning, finish_reason or usage"
                    )
                )
            if progress is not None and payload is not None:
                progress(st.pieces, time.monotonic() - t0)

    def _nothing(self, what: str) -> BadResponse:
        """A 200 stream that ended before a single line, said plainly."""
        return BadResponse(
            f"{self.url} answered 200 and {what}",
            hint="try --no-stream: some servers give their reason only there "
            "(llama-cpp-python, for a prompt over its context)",
        )


def _join_text(pieces: list[str]) -> str:
    """The pieces as one valid Unicode string.

    JSON ``\\uXXXX`` escapes can encode UTF-16 surrogates; a server that splits a pair across
    two stream chunks leaves two halves that only make a character once joined. An unpaired
    half cannot be written as UTF-8 at all, so it makes the answer unusable.
    """
    text = "".join(pieces)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
        except UnicodeDecodeError:
            raise ValueError("the text holds an unpaired UTF-16 surrogate (not Unicode)") from None
    return text


def _refused(exc: BaseException) -> bool:
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


#: Delta fields that carry the answer's text (or the model's thinking).
_TEXT_KEYS = frozenset({"content", "reasoning", "reasoning_content"})

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


def _sse_data(line: bytes) -> bytes | None:
    """The payload of an SSE ``data:`` line; None for any other line (comments, ``event:``,
    blanks)."""
    return line[5:].strip() if line.startswith(b"data:") else None


def _apply_chunk(st: _StreamState, chunk: Any) -> None:
    if not isinstance(chunk, dict):
        raise ValueError("chunk is not an object")
    if isinstance(chunk.get("model"), str):
        st.model = chunk["model"]
    if chunk.get("usage") is not None:
        st.usage = _usage(chunk["usage"])
    choices = chunk.get("choices")
    if choices is None:
        return
    if not isinstance(choices, list):
        raise ValueError("choices is not a list")
    for choice in choices[:1]:
        if not isinstance(choice, dict):
            raise ValueError("choice is not an object")
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict):
            raise ValueError("delta is not an object")
        for k in delta:
            st.keys.setdefault(k)
        text = delta.get("content")
        if text is not None and not isinstance(text, str):
            raise ValueError("delta.content is not a string")
        thought = _text_field(delta, "reasoning", "reasoning_content")
        if text:
            st.content.append(text)
            st.pieces += 1
        if thought:
            st.reasoning.append(thought)
            st.pieces += 1
        if choice.get("finish_reason") is not None:
            fr = choice["finish_reason"]
            if not isinstance(fr, str):
                raise ValueError("finish_reason is not a string")
            st.finish_reason = fr


def _completion_from_json(data: Any) -> Completion:
    if not isinstance(data, dict):
        raise ValueError("body is not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ValueError("no choices")
    choice = choices[0]
    if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
        raise ValueError("choices[0].message is missing")
    message = choice["message"]
    if "content" not in message:
        raise ValueError("message.content is missing")
    content = message["content"]
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise ValueError(f"message.content is {type(content).__name__}, not a string")
    content = _join_text([content])
    reasoning = _text_field(message, "reasoning", "reasoning_content")
    reasoning = _join_text([reasoning]) if reasoning else None
    fr = choice.get("finish_reason")
    if fr is not None and not isinstance(fr, str):
        raise ValueError("finish_reason is not a string")
    return Completion(
        content=content,
        reasoning=reasoning or None,
        finish_reason=fr,
        usage=_usage(data.get("usage")),
        message_keys=tuple(str(k) for k in message),
        model=data.get("model") if isinstance(data.get("model"), str) else None,
        attempts=1,
        elapsed=0.0,
    )
