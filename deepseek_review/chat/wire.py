"""The chat-completions answer as it comes off the wire: a JSON body or SSE stream lines
turned into a :class:`~deepseek_review.chat.types.Completion`. Pure functions of bytes and parsed
JSON, no HTTP: testable without a server.

Anything malformed raises :class:`ValueError` (the answer is unusable; the caller words it).
An error the server sends inside a 200 answer (a ``{"error": ...}`` body or stream chunk,
llama.cpp's ``error:`` stream line, an SSE ``event: error``) is raised as
:class:`ReportedError`, carrying the server's bytes, for the caller to handle as the status
it names.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from deepseek_review.chat.types import Completion, Usage
from deepseek_review.util import safejson

#: Stream lines in a row that carry no content, reasoning, finish_reason or usage (blank
#: lines, comments, empty deltas): a stream that keeps sending nothing is not an answer.
MAX_IDLE_LINES = 10_000
#: The largest token count taken as real: JSON's exact integers (and far beyond any model).
MAX_TOKEN_COUNT = 2**53
#: Delta fields that carry the answer's text (or the model's thinking).
TEXT_KEYS = frozenset({"content", "reasoning", "reasoning_content"})
#: Delta fields that say whose message it is, not what it says: a delta of these alone is
#: no message body (llama-cpp-python's first chunk is ``{"role": "assistant"}``).
MESSAGE_META_KEYS = frozenset({"role"})


class ReportedError(Exception):
    """The server reported an error inside its 200 answer; ``raw`` is the error's JSON (or
    text), not yet scrubbed of the key."""

    def __init__(self, raw: bytes) -> None:
        super().__init__("the server reported an error")
        self.raw = raw


class BadChunk(ValueError):
    """A stream chunk that is not JSON or not a chunk's shape (the message says which)."""


class IdleStream(ValueError):
    """Too many stream lines in a row carried nothing."""


def carries_error(data: Any) -> bool:
    """The parsed body or chunk is an error object, not an answer (``"error": null`` is none)."""
    return isinstance(data, dict) and data.get("error") is not None


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


def usage(raw: Any) -> Usage | None:
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


#: Ollama's durations (nanoseconds; the native API's, :mod:`deepseek_review.chat.native`).
_DURATIONS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")
#: Counts servers report beyond the receipt's three, under the names the request record uses.
USAGE_DETAILS = ("reasoning_tokens", "prompt_cache_hit_tokens", "prompt_cache_miss_tokens")


def usage_details(raw: Any) -> dict[str, int]:
    """Reasoning tokens (``completion_tokens_details``) and prompt-cache hits and misses:
    DeepSeek's ``prompt_cache_hit_tokens``/``prompt_cache_miss_tokens``, or OpenAI's and
    vLLM's ``prompt_tokens_details.cached_tokens`` (a miss is the rest of the prompt). What is
    absent or not a token count is left out: these only inform, they are never checked."""
    if not isinstance(raw, dict):
        return {}
    prompt = raw.get("prompt_tokens")
    found: dict[str, Any] = {}
    for group, key, name in (
        ("completion_tokens_details", "reasoning_tokens", "reasoning_tokens"),
        ("prompt_tokens_details", "cached_tokens", "prompt_cache_hit_tokens"),
    ):
        sub = raw.get(group)
        if isinstance(sub, dict) and key in sub:
            found[name] = sub[key]
    if "prompt_cache_hit_tokens" in found:
        hit = found["prompt_cache_hit_tokens"]
        both = isinstance(hit, int) and isinstance(prompt, int)
        found["prompt_cache_miss_tokens"] = prompt - hit if both else None
    for name in ("prompt_cache_hit_tokens", "prompt_cache_miss_tokens", *_DURATIONS):
        if name in raw:
            found[name] = raw[name]
    return _counts(found)


def _counts(found: dict[str, Any]) -> dict[str, int]:
    return {
        k: v
        for k, v in found.items()
        if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_TOKEN_COUNT
    }


def cache_details(raw_usage: Any, timings: Any) -> dict[str, int]:
    """:func:`usage_details`, with llama.cpp's prompt-cache counts where ``usage`` has none:
    its ``timings`` (beside ``usage`` in a reply or its last stream chunk) say how many prompt
    tokens the slot's cache served (``cache_n``) and how many were evaluated (``prompt_n``).
    Only both together count: a hit without its miss gives no share of the prompt."""
    details = usage_details(raw_usage)
    if "prompt_cache_hit_tokens" in details or not isinstance(timings, dict):
        return details
    found = _counts(
        {
            "prompt_cache_hit_tokens": timings.get("cache_n"),
            "prompt_cache_miss_tokens": timings.get("prompt_n"),
        }
    )
    return {**details, **found} if len(found) == 2 else details


def _text_field(obj: dict[str, Any], *names: str) -> str | None:
    for n in names:
        v = obj.get(n)
        if isinstance(v, str):
            return v
    return None


def join_text(pieces: list[str]) -> str:
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


def completion_from_json(data: Any) -> Completion:
    """A non-streamed answer (``attempts`` and ``elapsed`` are the caller's to fill in)."""
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
    content = join_text([content])
    reasoning = _text_field(message, "reasoning", "reasoning_content")
    reasoning = join_text([reasoning]) if reasoning else None
    fr = choice.get("finish_reason")
    if fr is not None and not isinstance(fr, str):
        raise ValueError("finish_reason is not a string")
    return Completion(
        content=content,
        reasoning=reasoning or None,
        finish_reason=fr,
        usage=usage(data.get("usage")),
        message_keys=tuple(str(k) for k in message),
        model=data.get("model") if isinstance(data.get("model"), str) else None,
        attempts=1,
        elapsed=0.0,
        usage_details=cache_details(data.get("usage"), data.get("timings")),
    )


@dataclass
class StreamState:
    """What a stream has carried so far."""

    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    keys: dict[str, None] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage | None = None
    usage_details: dict[str, int] = field(default_factory=dict)
    timings: Any = None
    """llama.cpp's ``timings`` (its last stream chunk's): prompt-cache counts."""
    model: str | None = None
    done: bool = False
    pieces: int = 0
    text_bytes: int = 0
    """UTF-8 bytes of content and reasoning so far: what the live progress estimates tokens
    from (a chunk may carry one token or many)."""
    seen: bool = False
    """Any line but blank ones arrived."""


def sse_data(line: bytes) -> bytes | None:
    """The payload of an SSE ``data:`` line; None for any other line (comments, ``event:``,
    blanks)."""
    return line[5:].strip() if line.startswith(b"data:") else None


def _size(text: str) -> int:
    """UTF-8 bytes of a piece of text; half a surrogate pair (joined, or refused, once the
    stream ends: :func:`join_text`) counts as its three bytes."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def apply_chunk(st: StreamState, chunk: Any) -> None:
    """Add one parsed stream chunk to ``st``."""
    if not isinstance(chunk, dict):
        raise ValueError("chunk is not an object")
    if isinstance(chunk.get("model"), str):
        st.model = chunk["model"]
    if chunk.get("usage") is not None:
        st.usage = usage(chunk["usage"])
        st.usage_details = usage_details(chunk["usage"])
    if chunk.get("timings") is not None:
        st.timings = chunk["timings"]
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
            st.text_bytes += _size(text)
        if thought:
            st.reasoning.append(thought)
            st.pieces += 1
            st.text_bytes += _size(thought)
        if choice.get("finish_reason") is not None:
            fr = choice["finish_reason"]
            if not isinstance(fr, str):
                raise ValueError("finish_reason is not a string")
            st.finish_reason = fr


def read_events(
    st: StreamState,
    lines: Iterable[bytes],
    *,
    max_line_bytes: int,
    on_data: Callable[[int], None] | None = None,
) -> None:
    """Read the stream's lines into ``st`` up to ``data: [DONE]`` or the lines' end;
    ``on_data`` is told the bytes of text so far (:attr:`StreamState.text_bytes`) after each
    ``data:`` line.

    An error the server reports in the stream ends it (:class:`ReportedError`): a ``data:``
    chunk holding ``error``, the data of an ``event: error``, or llama.cpp's ``error:`` line
    (before its HTTP layer was rewritten it sent the error as that line, then
    ``data: [DONE]``)."""
    idle = 0
    event = b""
    for line in lines:
        st.seen = st.seen or bool(line.strip())
        if line.startswith(b"event:"):
            event = line[6:].strip()
        elif not line:
            event = b""  # a blank line ends an event
        payload = sse_data(line)
        if line.startswith(b"error:"):
            raise ReportedError(line[6:].strip())
        if event == b"error" and payload is not None:
            raise ReportedError(payload)
        if payload == b"[DONE]":
            st.done = True
            return
        before = (st.pieces, st.finish_reason, st.usage)
        if payload is not None:
            try:
                chunk = safejson.loads(payload, what="stream chunk", max_bytes=max_line_bytes)
                if carries_error(chunk):
                    raise ReportedError(payload)
                apply_chunk(st, chunk)
            except ValueError as exc:
                raise BadChunk(str(exc)) from None
        idle = idle + 1 if (st.pieces, st.finish_reason, st.usage) == before else 0
        if idle > MAX_IDLE_LINES:
            raise IdleStream(
                f"{MAX_IDLE_LINES} stream lines in a row carried no "
                "content, reasoning, finish_reason or usage"
            )
        if on_data is not None and payload is not None:
            on_data(st.text_bytes)


def check_ended(st: StreamState) -> None:
    """A stream is an answer only once it sent its finish chunk and ``data: [DONE]``."""
    if st.finish_reason is None or not st.done:
        missing = "finish chunk" if st.finish_reason is None else "data: [DONE]"
        raise ValueError(f"stream ended without its {missing}")


def stream_completion(st: StreamState, elapsed: float) -> Completion:
    """The completion an ended stream carried (``attempts`` is the caller's to fill in)."""
    body = st.keys.keys() - MESSAGE_META_KEYS
    if body and not body & TEXT_KEYS:
        # A stream that ended with its finish chunk is complete whatever its content: an
        # empty answer may be just `delta: {}` + finish (llama.cpp, when the answer ended
        # exactly at the previous cap), after a first chunk holding the role alone
        # (llama-cpp-python). But deltas that carry a message's fields and never a text
        # field hold a message in a shape we cannot read: not an answer.
        raise ValueError(
            f"stream carried no message content (its deltas held only {', '.join(sorted(body))})"
        )
    try:
        content, reasoning = join_text(st.content), join_text(st.reasoning)
    except ValueError as exc:
        raise ValueError(f"unusable answer: {exc}") from None
    return Completion(
        content=content,
        reasoning=reasoning or None,
        finish_reason=st.finish_reason,
        usage=st.usage,
        message_keys=tuple(st.keys),
        model=st.model,
        attempts=1,
        elapsed=elapsed,
        usage_details=(
            cache_details(None, st.timings) | st.usage_details if st.timings else st.usage_details
        ),
    )
