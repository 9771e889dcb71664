"""A prefix cache per simulated server, reported the way each kind of server reports it.

A request's prompt is its messages as the simulator counts tokens (words and punctuation,
4 per message: :func:`.answer.prompt_token_estimate`); the tokens it shares from the start
with the longest matching earlier prompt of the same model are a cache hit. At least one
token is always evaluated (a llama.cpp slot re-evaluates the last one), and DeepSeek's API
caches in units of 64 tokens. ``prompt_cache`` (the simulator's config) says how hits are
reported:

- ``deepseek``: ``usage.prompt_cache_hit_tokens`` / ``usage.prompt_cache_miss_tokens``;
- ``openai``: ``usage.prompt_tokens_details.cached_tokens`` (vLLM, OpenAI);
- ``llama.cpp``: ``timings.cache_n`` / ``timings.prompt_n`` beside ``usage`` (in a stream,
  on its last chunk);
- ``none``: nothing (Ollama reports no cache use).
"""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from deepseek_review.testing.simulator.answer import Plan, message_text

PROMPT_CACHES = ("none", "deepseek", "openai", "llama.cpp")
#: DeepSeek's API stores prefixes in units of this many tokens.
_DEEPSEEK_UNIT = 64
_TOKEN_RE = re.compile(r"\w+|[^\w\s]")


def prompt_tokens(messages: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The prompt as tokens, as many as :func:`.answer.prompt_token_estimate` counts."""
    out: list[str] = []
    for m in messages:
        out += ["<|msg|>", str(m.get("role")), "<|content|>"]
        out += _TOKEN_RE.findall(message_text(m))
        out.append("<|end|>")
    return tuple(out)


def _shared(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class PrefixCache:
    """The last ``keep`` prompts of each model (thread-safe)."""

    def __init__(self, keep: int = 32) -> None:
        self._prompts: dict[str, deque[tuple[str, ...]]] = {}
        self._keep = keep
        self._lock = threading.Lock()

    def serve(self, model: str, messages: Sequence[Mapping[str, Any]], kind: str, n: int) -> int:
        """How many of the ``n`` prompt tokens of this request the cache serves; remembers it."""
        tokens = prompt_tokens(messages)
        with self._lock:
            seen = self._prompts.setdefault(model, deque(maxlen=self._keep))
            hit = max((_shared(tokens, p) for p in seen), default=0)
            seen.append(tokens)
        hit = min(hit, max(n - 1, 0))
        return hit - hit % _DEEPSEEK_UNIT if kind == "deepseek" else hit

    def clear(self) -> None:
        with self._lock:
            self._prompts.clear()


def usage_fields(plan: Plan, kind: str) -> dict[str, Any]:
    """What ``usage`` carries about the cache for a server of ``kind``."""
    hit = plan.cached_tokens
    if hit is None:
        return {}
    if kind == "deepseek":
        return {
            "prompt_cache_hit_tokens": hit,
            "prompt_cache_miss_tokens": plan.prompt_tokens - hit,
        }
    if kind == "openai":
        return {"prompt_tokens_details": {"cached_tokens": hit}}
    return {}


def timings(plan: Plan, kind: str) -> dict[str, Any]:
    """llama.cpp's ``timings`` object (beside ``usage``), for a server of that kind."""
    hit = plan.cached_tokens
    if hit is None or kind != "llama.cpp":
        return {}
    evaluated = plan.prompt_tokens - hit
    return {
        "timings": {
            "cache_n": hit,
            "prompt_n": evaluated,
            "prompt_ms": evaluated * 0.1,
            "predicted_n": plan.completion_tokens,
            "predicted_ms": plan.completion_tokens * 1.0,
        }
    }
