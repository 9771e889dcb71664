"""The tokenizer endpoints of the servers the simulator stands in for (``--tokenizer``).

Counts are the simulator's own (:func:`.answer.prompt_token_estimate`: words and punctuation,
plus 4 per message), so a count asked here equals the ``prompt_tokens`` the chat answer reports
for the same messages, as a real server's tokenizer does:

- ``llama.cpp``: ``POST /tokenize`` ``{"content"}`` → ``{"tokens": [...]}``, and ``POST
  /apply-template`` ``{"messages"}`` → ``{"prompt"}``, each message rendered as ``[role]`` +
  content + ``\\n|`` (the 4 tokens a message costs);
- ``llama-cpp-python``: ``POST /extras/tokenize/count`` ``{"input"}`` → ``{"count"}`` (one BOS
  token more, as its ``add_bos`` adds), and ``/extras/tokenize`` → ``{"tokens"}``;
- ``vllm``: ``POST /tokenize`` ``{"model", "messages"}`` or ``{"model", "prompt"}`` →
  ``{"count", "max_model_len", "tokens"}``.
"""

from __future__ import annotations

import json
from typing import Any

from deepseek_review.testing.simulator.answer import (
    count_prompt_tokens,
    message_text,
    prompt_token_estimate,
)
from deepseek_review.testing.simulator.config import TOKENIZERS, Reject, SimulatorConfig

__all__ = ["ROUTES", "TOKENIZERS", "answer", "serves"]
ROUTES = {
    "llama.cpp": ("/tokenize", "/apply-template"),
    "llama-cpp-python": ("/extras/tokenize", "/extras/tokenize/count"),
    "vllm": ("/tokenize",),
}


def serves(cfg: SimulatorConfig, method: str, route: str) -> bool:
    return method == "POST" and route in ROUTES.get(cfg.tokenizer, ())


def answer(cfg: SimulatorConfig, route: str, raw: bytes) -> dict[str, Any]:
    """The answer to a tokenizer request, or :class:`Reject` (a 400) for a body it cannot read."""
    try:
        req = json.loads(raw or b"{}")
    except ValueError:
        raise Reject(400, {"error": "invalid JSON"}) from None
    if not isinstance(req, dict):
        raise Reject(400, {"error": "invalid request"})
    if route == "/apply-template":
        messages = _messages(req)
        return {"prompt": "".join(f"[{m['role']}]{message_text(m)}\n|" for m in messages)}
    if cfg.tokenizer == "vllm":
        if "messages" in req:
            n = prompt_token_estimate(_messages(req))
        else:
            n = count_prompt_tokens(_text(req, "prompt"))
        window = cfg.context_window or cfg.model_context_length
        return {"count": n, "max_model_len": window, "tokens": list(range(n))}
    if cfg.tokenizer == "llama-cpp-python":
        n = count_prompt_tokens(_text(req, "input")) + 1
        return {"count": n} if route.endswith("/count") else {"tokens": list(range(n))}
    return {"tokens": list(range(count_prompt_tokens(_text(req, "content"))))}


def _text(req: dict[str, Any], key: str) -> str:
    value = req.get(key)
    if not isinstance(value, str):
        raise Reject(400, {"error": f"{key} must be a string"})
    return value


def _messages(req: dict[str, Any]) -> list[dict[str, Any]]:
    messages = req.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise Reject(400, {"error": "messages must be a list of objects"})
    return messages
