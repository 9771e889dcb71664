"""The simulator's configuration, its request log entries, and request validation.

Kept apart from the HTTP plumbing: these are the parts tests and scripts reason about.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from deepseek_review.testing.simulator import wire
from deepseek_review.testing.simulator.prefix_cache import PROMPT_CACHES
from deepseek_review.testing.simulator.structured import STRUCTURED_FAULTS
from deepseek_review.testing.simulator.wire import ALL_FAULTS, CONTEXT_OVERFLOWS, TRANSIENT_FAULTS

CHAT_PATH = "/v1/chat/completions"
#: What ``tokenizer`` may be (:mod:`.tokenizer`, which imports this module).
TOKENIZERS = ("none", "llama.cpp", "llama-cpp-python", "vllm")
#: What ``server_kind`` may be: the server whose identifying routes are answered.
SERVER_KINDS = ("ollama", "llama.cpp", "vllm", "other")


@dataclass
class SimulatorConfig:
    """Every behaviour knob; mutable at runtime (each request reads the current values)."""

    host: str = "127.0.0.1"
    port: int = 0
    latency: float = 0.0
    capacity: int = 0
    max_queue: int | None = None
    """With ``capacity``: how many requests may wait for a slot; the next gets Ollama's 503
    (``OLLAMA_MAX_QUEUE``: "server busy, please try again. maximum pending requests
    exceeded"). None: any number wait."""
    die_after: int | None = None
    """Answer this many chat requests, then die as a crashed server does: the next chat
    request's connection is cut, the port stops listening and every open connection is
    closed (requests in flight included). None: never."""
    answer_words: int = 200
    reasoning_words: int = 0
    echo_prefill: bool = False
    omit_usage: bool = False
    usage_details: bool = False
    """Usage as DeepSeek's API reports it: prompt-cache hits and misses, reasoning tokens."""
    prompt_cache: str = "none"
    """A prefix cache, reported as ``deepseek``, ``openai`` or ``llama.cpp`` report theirs
    (:mod:`.prefix_cache`); ``none``: no report (Ollama)."""
    context_window: int | None = None
    """The runtime context the OpenAI endpoint runs models with (``OLLAMA_CONTEXT_LENGTH``);
    None: the model's whole ``model_context_length``."""
    model_context_length: int = 262_144
    """The context the model was trained for (``/api/show``); ``num_ctx`` is capped at it."""
    preloaded: bool = False
    """Models count as loaded from the start (``/api/ps`` lists them); otherwise a model is
    loaded by its first chat request, with the context that request runs with."""
    context_overflow: str = "clip"
    """A prompt over ``context_window``: ``clip`` keeps its last tokens silently (Ollama);
    the others refuse it with llama.cpp's error, as a 400 when not streaming and, streaming,
    ``refuse``: a 400 too (llama.cpp now), ``error-line``/``error-chunk``: in the stream
    (older llama.cpp; see :func:`.wire.overflow_events`), ``empty``: a stream with nothing in
    it (llama-cpp-python)."""
    legacy_stream: bool = False
    llama_stream: bool = False
    """llama.cpp's stream framing: no empty role chunk, ``reasoning_content`` deltas, and a
    last ``delta: {}`` with the finish reason (an empty answer is that chunk alone)."""
    role_chunk: bool = False
    """llama-cpp-python's stream framing: llama.cpp's, but a first chunk holding the role alone
    (``delta: {"role": "assistant"}``), so an empty answer is that chunk and the finish one."""
    end_token: bool = False
    """The end of the answer costs one token, as with a real model: an answer that fills
    ``max_tokens`` exactly ends with ``length``, and the next request gets nothing and
    ``stop``."""
    directive_restarts: bool = False
    findings_line_offset: int = 0
    """The findings block's lines are off by this many (its quotes stay right), as a model's
    line numbers often are."""
    """Asked to continue by a user message (directive style), the model starts its answer
    over instead of going on (a server that repeats what it already said)."""
    structured_faults: list[str] = field(default_factory=list)
    """How the next requests for structured output are answered, once each (:mod:`.structured`:
    invalid, not-json, blank, ignore); then valid JSON."""
    fault_rate: float = 0.0
    fault_kinds: tuple[str, ...] = TRANSIENT_FAULTS
    fault_seed: int = 0
    retry_after: float = 1.0
    stall_seconds: float = 30.0
    tokenizer: str = "none"
    """The tokenizer endpoints offered, as ``llama.cpp``, ``llama-cpp-python`` or ``vllm``
    offer them (:mod:`.tokenizer`); ``none``: none (Ollama has none)."""
    server_kind: str = "ollama"
    """Which server's identifying route it answers: Ollama's ``GET /api/version``, llama.cpp's
    ``GET /props``, vLLM's ``GET /version``; ``other``: none of them."""
    models: frozenset[str] | None = None
    api_key: str | None = None
    max_body_bytes: int = 64 * 1024 * 1024

    def __post_init__(self) -> None:
        unknown = sorted(set(self.fault_kinds) - set(ALL_FAULTS))
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}; known: {', '.join(ALL_FAULTS)}")
        if self.answer_words < 2:
            raise ValueError("answer_words must be >= 2 (the END-OF-REVIEW line)")
        if self.context_overflow not in CONTEXT_OVERFLOWS:
            raise ValueError(f"context_overflow must be one of {', '.join(CONTEXT_OVERFLOWS)}")
        if self.prompt_cache not in PROMPT_CACHES:
            raise ValueError(f"prompt_cache must be one of {', '.join(PROMPT_CACHES)}")
        if set(self.structured_faults) - set(STRUCTURED_FAULTS):
            raise ValueError(f"structured_faults: each one of {', '.join(STRUCTURED_FAULTS)}")
        if self.server_kind not in SERVER_KINDS:
            raise ValueError(f"server_kind must be one of {', '.join(SERVER_KINDS)}")
        if self.tokenizer not in TOKENIZERS:
            raise ValueError(f"tokenizer must be one of {', '.join(TOKENIZERS)}")
        if not 0.0 <= self.fault_rate <= 1.0:
            raise ValueError("fault_rate must be within [0, 1]")
        if min(self.max_queue or 0, self.die_after or 0) < 0:
            raise ValueError("max_queue and die_after must be >= 0")
        if self.capacity < 0 or self.latency < 0 or self.reasoning_words < 0:
            raise ValueError("capacity, latency and reasoning_words must be >= 0")


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received, and what the simulator did with it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    fault: str | None
    status: int


class Reject(Exception):
    """A request refused before generation: status, JSON body and extra headers."""

    def __init__(self, status: int, body: object, headers: Iterable[tuple[str, str]] = ()):
        super().__init__(status)
        self.status, self.body, self.headers = status, body, list(headers)


def invalid(message: str) -> Reject:
    return Reject(400, wire.error_body(400, message))


def go_type(value: object) -> str:
    """The Go type name Ollama's decoder would report for a JSON value."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "[]interface {}" if isinstance(value, list) else "map[string]interface {}"


def validate_chat(raw: bytes) -> dict[str, Any]:
    """Parse and check a chat request the way Ollama's compat layer does (400 on failure)."""
    try:
        req = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise invalid(f"invalid character in request body: {exc}") from None
    if not isinstance(req, dict):
        raise invalid("json: cannot unmarshal request body into ChatCompletionRequest")
    if not isinstance(req.get("model"), str) or not req["model"]:
        raise invalid("model is required")
    messages = req.get("messages")
    if not isinstance(messages, list) or not messages:
        raise invalid("[] is too short - 'messages'")
    for message in messages:
        if not isinstance(message, dict):
            raise invalid("invalid message format")
        content = message.get("content")
        if not isinstance(content, str) and not (content is None and message.get("tool_calls")):
            raise invalid(f"invalid message content type: {go_type(content)}")
    max_tokens = req.get("max_tokens")
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0
    ):
        raise invalid(f"max_tokens must be a non-negative integer, got {max_tokens!r}")
    if not isinstance(req.get("stream", False), bool | None):
        raise invalid("json: cannot unmarshal into field ChatCompletionRequest.stream of type bool")
    return req


def route_of(path: str) -> str:
    """A request path without its query."""
    return path.split("?", 1)[0]


def wants_stream(body: bytes) -> bool:
    """Whether a chat body asks for a stream (decided before the body is validated)."""
    try:
        return json.loads(body).get("stream") is True
    except (ValueError, AttributeError, UnicodeDecodeError):
        return False
