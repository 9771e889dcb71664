"""The exact request body, its hash, and the request record that can rebuild it.

The body is canonical JSON: keys sorted, separators ``,`` and ``:``, UTF-8, no ASCII escaping.
That form is a contract: ``prompt_sha256`` is the sha256 of exactly these bytes, which are
exactly the bytes sent, and :func:`rebuild_body` must reproduce them from a request record.

The request record (``<stem>.request.json``) holds the body with every context file's text
replaced by ``{"$file": {"path", "sha256", "bytes"}}`` and every earlier answer segment by
``{"$answer": {"path", "sha256", "bytes"}}``, inside ``{"$parts": [...]}`` message contents.
Message contents on the wire are strings, so such an object can never be mistaken for text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError, InputError
from .options import check, default, name_of
from .prompt import FileRef, Message, Part
from .records.canonical import canonical_json, sha256_tag

RECORD_SCHEMA = "deepseek_review_request_record_v1"

#: Fields a server-specific ``extra_body`` may not override: they define the review.
CORE_FIELDS = frozenset({"model", "messages", "temperature", "max_tokens", "stream"})

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
    try:  # Python's JSON reader takes NaN and Infinity; the body must be real JSON
        canonical_json(dict(extra))
    except ValueError:
        raise ConfigError(
            f"{option}: NaN or Infinity is not JSON (no server can read it)"
        ) from None
    except TypeError as exc:
        raise ConfigError(f"{option}: not JSON ({exc})") from None


@dataclass(frozen=True)
class AnswerRef:
    """An earlier answer segment inside a continuation request."""

    path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class BodyOptions:
    model: str
    temperature: float = default("temperature")
    max_tokens: int = default("max_tokens")
    stream: bool = default("stream")
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check("model", self.model)
        check("max_tokens", self.max_tokens)
        check("temperature", self.temperature)
        check_extra_body(self.extra_body)


@dataclass(frozen=True)
class WireMessage:
    """A message as parts (for the record) plus its joined text (for the wire)."""

    role: str
    parts: tuple[Part | AnswerRef, ...]
    content: str
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Extra per-message fields a server needs (e.g. DeepSeek's ``prefix: true``)."""

    @classmethod
    def from_message(cls, m: Message) -> WireMessage:
        return cls(role=m.role, parts=m.parts, content=m.content)


@dataclass(frozen=True)
class PreparedRequest:
    body_bytes: bytes
    prompt_sha256: str
    record_body: dict[str, Any]
    """The body with references in place of file texts: what the record stores."""


def _body(options: BodyOptions, messages: list[dict[str, Any]]) -> dict[str, Any]:
    body: dict[str, Any] = dict(options.extra_body)
    body.update(
        model=options.model,
        messages=messages,
        temperature=options.temperature,
        max_tokens=options.max_tokens,
        stream=options.stream,
    )
    if options.stream:
        body["stream_options"] = {"include_usage": True}
    return body


def _record_part(p: Part | AnswerRef) -> str | dict[str, Any]:
    if isinstance(p, str):
        return p
    key = "$file" if isinstance(p, FileRef) else "$answer"
    return {key: {"path": p.path, "sha256": p.sha256, "bytes": p.size}}


def prepare(options: BodyOptions, messages: Sequence[WireMessage]) -> PreparedRequest:
    """Serialise the body once; its bytes are both sent and hashed."""
    wire = [{"role": m.role, "content": m.content, **m.extra} for m in messages]
    body_bytes = canonical_json(_body(options, wire))
    recorded = []
    for m in messages:
        if len(m.parts) == 1 and isinstance(m.parts[0], str):
            content: Any = m.parts[0]
        else:
            content = {"$parts": [_record_part(p) for p in m.parts]}
        recorded.append({"role": m.role, "content": content, **m.extra})
    return PreparedRequest(
        body_bytes=body_bytes,
        prompt_sha256=sha256_tag(body_bytes),
        record_body=_body(options, recorded),
    )


# --------------------------------------------------------------------------- rebuilding


@dataclass
class Rebuild:
    """The outcome of rebuilding a body from its record."""

    body_bytes: bytes | None
    changed: list[str] = field(default_factory=list)
    """Referenced files whose bytes no longer match the record."""
    missing: list[str] = field(default_factory=list)
    """Referenced files that are gone (or unreadable, or outside the root)."""

    @property
    def complete(self) -> bool:
        return self.body_bytes is not None


#: Reads a repo-relative path (never outside the root); None when it cannot be read.
Reader = Callable[[str], bytes | None]


def rebuild_body(record_body: Mapping[str, Any], read: Reader) -> Rebuild:
    """Rebuild the exact body bytes, or say which referenced files changed or are missing."""
    result = Rebuild(body_bytes=None)
    try:
        messages_in = record_body["messages"]
        if not isinstance(messages_in, list):
            raise TypeError
    except (KeyError, TypeError):
        raise InputError("request record: body has no messages list") from None
    cache: dict[str, bytes | None] = {}
    messages_out = []
    for m in messages_in:
        if not isinstance(m, dict):
            raise InputError("request record: a message is not an object")
        content = m.get("content")
        if isinstance(content, dict):
            parts = content.get("$parts")
            if not isinstance(parts, list):
                raise InputError("request record: a message content object lacks $parts")
            text = []
            for p in parts:
                text.append(_resolve_part(p, read, cache, result))
            m = {**m, "content": "".join(text)}
        elif not isinstance(content, str):
            raise InputError("request record: a message content is neither text nor $parts")
        messages_out.append(m)
    if result.changed or result.missing:
        return result
    result.body_bytes = canonical_json({**record_body, "messages": messages_out})
    return result


def _resolve_part(p: Any, read: Reader, cache: dict[str, bytes | None], result: Rebuild) -> str:
    if isinstance(p, str):
        return p
    if not isinstance(p, dict) or len(p) != 1:
        raise InputError("request record: a part is neither text nor a single reference")
    ((kind, ref),) = p.items()
    if kind not in ("$file", "$answer") or not isinstance(ref, dict):
        raise InputError(f"request record: unknown part {kind!r}")
    path, digest = ref.get("path"), ref.get("sha256")
    if not isinstance(path, str) or not isinstance(digest, str):
        raise InputError("request record: a reference lacks path or sha256")
    if path not in cache:
        cache[path] = read(path)
    data = cache[path]
    if data is None:
        if path not in result.missing:
            result.missing.append(path)
        return ""
    if sha256_tag(data) != digest:
        if path not in result.changed:
            result.changed.append(path)
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:  # cannot happen when the hash matches what we wrote
        result.changed.append(path)
        return ""


def repo_reader(root: Path) -> Reader:
    """A :data:`Reader` that refuses anything outside ``root`` (a record may be hostile)."""
    from .repo import resolve_inside

    def read(rel: str) -> bytes | None:
        try:
            path, _ = resolve_inside(root, rel)
            return path.read_bytes() if path.is_file() else None
        except (InputError, OSError):
            return None

    return read
