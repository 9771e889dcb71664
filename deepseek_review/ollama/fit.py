"""Refuse, before sending, a prompt an Ollama server would silently cut.

Ollama runs a model with a fixed context (``OLLAMA_CONTEXT_LENGTH``, a Modelfile's
``num_ctx``, or 4k/32k/256k by the GPU's memory) and, given more, keeps the end of the prompt
and answers anyway; its OpenAI endpoint ignores any ``num_ctx`` sent. So before the first
request the server is asked (:mod:`.probe`) and the planned prompt (its count,
:class:`chat.tokens.Counter`: calibrated from what the server reported before, when it did)
plus ``max_tokens`` is compared with the context the request will run with.
``max_tokens`` is Ollama's ``num_predict``, which counts thinking tokens too, so it is also the
reasoning reserve of a thinking model. Servers that are not Ollama, or declared as another kind
(``--server``), are not asked; ollama.com runs models at their full context, so is not either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from deepseek_review.chat.endpoint import safe_url
from deepseek_review.chat.native import step_for
from deepseek_review.errors import ConfigError, PromptDoesNotFit
from deepseek_review.options.table import name_of
from deepseek_review.util.logs import log

if TYPE_CHECKING:
    from deepseek_review.chat.client import ChatClient


#: Ollama's smallest default context (under 24 GiB of VRAM); what an unloaded model may get.
SMALLEST_DEFAULT = 4096


def asks_server(server: str, url: str) -> bool:
    """Whether :func:`preflight` asks the server at ``url`` anything (a dry run makes a
    client only when it would)."""
    if server != "ollama":
        return False
    from deepseek_review.ollama import probe

    return probe.probed_origin(url)


def preflight(
    client: ChatClient,
    *,
    server: str,
    model: str,
    estimate: int,
    max_tokens: int,
    allow: bool,
    reasoning: str | None = None,
    how: str = "estimated",
) -> None:
    """Ask an Ollama server what context ``model`` runs with; raise :class:`PromptDoesNotFit`
    when the prompt (``estimate`` tokens, counted as ``how`` says: :class:`chat.tokens.Count`)
    and the answer's cap would not fit (unless ``allow``: then warn), and a
    :class:`ConfigError` for a ``reasoning`` level the model cannot think at."""
    if server != "ollama":
        return
    from deepseek_review.ollama import (
        probe,  # asked only when the server is (a run, a dry run), not by planning
    )

    if probe.is_cloud(client.url):
        _say_cloud(client)
        return
    if not probe.probed_origin(client.url):
        return
    facts = probe.model_facts(client, model)
    if facts is None:
        return
    _refuse_reasoning(client, model, reasoning, facts.capabilities)
    native = urlsplit(client.url).path == probe.NATIVE_CHAT_PATH
    if native:  # the request asks for the context it needs, up to what the model was trained for
        trained = facts.trained_context
        known = None if trained is None else (trained, "/api/show, the model's trained context")
    else:
        known = facts.context
    _check_fits(
        client,
        model,
        estimate,
        max_tokens,
        known,
        trained=facts.trained_context,
        allow=allow,
        how=how,
    )


def _say_cloud(client: ChatClient) -> None:
    """Tell once per client (not per entry of a batch) that ollama.com needs no check."""
    with client.learning:
        if ("ollama", "cloud") not in client.learned:
            client.learned["ollama", "cloud"] = True
            log.info("ollama.com runs models at their full context: no context check needed")


def _refuse_reasoning(
    client: ChatClient, model: str, reasoning: str | None, capabilities: frozenset[str]
) -> None:
    """Refuse a ``reasoning`` level for a model whose capabilities say it does not think."""
    thinks = "thinking" in capabilities or not capabilities
    if reasoning not in (None, "none") and not thinks:
        listed = ", ".join(sorted(capabilities))
        raise ConfigError(
            f"{name_of('reasoning')} {reasoning}: {safe_url(client.url)} says {model} does "
            f"not think (/api/show capabilities: {listed}); nothing was sent",
            hint=f"use {name_of('reasoning')} none, or leave it unset",
        )


def _check_fits(
    client: ChatClient,
    model: str,
    estimate: int,
    max_tokens: int,
    known: tuple[int, str] | None,
    *,
    trained: int | None,
    allow: bool,
    how: str,
) -> None:
    """Compare the prompt (``estimate`` tokens, counted as ``how`` says) and the answer's cap
    with the ``known`` context (and who said so); None: the server's default, which only the
    check after the answer can catch."""
    need = estimate + max_tokens
    if known is None:  # the check after the answer (exit 7) still catches a clipped prompt
        if need > SMALLEST_DEFAULT:
            log.debug(
                "%s is not loaded on %s, so its context is the server's default, which no API "
                "reports (4096 tokens below 24 GiB of VRAM, or OLLAMA_CONTEXT_LENGTH); this "
                "request needs about %d",
                model,
                safe_url(client.url),
                need,
            )
        return
    context, source = known
    if need <= context:
        return
    message = (
        f"the prompt (about {estimate} tokens, {how}) plus {name_of('max_tokens')} "
        f"{max_tokens} needs {need} tokens, but {safe_url(client.url)} runs {model} with a "
        f"context of {context} ({source}): Ollama would silently keep only the end of the prompt"
    )
    if allow:
        log.warning("%s; sent anyway (%s)", message, name_of("allow_truncated_prompt"))
        return
    raise PromptDoesNotFit(message + "; nothing was sent", hint=_fix(need, trained))


def _fix(need: int, trained: int | None) -> str:
    anyway = f"{name_of('allow_truncated_prompt')} sends it anyway"
    parts = f"review it in parts that fit ({name_of('split')})"
    if trained is not None and need > trained:
        return (
            f"the model was trained for {trained} tokens: {parts}, send less context or lower "
            f"{name_of('max_tokens')}; {anyway}"
        )
    size = step_for(need) if trained is None else min(step_for(need), trained)
    return (
        f"{parts}, or use {name_of('api')} ollama (its num_ctx is sized to each request), or "
        f"restart the server with OLLAMA_CONTEXT_LENGTH={size} ollama serve, or create a "
        f"Modelfile alias with PARAMETER num_ctx {size}, or lower {name_of('max_tokens')}; "
        f"{anyway}"
    )
