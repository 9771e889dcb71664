"""Asking a server's own tokenizer how many tokens a chat prompt is.

Only the server kinds (``--server``) that have one are asked, through the client's side
requests (the chat URL's origin, the key as with chat requests, a short deadline); any failure
(refused, 404, an answer of another shape, too slow) is None, and the caller estimates instead.

- **vLLM** (``vllm/entrypoints/serve/tokenize/protocol.py``): ``POST /tokenize`` with
  ``{"model", "messages"}`` renders the messages with the model's chat template, as a chat
  request would (``add_generation_prompt``, or ``continue_final_message`` for a trailing
  assistant message, as the vllm preset sends a prefill), and answers ``{"count",
  "max_model_len", "tokens"}``: the count is exact, and the window comes with it.
- **llama.cpp's server** (``tools/server/README.md``): ``POST /apply-template`` with
  ``{"messages"}`` answers ``{"prompt"}``, the rendered text, which ``POST /tokenize`` with
  ``{"content", "add_special": true}`` counts as the chat path tokenizes a prompt
  (``add_special`` defaults to false there, ``parse_special`` to true); ``{"tokens": [...]}``.
  A server without ``/apply-template`` has each message's content counted by ``/tokenize``
  (or, llama-cpp-python's server, ``POST /extras/tokenize/count`` with ``{"input"}``:
  ``{"count"}``), plus :data:`TEMPLATE_TOKENS` per message for the template's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deepseek_review.chat.client import ChatClient, SideAsk

#: The server kinds whose tokenizer is asked.
TOKENIZING_SERVERS = ("llama.cpp", "vllm")
#: The most a tokenizer's answer may hold: its token list (~7 bytes a token) of a 2M-token
#: prompt.
MAX_ANSWER_BYTES = 16 * 1024 * 1024
#: How long the whole count may take (rendering and tokenizing a few MB takes a second or two).
TIMEOUT = 10.0
#: Tokens a chat template adds per message when the rendered prompt cannot be asked for: role
#: markers and separators (ChatML's ``<|im_start|>user\n``…``<|im_end|>\n`` is 5), and the
#: generation prompt and BOS spread over the messages. An over-count errs on the safe side.
TEMPLATE_TOKENS = 8


def asks(server: str) -> bool:
    """Whether a server of this kind is asked for counts."""
    return server in TOKENIZING_SERVERS


def server_count(
    client: ChatClient, server: str, model: str, messages: Sequence[Mapping[str, Any]]
) -> tuple[int, int | None] | None:
    """The tokens of ``messages`` by the server's tokenizer, and the window it runs the model
    with when it says so; None when it cannot tell (or is not a kind that is asked)."""
    if not asks(server):
        return None
    known = ("tokenizer", server, model)
    with client.learning:
        if client.learned.get(known) is False:  # it had none before: not asked again
            return None
    chat = [{"role": str(m.get("role")), "content": str(m.get("content") or "")} for m in messages]
    with client.side_requests(timeout=min(TIMEOUT, client.timeouts.total)) as ask:
        if server == "vllm":
            found = _vllm(ask, model, chat)
        else:
            tokens = _llamacpp(ask, model, chat)
            found = None if tokens is None else (tokens, None)
    if found is None:
        with client.learning:
            client.learned[known] = False
    return found


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _tokens(answer: object) -> int | None:
    """The length of ``{"tokens": [...]}``."""
    tokens = answer.get("tokens") if isinstance(answer, dict) else None
    return len(tokens) if isinstance(tokens, list) else None


def _vllm(ask: SideAsk, model: str, chat: list[dict[str, str]]) -> tuple[int, int | None] | None:
    prefill = bool(chat) and chat[-1]["role"] == "assistant"
    answer = ask(
        "/tokenize",
        {
            "model": model,
            "messages": chat,
            "add_generation_prompt": not prefill,
            "continue_final_message": prefill,
        },
        MAX_ANSWER_BYTES,
    )
    if not isinstance(answer, dict):
        return None
    count = _int(answer.get("count"))
    count = _tokens(answer) if count is None else count
    return None if count is None else (count, _int(answer.get("max_model_len")) or None)


def _llamacpp(ask: SideAsk, model: str, chat: list[dict[str, str]]) -> int | None:
    rendered = ask("/apply-template", {"messages": chat})
    prompt = rendered.get("prompt") if isinstance(rendered, dict) else None
    if isinstance(prompt, str):
        counted = _tokens(
            ask("/tokenize", {"content": prompt, "add_special": True}, MAX_ANSWER_BYTES)
        )
        if counted is not None:
            return counted
    # No template to ask for: each message's content, plus what a template adds to it.
    for count in (_llamacpp_count, python_count):
        counts = []
        for message in chat:
            n = count(ask, model, message["content"])
            if n is None:
                break
            counts.append(n + TEMPLATE_TOKENS)
        else:
            return sum(counts)
        if counts:  # it answered for an earlier message: a failure, not a missing route
            return None
    return None


def _llamacpp_count(ask: SideAsk, model: str, text: str) -> int | None:
    """llama.cpp's server: ``/tokenize``, with the BOS its chat path adds."""
    return _tokens(ask("/tokenize", {"content": text, "add_special": True}, MAX_ANSWER_BYTES))


def python_count(ask: SideAsk, model: str, text: str) -> int | None:
    """llama-cpp-python's server: ``/extras/tokenize/count`` (which adds the BOS itself)."""
    answer = ask("/extras/tokenize/count", {"input": text, "model": model})
    return _int(answer.get("count")) if isinstance(answer, dict) else None
