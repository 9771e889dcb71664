"""What an Ollama server says about a model before anything is sent to it.

Three read-only requests to the chat URL's own origin (Ollama's docs/api.md): ``GET
/api/version`` (is this Ollama at all? a 404, a refusal or anything but JSON: no, and nothing
more is asked), ``POST /api/show`` (the model's trained context, ``model_info`` key
``<arch>.context_length``; its ``capabilities``, ``thinking`` among them; a ``num_ctx`` its
Modelfile sets) and ``GET /api/ps`` (the context a loaded model runs with, ``context_length``).
All is asked once per client and model (one review, or one endpoint of a batch): a model
not loaded then is not checked (the check after the answer, exit 7, still is).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from deepseek_review.chat.client import ChatClient


#: The chat URL of an Ollama server's OpenAI endpoint; its origin serves the native API.
OPENAI_CHAT_PATH = "/v1/chat/completions"
NATIVE_CHAT_PATH = "/api/chat"
CLOUD_HOST = "ollama.com"
_NUM_CTX = re.compile(r"^num_ctx\s+(\d+)\s*$", re.MULTILINE)


class ModelFacts(NamedTuple):
    """What ``/api/show`` and ``/api/ps`` said about one model."""

    trained_context: int | None
    capabilities: frozenset[str]
    modelfile_context: int | None
    """``num_ctx`` set by its Modelfile (``PARAMETER num_ctx``): the context it loads with."""
    runtime_context: int | None
    """The context the loaded model runs with; None: not loaded now."""

    @property
    def context(self) -> tuple[int, str] | None:
        """The context a request will run with, and who said so; None: the server's default
        (``OLLAMA_CONTEXT_LENGTH``, or 4k to 256k by the GPU's memory), which no API tells."""
        if self.runtime_context is not None:
            return self.runtime_context, "/api/ps, the model as loaded now"
        if self.modelfile_context is not None:
            return self.modelfile_context, "/api/show, the Modelfile's num_ctx"
        return None


def probed_origin(url: str) -> bool:
    """Whether ``url`` is an Ollama-shaped chat URL whose origin may be asked (not the cloud,
    which runs every model at its full context and has nothing to check)."""
    parts = urlsplit(url)
    return parts.path in (OPENAI_CHAT_PATH, NATIVE_CHAT_PATH) and not is_cloud(url)


def is_cloud(url: str) -> bool:
    return (urlsplit(url).hostname or "").lower() == CLOUD_HOST


def model_facts(client: ChatClient, model: str) -> ModelFacts | None:
    """What the server says about ``model``; None when it is not Ollama (``/api/version``
    does not answer with a version) or ``/api/show`` does not answer. Asked once per client
    and model: the jobs of a batch wait for the first one's answer."""
    key = ("ollama", model)
    with client.learning:
        if key not in client.learned:
            client.learned[key] = _learn(client, model)
    facts = client.learned[key]
    return facts if isinstance(facts, ModelFacts) else None


def _learn(client: ChatClient, model: str) -> ModelFacts | None:
    with client.side_requests(timeout=min(5.0, client.timeouts.connect)) as ask:
        version = ask("/api/version")
        if not (isinstance(version, dict) and isinstance(version.get("version"), str)):
            return None
        facts = _show(ask("/api/show", {"model": model}))
        if facts is None:
            return None
        runtime = _runtime_context(ask("/api/ps"), model)
    return ModelFacts(facts.trained_context, facts.capabilities, facts.modelfile_context, runtime)


def _count(value: object) -> int | None:
    """A positive token count from the server, or None for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _show(answer: object) -> ModelFacts | None:
    if not isinstance(answer, dict):
        return None
    info: Any = answer.get("model_info")
    trained = None
    if isinstance(info, dict):
        arch = info.get("general.architecture")
        trained = _count(info.get(f"{arch}.context_length")) if isinstance(arch, str) else None
    caps: Any = answer.get("capabilities")
    names = frozenset(c for c in caps if isinstance(c, str)) if isinstance(caps, list) else ()
    params = answer.get("parameters")
    found = _NUM_CTX.search(params) if isinstance(params, str) else None
    modelfile = _count(int(found.group(1))) if found and len(found.group(1)) < 10 else None
    return ModelFacts(trained, frozenset(names), modelfile, None)


def _runtime_context(answer: object, model: str) -> int | None:
    models = answer.get("models") if isinstance(answer, dict) else None
    if not isinstance(models, list):
        return None
    names = {model, model + ":latest"} if ":" not in model else {model}
    for entry in models:
        if isinstance(entry, dict) and (entry.get("name") in names or entry.get("model") in names):
            return _count(entry.get("context_length"))
    return None
