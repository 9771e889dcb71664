"""Calling an OpenAI-compatible ``/v1/chat/completions`` endpoint, with retries.

What is retried is decided here alone (the waiting between tries is :mod:`chat.retry`'s).
Retried (exponential backoff with jitter, ``Retry-After`` honoured up to a cap): connection
errors, timeouts, 429, 500, 502, 503, 504, and any answer that is not a usable completion
(bad JSON, a stream cut before its finish chunk or ``[DONE]``): such a body is a failed
attempt, never an answer. Never retried: other 4xx, which
get a message saying what to do instead (worded for the server kind, :mod:`chat.server_hints`).
Tried twice at most: a refused connection to loopback (no server is running there; a remote
server that refuses may be restarting, so it gets the whole policy) and a stream that closes
with no data at all.

An error the server sends inside a 200 answer (a ``{"error": ...}`` body or stream chunk,
llama.cpp's ``error:`` stream line, an SSE ``event: error``) is the server's error, in its
words: handled as the status it carries (``code``) would be, or as an unusable answer when it
names none; a prompt over the context is never retried, streamed or not.

Every answer is bounded (:mod:`chat.body`, :mod:`chat.deadline`): its decoded size, each stream
line, the run of stream lines that carry nothing, and the whole attempt's time. Too big is
not retried (the same request would get the same answer, paid for again); the rest is.

A 200 answer is read by :mod:`chat.answers` (on :mod:`chat.wire`), a refusal worded by
:mod:`chat.refusals` (on :mod:`chat.error_body` and :mod:`chat.server_hints`). The API key is only
ever
placed in the ``Authorization`` header and is scrubbed from every message.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time
from collections.abc import Callable, Iterator

import httpx

from deepseek_review.chat import answers, deadline, native, refusals, retry, transport
from deepseek_review.chat import body as bodyread
from deepseek_review.chat import server_hints as serverhints
from deepseek_review.chat.answers import FAST_FAIL_ATTEMPTS
from deepseek_review.chat.endpoint import is_loopback_host
from deepseek_review.chat.error_body import one_line
from deepseek_review.chat.refusals import MAX_ERROR_BODY_BYTES, RETRY_STATUSES
from deepseek_review.chat.retry import Retryable, Throttle
from deepseek_review.chat.server_hints import Advice
from deepseek_review.chat.transport import HttpClients, make_http_client, request_headers
from deepseek_review.chat.types import Completion, ProgressFn, RetryPolicy, Timeouts
from deepseek_review.errors import BadResponse, ServerError
from deepseek_review.util import safejson
from deepseek_review.util.redact import redact, redact_bytes

#: Asks one path of the endpoint's origin (a POST when given a body): its JSON, or None.
SideAsk = Callable[..., object]
#: One answer's body, decoded (decompressed), streamed or not: a streamed answer costs about
#: 200 bytes per chunk, so this still holds some 150,000 streamed tokens.
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
#: One line of a stream: a chunk is a few hundred bytes; a server that streams the whole
#: answer as one chunk still fits.
DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024

# What other modules and tests import from here (the wording is .refusals', the reading
# .answers').
__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "FAST_FAIL_ATTEMPTS",
    "MAX_ERROR_BODY_BYTES",
    "RETRY_STATUSES",
    "ChatClient",
    "SideAsk",
]


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
        http: HttpClients | None = None,
        advice: Advice | None = None,
    ) -> None:
        self.url = url
        self.native = native.is_native(url)
        """Ollama's ``/api/chat``: NDJSON answers (:mod:`deepseek_review.chat.native`)."""
        self._key = api_key
        self._headers = {stream: request_headers(stream, api_key) for stream in (False, True)}
        """A chat request's headers, by whether it streams (built once, not per request)."""
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

    @property
    def sends_key(self) -> bool:
        """An API key goes with every request."""
        return self._key is not None

    def scrub(self, text: str) -> str:
        """The text with the key taken out: always *before* any truncation, which could
        otherwise leave a prefix of the key that no longer matches."""
        return redact(text, self._key)

    def scrub_bytes(self, data: bytes) -> bytes:
        """:meth:`scrub` for bytes."""
        return redact_bytes(data, self._key)

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
        first_answer: bool = False,
    ) -> Completion:
        """Send ``body`` (exactly these bytes) until one attempt yields a usable completion.

        ``on_attempt`` is told of each attempt as it is sent; ``label`` (a batch: the entry's
        topic) goes on the retry lines logged, as ``batch_topic``. ``first_answer``: the
        chain's first request, whose answer must hold text (:func:`chat.answers.check_first`)."""
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
                    if first_answer:
                        answers.check_first(self, result)
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
            suffix = f" (after {attempts} attempt{'s' if attempts != 1 else ''}"
            if exc.cap is not None and attempts < self.policy.max_attempts:
                suffix += f"; a failure of this kind is tried at most {exc.cap} times"
            suffix += ")"
            again = type(final)(final.message + suffix, hint=final.hint)
            if isinstance(final, ServerError) and isinstance(again, ServerError):
                again.unreachable = final.unreachable
            raise again from None
        raise AssertionError("unreachable: tenacity returned without an outcome")

    @contextlib.contextmanager
    def side_requests(self, timeout: float = 5.0) -> Iterator[SideAsk]:
        """Ask paths (``/api/version``) of this endpoint's own origin: each answer's JSON on a
        200, else None (refused, 404, not JSON, too big: over ``max_bytes``, 1 MiB unless
        the caller expects more, as a tokenizer's list of a long prompt's tokens). A GET, or
        a POST of a body; the key goes with them as with chat requests, since the origin is
        the chat URL's. Their own client, closed at the end: a side request is neither a chat
        attempt nor a slot's."""
        headers = request_headers(False, self._key)
        base = httpx.URL(self.url)
        with make_http_client(self.timeouts, https=base.scheme == "https") as side:

            def ask(
                path: str, body: object = None, max_bytes: int = MAX_ERROR_BODY_BYTES
            ) -> object:
                url = base.copy_with(path=path, query=None, fragment=None)
                data = None if body is None else json.dumps(body).encode("utf-8")
                method = "GET" if data is None else "POST"
                try:
                    with (
                        side.lease() as lane,
                        deadline.within(timeout, lane.sockets) as attempt,
                        lane.client.stream(
                            method,
                            url,
                            headers=headers,
                            content=data,
                            timeout=attempt.timeout(lane.client.timeout),
                            extensions=attempt.extensions,
                        ) as r,
                    ):
                        if r.status_code != 200:
                            return None
                        raw = bodyread.read_body(r, max_bytes)
                    return safejson.loads(raw, what=path, max_bytes=max_bytes)
                except (httpx.HTTPError, bodyread.BodyError, ValueError, OSError):
                    return None

            yield ask

    # ------------------------------------------------------------------ one attempt

    @functools.cached_property
    def _target(self) -> httpx.URL:
        """The chat URL, parsed once for every request."""
        return httpx.URL(self.url)

    def _attempt(
        self, body: bytes, *, model: str, stream: bool, progress: ProgressFn | None
    ) -> Completion:
        t0 = time.monotonic()
        attempt = deadline.within(self.timeouts.total)
        end = attempt.end
        answered = False
        try:
            with (
                self._http.lease() as lane,
                attempt.through(lane.sockets),
                lane.client.stream(
                    "POST",
                    self._target,
                    content=body,
                    headers=self._headers[stream],
                    timeout=attempt.timeout(lane.client.timeout),
                    extensions=attempt.extensions,
                ) as resp,
            ):
                if resp.status_code != 200:
                    if resp.status_code in (429, 503):
                        self.throttle.busy()
                    raise refusals.status_error(self, resp, model)
                answered = True
                ctype = resp.headers.get("content-type", "")
                if stream and (self.native or "text/event-stream" in ctype):
                    return answers.read_stream(self, resp, progress, t0, model)
                return answers.read_json(self, resp, model)
        except httpx.TimeoutException as exc:
            if deadline.passed(end):
                raise Retryable(refusals.total_timeout(self)) from None
            kind = "connect" if isinstance(exc, httpx.ConnectTimeout) else "read"
            error = ServerError(f"{self.url}: {kind} timeout", hint=refusals.timeout_hint(kind))
            raise Retryable(_unreachable(error)) from None
        except bodyread.TooBig as exc:
            raise refusals.too_big(self, exc) from None
        except bodyread.BodyError as exc:
            if deadline.passed(end):  # the deadline cut the connection mid-body
                raise Retryable(refusals.total_timeout(self)) from None
            raise Retryable(BadResponse(f"{self.url}: {exc}")) from None
        except httpx.TransportError as exc:
            if deadline.passed(end):  # the deadline cut the connection
                raise Retryable(refusals.total_timeout(self)) from None
            why = one_line(self.scrub(str(exc))) or type(exc).__name__
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
                _unreachable(ServerError(f"cannot reach {self.url}: {why}", hint=hint)),
                cap=FAST_FAIL_ATTEMPTS if local else None,
            ) from None


def _unreachable(error: ServerError) -> ServerError:
    error.unreachable = True
    return error
