"""Ollama's native API as the simulator speaks it: ``/api/show``, ``/api/ps``, ``/api/chat``.

Pure functions from a request and the knobs to bodies and NDJSON lines, following Ollama's
docs/api.md: ``/api/show`` reports the model's trained context (``model_info``,
``<arch>.context_length``) and ``capabilities``; ``/api/ps`` the runtime ``context_length`` of
each loaded model; ``/api/chat`` streams one JSON object per line (``stream`` defaults to
true), the last with ``done: true``, ``done_reason``, ``prompt_eval_count``, ``eval_count`` and
durations in nanoseconds. Errors are ``{"error": "<text>"}``.
"""

from __future__ import annotations

import json
from typing import Any

from deepseek_review.testing.simulator.answer import Plan
from deepseek_review.testing.simulator.config import Reject, SimulatorConfig

SHOW_PATH = "/api/show"
PS_PATH = "/api/ps"
NATIVE_CHAT_PATH = "/api/chat"
ARCHITECTURE = "qwen3"
NDJSON = "application/x-ndjson"
#: Nanoseconds the simulator says each step took: loading, per prompt token, per output token.
LOAD_NS = 1_500_000_000
PROMPT_TOKEN_NS = 200_000
EVAL_TOKEN_NS = 20_000_000
THINK_LEVELS = ("low", "medium", "high")
_CREATED = "2026-01-01T00:00:00Z"


def error(status: int, message: str) -> Reject:
    """A refusal in the native shape (``{"error": "..."}``)."""
    return Reject(status, {"error": message})


def capabilities(cfg: SimulatorConfig) -> list[str]:
    """What ``/api/show`` lists: a model with reasoning words is a thinking model."""
    return ["completion", "thinking"] if cfg.reasoning_words > 0 else ["completion"]


def check_model(cfg: SimulatorConfig, model: object) -> str:
    """The model named by a native request, or the 400/404 Ollama gives."""
    if not isinstance(model, str) or not model:
        raise error(400, "model is required")
    if cfg.models is not None and model not in cfg.models:
        raise error(404, f"model '{model}' not found")
    return model


def parse(raw: bytes) -> dict[str, Any]:
    """A native request body (a JSON object), or Ollama's 400."""
    try:
        req = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise error(400, f"invalid character in request body: {exc}") from None
    if not isinstance(req, dict):
        raise error(400, "json: cannot unmarshal request body")
    return req


def show(cfg: SimulatorConfig, model: str) -> dict[str, Any]:
    """``POST /api/show``: the model's details, trained context and capabilities."""
    body: dict[str, Any] = {
        "modelfile": f"FROM {model}\n",
        "parameters": "",
        "template": "{{ .Prompt }}",
        "details": {"format": "gguf", "family": ARCHITECTURE, "parameter_size": "8B"},
        "model_info": {
            "general.architecture": ARCHITECTURE,
            f"{ARCHITECTURE}.context_length": cfg.model_context_length,
        },
        "capabilities": capabilities(cfg),
        "modified_at": _CREATED,
    }
    return body


def ps(loaded: dict[str, int]) -> dict[str, Any]:
    """``GET /api/ps``: each loaded model with the context it runs with."""
    return {
        "models": [
            {
                "name": name,
                "model": name,
                "size": 6_000_000_000,
                "digest": "0" * 64,
                "details": {"format": "gguf", "family": ARCHITECTURE},
                "expires_at": "2099-01-01T00:00:00Z",
                "size_vram": 6_000_000_000,
                "context_length": ctx,
            }
            for name, ctx in sorted(loaded.items())
        ]
    }


def validate_chat(cfg: SimulatorConfig, req: dict[str, Any]) -> dict[str, Any]:
    """Check a native chat request as Ollama does; returns its ``options`` object."""
    model = check_model(cfg, req.get("model"))
    messages = req.get("messages")
    if not isinstance(messages, list) or not all(
        isinstance(m, dict) and isinstance(m.get("content", ""), str) for m in messages
    ):
        raise error(400, "invalid message format")
    options = req.get("options") or {}
    if not isinstance(options, dict):
        raise error(400, "json: cannot unmarshal options")
    for key in ("num_ctx", "num_predict"):
        value = options.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise error(400, f"invalid value for option {key}: {value!r}")
    think = req.get("think")
    if think is not None and think is not False:
        if "thinking" not in capabilities(cfg):
            raise error(400, f'"{model}" does not support thinking')
        if think is not True and think not in THINK_LEVELS:
            raise error(400, f"invalid think value: {think!r}")
    if not isinstance(req.get("stream", True), bool):
        raise error(400, "json: cannot unmarshal into field ChatRequest.stream of type bool")
    for flag in ("truncate", "shift"):
        if not isinstance(req.get(flag, True), bool):
            raise error(400, f"json: cannot unmarshal into field ChatRequest.{flag} of type bool")
    return options


#: Ollama's refusal of a prompt over the context when ``truncate`` is false (0.12.6 and later:
#: the runner's ``errorInputTooLong``, a 400 ``{"error": ...}`` streamed or not).
INPUT_TOO_LONG = "the input length exceeds the context length"


def refuse_overflow(req: dict[str, Any], prompt_tokens: int, context: int) -> None:
    """Ollama with ``truncate: false``: a prompt over the context is refused (otherwise its
    start is dropped silently, as the answer's ``prompt_eval_count`` then shows)."""
    if req.get("truncate") is False and prompt_tokens > context:
        raise error(400, INPUT_TOO_LONG)


def answer_budget(
    req: dict[str, Any], max_tokens: int | None, prompt: int, context: int
) -> int | None:
    """The tokens an answer may have: with ``shift: false`` generation stops where the context
    ends (``done_reason: "length"``); shifting (the default) goes on to ``max_tokens``."""
    if req.get("shift") is not False:
        return max_tokens
    room = max(context - min(prompt, context), 0)
    return room if max_tokens is None else min(max_tokens, room)


def _final(plan: Plan, model: str, *, loaded_before: bool) -> dict[str, Any]:
    prompt_ns = plan.prompt_tokens * PROMPT_TOKEN_NS
    eval_ns = plan.completion_tokens * EVAL_TOKEN_NS
    load_ns = 0 if loaded_before else LOAD_NS
    return {
        "model": model,
        "created_at": _CREATED,
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": plan.finish_reason,
        "total_duration": load_ns + prompt_ns + eval_ns,
        "load_duration": load_ns,
        "prompt_eval_count": plan.prompt_tokens,
        "prompt_eval_duration": prompt_ns,
        "eval_count": plan.completion_tokens,
        "eval_duration": eval_ns,
    }


def reply(plan: Plan, model: str, *, loaded_before: bool) -> dict[str, Any]:
    """The one object of a non-streaming ``/api/chat``."""
    body = _final(plan, model, loaded_before=loaded_before)
    body["message"]["content"] = plan.text
    if plan.reasoning:
        body["message"]["thinking"] = "".join(plan.reasoning)
    return body


def lines(
    plan: Plan, model: str, *, loaded_before: bool, fault: str | None = None, group: int = 8
) -> list[bytes]:
    """The NDJSON lines of a streaming ``/api/chat``: thinking, then content, then ``done``."""
    out: list[dict[str, Any]] = []
    for key, tokens in (("thinking", plan.reasoning), ("content", (plan.echo, *plan.content))):
        pieces = ["".join(tokens[i : i + group]) for i in range(0, len(tokens), group)]
        for piece in pieces:
            if piece:
                message = {"role": "assistant", "content": ""}
                message[key] = piece
                out.append({"model": model, "created_at": _CREATED, "message": message})
    for obj in out:
        obj["done"] = False
    out.append(_final(plan, model, loaded_before=loaded_before))
    if fault is not None:
        for obj in out:
            mutate(obj, fault)
    return [json.dumps(obj, separators=(",", ":")).encode("utf-8") + b"\n" for obj in out]


def mutate(obj: dict[str, Any], fault: str) -> None:
    """Apply a garbage fault to a native reply object or stream line, in place."""
    message = obj.get("message", {})
    if fault == "content-not-string":
        message["content"] = 42
    elif fault == "content-missing":
        text = message.pop("content", None)
        if obj.get("done") is False and text is not None:
            message["text"] = text  # streamed: the text under a key no chat API reads
    elif fault == "blank-answer" and "content" in message:
        message["content"] = ""
    elif fault == "negative-usage" and "prompt_eval_count" in obj:
        obj["prompt_eval_count"] = -5
    elif fault == "no-choices":
        obj.pop("message", None)
