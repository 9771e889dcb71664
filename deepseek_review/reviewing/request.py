"""The exact request body and its hash, and the recorded form of its messages.

The body is canonical JSON (:mod:`.records.canonical`): ``prompt_sha256`` is the sha256 of
exactly the bytes sent. :func:`prepare` serialises it once (a message given
as parts is written straight from the file texts, which are released as they are written) and
also gives the body as the request record holds it, every file text and earlier answer replaced
by a reference (:mod:`.records.parts`), from which :func:`.records.rebuild.rebuild_body`
rebuilds the bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from deepseek_review.chat.tokens import estimate_sizes, utf8_size
from deepseek_review.errors import ConfigError
from deepseek_review.options.table import check, default, name_of
from deepseek_review.records.canonical import CANONICAL, Streamed, canonical_json, sha256_tag
from deepseek_review.records.parts import AnswerRef, encode_content
from deepseek_review.reviewing.prompt import Message, Part, text_bytes

#: Fields a server-specific ``extra_body`` may not override: they define the review.
CORE_FIELDS = frozenset({"model", "messages", "temperature", "max_tokens", "stream"})
#: Fields the native API's body sets itself (:mod:`deepseek_review.chat.native`).
NATIVE_FIELDS = frozenset({"options", "truncate", "shift"})

#: Fields ``extra_body`` may not set although no option sets them either, and why: each would
#: be dropped, overridden or thrown away without a word. (``{max_tokens}``: that option's name.)
REFUSED_EXTRA_FIELDS = {
    "max_completion_tokens": "Ollama ignores it (the answer would be unbounded); use "
    "{max_tokens}, sent as max_tokens",
    "stream_options": "deepseek-review sets it itself (include_usage, when streaming); a "
    "value given here would be overridden or dropped",
    "n": "a review keeps one answer per request; the other choices would be paid for and "
    "thrown away",
}


def check_extra_body(extra: Mapping[str, Any], option: str | None = None) -> None:
    """Refuse extra body fields that would not do what they say (exit 2, naming the field);
    ``option`` names where they came from (default: the ``extra_body`` option)."""
    option = option or name_of("extra_body")
    clash = sorted(CORE_FIELDS & set(extra))
    if clash:
        raise ConfigError(f"{option} may not set {clash[0]!r}; use the option for it instead")
    for name, why in REFUSED_EXTRA_FIELDS.items():
        if name in extra:
            why = why.format(max_tokens=name_of("max_tokens"))
            raise ConfigError(f"{option} may not set {name!r}: {why}")
    if not extra:
        return
    try:  # Python's JSON reader takes NaN and Infinity; the body must be real JSON
        CANONICAL.encode(dict(extra))
    except ValueError:
        raise ConfigError(
            f"{option}: NaN or Infinity is not JSON (no server can read it)"
        ) from None
    except TypeError as exc:
        raise ConfigError(f"{option}: not JSON ({exc})") from None


#: Message texts this large (bytes, or characters of a text already joined) are written into
#: the body piece by piece rather than encoded in one go.
STREAM_ABOVE = 1 << 20


@dataclass(frozen=True)
class BodyOptions:
    model: str
    temperature: float = default("temperature")
    max_tokens: int = default("max_tokens")
    stream: bool = default("stream")
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    api: str = default("api")
    """``ollama``: the body of Ollama's native ``/api/chat`` (:mod:`chat.native`)."""

    def __post_init__(self) -> None:
        check("api", self.api)
        check("model", self.model)
        check("max_tokens", self.max_tokens)
        check("temperature", self.temperature)
        check_extra_body(self.extra_body)


@dataclass(frozen=True)
class WireMessage:
    """A message as parts (for the record) plus its joined text (for the wire)."""

    role: str
    parts: tuple[Part | AnswerRef, ...]
    content: str | None
    """None: never joined; :func:`prepare` writes the body from ``parts`` and the texts it is
    handed, and :func:`sent_contents` reads the text back from the body that was sent."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Extra per-message fields a server needs (e.g. DeepSeek's ``prefix: true``)."""

    @classmethod
    def from_message(cls, m: Message) -> WireMessage:
        return cls(role=m.role, parts=m.parts, content=m.content)


@dataclass(frozen=True)
class PreparedRequest:
    body_bytes: bytes
    prompt_sha256: str
    options: BodyOptions
    messages: tuple[WireMessage, ...]
    """The messages as parts (texts dropped: the body holds them), for :attr:`record_body`."""
    sent_fields: Mapping[str, Any]
    """Every field of the body sent but its messages (``options.num_ctx`` among them): the
    record takes them from here, never computes them again from its references."""

    @cached_property
    def record_body(self) -> dict[str, Any]:
        """The body with references in place of file texts: what the record stores (made
        when a record is written: a dry run of 20,000 files never needs it). Only the messages
        differ from the body sent; they rebuild to its bytes (:mod:`.records.rebuild`)."""
        recorded = [
            {"role": m.role, "content": encode_content(m.parts), **m.extra} for m in self.messages
        ]
        return {**self.sent_fields, "messages": recorded}


def _body(
    options: BodyOptions, messages: list[dict[str, Any]], estimate: int | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = dict(options.extra_body)
    body.update(
        model=options.model,
        messages=messages,
        temperature=options.temperature,
        max_tokens=options.max_tokens,
        stream=options.stream,
    )
    if options.api == "ollama":
        from deepseek_review.chat.native import body as native_body

        return native_body(
            body,
            temperature=options.temperature,
            max_tokens=options.max_tokens,
            stream=options.stream,
            prompt_estimate=estimate,
        )
    if options.stream:
        body["stream_options"] = {"include_usage": True}
    return body


def prepare(
    options: BodyOptions,
    messages: Sequence[WireMessage],
    texts: MutableMapping[str, str] | None = None,
    sizes: Sequence[int] | None = None,
) -> PreparedRequest:
    """Serialise the body once; its bytes are both sent and hashed. A message without
    ``content`` is written from its parts, each file's text taken out of ``texts`` (by path) as
    it is written, so a caller whose only copy that is holds the body alone at the end.
    ``sizes``: :func:`message_sizes`, when the caller counted them already (a plan does, for
    its size check)."""
    if sizes is None:
        sizes = message_sizes(messages)
    estimate = estimate_sizes(sizes) if options.api == "ollama" else None
    texts = {} if texts is None else texts
    # A small body is encoded in one go; a large one is written from its parts, so no joined
    # copy of the prompt ever exists.
    size = sum(sizes)
    small = size < STREAM_ABOVE
    wire = [
        {"role": m.role, "content": _content(m, texts, joined=small), **m.extra} for m in messages
    ]
    body = _body(options, wire, estimate)
    body_bytes = canonical_json(body)
    parts = tuple(m if m.content is None else replace(m, content=None) for m in messages)
    fields = {k: v for k, v in body.items() if k != "messages"}
    return PreparedRequest(body_bytes, sha256_tag(body_bytes), options, parts, fields)


def _content(m: WireMessage, texts: MutableMapping[str, str], *, joined: bool) -> str | Streamed:
    """A message's content for the body: its text, or its parts to write the text from."""
    if m.content is not None:
        return m.content
    if joined:
        return "".join(p if isinstance(p, str) else texts.pop(p.path) for p in m.parts)
    return Streamed(m.parts, texts)


def message_sizes(messages: Iterable[WireMessage]) -> list[int]:
    """The bytes of each message's text; a text never joined is counted from its parts (a
    reference counts its size: the bytes of its text)."""
    return [utf8_size(m.content) if m.content is not None else text_bytes((m,)) for m in messages]


def sent_contents(body_bytes: bytes) -> list[str]:
    """The message texts of a body that was sent (a continuation repeats them): read back
    from the body, as they were never joined anywhere else."""
    return [m["content"] for m in json.loads(body_bytes)["messages"]]


def with_native_fields(
    prepared: PreparedRequest, num_ctx: int, keep_alive: Any, *, at_least: bool = False
) -> PreparedRequest:
    """A native (``--api ollama``) request sent with ``num_ctx`` (``at_least``: unless it
    needs more) and, unless its extra body sets one, ``keep_alive``: a batch's
    (:mod:`deepseek_review.batch.sizing`). The body is read back and written again in
    canonical form, so its bytes are what :func:`prepare` makes of those fields (the record
    keeps them: ``verify`` rebuilds the same bytes)."""
    body = json.loads(prepared.body_bytes)
    options = body.get("options", {})
    if at_least:
        num_ctx = max(num_ctx, options.get("num_ctx", 0))
    body["options"] = {**options, "num_ctx": num_ctx}
    body.setdefault("keep_alive", keep_alive)
    fields = {k: v for k, v in body.items() if k != "messages"}
    body_bytes = canonical_json(body)
    return replace(
        prepared, body_bytes=body_bytes, prompt_sha256=sha256_tag(body_bytes), sent_fields=fields
    )
