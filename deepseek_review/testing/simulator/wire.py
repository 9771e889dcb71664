"""Ollama's OpenAI-compatible wire shapes, as the simulator writes them.

Pure functions from a :class:`~deepseek_review.testing.simulator.answer.Plan` to bodies and SSE
events, plus the fault catalogue, so the HTTP layer only moves bytes. Shapes follow
shared/notes/ollama-openai-wire.md (Ollama >= 0.32.6, and the older stream framing).
"""

from __future__ import annotations

import json
import time
from typing import Any

from deepseek_review.testing.simulator import prefix_cache
from deepseek_review.testing.simulator.answer import Plan

#: Faults a well-behaved client should retry through.
TRANSIENT_FAULTS: tuple[str, ...] = (
    "500",
    "502",
    "503",
    "429",
    "429-string",
    "reset",
    "stall",
    "malformed",
    "cut-stream",
)
#: Answers a client must refuse as unusable rather than trust.
GARBAGE_FAULTS: tuple[str, ...] = (
    "html",
    "empty",
    "no-choices",
    "content-not-string",
    "content-missing",
    "blank-answer",
    "negative-usage",
    "huge",
)
ALL_FAULTS: tuple[str, ...] = TRANSIENT_FAULTS + GARBAGE_FAULTS

#: Status served for each fault (0: the connection is cut, no status line or no full body).
FAULT_STATUS = {"500": 500, "502": 502, "503": 503, "429": 429, "429-string": 429}
FAULT_STATUS.update({"reset": 0, "html": 502})
#: Ollama's answer when more requests wait than ``OLLAMA_MAX_QUEUE`` (``server/sched.go``).
QUEUE_FULL = "server busy, please try again.  maximum pending requests exceeded"
FAULT_MESSAGES = {
    500: "llama runner process has terminated: signal: killed",
    502: "bad gateway: upstream connection refused",
    503: "server busy, please try again.  maximum pending requests exceeded",
}
RATE_LIMIT_STRING = (
    "you (sim) have reached your hourly usage limit, upgrade for higher limits: "
    "https://ollama.com/upgrade"
)
HTML_502 = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.27.4</center>\r\n"
    b"</body>\r\n</html>\r\n"
)
HUGE_PADDING_BYTES = 80 * 1024 * 1024
#: What a prompt over ``context_window`` gets (``SimulatorConfig.context_overflow``).
CONTEXT_OVERFLOWS: tuple[str, ...] = ("clip", "refuse", "error-line", "error-chunk", "empty")
_ERROR_TYPES = {400: "invalid_request_error", 404: "not_found_error"}


def dumps(obj: object) -> bytes:
    """Compact JSON as Go writes it: UTF-8, no spaces (ASCII-escaped if text is not UTF-8)."""
    try:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj, separators=(",", ":")).encode("ascii")


def error_body(status: int, message: str) -> dict[str, Any]:
    """The compat layer's OpenAI-shaped error object."""
    kind = _ERROR_TYPES.get(status, "api_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def context_error(prompt_tokens: int, n_ctx: int) -> dict[str, Any]:
    """llama.cpp's error object for a prompt over its context (``send_error`` with
    ``ERROR_TYPE_EXCEED_CONTEXT_SIZE``): the body of its 400 is ``{"error": <this>}``."""
    return {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": prompt_tokens,
        "n_ctx": n_ctx,
    }


def overflow_events(mode: str, error: dict[str, Any]) -> list[bytes]:
    """The stream a server of ``mode`` sends for a prompt over its context, after a 200.

    ``error-line``: llama.cpp before its HTTP layer was rewritten (late 2025) wrote the error
    as a nonstandard ``error:`` SSE line, then ``data: [DONE]``. ``error-chunk``: llama.cpp's
    error once a stream has started, a ``data:`` chunk holding ``error``, and the end.
    ``empty``: llama-cpp-python, whose stream ends before a single line.
    """
    if mode == "error-line":
        return [b"error: " + dumps(error) + b"\n\n", SSE_DONE]
    if mode == "error-chunk":
        return [sse({"error": error})]
    return []


def usage(plan: Plan, details: bool = False, cache: str = "none") -> dict[str, Any]:
    """Token accounting; completion tokens include reasoning, never the echoed prefill.
    ``details``: DeepSeek's API's extra counts too (half the prompt a cache hit)."""
    completion = plan.completion_tokens
    body: dict[str, Any] = {
        "prompt_tokens": plan.prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": plan.prompt_tokens + completion,
    }
    if details:
        hit = plan.prompt_tokens // 2
        body["prompt_cache_hit_tokens"] = hit
        body["prompt_cache_miss_tokens"] = plan.prompt_tokens - hit
        body["completion_tokens_details"] = {"reasoning_tokens": len(plan.reasoning)}
    body.update(prefix_cache.usage_fields(plan, cache))
    return body


def completion(
    plan: Plan,
    *,
    model: str,
    ident: str,
    with_usage: bool,
    fault: str | None = None,
    details: bool = False,
    cache: str = "none",
) -> dict[str, Any]:
    """A non-streaming ``chat.completion`` body, with a garbage fault applied if asked."""
    message: dict[str, Any] = {"role": "assistant", "content": plan.text}
    if plan.reasoning:
        message["reasoning"] = "".join(plan.reasoning)
    body: dict[str, Any] = {
        "id": ident,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_ollama",
        "choices": [{"index": 0, "message": message, "finish_reason": plan.finish_reason}],
    }
    if with_usage or fault == "negative-usage":
        body["usage"] = usage(plan, details, cache)
    body.update(prefix_cache.timings(plan, cache))
    if fault is not None:
        mutate(body, fault)
    return body


def _groups(tokens: tuple[str, ...], size: int) -> list[str]:
    return ["".join(tokens[i : i + size]) for i in range(0, len(tokens), size)]


def stream_chunks(
    plan: Plan,
    *,
    model: str,
    ident: str,
    legacy: bool,
    include_usage: bool,
    llama: bool = False,
    group: int = 8,
    details: bool = False,
    role_chunk: bool = False,
    cache: str = "none",
) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of one stream, in order ([DONE] not included).

    Modern framing: a role chunk first (carrying the first reasoning group, if any), then
    reasoning and content chunks, then ``delta:{}`` with the finish reason. Legacy framing
    (before Ollama 0.32.6): role on every chunk, the finish reason on the last one, and a
    fresh ``created`` per chunk. llama.cpp framing: the role rides on the first delta that
    carries text, reasoning comes as ``reasoning_content``, and ``delta:{}`` carries the finish
    reason, so an empty answer is that one chunk. llama-cpp-python framing (``role_chunk``):
    llama.cpp's, but the role comes alone in a first chunk, so an empty answer is that chunk
    and the finish one.
    """
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": int(time.time()) if legacy else created,
            "model": model,
            "system_fingerprint": "fp_ollama",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    deltas = _deltas(plan, group)
    if llama or role_chunk:
        chunks = [chunk(d, None) for d in _llama_deltas(deltas, role_chunk=role_chunk)]
        chunks.append(chunk({}, plan.finish_reason))
    elif legacy:
        deltas = deltas or [{"content": ""}]
        last = len(deltas) - 1
        chunks = [
            chunk({"role": "assistant", **delta}, plan.finish_reason if i == last else None)
            for i, delta in enumerate(deltas)
        ]
    else:
        first: dict[str, Any] = {"role": "assistant", "content": ""}
        if deltas and "reasoning" in deltas[0]:
            first.update(deltas.pop(0))
        chunks = [chunk(first, None), *(chunk(d, None) for d in deltas)]
        chunks.append(chunk({}, plan.finish_reason))
    chunks[-1].update(prefix_cache.timings(plan, cache))
    if include_usage:
        chunks.append({**chunks[-1], "choices": [], "usage": usage(plan, details, cache)})
    return chunks


def _llama_deltas(deltas: list[dict[str, Any]], *, role_chunk: bool) -> list[dict[str, Any]]:
    """``deltas`` as llama.cpp frames them: reasoning as ``reasoning_content``, the role on the
    first delta (llama-cpp-python, ``role_chunk``: alone in a delta of its own)."""
    deltas = [{"reasoning_content": d["reasoning"]} if "reasoning" in d else d for d in deltas]
    if role_chunk:
        deltas.insert(0, {"role": "assistant"})
    elif deltas:
        deltas[0] = {"role": "assistant", **deltas[0]}
    return deltas


def _deltas(plan: Plan, group: int) -> list[dict[str, Any]]:
    """The text of a stream's deltas before framing: reasoning, an echoed prefill, content,
    ``group`` tokens to a delta."""
    deltas: list[dict[str, Any]] = [
        {"content": "", "reasoning": text} for text in _groups(plan.reasoning, group)
    ]
    if plan.echo:
        deltas.append({"content": plan.echo})
    deltas.extend({"content": text} for text in _groups(plan.content, group))
    return deltas


def mutate(body: dict[str, Any], fault: str) -> None:
    """Apply a garbage fault to a completion body or a stream chunk, in place."""
    if fault == "negative-usage" and "usage" in body:
        body["usage"]["prompt_tokens"] = -5
        body["usage"]["total_tokens"] = body["usage"]["completion_tokens"] - 5
    for choice in body.get("choices", ()):
        part = choice.get("message", choice.get("delta", {}))
        if fault == "content-not-string" and "content" in part:
            part["content"] = 42
        elif fault == "content-missing":
            text = part.pop("content", None)
            if "delta" in choice and text is not None:
                part["text"] = text  # streamed: the text under a key no chat API reads
        elif fault == "blank-answer" and "content" in part:
            part["content"] = ""
    if fault == "no-choices" and "choices" in body:
        body["choices"] = []


def sse(chunk: dict[str, Any]) -> bytes:
    """One server-sent event, exactly ``data: <compact json>\\n\\n``."""
    return b"data: " + dumps(chunk) + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"
SSE_GARBAGE = b'data: {"id":\n\n'


#: ``reasoning_effort`` values Ollama's OpenAI endpoint takes (0.32.11+).
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "max", "xhigh", "ultra")


def thinks(req: dict[str, Any]) -> bool:
    """Whether a chat request leaves thinking on, by each server's switch: Ollama's and
    vLLM's ``reasoning_effort: none``, a chat template's ``enable_thinking: false``
    (vLLM, llama.cpp), DeepSeek's ``thinking: {"type": "disabled"}``."""
    kwargs = req.get("chat_template_kwargs")
    thinking = req.get("thinking")
    return not (
        req.get("reasoning_effort") == "none"
        or (isinstance(kwargs, dict) and kwargs.get("enable_thinking") is False)
        or (isinstance(thinking, dict) and thinking.get("type") == "disabled")
    )
