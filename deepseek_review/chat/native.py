"""Ollama's native chat API (``--api ollama``): ``POST /api/chat`` with ``options.num_ctx``.

Ollama's OpenAI endpoint ignores ``num_ctx``, so a prompt over the server's context is cut
silently; the native endpoint takes it per request. The body is built here: ``options`` holds
what Ollama reads (``num_ctx`` sized to the prompt plus ``max_tokens``, rounded up to a few
fixed steps so a batch does not reload the model for each entry; ``num_predict``;
``temperature``), and ``truncate: false`` and ``shift: false`` (:data:`REFUSE_OVERFLOW`) make
a prompt over ``num_ctx`` an error rather than silently cut. The top-level ``temperature`` and
``max_tokens`` stay in the body too (Ollama drops keys it does not know) so the request record
reads the same for both APIs. Answers are one JSON object, or NDJSON lines when streaming, the
last with ``done: true``, ``done_reason``, ``prompt_eval_count``, ``eval_count`` and
durations in nanoseconds; each is turned into the OpenAI shape :mod:`deepseek_review.chat.wire`
reads (thinking is ``reasoning``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from deepseek_review.chat.endpoint import Endpoint
from deepseek_review.chat.tokens import estimate_tokens
from deepseek_review.errors import ConfigError
from deepseek_review.options.table import name_of
from deepseek_review.util import safejson

if TYPE_CHECKING:
    from deepseek_review.chat import wire as chatwire

NATIVE_CHAT_PATH = "/api/chat"
OPENAI_CHAT_PATH = "/v1/chat/completions"
APIS = ("openai", "ollama")
#: The options the native body sets itself on every request.
_SIZED = ("num_ctx", "num_predict", "temperature")
#: Durations Ollama reports (nanoseconds), kept with the other counts beyond usage.
DURATIONS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")


#: Top-level fields that make Ollama (0.12.6 and later: ``api/types.go`` ``ChatRequest``
#: ``Truncate``/``Shift *bool``, both true when absent) refuse what it would otherwise do
#: silently: ``truncate: false``, a prompt over ``num_ctx`` is a 400 ``{"error": "the input
#: length exceeds the context length"}`` instead of its start dropped; ``shift: false``, an
#: answer that reaches the end of the context stops (``done_reason: "length"``) instead of
#: the context being shifted under it. Older versions ignore fields they do not know.
REFUSE_OVERFLOW = {"truncate": False, "shift": False}


#: Contexts suggested in a fix (and, natively, sent as ``num_ctx``): a few fixed steps, so a
#: batch does not make the server reload the model for every entry.
STEPS = (4096, 8192, 16384, 32768, 65536, 131072, 262144)


def step_for(tokens: int) -> int:
    """The smallest step that holds ``tokens`` (beyond the last: rounded up to 64k)."""
    for step in STEPS:
        if tokens <= step:
            return step
    return -(-tokens // 65536) * 65536


def is_native(url: str) -> bool:
    return urlsplit(url).path == NATIVE_CHAT_PATH


def native_endpoint(endpoint: Endpoint, api: str, server: str = "ollama") -> Endpoint:
    """The endpoint to call for ``api``: the same origin (and key), ``/api/chat`` for Ollama's
    native API; the URL called is the one every receipt names. Only Ollama speaks it."""
    if api != "ollama":
        return endpoint
    if server != "ollama":
        raise ConfigError(
            f"{name_of('api')} ollama is Ollama's own API, but {name_of('server')} is {server}"
        )
    p = urlsplit(endpoint.url)
    return replace(endpoint, url=urlunsplit((p.scheme, p.netloc, NATIVE_CHAT_PATH, "", "")))


def chain_api(receipt_endpoint: str) -> str:
    """The API a chain was asked through, read from its receipt's endpoint (the URL called)."""
    return "ollama" if is_native(receipt_endpoint) else "openai"


def openai_url(url: str) -> str:
    """A native ``/api/chat`` URL as the endpoint option spells the server (its OpenAI chat
    URL, same origin): what a receipt's endpoint is resolved and trusted as."""
    if not is_native(url):
        return url
    p = urlsplit(url)
    return urlunsplit((p.scheme, p.netloc, OPENAI_CHAT_PATH, "", ""))


def recorded_extra(extra: dict[str, Any] | Any, api: str) -> dict[str, Any]:
    """A recorded body's extra fields as a continuation's: the native body's ``num_ctx``,
    ``num_predict`` and ``temperature`` are set again for the new request; other options stay."""
    out = dict(extra)
    given = out.pop("options", None) if api == "ollama" else None
    if isinstance(given, dict):
        kept = {k: v for k, v in given.items() if k not in _SIZED}
        if kept:
            out["options"] = kept
    return out


def num_ctx(messages: Iterable[dict[str, Any]], max_tokens: int) -> int:
    """The context to ask for: the prompt's estimate plus the answer's cap, on a fixed step."""
    return step_for(estimate_tokens(str(m.get("content", "")) for m in messages) + max_tokens)


def body(
    base: dict[str, Any],
    *,
    temperature: float,
    max_tokens: int,
    stream: bool,
    prompt_estimate: int | None = None,
) -> dict[str, Any]:
    """``base`` (extra fields, model, messages, the recorded top-level values) made native;
    ``prompt_estimate``: the messages' token estimate when their texts are not strings yet."""
    given = base.get("options")
    ctx = (
        num_ctx(base["messages"], max_tokens)
        if prompt_estimate is None
        else step_for(prompt_estimate + max_tokens)
    )
    base["options"] = {
        **(given if isinstance(given, dict) else {}),
        "num_ctx": ctx,
        "num_predict": max_tokens,
        "temperature": temperature,
    }
    for name, value in REFUSE_OVERFLOW.items():  # an extra_body that sets them is obeyed
        base.setdefault(name, value)
    base["stream"] = stream
    return base


def as_openai(obj: Any) -> Any:
    """One native answer object (or stream line) in the shape :mod:`chat.wire` reads."""
    from deepseek_review.chat import wire as chatwire

    if not isinstance(obj, dict) or chatwire.carries_error(obj):
        return obj
    message = obj.get("message")
    delta: dict[str, Any] = {}
    if isinstance(message, dict):
        # Thinking is read as ``reasoning`` (and recorded so in ``message_keys``).
        delta = {"reasoning" if k == "thinking" else k: v for k, v in message.items()}
    done = obj.get("done") is True
    choice: dict[str, Any] = {"message": delta, "delta": delta, "finish_reason": None}
    # No message at all: no choice (an answer without one is unusable, as in OpenAI's shape).
    out: dict[str, Any] = {"model": obj.get("model"), "choices": [choice] if message else []}
    if done and message:
        choice["finish_reason"] = obj.get("done_reason") or "stop"
        if "prompt_eval_count" in obj or "eval_count" in obj:
            prompt, completion = obj.get("prompt_eval_count", 0), obj.get("eval_count", 0)
            usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
            if isinstance(prompt, int) and isinstance(completion, int):
                usage["total_tokens"] = prompt + completion
            usage.update({k: obj[k] for k in DURATIONS if k in obj})
            out["usage"] = usage
    return out


def read_lines(
    st: chatwire.StreamState,
    lines: Iterable[bytes],
    *,
    max_line_bytes: int,
    on_data: Callable[[int], None] | None = None,
) -> None:
    """Read NDJSON lines into ``st`` up to the line with ``done: true`` (then ``st.done``).
    An ``{"error": ...}`` line is the server's error (:class:`chat.wire.ReportedError`)."""
    from deepseek_review.chat import wire as chatwire

    idle = 0
    for line in lines:
        if not line.strip():
            continue
        st.seen = True
        before = (st.pieces, st.finish_reason, st.usage)
        try:
            obj = safejson.loads(line, what="stream line", max_bytes=max_line_bytes)
            if chatwire.carries_error(obj):
                raise chatwire.ReportedError(line)
            chatwire.apply_chunk(st, as_openai(obj))
        except ValueError as exc:
            raise chatwire.BadChunk(str(exc)) from None
        if isinstance(obj, dict) and obj.get("done") is True:
            st.done = True
            return
        idle = idle + 1 if (st.pieces, st.finish_reason, st.usage) == before else 0
        if idle > chatwire.MAX_IDLE_LINES:
            raise chatwire.IdleStream(
                f"{chatwire.MAX_IDLE_LINES} stream lines in a row carried no content or thinking"
            )
        if on_data is not None:
            on_data(st.text_bytes)
