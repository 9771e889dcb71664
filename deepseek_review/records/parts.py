"""``$parts``: how a request record stands for the texts of a request's messages.

A record holds the request body with every context file's text replaced by
``{"$file": {"path", "sha256", "bytes"}}`` (with ``"lines": [first, last]`` when only those
lines of the file were sent: record version 2, :mod:`.lines`) and every earlier answer segment by
``{"$answer": {"path", "sha256", "bytes"}}``, inside ``{"$parts": [...]}`` message contents.
Message contents on the wire are strings, so such an object can never be mistaken for text.
:func:`encode_content` writes that form and :func:`parse_messages` is the one reader of it
(``continue``, ``verify`` and :func:`.rebuild.rebuild_body` all go through it).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from deepseek_review.errors import InputError
from deepseek_review.records.lines import Lines, line_slice, valid_lines


@dataclass(frozen=True)
class FileRef:
    """A context file's place in a message: its text is read from the repository.

    Defined here, not in :mod:`reviewing.prompt` (which uses it): a record's reader must not import
    everything that builds prompts (``verify`` reads thousands of records and builds none).
    """

    path: str
    sha256: str
    """Of the text that goes here: the whole file's, or the slice's when ``lines`` is set."""
    size: int
    lines: Lines | None = None
    """Only these lines of the file (1-based, inclusive), cut by :func:`.lines.line_slice`."""

    def text_of(self, data: bytes) -> bytes | None:
        """What of the file's bytes ``data`` goes here: all of it, or its lines (None: the
        file has no such lines now)."""
        return data if self.lines is None else line_slice(data, *self.lines)


def file_ref(path: str, sha256: str, size: int, lines: Lines | None = None) -> FileRef:
    """``FileRef(path, sha256, size, lines)``, equal in every way, made without the frozen
    dataclass's ``__init__``: its fields are written straight into the new instance's
    ``__dict__``. Framing makes one per file."""
    ref = _new(FileRef)
    fields = ref.__dict__
    fields["path"] = path
    fields["sha256"] = sha256
    fields["size"] = size
    fields["lines"] = lines
    return ref


_new = object.__new__


@dataclass(frozen=True)
class AnswerRef:
    """An earlier answer segment inside a continuation request."""

    path: str
    sha256: str
    size: int

    def text_of(self, data: bytes) -> bytes | None:
        return data


Ref = FileRef | AnswerRef
RecordPart = str | FileRef | AnswerRef

_KEYS: dict[type[Ref], str] = {FileRef: "$file", AnswerRef: "$answer"}
_MAKERS: dict[str, type[Ref]] = {key: cls for cls, key in _KEYS.items()}
#: The keys of a reference part.
REF_KEYS = tuple(_MAKERS)


def encode_part(p: RecordPart) -> str | dict[str, Any]:
    if isinstance(p, str):
        return p
    ref: dict[str, Any] = {"path": p.path, "sha256": p.sha256, "bytes": p.size}
    if isinstance(p, FileRef) and p.lines is not None:
        ref["lines"] = list(p.lines)
    return {_KEYS[type(p)]: ref}


def has_ranges(parts: Sequence[RecordPart]) -> bool:
    """Whether a reference among ``parts`` names a range of lines (a record of version 2)."""
    return any(isinstance(p, FileRef) and p.lines is not None for p in parts)


def encode_content(parts: Sequence[RecordPart]) -> str | dict[str, Any]:
    """A message content as the record holds it: plain text, or ``{"$parts": [...]}``."""
    if len(parts) == 1 and isinstance(parts[0], str):
        return parts[0]
    return {"$parts": [encode_part(p) for p in parts]}


@dataclass(slots=True)
class RecordedMessage:
    """One message of a recorded request body, its content as parts (read-only by
    convention: a verify run parses tens of thousands)."""

    role: str
    parts: tuple[RecordPart, ...]
    extra: Mapping[str, Any]
    """Its other fields (e.g. DeepSeek's ``prefix: true``), sent as recorded."""

    def refs(self) -> Iterator[Ref]:
        return (p for p in self.parts if not isinstance(p, str))


def _error(what: str) -> InputError:
    return InputError(f"request record: {what}")


def _ref(p: Any) -> Ref:
    if isinstance(p, dict) and len(p) == 1:
        ((key, ref),) = p.items()
        make = _MAKERS.get(key)
        if (
            make is not None
            and isinstance(ref, dict)
            and isinstance(ref.get("path"), str)
            and isinstance(ref.get("sha256"), str)
            and type(ref.get("bytes")) is int
        ):
            if "lines" not in ref:
                return make(ref["path"], ref["sha256"], ref["bytes"])
            lines = valid_lines(ref["lines"])
            if make is FileRef and lines is not None:
                return FileRef(ref["path"], ref["sha256"], ref["bytes"], lines)
            raise _error(
                f"the reference to {ref['path']} has lines that are not [first, last] of a "
                "$file (1 <= first <= last)"
            )
    raise _error("a part is neither text nor a $file/$answer reference")


def parse_content(content: Any) -> tuple[RecordPart, ...]:
    """A recorded message content as parts; :class:`InputError` if it is neither form."""
    if isinstance(content, str):
        return (content,)
    parts = content.get("$parts") if isinstance(content, dict) and len(content) == 1 else None
    if not isinstance(parts, list):
        raise _error("a message content is neither text nor $parts")
    return tuple([p if isinstance(p, str) else _ref(p) for p in parts])


_NO_EXTRA: Mapping[str, Any] = MappingProxyType({})


def _extra(m: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in m.items() if k not in ("role", "content")}


def parse_messages(body: Mapping[str, Any]) -> list[RecordedMessage]:
    """The messages of a recorded body; :class:`InputError` (``request record: …``) when the
    body holds none or one is malformed. A record may be hostile: nothing is read here."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _error("body has no messages list")
    out = []
    for m in messages:
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise _error("a message is not an object with a role")
        extra = _NO_EXTRA if len(m) == 2 and "content" in m else _extra(m)
        out.append(RecordedMessage(m["role"], parse_content(m.get("content")), extra))
    return out


def file_refs(messages: Sequence[RecordedMessage]) -> dict[str, FileRef]:
    """Every context file a request references, the first reference to each path."""
    out: dict[str, FileRef] = {}
    for m in messages:
        for r in m.refs():
            if isinstance(r, FileRef):
                out.setdefault(r.path, r)
    return out


def answer_paths(messages: Sequence[RecordedMessage]) -> set[str]:
    """The earlier answer segments a request references."""
    return {r.path for m in messages for r in m.refs() if isinstance(r, AnswerRef)}
