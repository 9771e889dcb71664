"""``run --findings --findings-from``: the findings extraction, a review of the review's answer.

With ``structured`` (and ``auto`` on a server that constrains output to a schema), the review
is followed by one more request: its context is the review's answer files (checked against
their receipts), its template the bundled ``findings-extraction``, and it carries the
findings schema (:func:`deepseek_review.finding.extract.wire_schema`) in the server's own
dialect (:func:`dialect_for`), with reasoning off (servers break schema output while
thinking). It is an ordinary primary request of topic ``<topic>-findings``: its own answer,
request record (the schema field in its body, so ``verify`` rebuilds its exact bytes) and
receipt, signed like any other. The findings file is written beside it and lists how the
findings were obtained (``findings_from``). A reply that does not validate is asked once
more, then reported (``structured``: :class:`~deepseek_review.errors.BadResponse`; ``auto``:
the findings come from the review's own block, and the file says so), never repaired.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

from deepseek_review.context.gather import ContextFile
from deepseek_review.errors import ConfigError, InputError
from deepseek_review.git.runner import read_regular_file, resolve_inside
from deepseek_review.ollama.probe import CLOUD_HOST, is_cloud, model_facts
from deepseek_review.ollama.reasoning import fields as reasoning_fields
from deepseek_review.options.table import name_of
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.records.naming import EXTRACTION_TEMPLATE, FINDINGS_TOPIC_SUFFIX
from deepseek_review.reviewing.prompt import Template, frame_messages, load_internal_template
from deepseek_review.reviewing.request import (
    BodyOptions,
    PreparedRequest,
    WireMessage,
    message_sizes,
    prepare,
)
from deepseek_review.reviewing.segment import Segment

if TYPE_CHECKING:
    from deepseek_review.chat.client import ChatClient, SideAsk

#: At most what the extraction's request adds to the review's answers (its template, the
#: request with the schema, the headings): about 2.5 KB; counted for ``max_run_tokens``.
FRAMING_TOKENS = 1024
#: The hosted API whose host says its kind (as ``CLOUD_HOST`` says Ollama's cloud).
DEEPSEEK_HOST = "api.deepseek.com"
#: The fields that ask for (or against) reasoning, replaced by "off" in the extraction.
_REASONING_KEYS = ("thinking", "reasoning_effort", "reasoning", "think")

#: (text, answer path it is shown on, how it was obtained) → the findings file's bytes
#: (:class:`InputError` when the text holds no usable findings).
Maker = Callable[[str, str, str], bytes]


class SelfCheck(NamedTuple):
    """What a review job needs to self-check its findings (``self_check``)."""

    topic: str
    server: str
    threshold: int
    declared: bool = True
    """``server`` is known (declared, or said by the host); else asked (:func:`probed_kind`)."""


class Extraction(NamedTuple):
    """What a review job needs to extract its findings."""

    mode: str
    """``structured`` (a reply that does not validate twice fails the run) or ``auto`` (its
    findings then come from the review's block)."""
    topic: str
    server: str
    url: str
    make: Maker
    declared: bool = True
    """``server`` is known (declared, or said by the host); else asked (:func:`probed_kind`)."""


def resolved_mode(findings_from: str, server: str, api: str) -> str:
    """``block``, ``structured`` or ``auto`` (structured, falling back to the block): what
    ``findings_from`` means for this server. ``auto`` asks for structured output where the
    server constrains it to a schema (Ollama, llama.cpp, vLLM and other OpenAI-compatible
    servers); DeepSeek's API has JSON mode only, no schema: the block."""
    if findings_from != "auto":
        return findings_from
    return "block" if server == "deepseek" and api == "openai" else "auto"


def declared_kind(server: str, declared: bool, url: str | None) -> str | None:
    """The server kind the operator declared (``server``), else the one the endpoint's host
    says (Ollama's cloud, DeepSeek's API); None: only asking the server can tell."""
    if declared:
        return server
    host = (urlsplit(url).hostname or "").lower() if url else ""
    return {CLOUD_HOST: "ollama", DEEPSEEK_HOST: "deepseek"}.get(host)


def probed_kind(client: ChatClient, model: str, server: str) -> str:
    """The kind of a server not declared, by what it answers (asked once per client): Ollama
    by the probe the context check makes (:func:`.ollama.probe.model_facts`), llama.cpp by
    ``GET /props`` (llama-server's properties: ``default_generation_settings``) or, for
    llama-cpp-python, by the count route its tokenizer is asked at
    (:func:`.chat.tokenize.python_count`), vLLM by ``GET /version`` (``{"version"}``); else
    ``server`` (OpenAI's dialect, which vLLM, LM Studio and Ollama's /v1 read alike)."""
    if model_facts(client, model) is not None:
        return "ollama"
    key = ("server-kind",)
    with client.learning:
        known = client.learned.get(key)
    if not isinstance(known, str):
        with client.side_requests(timeout=min(5.0, client.timeouts.connect)) as ask:
            known = _kind_by_routes(ask, model)
        with client.learning:
            client.learned[key] = known
    return known or server


def _kind_by_routes(ask: SideAsk, model: str) -> str:
    """llama.cpp, vllm, or "" (neither answers as it does)."""
    from deepseek_review.chat.tokenize import python_count

    props = ask("/props")
    if isinstance(props, dict) and isinstance(props.get("default_generation_settings"), dict):
        return "llama.cpp"
    if python_count(ask, model, "") is not None:  # llama-cpp-python: no /props
        return "llama.cpp"
    version = ask("/version")
    return "vllm" if isinstance(version, dict) and isinstance(version.get("version"), str) else ""


def dialect_for(
    server: str, api: str, schema: Mapping[str, Any], name: str = "findings"
) -> tuple[str, dict[str, Any]]:
    """The name of the server's structured-output dialect and the body fields that carry
    ``schema`` in it: Ollama's native ``format``; llama.cpp's ``response_format`` of type
    ``json_object`` with a ``schema`` (what both llama-server and llama-cpp-python read);
    DeepSeek's JSON mode (no schema: it is in the prompt); else OpenAI's ``json_schema``."""
    if api == "ollama":
        return "format", {"format": dict(schema)}
    if server == "llama.cpp":
        return "json_object+schema", {"response_format": {"type": "json_object", "schema": schema}}
    if server == "deepseek":
        return "json_object", {"response_format": {"type": "json_object"}}
    wrapped = {"name": name, "strict": True, "schema": schema}
    return "json_schema", {"response_format": {"type": "json_schema", "json_schema": wrapped}}


def enforces_schema(server: str, url: str) -> bool:
    """Whether the server constrains its output to the schema (Ollama's cloud does not:
    ollama/ollama#12362; DeepSeek's JSON mode has no schema). Either way the reply is
    validated; this only words what is logged when it does not."""
    return server != "deepseek" and not (server == "ollama" and is_cloud(url))


def extraction_topic(topic: str, suffix: str = FINDINGS_TOPIC_SUFFIX) -> str:
    """The extraction's (or the self-check's) topic (:class:`~deepseek_review.errors.
    ConfigError` naming the ``topic`` option when the suffix makes it too long)."""
    from deepseek_review.records.naming import check_topic

    name = topic + suffix
    try:
        return check_topic(name)
    except ConfigError:
        what = "findings extraction" if suffix == FINDINGS_TOPIC_SUFFIX else "self-check"
        raise ConfigError(
            f"{name_of('topic')} {topic!r}: too long for its {what}'s topic {name!r} (at "
            f"most {120 - len(suffix)} characters)"
        ) from None


def body_options(
    body: BodyOptions, server: str, schema: Mapping[str, Any], name: str = "findings"
) -> BodyOptions:
    """The extraction's body options: the review's, with reasoning off and the schema in the
    server's dialect (the review's own reasoning and format fields replaced)."""
    _, carried = dialect_for(server, body.api, schema, name)
    off: dict[str, Any] = (
        {"think": False} if body.api == "ollama" else reasoning_fields(server, "none")
    )
    extra = {k: v for k, v in body.extra_body.items() if k not in _REASONING_KEYS}
    for key in ("response_format", "format", "json_schema", "grammar"):
        extra.pop(key, None)
    for key, value in off.items():
        given = extra.get(key)
        if isinstance(given, dict) and isinstance(value, dict):  # chat_template_kwargs
            value = {**given, **value}
        extra[key] = value
    return BodyOptions(
        model=body.model,
        temperature=body.temperature,
        max_tokens=body.max_tokens,
        stream=body.stream,
        extra_body={**extra, **carried},
        api=body.api,
    )


def prompt_text(schema: Mapping[str, Any]) -> str:
    """The extraction's request: what to return, and the schema itself (DeepSeek's JSON mode
    needs it in the prompt, and every model does better for seeing it)."""
    shown = json.dumps(schema, separators=(",", ":"), sort_keys=True)
    return (
        "Return every finding of the review below as one JSON object, and nothing else: no "
        "prose, no code fence. It must be valid against this JSON Schema:\n\n"
        f"{shown}\n\n"
        "Take each finding from the review as it states it: the path, the lines, the quote "
        "(the exact lines of that file the review is about, copied character for character), "
        'the severity, a one-word category, a title and the message. Write {"findings": []} '
        "when the review reports none. Invent nothing the review does not say."
    )


class Request(NamedTuple):
    prepared: PreparedRequest
    estimate: int
    template: Template
    files: tuple[ContextFile, ...]


def request(body: BodyOptions, server: str, topic: str, answers: Sequence[ContextFile]) -> Request:
    """The exact extraction request over the review's ``answers``."""
    from deepseek_review.finding.extract import wire_schema

    schema = wire_schema()
    return structured_request(
        body, server, topic, answers, EXTRACTION_TEMPLATE, prompt_text(schema), schema
    )


def structured_request(
    body: BodyOptions,
    server: str,
    topic: str,
    files: Sequence[ContextFile],
    template_name: str,
    prompt: str,
    schema: Mapping[str, Any],
    name: str = "findings",
) -> Request:
    """The exact request of an internal template (``prompts/internal/``) over ``files``
    asking for JSON valid against ``schema`` (named ``name`` where the dialect names it),
    reasoning off."""
    from deepseek_review.chat.tokens import estimate_sizes

    template = load_internal_template(template_name)
    framed = frame_messages(template, prompt, topic, files)
    messages = tuple(WireMessage(role, parts, None) for role, parts in framed)
    sizes = message_sizes(messages)
    texts = {f.path: f.text for f in files}
    prepared = prepare(body_options(body, server, schema, name), messages, texts, sizes)
    kept = tuple(ContextFile(f.path, "", f.sha256, f.size) for f in files)
    return Request(prepared, estimate_sizes(sizes), template, kept)


def answer_files(root: Path, segments: Sequence[Segment]) -> list[ContextFile]:
    """The review's answer files as context files, read from the disk and checked against
    the hashes their receipts hold."""
    files = []
    for s in segments:
        try:
            data = read_regular_file(resolve_inside(root, s.answer_path, what="answer")[0])
        except OSError as exc:
            raise InputError(f"{s.answer_path}: cannot read ({exc.strerror or exc})") from None
        if sha256_tag(data) != s.answer_sha256:
            raise InputError(f"{s.answer_path}: changed since its receipt was written")
        files.append(ContextFile(s.answer_path, data.decode("utf-8"), s.answer_sha256, len(data)))
    return files


def repo_file(root: Path, rel: str) -> ContextFile:
    """A file the run wrote (the findings file a self-check reads), as a context file."""
    try:
        data = read_regular_file(resolve_inside(root, rel, what="findings")[0])
    except OSError as exc:
        raise InputError(f"{rel}: cannot read ({exc.strerror or exc})") from None
    return ContextFile(rel, data.decode("utf-8"), sha256_tag(data), len(data))
