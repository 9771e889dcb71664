"""``--reasoning none|low|medium|high|max``: one option, the body fields each server reads.

- Ollama's OpenAI endpoint: ``reasoning_effort`` (``none`` turns thinking off; ``max`` since
  0.22; a model without thinking refuses any level but ``none``).
- DeepSeek's API: ``thinking: {"type": "enabled"|"disabled"}`` and ``reasoning_effort``
  (low/high/max; it maps medium to high itself).
- vLLM: ``reasoning_effort`` for models with levels (up to ``high``); ``none`` is the chat
  template's ``enable_thinking: false`` (Qwen3-style templates).
- llama.cpp: only the chat template's ``enable_thinking`` switch: any level turns it on.
- Ollama's native API (``--api ollama``): ``think`` true or false (the level names some
  models take, gpt-oss's, are not sent: a model that has no levels would refuse them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deepseek_review.errors import ConfigError
from deepseek_review.options.table import REASONING_LEVELS, name_of

__all__ = ["REASONING_LEVELS", "fields", "with_reasoning"]


def fields(server: str, level: str) -> dict[str, Any]:
    """The body fields that ask ``server`` for ``level``."""
    off = level == "none"
    if server == "deepseek":
        if off:
            return {"thinking": {"type": "disabled"}}
        return {"thinking": {"type": "enabled"}, "reasoning_effort": level}
    if server in ("vllm", "llama.cpp") and (off or server == "llama.cpp"):
        return {"chat_template_kwargs": {"enable_thinking": not off}}
    if server == "vllm":
        return {"reasoning_effort": "high" if level == "max" else level}
    return {"reasoning_effort": level}


def with_reasoning(
    extra_body: Mapping[str, Any], server: str, level: str | None, api: str = "openai"
) -> Mapping[str, Any]:
    """``extra_body`` plus the fields of ``level`` (None: nothing is added); an extra body
    that sets one of them too is refused rather than silently overridden."""
    if level is None:
        return extra_body
    added = {"think": level != "none"} if api == "ollama" else fields(server, level)
    clash = sorted(set(added) & set(extra_body))
    if clash:
        raise ConfigError(
            f"{name_of('extra_body')} sets {clash[0]!r} and {name_of('reasoning')} {level} "
            "sets it too; give one of them"
        )
    return {**extra_body, **added}
