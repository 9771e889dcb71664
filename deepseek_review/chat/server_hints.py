"""What to do about a server's refusal, worded for the server the user runs (``server``).

A hint is only useful if it fits: ``ollama pull`` means nothing to a llama.cpp user, whose
server answers whatever model it loaded, and a 401 is fixed differently when no key was sent at
all than when the key sent was wrong. The client knows the failure; :class:`Advice` tells it
the server kind, where the endpoint came from, and which variable holds the key. Our options
are named with :func:`~options.table.name_of` when the hint is worded (``--model`` on the command
line, ``model (entry 3, line 12)`` for a manifest's entry); other tools' flags stay literal.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import urlsplit

from deepseek_review.chat.endpoint import (
    DEFAULT_KEY_ENV,
    ENDPOINT_ENV,
    Endpoint,
    is_loopback_host,
)
from deepseek_review.options.option import ALLOWED_ENV
from deepseek_review.options.table import name_of

#: The source of an endpoint the operator gave as the ``endpoint`` option (its key, named in
#: hints as the reporting layer spells it: ``--endpoint``, ``endpoint``).
OPTION_SOURCE = "endpoint"
#: Where an endpoint came from when the operator chose it (any other source is a file).
_OPERATOR_SOURCES = (OPTION_SOURCE, "OLLAMA_HOST", ENDPOINT_ENV)
_OLLAMA_PORT = 11434

#: A refusal that means the prompt does not fit the model's context (llama.cpp, vLLM, the
#: OpenAI and DeepSeek APIs, llama-cpp-python, Anthropic-shaped proxies).
_CONTEXT_RE = re.compile(
    r"context (?:size|length|window)|context_length_exceeded|exceed_context_size|"
    r"maximum context|prompt is too long|too many (?:input )?tokens|\bn_ctx\b",
    re.IGNORECASE,
)
_DNS_FAILURE_RE = re.compile(
    r"name or service not known|nodename nor servname|name resolution|getaddrinfo|"
    r"no address associated",
    re.IGNORECASE,
)


class Advice(NamedTuple):
    """What the hints need to know besides the failure itself."""

    server: str | None = None
    """ollama, llama.cpp, vllm or deepseek (the ``server`` option); None: unknown, hints stay
    generic."""
    source: str = OPTION_SOURCE
    """Where the endpoint came from (:attr:`Endpoint.source`): the ``endpoint`` option, a
    variable, ``default`` when nothing chose it, or the file that named it."""
    key_env: str | None = None
    """The variable the ``api_key_env`` option names; None: the default ``OLLAMA_API_KEY``."""

    @classmethod
    def of(cls, endpoint: Endpoint, server: str | None, key_env: str | None) -> Advice:
        return cls(server=server, source=endpoint.source, key_env=key_env)

    @property
    def key_var(self) -> str:
        return self.key_env or DEFAULT_KEY_ENV

    def check_endpoint(self) -> str:
        """How to point the review somewhere else, given where the endpoint came from."""
        if self.source == "default":
            return f"point {name_of('endpoint')} or OLLAMA_HOST at your server"
        if self.source == OPTION_SOURCE:
            return f"check {name_of('endpoint')}"
        if self.source in _OPERATOR_SOURCES:
            return f"check {self.source}"
        return f"check the endpoint {self.source} names"


def is_context_error(message: str, kind: str = "") -> bool:
    """The server says the prompt (with the room asked for the answer) is over its context."""
    return bool(_CONTEXT_RE.search(message) or _CONTEXT_RE.search(kind))


def _host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    return host, parts.port or (443 if parts.scheme == "https" else 80)


def _start_command(server: str | None, url: str, model: str) -> str | None:
    host, port = _host_port(url)
    if server == "ollama":
        default = host in ("localhost", "127.0.0.1") and port == _OLLAMA_PORT
        shown = f"[{host}]" if ":" in host else host
        return "ollama serve" if default else f"OLLAMA_HOST={shown}:{port} ollama serve"
    if server == "llama.cpp":
        return f"llama-server -m MODEL.gguf --port {port}"
    if server == "vllm":
        return f"vllm serve {model} --port {port}"
    return None  # deepseek is a hosted API; an unknown server has no known command


def unreachable(advice: Advice, url: str, why: str, *, model: str, refused: bool) -> str:
    """A connection that failed: a host name that does not resolve, or no server running."""
    if _DNS_FAILURE_RE.search(why):
        return f"is the host name right? {advice.check_endpoint()}"
    host, port = _host_port(url)
    start = _start_command(advice.server, url, model)
    if refused and is_loopback_host(host):
        lead = f"nothing is listening on {host}:{port}"
        lead += f": start the server (`{start}`)" if start else ": start the server"
    else:
        lead = "is the server running?" + (f" start it with `{start}`" if start else "")
    return f"{lead}, or {advice.check_endpoint()}"


def not_found(advice: Advice, model: str, message: str) -> str:
    """A 404: the model is unknown to the server, or the path is not its chat API."""
    if advice.server == "ollama":
        if "page not found" in message.lower():  # Ollama's words for a path it does not serve
            return f"the path is wrong: {advice.check_endpoint()} (http://host:port or .../v1)"
        pull = f"is the model pulled? run `ollama pull {model}`"
        return f"{pull}, or check {name_of('model')} and the endpoint path"
    if advice.server == "llama.cpp":
        return (
            f"the path is wrong: {advice.check_endpoint()} (http://host:port or .../v1); "
            f"llama-server answers with whatever model it loaded, whatever {name_of('model')} says"
        )
    if advice.server == "vllm":
        return (
            f"{name_of('model')} must match the name vLLM serves (its --served-model-name, else "
            f"the model it was started with; GET /v1/models lists it), or {advice.check_endpoint()}"
        )
    if advice.server == "deepseek":
        return (
            f"check {name_of('model')} against the models DeepSeek's API lists (GET /models), "
            f"or {advice.check_endpoint()}"
        )
    return (
        f"check {name_of('model')} (GET /v1/models lists the server's models) and the endpoint path"
    )


def unauthorized(advice: Advice, url: str, *, key_sent: bool) -> str:
    """A 401/403: a wrong key, or none sent (and why none was)."""
    if key_sent:
        return f"the key in {advice.key_var} was refused: set it to a valid key for this server"
    if advice.source not in (*_OPERATOR_SOURCES, "default"):
        return (
            f"no key was sent: {advice.source} named this endpoint, and a key goes only to one "
            f"you chose ({name_of('endpoint')}, OLLAMA_HOST or {ALLOWED_ENV})"
        )
    if advice.key_env is None and urlsplit(url).scheme == "http":
        return (
            f"no key was sent: the default {DEFAULT_KEY_ENV} goes over https only; "
            f"name it with {name_of('api_key_env')} to send it here"
        )
    if advice.key_env is None:
        return (
            f"no key was sent: set {DEFAULT_KEY_ENV}, or name another variable with "
            f"{name_of('api_key_env')}"
        )
    return f"no key was sent: {advice.key_env} is not set"


def context_overflow(advice: Advice) -> str:
    """The prompt is over the model's context: send less, or give the model more."""
    lower = f"lower {name_of('max_tokens')}"
    more = {
        "ollama": "raise the context (OLLAMA_CONTEXT_LENGTH=<tokens> ollama serve)",
        "llama.cpp": "restart the server with a larger context (llama-server -c <tokens>; "
        "llama-cpp-python: --n_ctx <tokens>)",
        "vllm": f"{lower}, or serve the model with a larger --max-model-len",  # vLLM's flag
        "deepseek": f"{lower} (the model's context is fixed)",
    }.get(advice.server or "", f"{lower}, or raise the server's context size")
    return f"send less context (or review it in parts that fit: {name_of('split')}), or {more}"
